// Upsert building and the columns of a run's identity.
#include "storage/row_values.h"

#include <algorithm>
#include <ctime>
#include <stdexcept>

#include "result/json_dump.h"

namespace orch::storage {

std::string upsert_sql(const std::string& table, const RowValues& row, const std::string& conflict,
                       const std::vector<std::string>& update_overrides) {
  std::string names, params, updates;
  auto overridden = [&](const std::string& column) {
    return std::any_of(update_overrides.begin(), update_overrides.end(), [&](const std::string& o) {
      return o.compare(0, column.size() + 1, column + " ") == 0;
    });
  };
  auto in_conflict = [&](const std::string& column) {
    // `conflict` is a comma-separated column list; compare whole names.
    std::size_t pos = 0;
    while (pos <= conflict.size()) {
      std::size_t end = conflict.find(',', pos);
      if (end == std::string::npos) end = conflict.size();
      std::string part = conflict.substr(pos, end - pos);
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      if (part == column) return true;
      pos = end + 1;
    }
    return false;
  };
  for (std::size_t i = 0; i < row.columns.size(); ++i) {
    const std::string& c = row.columns[i].first;
    names += (i ? ", " : "") + c;
    params += (i ? ", ?" : "?") + std::to_string(i + 1);
    if (in_conflict(c) || overridden(c)) continue;
    updates += (updates.empty() ? "" : ", ") + c + " = excluded." + c;
  }
  for (const auto& o : update_overrides) updates += (updates.empty() ? "" : ", ") + o;
  return "INSERT INTO " + table + " (" + names + ") VALUES (" + params + ") ON CONFLICT (" +
         conflict + ") DO UPDATE SET " + updates;
}

void bind_row(Statement& st, const RowValues& row) {
  for (std::size_t i = 0; i < row.columns.size(); ++i) {
    const int index = static_cast<int>(i + 1);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::monostate>)
            st.bind_null(index);
          else
            st.bind(index, v);
        },
        row.columns[i].second);
  }
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void delete_run_children(Database& db, std::int64_t run_id) {
  for (const char* table : {"run_metrics", "run_steps", "telemetry_samples", "run_profile",
                            "run_profile_ops", "batch_probes", "host_samples"}) {
    Statement del(db, std::string("DELETE FROM ") + table + " WHERE run_id = ?1");
    del.bind(1, run_id);
    del.step();
  }
}

std::int64_t run_id_of(Database& db, std::int64_t sweep_id, const std::string& hash,
                       std::int64_t repeat) {
  Statement st(db, "SELECT id FROM runs WHERE sweep_id = ?1 AND config_hash = ?2 AND repeat = ?3");
  st.bind(1, sweep_id).bind(2, hash).bind(3, repeat);
  if (!st.step()) throw SqliteError("run row vanished after its upsert");
  return st.column_int(0);
}

// Columns that identify the run and describe its configuration, from a header or a document.
RowValues run_identity_values(std::int64_t sweep_id, const ResultDocument& doc) {
  const nlohmann::json config = doc.config.is_object() ? doc.config : nlohmann::json::object();
  if (!doc.run || doc.run->hash.empty()) {
    throw std::invalid_argument("result document has no run.hash: not an orch result document");
  }
  auto plugin_of = [&](const char* key) { return json_text(json_object(config, key), "plugin"); };
  RowValues row;
  row.set("sweep_id", sweep_id)
      .set("experiment", doc.experiment.value_or(""))
      .set("name", doc.run->name)
      .set("config_hash", doc.run->hash)
      .set("repeat", doc.run->repeat);
  row.set_text("model", plugin_of("model"))
      .set_text("data", plugin_of("data"))
      .set_text("precision", plugin_of("precision"))
      .set_text("stream", plugin_of("stream"))
      .set_text("memory_format", json_text(config, "memory_format"));
  // `batch_size: auto` resolves to a number only when the run has chosen one: the document's
  // top-level batch_size (or a config rewritten with it), else NULL until then.
  std::optional<std::int64_t> batch = json_integer(config, "batch_size");
  if (!batch) batch = doc.batch_size;
  row.set("batch_size", batch);
  // A rung's shorter measurement says so in its configuration (plan/halving_schedule.h).
  row.set("rung", json_integer(json_object(config, "search"), "rung"));
  row.set("config_json", json_dump(config));
  return row;
}

}  // namespace orch::storage
