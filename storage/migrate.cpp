// Schema creation and the migrations from versions 1 to 9.
#include "storage/migrate.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/statistics.h"
#include "storage/profile_rows.h"
#include "storage/schema_sql.h"

namespace orch::storage {
namespace {

// Moves the v1 objects aside (views and indexes dropped: their names are reused by the new
// schema, and CREATE would fail on a clash), so the current schema can be created under the
// final names. The renamed tables' foreign keys follow the rename, so nothing dangles.
constexpr const char* kMoveV1Aside = R"sql(
DROP VIEW IF EXISTS ranking;
DROP INDEX IF EXISTS runs_by_hash;
DROP INDEX IF EXISTS runs_by_experiment;
ALTER TABLE run_steps RENAME TO v1_run_steps;
ALTER TABLE run_metrics RENAME TO v1_run_metrics;
ALTER TABLE runs RENAME TO v1_runs;
)sql";

constexpr const char* kCopyV1 = R"sql(
INSERT INTO sweeps (name, experiment, experiment_file, description, created_at, updated_at)
SELECT experiment, experiment, NULL, 'migrated from schema version 1',
       COALESCE(MIN(started_at), strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
       COALESCE(MAX(finished_at), MAX(started_at), strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
FROM v1_runs GROUP BY experiment ORDER BY MIN(id);

WITH numbered AS (
  SELECT id, experiment, config_hash, repeat,
         ROW_NUMBER() OVER (PARTITION BY experiment, config_hash, repeat ORDER BY id) AS nth,
         MAX(repeat) OVER (PARTITION BY experiment, config_hash) AS max_repeat
  FROM v1_runs
), renumbered AS (
  SELECT id, max_repeat + ROW_NUMBER() OVER (PARTITION BY experiment, config_hash ORDER BY id)
         AS new_repeat
  FROM numbered WHERE nth > 1
)
INSERT INTO runs (id, sweep_id, experiment, name, config_hash, repeat, status, error, model, data,
                  precision, stream, batch_size, memory_format, device, attempts, started_at,
                  finished_at, duration_s, images_per_s, step_ms_mean, gpu_name, driver_version,
                  cuda_version, cudnn_version, torch_version, hostname, config_json,
                  environment_json, document_json)
SELECT v.id, s.id, v.experiment, v.name, v.config_hash, COALESCE(d.new_repeat, v.repeat),
       v.status, v.error, v.model, v.data, v.precision, v.stream, v.batch_size, v.memory_format,
       v.device, 1, v.started_at, v.finished_at,
       json_extract(v.document_json, '$.duration_s'), v.images_per_s, v.step_ms_mean,
       json_extract(v.environment_json, '$.gpu_name'),
       json_extract(v.environment_json, '$.driver_version'),
       json_extract(v.environment_json, '$.cuda_runtime_version'),
       json_extract(v.environment_json, '$.cudnn_version'),
       json_extract(v.environment_json, '$.torch_version'),
       json_extract(v.environment_json, '$.hostname'),
       v.config_json, v.environment_json, v.document_json
FROM v1_runs v
JOIN sweeps s ON s.name = v.experiment
LEFT JOIN renumbered d ON d.id = v.id;

INSERT INTO run_metrics (run_id, name, value) SELECT run_id, name, value FROM v1_run_metrics;
INSERT INTO run_steps (run_id, step, step_ms, data_wait_ms, loss)
  SELECT run_id, step, step_ms, data_wait_ms, loss FROM v1_run_steps;

DROP TABLE v1_run_steps;
DROP TABLE v1_run_metrics;
DROP TABLE v1_runs;
)sql";

// One statement of the current schema, from `head` ("CREATE TABLE run_profile") to its ';',
// skipping `--` comments and quoted text, so a migration creates exactly what a new file has.
std::string schema_statement(const std::string& head) {
  const std::string sql = kSchemaSql;
  std::size_t start = std::string::npos;
  for (std::size_t at = sql.find(head); at != std::string::npos; at = sql.find(head, at + 1)) {
    const bool line_start = at == 0 || sql[at - 1] == '\n';
    const bool word_end = at + head.size() < sql.size() &&
                          (sql[at + head.size()] == ' ' || sql[at + head.size()] == '\n');
    if (line_start && word_end) {
      start = at;
      break;
    }
  }
  if (start == std::string::npos) throw std::logic_error("schema.sql has no '" + head + "'");
  for (std::size_t i = start; i < sql.size(); ++i) {
    if (sql.compare(i, 2, "--") == 0) {
      i = sql.find('\n', i);
      if (i == std::string::npos) break;
    } else if (sql[i] == '\'') {
      i = sql.find('\'', i + 1);
      if (i == std::string::npos) break;
    } else if (sql[i] == ';') {
      return sql.substr(start, i - start);
    }
  }
  throw std::logic_error("schema.sql: '" + head + "' has no end");
}

}  // namespace

void create_schema(Database& db) {
  db.exec(kSchemaSql);
  fill_t_quantiles(db);
}

void migrate_v1_to_v2(Database& db) {
  db.exec(kMoveV1Aside);
  create_schema(db);
  db.exec(kCopyV1);
  rediagnose_all(db);
}

void migrate_v2_to_v3(Database& db) {
  db.exec("DROP VIEW run_summary");
  for (const char* head :
       {"CREATE TABLE run_profile", "CREATE TABLE run_profile_ops", "CREATE VIEW run_summary"}) {
    db.exec(schema_statement(head));
  }
  std::vector<std::pair<std::int64_t, std::string>> docs;
  {
    Statement st(db, R"(SELECT id, document_json FROM runs
                        WHERE json_type(document_json, '$.profile') = 'object')");
    while (st.step()) docs.emplace_back(st.column_int(0), st.column_text(1));
  }
  Statement upd(db, "UPDATE runs SET diagnosis = ?2, diagnosis_detail = ?3 WHERE id = ?1");
  for (const auto& [id, text] : docs) {
    const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) continue;
    insert_profile(db, id, doc);
    // The diagnosis weighs the profile's evidence (diagnosis.h); only these runs can change.
    if (const auto d = analysis::diagnose(doc)) {
      upd.bind(1, id).bind(2, d->label).bind(3, d->detail);
      upd.step();
      upd.reset();
    }
  }
}

