// The SQLite result store.
#include "storage/store.h"

#include "storage/schema_sql.h"

namespace orch::storage {
namespace {

std::optional<double> number(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string text(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

void bind_text_or_null(Statement& st, int i, const std::string& v) {
  if (v.empty()) st.bind_null(i); else st.bind(i, v);
}

}  // namespace

Store::Store(const std::string& path) : db_(path) {
  // A reader (sqlite3, pandas) holding a lock briefly must never fail the sweep: wait for it.
  sqlite3_busy_timeout(db_.get(), 10000);
  db_.exec("PRAGMA journal_mode=WAL");
  // FULL: a committed run survives power loss, not only a process crash.
  db_.exec("PRAGMA synchronous=FULL");
  db_.exec("PRAGMA foreign_keys=ON");
  const int version = schema_version();
  if (version > kSchemaVersion) {
    throw SqliteError("database " + path + " has schema version " + std::to_string(version) +
                      ", newer than this orch understands (" + std::to_string(kSchemaVersion) +
                      "); use a newer orch to read it");
  }
  if (version < kSchemaVersion) {
    Transaction tx(db_);
    // Version 0 is an empty file: create everything. Later versions add migration steps here,
    // each taking the schema from N to N+1 inside this one transaction.
    if (version == 0) db_.exec(kSchemaSql);
    db_.exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
    tx.commit();
  }
}

int Store::schema_version() const {
  Statement st(db_, "PRAGMA user_version");
  st.step();
  return static_cast<int>(st.column_int(0));
}

std::int64_t Store::record(const nlohmann::json& doc) {
  const auto& run = doc.at("run");
  const auto& config = doc.at("config");
  const auto& metrics = doc.value("metrics", nlohmann::json::object());
  auto plugin_of = [&](const char* key) {
    auto it = config.find(key);
    return it != config.end() && it->is_object() ? text(*it, "plugin") : std::string();
  };

  Transaction tx(db_);
  Statement ins(db_, R"(INSERT INTO runs (experiment, name, config_hash, repeat, status, error,
      model, data, precision, stream, batch_size, memory_format, device, images_per_s,
      step_ms_mean, started_at, finished_at, config_json, environment_json, document_json)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
              ?19, ?20))");
  ins.bind(1, text(doc, "experiment"))
      .bind(2, text(run, "name"))
      .bind(3, text(run, "hash"))
      .bind(4, static_cast<std::int64_t>(run.value("repeat", 0)))
      .bind(5, text(doc, "status"));
  bind_text_or_null(ins, 6, text(doc, "error"));
  ins.bind(7, plugin_of("model")).bind(8, plugin_of("data"));
  ins.bind(9, plugin_of("precision")).bind(10, plugin_of("stream"));
  if (auto b = number(config, "batch_size")) ins.bind(11, static_cast<std::int64_t>(*b));
  else ins.bind_null(11);
  ins.bind(12, text(config, "memory_format"));
  bind_text_or_null(ins, 13, text(doc, "device"));
  ins.bind(14, number(metrics, "images_per_s")).bind(15, number(metrics, "step_ms_mean"));
  bind_text_or_null(ins, 16, text(doc, "started_at"));
  bind_text_or_null(ins, 17, text(doc, "finished_at"));
  ins.bind(18, config.dump());
  ins.bind(19, doc.value("environment", nlohmann::json::object()).dump());
  ins.bind(20, doc.dump());
  ins.step();
  const std::int64_t id = db_.last_insert_rowid();

  Statement met(db_, "INSERT INTO run_metrics (run_id, name, value) VALUES (?1, ?2, ?3)");
  for (const auto& [name, value] : metrics.items()) {
    if (!value.is_number()) continue;
    met.bind(1, id).bind(2, name).bind(3, value.get<double>());
    met.step();
    met.reset();
  }
  Statement steps(db_, R"(INSERT INTO run_steps (run_id, step, step_ms, data_wait_ms, loss)
                          VALUES (?1, ?2, ?3, ?4, ?5))");
  for (const auto& s : doc.value("steps", nlohmann::json::array())) {
    steps.bind(1, id)
        .bind(2, static_cast<std::int64_t>(s.value("step", 0)))
        .bind(3, number(s, "step_ms"))
        .bind(4, number(s, "data_wait_ms"))
        .bind(5, number(s, "loss"));
    steps.step();
    steps.reset();
  }
  tx.commit();
  return id;
}

std::vector<RankRow> Store::ranking(const std::string& experiment) const {
  Statement st(db_, R"(SELECT experiment, name, config_hash, runs, images_per_s,
      images_per_s_min, images_per_s_max, step_ms_mean, precision, batch_size, memory_format,
      device FROM ranking WHERE (?1 = '' OR experiment = ?1)
      ORDER BY images_per_s DESC)");
  st.bind(1, experiment);
  std::vector<RankRow> rows;
  while (st.step()) {
    RankRow r;
    r.experiment = st.column_text(0);
    r.name = st.column_text(1);
    r.config_hash = st.column_text(2);
    r.runs = st.column_int(3);
    r.images_per_s = st.column_double(4);
    r.images_per_s_min = st.column_double(5);
    r.images_per_s_max = st.column_double(6);
    r.step_ms_mean = st.column_double(7);
    r.precision = st.column_text(8);
    r.batch_size = st.column_int(9);
    r.memory_format = st.column_text(10);
    r.device = st.column_text(11);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace orch::storage
