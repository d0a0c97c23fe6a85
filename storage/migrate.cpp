// Schema creation and the v1 -> v2 migration.
#include "storage/migrate.h"

#include <vector>

#include "storage/diagnosis.h"
#include "storage/schema_sql.h"
#include "storage/statistics.h"

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

void fill_t_quantiles(Database& db) {
  Statement count(db, "SELECT COUNT(*) FROM student_t_975");
  count.step();
  if (count.column_int(0) > 0) return;
  Statement ins(db, "INSERT INTO student_t_975 (dof, t) VALUES (?1, ?2)");
  for (std::int64_t dof = 1; dof <= 1000; ++dof) {
    ins.bind(1, dof).bind(2, t_quantile_975(dof));
    ins.step();
    ins.reset();
  }
}

void rediagnose_all(Database& db) {
  std::vector<std::pair<std::int64_t, std::string>> docs;
  {
    Statement st(db, "SELECT id, document_json FROM runs WHERE status = 'ok' AND document_json IS NOT NULL");
    while (st.step()) docs.emplace_back(st.column_int(0), st.column_text(1));
  }
  Statement upd(db, "UPDATE runs SET diagnosis = ?2, diagnosis_detail = ?3 WHERE id = ?1");
  for (const auto& [id, text] : docs) {
    const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) continue;
    const auto d = diagnose(doc);
    upd.bind(1, id);
    if (d) upd.bind(2, d->label).bind(3, d->detail);
    else upd.bind_null(2).bind_null(3);
    upd.step();
    upd.reset();
  }
}

}  // namespace orch::storage
