-- Frozen copy of schema version 1 (orch 0.1.0), kept to test the migration to version 2.
-- Never edit: it is what old databases on disk look like.
-- orch results database, schema version 1.
-- One row in `runs` per executed run (a configuration hash + repeat index may appear more than
-- once when the same experiment is run again). Everything here is derived from the run's
-- result document, which is also stored whole in runs.document_json.
-- Query it with any SQLite client: sqlite3 results.db 'SELECT * FROM ranking'.

CREATE TABLE IF NOT EXISTS runs (
  id              INTEGER PRIMARY KEY,
  experiment      TEXT    NOT NULL,             -- the experiment file's `name`
  name            TEXT    NOT NULL,             -- short configuration name, e.g. amp-bf16/b256
  config_hash     TEXT    NOT NULL,             -- identifies the resolved configuration
  repeat          INTEGER NOT NULL DEFAULT 0,   -- 0-based repeat index
  status          TEXT    NOT NULL CHECK (status IN
                    ('running', 'ok', 'failed', 'oom', 'timeout', 'interrupted', 'skipped')),
  error           TEXT,                         -- what went wrong, when status is not ok
  model           TEXT,                         -- plugin names, for easy filtering
  data            TEXT,
  precision       TEXT,
  stream          TEXT,
  batch_size      INTEGER,
  memory_format   TEXT,
  device          TEXT,                         -- the device the run used, e.g. cuda:0
  images_per_s    REAL,                         -- mean throughput over the measured steps
  step_ms_mean    REAL,                         -- mean step time over the measured steps
  started_at      TEXT,                         -- ISO 8601 UTC
  finished_at     TEXT,
  config_json     TEXT    NOT NULL,             -- the resolved configuration
  environment_json TEXT,                        -- GPU, driver, versions, host
  document_json   TEXT    NOT NULL              -- the whole result document
);
CREATE INDEX IF NOT EXISTS runs_by_hash ON runs (config_hash, repeat);
CREATE INDEX IF NOT EXISTS runs_by_experiment ON runs (experiment);

-- Every scalar metric of a run, long format (one row per metric), for ad-hoc queries.
CREATE TABLE IF NOT EXISTS run_metrics (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  name   TEXT    NOT NULL,
  value  REAL,
  PRIMARY KEY (run_id, name)
);

-- Per measured step: device time, host time spent waiting for data, loss.
CREATE TABLE IF NOT EXISTS run_steps (
  run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step         INTEGER NOT NULL,
  step_ms      REAL,
  data_wait_ms REAL,
  loss         REAL,
  PRIMARY KEY (run_id, step)
);

-- One row per configuration (experiment + hash) over its successful runs, fastest first.
CREATE VIEW IF NOT EXISTS ranking AS
SELECT experiment,
       name,
       config_hash,
       COUNT(*)                    AS runs,
       AVG(images_per_s)           AS images_per_s,
       MIN(images_per_s)           AS images_per_s_min,
       MAX(images_per_s)           AS images_per_s_max,
       AVG(step_ms_mean)           AS step_ms_mean,
       MAX(precision)              AS precision,
       MAX(batch_size)             AS batch_size,
       MAX(memory_format)          AS memory_format,
       MAX(device)                 AS device,
       MAX(finished_at)            AS last_finished_at
FROM runs
WHERE status = 'ok'
GROUP BY experiment, config_hash
ORDER BY images_per_s DESC;