void migrate_v3_to_v4(Database& db) { db.exec(schema_statement("CREATE TABLE sweep_plans")); }

namespace {

// The stored text of `runs` becomes the current schema's, which has the same columns in the
// same order and a CHECK that admits every status the old one did, so no row needs rewriting.
void replace_runs_definition(Database& db) {
  std::int64_t schema_cookie = 0;
  {
    Statement st(db, "PRAGMA schema_version");
    st.step();
    schema_cookie = st.column_int(0);
  }
  db.exec("PRAGMA writable_schema=ON");
  {
    Statement upd(db, "UPDATE sqlite_master SET sql = ?1 WHERE type = 'table' AND name = 'runs'");
    upd.bind(1, schema_statement("CREATE TABLE runs"));
    upd.step();
  }
  db.exec("PRAGMA schema_version=" + std::to_string(schema_cookie + 1));
  db.exec("PRAGMA writable_schema=OFF");
}

}  // namespace

void migrate_v4_to_v5(Database& db) {
  for (const char* view : {"failures", "sweep_status", "run_summary"})
    db.exec(std::string("DROP VIEW ") + view);
  db.exec(
      "ALTER TABLE runs ADD COLUMN failure_class TEXT CHECK (failure_class IN "
      "('configuration', 'device', 'environment'))");
  replace_runs_definition(db);
  for (const char* head :
       {"CREATE TABLE batch_probes", "CREATE TABLE device_checks", "CREATE VIEW run_summary",
        "CREATE VIEW failures", "CREATE VIEW sweep_status"})
    db.exec(schema_statement(head));
}

void migrate_v5_to_v6(Database& db) {
  for (const char* head : {"CREATE TABLE sweep_invocations", "CREATE VIEW sweep_efficiency"})
    db.exec(schema_statement(head));
}

void migrate_v6_to_v7(Database& db) {
  db.exec("DROP VIEW run_environment");
  db.exec(schema_statement("CREATE VIEW run_environment"));
}

void migrate_v7_to_v8(Database& db) {
  for (const char* view : {"ranking", "sweep_status", "run_summary"})
    db.exec(std::string("DROP VIEW ") + view);
  // From version 4, the 5 step already stored the current definition (rung included), and
  // a record shorter than its table reads NULL for the columns it lacks, as after ADD COLUMN.
  bool has_rung = false;
  {
    Statement st(db, "SELECT 1 FROM pragma_table_info('runs') WHERE name = 'rung'");
    has_rung = st.step();
  }
  if (!has_rung) db.exec("ALTER TABLE runs ADD COLUMN rung INTEGER");
  replace_runs_definition(db);
  for (const char* head :
       {"CREATE VIEW run_summary", "CREATE VIEW ranking", "CREATE VIEW sweep_status"})
    db.exec(schema_statement(head));
}

void migrate_v8_to_v9(Database& db) {
  // run_summary reads run_key_metrics, so it goes first and comes back last.
  for (const char* view : {"run_summary", "run_key_metrics"})
    db.exec(std::string("DROP VIEW ") + view);
  for (const char* head :
       {"CREATE TABLE host_samples", "CREATE VIEW run_key_metrics", "CREATE VIEW run_summary"})
    db.exec(schema_statement(head));
}

void migrate_v9_to_v10(Database& db) {
  db.exec("DROP VIEW ranking");
  db.exec(schema_statement("CREATE VIEW ranking"));
}

void fill_t_quantiles(Database& db) {
  Statement count(db, "SELECT COUNT(*) FROM student_t_975");
  count.step();
  if (count.column_int(0) > 0) return;
  Statement ins(db, "INSERT INTO student_t_975 (dof, t) VALUES (?1, ?2)");
  for (std::int64_t dof = 1; dof <= 1000; ++dof) {
    ins.bind(1, dof).bind(2, analysis::t_quantile_975(dof));
    ins.step();
    ins.reset();
  }
}

void rediagnose_all(Database& db) {
  std::vector<std::pair<std::int64_t, std::string>> docs;
  {
    Statement st(
        db, "SELECT id, document_json FROM runs WHERE status = 'ok' AND document_json IS NOT NULL");
    while (st.step()) docs.emplace_back(st.column_int(0), st.column_text(1));
  }
  Statement upd(db, "UPDATE runs SET diagnosis = ?2, diagnosis_detail = ?3 WHERE id = ?1");
  for (const auto& [id, text] : docs) {
    const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) continue;
    const auto d = analysis::diagnose(doc);
    upd.bind(1, id);
    if (d)
      upd.bind(2, d->label).bind(3, d->detail);
    else
      upd.bind_null(2).bind_null(3);
    upd.step();
    upd.reset();
  }
}

}  // namespace orch::storage
