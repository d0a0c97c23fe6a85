// Environment differences between two groups of runs (see environment_diff.h).
#include "report/environment_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "report/html_environment.h"
#include "result/config_flatten.h"
#include "result/json_dump.h"
#include "text/terminal_text.h"

namespace orch {
namespace {

using nlohmann::json;

constexpr const char* kNotRecorded = "not recorded";
constexpr const char* kUnset = "unset";
constexpr const char* kVariablesPrefix = "variables.";

std::string gib_text(const json& v) {
  return v.is_number() ? fmt::format("{:.1f} GiB", v.get<double>() / (1024.0 * 1024.0 * 1024.0))
                       : std::string();
}

// The fields with a label of their own, in the order they are listed; their values read the
// way the report's environment section reads them.
struct KnownField {
  const char* key;  // the flattened key path in environment_json
  const char* label;
  std::string (*text)(const json&);  // nullptr: the plain value
};

const KnownField kKnown[] = {
    {"gpu_name", "GPU", nullptr},
    {"gpu_uuid", "GPU UUID", nullptr},
    {"compute_capability", "compute capability", nullptr},
    {"sm_count", "SMs", nullptr},
    {"gpu_memory_bytes", "GPU memory", gib_text},
    {"gpu_memory_cap_bytes", "GPU memory cap", gib_text},
    {"device", "device", nullptr},
    {"driver_version", "driver", nullptr},
    {"cuda_runtime_version", "CUDA",
     [](const json& v) {
       return v.is_number() ? cuda_version_text(v.get<long long>()) : std::string();
     }},
    {"cuda_driver_api_version", "CUDA driver API",
     [](const json& v) {
       return v.is_number() ? cuda_version_text(v.get<long long>()) : std::string();
     }},
    {"cudnn_version", "cuDNN",
     [](const json& v) {
       return v.is_number() ? cudnn_version_text(v.get<long long>()) : std::string();
     }},
    {"torch_version", "LibTorch", nullptr},
    {"torch_threads", "torch threads", nullptr},
    {"hostname", "host", nullptr},
    {"cpu_model", "CPU", nullptr},
    {"cpu_count", "CPU cores", nullptr},
    {"orch_version", "orch", nullptr},
    {"git_revision", "orch revision", nullptr},
    {"pcie.gen_max", "PCIe generation (maximum)", nullptr},
    {"pcie.width_max", "PCIe width (maximum)", nullptr},
    {"persistence_mode", "persistence mode",
     [](const json& v) { return v.is_boolean() ? std::string(v.get<bool>() ? "on" : "off") : ""; }},
    {"code.repository", "your code's repository", nullptr},
    {"code.commit", "your code's commit", nullptr},
    {"code.dirty", "your code's uncommitted changes",
     [](const json& v) { return v.is_boolean() ? std::string(v.get<bool>() ? "yes" : "no") : ""; }},
    {"code.diff_hash", "your code's uncommitted changes (hash)", nullptr},
    {"gpu_other_processes", "other processes on the GPU", nullptr},
    {"nvml_error", "NVML error", nullptr},
};

const KnownField* known(const std::string& key) {
  for (const KnownField& f : kKnown) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

// Fields that differ between runs of one and the same environment (environment_diff.h).
bool left_out(const std::string& key) {
  return key == "pcie.gen_current" || key == "pcie.width_current" || key == "script_argv";
}

std::string plain_text(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return json_dump(v);
}

// One run's environment as key path -> text. The columns fill what an old document's
// environment lacks (or a run recorded by hand, as the tests do).
struct RunFields {
  std::map<std::string, std::string> values;
  bool variables_recorded = false;
};

RunFields fields_of(const storage::RunRecord& r) {
  json env = r.environment.is_object() ? r.environment : json::object();
  const std::pair<const char*, const std::string*> columns[] = {
      {"gpu_name", &r.gpu_name},
      {"driver_version", &r.driver_version},
      {"cudnn_version", &r.cudnn_version},
      {"torch_version", &r.torch_version},
      {"hostname", &r.hostname}};
  for (const auto& [key, value] : columns) {
    if (!env.contains(key) && !value->empty()) env[key] = *value;
  }
  if (!env.contains("cuda_runtime_version") && !r.cuda_version.empty()) {
    const bool digits = std::all_of(r.cuda_version.begin(), r.cuda_version.end(),
                                    [](unsigned char c) { return c >= '0' && c <= '9'; });
    env["cuda_runtime_version"] = digits && r.cuda_version.size() < 10
                                      ? json(std::stoll(r.cuda_version))
                                      : json(r.cuda_version);
  }
  RunFields out;
  out.variables_recorded = env.contains("variables") && env.at("variables").is_object();
  // Their number, not their ids: another night's neighbour has another pid.
  if (env.contains("gpu_other_processes") && env.at("gpu_other_processes").is_array()) {
    env["gpu_other_processes"] = env.at("gpu_other_processes").size();
  }
  std::map<std::string, json> flat;
  flatten_json(env, "", flat);
  for (const auto& [key, value] : flat) {
    if (key.empty() || left_out(key)) continue;
    const KnownField* k = known(key);
    std::string text = k && k->text ? k->text(value) : plain_text(value);
    if (text.empty()) text = plain_text(value);
    if (!text.empty()) out.values[key] = text;
  }
  return out;
}

bool has_anything(const storage::RunRecord& r) {
  return (r.environment.is_object() && !r.environment.empty()) || !r.gpu_name.empty() ||
         !r.driver_version.empty() || !r.torch_version.empty() || !r.hostname.empty();
}

// A side's value of `key`: the set of its runs' values.
std::string side_value(const std::vector<RunFields>& runs, const std::string& key) {
  std::set<std::string> seen;
  const bool variable = key.rfind(kVariablesPrefix, 0) == 0;
  for (const RunFields& f : runs) {
    auto it = f.values.find(key);
    if (it != f.values.end())
      seen.insert(it->second);
    else
      seen.insert(variable && f.variables_recorded ? kUnset : kNotRecorded);
  }
  std::string out;
  for (const auto& v : seen) out += (out.empty() ? "" : ", ") + v;
  return out.empty() ? kNotRecorded : out;
}

std::string label_of(const std::string& key) {
  if (const KnownField* k = known(key)) return k->label;
  if (key.rfind(kVariablesPrefix, 0) == 0) return key.substr(std::string(kVariablesPrefix).size());
  return key;
}

// Known fields in the table's order, then the variables, then the rest, each by name.
int rank_of(const std::string& key) {
  for (std::size_t i = 0; i < std::size(kKnown); ++i) {
    if (key == kKnown[i].key) return static_cast<int>(i);
  }
  return key.rfind(kVariablesPrefix, 0) == 0 ? 1000 : 2000;
}

}  // namespace

EnvironmentComparison compare_environments(const std::vector<storage::RunRecord>& a,
                                           const std::vector<storage::RunRecord>& b) {
  std::vector<RunFields> fa, fb;
  std::set<std::string> keys;
  for (auto [side, fields] : {std::pair{&a, &fa}, std::pair{&b, &fb}}) {
    for (const auto& r : *side) {
      if (!has_anything(r)) continue;
      fields->push_back(fields_of(r));
      for (const auto& [key, v] : fields->back().values) keys.insert(key);
    }
  }
  std::vector<std::string> ordered(keys.begin(), keys.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& x, const auto& y) { return rank_of(x) < rank_of(y); });
  EnvironmentComparison out;
  for (const auto& key : ordered) {
    out.compared.push_back(label_of(key));
    const std::string va = side_value(fa, key), vb = side_value(fb, key);
    if (va != vb) out.changes.push_back({label_of(key), va, vb});
  }
  return out;
}

std::string format_environment_comparison(const EnvironmentComparison& c, const std::string& what) {
  if (c.compared.empty()) return "environment: neither side recorded one\n";
  if (c.changes.empty()) {
    std::string fields;
    for (const auto& f : c.compared) fields += (fields.empty() ? "" : ", ") + f;
    return fmt::format("environment: the same in all {} recorded fields ({})\n", c.compared.size(),
                       terminal_text(fields));
  }
  std::string out = fmt::format(
      "DIFFERENT ENVIRONMENTS: {} of {} recorded fields differ between the {}; a difference "
      "below may be theirs, not the configurations':\n",
      c.changes.size(), c.compared.size(), what);
  std::size_t w = 0;
  for (const auto& e : c.changes) w = std::max(w, e.fact.size());
  for (const auto& e : c.changes) {
    out += fmt::format("  {:<{}}  {} -> {}\n", terminal_text(e.fact), w, terminal_text(e.a),
                       terminal_text(e.b));
  }
  return out;
}

}  // namespace orch
