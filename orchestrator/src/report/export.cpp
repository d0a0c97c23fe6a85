// Export of a sweep's runs as CSV or JSON.
#include "report/export.h"

#include <map>
#include <regex>
#include <set>
#include <string_view>

#include "result/json_dump.h"

namespace orch {
namespace {

nlohmann::json text_or_null(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

// A text cell that a spreadsheet would read as a formula (CSV injection): OWASP's advice is a
// leading single quote inside a quoted field. Text that is a plain number ("-1.5") is left as
// it is: no spreadsheet evaluates it, and it stays a number in pandas.
bool formula_like(const std::string& s) {
  if (s.empty() || std::string_view("=+-@\t\r").find(s.front()) == std::string_view::npos) {
    return false;
  }
  static const std::regex kNumber(R"([+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)");
  return !std::regex_match(s, kNumber);
}

std::string csv_field(const nlohmann::json& cell) {
  if (cell.is_null()) return {};
  std::string s = cell.is_string() ? cell.get<std::string>() : json_dump(cell);
  const bool neutralise = cell.is_string() && formula_like(s);
  if (neutralise) s.insert(0, 1, '\'');
  if (!neutralise && s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

}  // namespace

ExportTable export_table(const std::vector<storage::RunRecord>& runs) {
  ExportTable t;
  t.columns = {"run_id",     "sweep",          "experiment",   "name",          "config_hash",
               "repeat",     "status",         "attempts",     "error",         "device",
               "gpu",        "batch_size",     "batch_auto",   "started_at",    "finished_at",
               "duration_s", "exit_code",      "term_signal",  "diagnosis",     "diagnosis_detail",
               "gpu_name",   "driver_version", "cuda_version", "cudnn_version", "torch_version",
               "hostname"};
  std::vector<std::map<std::string, nlohmann::json>> configs, environments;
  std::set<std::string> config_keys, environment_keys, metric_keys;
  for (const auto& r : runs) {
    std::map<std::string, nlohmann::json> flat, env;
    flatten_json(r.config, "config", flat);
    for (const auto& [k, v] : flat) config_keys.insert(k);
    // Every recorded environment field (torch threads, the watched variables, the CPU, the
    // memory cap, ...): what `compare` judges two nights by, for whoever reads the export.
    flatten_json(r.environment, "environment", env);
    for (const auto& [k, v] : env) environment_keys.insert(k);
    for (const auto& [k, v] : r.metrics) metric_keys.insert(k);
    configs.push_back(std::move(flat));
    environments.push_back(std::move(env));
  }
  for (const auto& k : config_keys) t.columns.push_back(k);
  for (const auto& k : environment_keys) t.columns.push_back(k);
  for (const auto& k : metric_keys) t.columns.push_back("metrics." + k);

  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    std::vector<nlohmann::json> row = {r.id,
                                       r.sweep,
                                       r.experiment,
                                       r.name,
                                       r.config_hash,
                                       r.repeat,
                                       r.status,
                                       r.attempts,
                                       text_or_null(r.error),
                                       text_or_null(r.device),
                                       text_or_null(r.gpu),
                                       opt(r.batch_size),
                                       r.batch_auto,
                                       text_or_null(r.started_at),
                                       text_or_null(r.finished_at),
                                       opt(r.duration_s),
                                       opt(r.exit_code),
                                       opt(r.term_signal),
                                       text_or_null(r.diagnosis),
                                       text_or_null(r.diagnosis_detail),
                                       text_or_null(r.gpu_name),
                                       text_or_null(r.driver_version),
                                       text_or_null(r.cuda_version),
                                       text_or_null(r.cudnn_version),
                                       text_or_null(r.torch_version),
                                       text_or_null(r.hostname)};
    for (const auto& k : config_keys) {
      auto it = configs[i].find(k);
      row.push_back(it == configs[i].end() ? nlohmann::json() : it->second);
    }
    for (const auto& k : environment_keys) {
      auto it = environments[i].find(k);
      row.push_back(it == environments[i].end() ? nlohmann::json() : it->second);
    }
    for (const auto& k : metric_keys) row.push_back(opt(r.metric(k)));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string to_csv(const ExportTable& table) {
  std::string out;
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    out += (c ? "," : "") + csv_field(table.columns[c]);
  }
  out += "\r\n";
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + csv_field(row[c]);
    out += "\r\n";
  }
  return out;
}

std::string to_json(const ExportTable& table) {
  // ordered_json keeps the columns in table order; invalid UTF-8 (a stderr tail) is replaced,
  // not thrown.
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const auto& row : table.rows) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    for (std::size_t c = 0; c < row.size(); ++c) obj[table.columns[c]] = row[c];
    array.push_back(std::move(obj));
  }
  // Not json_dump: it takes a json, and the conversion would sort the keys out of column order.
  return array.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace orch
