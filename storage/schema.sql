-- orch results database, schema version 10 (PRAGMA user_version = 10).
--
-- A sweep is one named execution of an experiment file; it has one row in `runs` per run
-- (configuration hash + repeat index). A retry updates that row (`attempts` counts them), so a
-- run is never duplicated. Everything below is derived from the runs' result documents, which
-- are also kept whole in runs.document_json. docs/database.md describes every table and view,
-- with example queries.
--
-- The store creates this schema in one transaction on a new file; storage/migrate.cpp brings
-- older files here. The `student_t_975` table is filled by the store (Boost.Math quantiles).

CREATE TABLE sweeps (
  id              INTEGER PRIMARY KEY,
  name            TEXT    NOT NULL UNIQUE,      -- chosen by the user; the experiment's name by default
  experiment      TEXT    NOT NULL,             -- the experiment file's `name`
  experiment_file TEXT,                         -- the path it was read from
  description     TEXT,
  created_at      TEXT    NOT NULL,             -- ISO 8601 UTC
  updated_at      TEXT    NOT NULL              -- last time a run of it started or was recorded
);

-- The plan a sweep runs, by revision. `orch sweep` records revision 1 when it first runs the
-- sweep, and refuses a file whose plan differs from the latest revision unless --replan records
-- a new one, so one revision never mixes two plans. A revision's runs are those of its
-- configurations (runs.config_hash) with repeat < its repeats; a configuration shared by two
-- revisions keeps its runs. Read commands show the latest revision unless told otherwise.
CREATE TABLE sweep_plans (
  sweep_id        INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  revision        INTEGER NOT NULL,             -- 1, 2, ... in the order they were recorded
  created_at      TEXT    NOT NULL,             -- ISO 8601 UTC
  experiment_file TEXT,                         -- the file it was planned from
  plan_json       TEXT    NOT NULL,             -- {"configurations": [{"hash", "name", "repeats",
                                                --   "steps"}]}, in plan order
  warnings_json   TEXT,                         -- the doctor's warnings that change numbers,
                                                --   as printed when the sweep started: ["..."]
  PRIMARY KEY (sweep_id, revision)
);

CREATE TABLE runs (
  id              INTEGER PRIMARY KEY,          -- stable across retries of the same run
  sweep_id        INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  experiment      TEXT    NOT NULL,
  name            TEXT    NOT NULL,             -- short configuration name, e.g. amp-bf16/b256
  config_hash     TEXT    NOT NULL,             -- identifies the resolved configuration
  repeat          INTEGER NOT NULL DEFAULT 0,   -- 0-based repeat index
  status          TEXT    NOT NULL CHECK (status IN
                    ('running', 'ok', 'failed', 'oom', 'timeout', 'interrupted', 'skipped',
                     'diverged', 'pruned')),      -- diverged: the loss became NaN or infinite;
                                                -- pruned: measured in a rung of successive
                                                -- halving, where its configuration was dropped
  error           TEXT,                         -- what went wrong, when status is not ok
  -- the configuration, denormalised for filtering (all of it is in config_json)
  model           TEXT,                         -- plugin names
  data            TEXT,
  precision       TEXT,
  stream          TEXT,
  batch_size      INTEGER,                      -- the batch that ran (the chosen one for `auto`)
  batch_auto      INTEGER NOT NULL DEFAULT 0 CHECK (batch_auto IN (0, 1)),  -- 1: found by the auto search
  memory_format   TEXT,
  -- where and when it ran
  device          TEXT,                         -- the device the run used, e.g. cuda:0
  gpu             TEXT,                         -- the GPU the scheduler pinned it to, e.g. "0"
  owner_host      TEXT,                         -- host and pid of the orchestrator running it,
  owner_pid       INTEGER,                      --   and its last sign of life, to detect a dead
  heartbeat_at    TEXT,                         --   orchestrator's runs left 'running'
  attempts        INTEGER NOT NULL DEFAULT 0,   -- how many times it was started
  started_at      TEXT,                         -- ISO 8601 UTC
  finished_at     TEXT,
  duration_s      REAL,                         -- wall time of the whole run, set-up included
  -- how the child process ended (from the document's `outcome`)
  exit_code       INTEGER,
  term_signal     INTEGER,
  stderr_tail     TEXT,
  -- headline metrics (every metric is in run_metrics)
  images_per_s    REAL,                         -- mean throughput over the measured steps
  step_ms_mean    REAL,                         -- mean step time over the measured steps
  diagnosis       TEXT,                         -- input-bound, launch-bound, pcie-bound, compute-bound, unknown (no telemetry)
  diagnosis_detail TEXT,                        -- the numbers that led to it
  -- the environment, the facts people filter on (everything is in environment_json)
  gpu_name        TEXT,
  driver_version  TEXT,
  cuda_version    TEXT,                         -- CUDA runtime version as reported, e.g. 13000
  cudnn_version   TEXT,
  torch_version   TEXT,
  hostname        TEXT,
  -- telemetry summary (samples in telemetry_samples)
  telemetry_available INTEGER,                  -- 1, 0, or NULL when the document has no telemetry
  telemetry_reason TEXT,                        -- why it is unavailable
  gpu_lost        INTEGER,                      -- 1 when NVML reported the GPU lost during the run
  config_json     TEXT    NOT NULL,             -- the resolved configuration
  environment_json TEXT,                        -- GPU, driver, versions, host, PCIe link
  document_json   TEXT,                         -- the whole result document; NULL while running
  -- whose fault a run that did not succeed was: the configuration's (an error on a healthy
  -- device), the device's (a sticky CUDA error, a lost GPU, a killed process), or the
  -- environment's (a full disk, a locked database); NULL for ok and unclassified runs
  failure_class   TEXT    CHECK (failure_class IN ('configuration', 'device', 'environment')),
  -- `search: halving`: the rung of a shorter measurement before the last rung (0, 1, ...; its
  -- config_json says `search: {rung, configuration}`); NULL for a full measurement (a grid's
  -- run, or the last rung's, which is the grid's run of that configuration)
  rung            INTEGER,
  UNIQUE (sweep_id, config_hash, repeat)
);
CREATE INDEX runs_by_experiment ON runs (experiment);
CREATE INDEX runs_by_status ON runs (sweep_id, status);

-- Every scalar metric of a run, long format (one row per metric), for ad-hoc queries.
CREATE TABLE run_metrics (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  name   TEXT    NOT NULL,
  value  REAL,
  PRIMARY KEY (run_id, name)
);

-- Per measured step: device time, host time spent waiting for data, loss.
CREATE TABLE run_steps (
  run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step         INTEGER NOT NULL,
  step_ms      REAL,
  data_wait_ms REAL,
  loss         REAL,
  PRIMARY KEY (run_id, step)
);

-- NVML samples taken during the run; t_s is seconds since the run started. A field the GPU
-- does not support is NULL (the document's telemetry.missing says why).
CREATE TABLE telemetry_samples (
  run_id              INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq                 INTEGER NOT NULL,         -- 0-based sample index
  t_s                 REAL,
  gpu_util_pct        REAL,
  mem_util_pct        REAL,
  power_w             REAL,
  sm_clock_mhz        REAL,
  mem_clock_mhz       REAL,
  temperature_c       REAL,
  memory_used_bytes   INTEGER,
  pcie_rx_bytes_per_s REAL,
  pcie_tx_bytes_per_s REAL,
  throttle_reasons    INTEGER,                  -- NVML clocks-event reason bit mask
  PRIMARY KEY (run_id, seq)
);

-- The host's samples taken during the run, beside the GPU's (telemetry/host_sampler.h): CPU
-- busy shares since the previous reading (NULL when no tick passed); t_s as above. The
-- document's host_telemetry.missing says why a field is NULL.
CREATE TABLE host_samples (
  run_id              INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq                 INTEGER NOT NULL,         -- 0-based sample index
  t_s                 REAL,
  cpu_util_pct        REAL,                     -- every core together
  busiest_core_pct    REAL,                     -- the busiest single core in the interval
  busiest_core        INTEGER,                  -- its number (cpuN)
  load1               REAL,                     -- /proc/loadavg's 1-minute load
  mem_available_bytes INTEGER,                  -- /proc/meminfo's MemAvailable
  PRIMARY KEY (run_id, seq)
);

-- What LibTorch's profiler saw over a run's `profile.steps` extra steps, run after the measured
-- ones (one row per profiled run; from the document's `profile`). kernels_per_step is 0 on the
-- CPU, where there are no kernels, and the GPU columns are NULL there.
CREATE TABLE run_profile (
  run_id                 INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  steps                  INTEGER NOT NULL,    -- profiled steps
  profiler               TEXT,                -- kineto
  activities             TEXT,                -- cpu, or cpu,cuda
  trace_path             TEXT,                -- the Chrome trace file (Perfetto, chrome://tracing), or NULL
  trace_bytes            INTEGER,
  step_ms                REAL,                -- wall time per profiled step, profiler on
  measured_step_ms       REAL,                -- the run's measured step time, profiler off
  kernels_per_step       REAL,                -- GPU kernels per step; 0 on the CPU
  gpu_kernel_ms_per_step REAL,                -- kernel durations summed, per step
  gpu_busy_ms_per_step   REAL,                -- time at least one kernel ran, per step
  gpu_busy_share         REAL,                -- gpu_busy_ms_per_step / measured_step_ms, 0..1
  gpu_busy_share_profiled REAL,               -- gpu_busy_ms_per_step / step_ms, 0..1
  cuda_launches_per_step REAL,                -- host calls that launched GPU work, per step
  cpu_ops_per_step       REAL,                -- ATen operators per step, nested ones included
  error                  TEXT                 -- why profiling, or writing the trace, failed
);

-- The operations that took the most time over the profiled steps: GPU kernels by duration,
-- host operators by self time (their time minus that of the operators they called).
CREATE TABLE run_profile_ops (
  run_id   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  kind     TEXT    NOT NULL CHECK (kind IN ('kernel', 'cpu_op')),
  position INTEGER NOT NULL,                  -- 1 = the most time, within its kind
  name     TEXT    NOT NULL,
  calls    INTEGER,                           -- over all profiled steps
  total_ms REAL,                              -- summed durations over all profiled steps
  self_ms  REAL,                              -- total_ms minus nested operators (= total_ms for kernels)
  share    REAL,                              -- self_ms / all self_ms of its kind in the run
  PRIMARY KEY (run_id, kind, position)
);

-- The probe curve of a `batch_size: auto` search: each batch it tried, in order, with the
-- throughput and peak memory measured and how the probe ended (ok, oom, failed).
CREATE TABLE batch_probes (
  run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,         -- 0-based, in the order probed
  batch_size        INTEGER NOT NULL,
  images_per_s      REAL,                     -- NULL when the probe did not finish
  peak_memory_bytes INTEGER,
  outcome           TEXT    NOT NULL,
  PRIMARY KEY (run_id, seq)
);

-- The health checks a sweep ran on a GPU before retiring it (after repeated device failures):
-- a fresh process allocates, launches a kernel and synchronises; only a failed check retires.
CREATE TABLE device_checks (
  sweep_id   INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  gpu        TEXT    NOT NULL,                -- the scheduler's slot, e.g. "0"
  checked_at TEXT    NOT NULL,                -- ISO 8601 UTC
  healthy    INTEGER NOT NULL CHECK (healthy IN (0, 1)),
  detail     TEXT                             -- what the check saw (its error, when unhealthy)
);

-- Where each invocation of `orch sweep` spent its wall time (result/run_phases.h): its wall
-- clock, its slots (GPUs, or 1 for the CPU), and the phases of the runs that measured, summed.
-- What no run took (scheduling, recording, idle slots) is slot_s less the phases.
CREATE TABLE sweep_invocations (
  id             INTEGER PRIMARY KEY,
  sweep_id       INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  started_at     TEXT    NOT NULL,              -- ISO 8601 UTC
  finished_at    TEXT    NOT NULL,
  wall_s         REAL    NOT NULL,
  slots          INTEGER NOT NULL,
  runs           INTEGER NOT NULL,              -- runs that measured (their phases below)
  measure_s      REAL    NOT NULL,
  warmup_s       REAL    NOT NULL,
  startup_s      REAL    NOT NULL,              -- process start, plugins, CUDA until the run began
  setup_s        REAL    NOT NULL,              -- model, data, device, until the first warm-up step
  after_s        REAL    NOT NULL,              -- read-back, profiled steps, after the last step
  teardown_s     REAL    NOT NULL,              -- document written, device freed, process exit
  batch_search_s REAL    NOT NULL,              -- `batch_size: auto` probes
  unmeasured_s   REAL    NOT NULL               -- slot time of runs that measured nothing
);

-- Two-sided 95% Student t quantiles (t at 0.975) by degrees of freedom, 1..1000, for the
-- confidence intervals in `ranking`. Filled by the store; beyond 1000, 1.96 is used.
CREATE TABLE student_t_975 (
  dof INTEGER PRIMARY KEY,
  t   REAL NOT NULL
);

-- The key metrics of each run, one column each (run_metrics pivoted).
CREATE VIEW run_key_metrics AS
SELECT run_id,
       MAX(CASE name WHEN 'device_step_ms_mean'      THEN value END) AS device_step_ms_mean,
       MAX(CASE name WHEN 'step_ms_p50'              THEN value END) AS step_ms_p50,
       MAX(CASE name WHEN 'step_ms_p90'              THEN value END) AS step_ms_p90,
       MAX(CASE name WHEN 'step_ms_p99'              THEN value END) AS step_ms_p99,
       MAX(CASE name WHEN 'data_wait_ms_mean'        THEN value END) AS data_wait_ms_mean,
       MAX(CASE name WHEN 'peak_allocated_bytes'     THEN value END) AS peak_allocated_bytes,
       MAX(CASE name WHEN 'peak_reserved_bytes'      THEN value END) AS peak_reserved_bytes,
       MAX(CASE name WHEN 'gpu_util_mean_pct'        THEN value END) AS gpu_util_mean_pct,
       MAX(CASE name WHEN 'mem_util_mean_pct'        THEN value END) AS mem_util_mean_pct,
       MAX(CASE name WHEN 'power_mean_w'             THEN value END) AS power_mean_w,
       MAX(CASE name WHEN 'power_max_w'              THEN value END) AS power_max_w,
       MAX(CASE name WHEN 'sm_clock_mean_mhz'        THEN value END) AS sm_clock_mean_mhz,
       MAX(CASE name WHEN 'temperature_max_c'        THEN value END) AS temperature_max_c,
       MAX(CASE name WHEN 'memory_used_max_bytes'    THEN value END) AS memory_used_max_bytes,
       MAX(CASE name WHEN 'pcie_rx_mean_bytes_per_s' THEN value END) AS pcie_rx_mean_bytes_per_s,
       MAX(CASE name WHEN 'pcie_tx_mean_bytes_per_s' THEN value END) AS pcie_tx_mean_bytes_per_s,
       MAX(CASE name WHEN 'host_peak_rss_bytes'      THEN value END) AS host_peak_rss_bytes,
       MAX(CASE name WHEN 'host_cpu_util_mean_pct'   THEN value END) AS host_cpu_util_mean_pct,
       MAX(CASE name WHEN 'host_cpu_util_max_pct'    THEN value END) AS host_cpu_util_max_pct,
       MAX(CASE name WHEN 'host_cpu_busiest_core_mean_pct' THEN value END)
         AS host_cpu_busiest_core_mean_pct,
       MAX(CASE name WHEN 'host_load1_mean'          THEN value END) AS host_load1_mean,
       MAX(CASE name WHEN 'host_load1_max'           THEN value END) AS host_load1_max,
       MAX(CASE name WHEN 'host_mem_available_min_bytes' THEN value END)
         AS host_mem_available_min_bytes,
       MAX(CASE name WHEN 'host_cpu_cores'           THEN value END) AS host_cpu_cores,
       MAX(CASE name WHEN 'loss_first'               THEN value END) AS loss_first,
       MAX(CASE name WHEN 'loss_last'                THEN value END) AS loss_last
FROM run_metrics
GROUP BY run_id;

-- One row per run: what it was, how it ended, its key metrics (the GPU's and, beside them, the
-- host CPU's, load and memory over the measured steps) and diagnosis, and for a profiled run its
-- kernels per step, GPU busy share and trace (NULL when not profiled).
CREATE VIEW run_summary AS
SELECT r.id AS run_id, s.name AS sweep, r.experiment, r.name, r.config_hash, r.repeat,
       r.status, r.attempts, r.gpu, r.device, r.model, r.data, r.precision, r.stream,
       r.batch_size, r.batch_auto, r.memory_format,
       r.images_per_s, r.step_ms_mean, m.device_step_ms_mean, m.step_ms_p50, m.step_ms_p90,
       m.step_ms_p99, m.data_wait_ms_mean, r.step_ms_mean - m.data_wait_ms_mean AS compute_ms_mean,
       m.peak_allocated_bytes, m.peak_reserved_bytes, m.gpu_util_mean_pct, m.mem_util_mean_pct,
       m.power_mean_w, m.power_max_w, m.sm_clock_mean_mhz, m.temperature_max_c,
       m.pcie_rx_mean_bytes_per_s, m.pcie_tx_mean_bytes_per_s, m.host_peak_rss_bytes,
       m.host_cpu_util_mean_pct, m.host_cpu_util_max_pct, m.host_cpu_busiest_core_mean_pct,
       m.host_load1_mean, m.host_load1_max, m.host_mem_available_min_bytes, m.host_cpu_cores,
       m.loss_first, m.loss_last,
       r.diagnosis, r.diagnosis_detail, r.error, r.failure_class, r.exit_code, r.term_signal,
       r.gpu_name, r.started_at, r.finished_at, r.duration_s,
       p.kernels_per_step AS profile_kernels_per_step,
       p.gpu_busy_share AS profile_gpu_busy_share,
       p.trace_path AS profile_trace,
       r.rung
FROM runs r
JOIN sweeps s ON s.id = r.sweep_id
LEFT JOIN run_key_metrics m ON m.run_id = r.id
LEFT JOIN run_profile p ON p.run_id = r.id;

-- One row per configuration of a sweep over its successful full measurements (a rung's
-- shorter ones are left out: they are not comparable), fastest first: mean
-- throughput, sample standard deviation, 95% confidence half-width (Student t, n-1 degrees
-- of freedom; NULL when n = 1), speed-up over the sweep's slowest configuration.
CREATE VIEW ranking AS
WITH ok AS (
  SELECT sweep_id, config_hash, images_per_s AS x
  FROM runs WHERE status = 'ok' AND images_per_s IS NOT NULL AND rung IS NULL
), agg AS (
  SELECT sweep_id, config_hash, COUNT(*) AS n, AVG(x) AS mean, MIN(x) AS lo, MAX(x) AS hi
  FROM ok GROUP BY sweep_id, config_hash
), spread AS (
  -- two passes (deviations from the mean), not sum-of-squares, to avoid cancellation
  SELECT agg.sweep_id, agg.config_hash,
         CASE WHEN agg.n > 1
              THEN sqrt(SUM((ok.x - agg.mean) * (ok.x - agg.mean)) / (agg.n - 1)) END AS stddev
  FROM agg JOIN ok ON ok.sweep_id = agg.sweep_id AND ok.config_hash = agg.config_hash
  GROUP BY agg.sweep_id, agg.config_hash
), info AS (
  SELECT r.sweep_id, r.config_hash, MAX(r.experiment) AS experiment, MAX(r.name) AS name,
         AVG(r.step_ms_mean) AS step_ms_mean, AVG(m.data_wait_ms_mean) AS data_wait_ms_mean,
         MAX(m.peak_allocated_bytes) AS peak_allocated_bytes,
         AVG(m.gpu_util_mean_pct) AS gpu_util_mean_pct, AVG(m.power_mean_w) AS power_mean_w,
         MAX(r.precision) AS precision, MAX(r.batch_size) AS batch_size,
         MAX(r.memory_format) AS memory_format, MAX(r.stream) AS stream,
         MAX(r.device) AS device, MAX(r.gpu_name) AS gpu_name,
         MAX(r.finished_at) AS last_finished_at
  FROM runs r LEFT JOIN run_key_metrics m ON m.run_id = r.id
  WHERE r.status = 'ok' AND r.images_per_s IS NOT NULL AND r.rung IS NULL
  GROUP BY r.sweep_id, r.config_hash
)
SELECT s.name AS sweep, agg.sweep_id, info.experiment, info.name, agg.config_hash,
       RANK() OVER (PARTITION BY agg.sweep_id ORDER BY agg.mean DESC) AS rank,
       agg.n AS runs,
       agg.mean AS images_per_s,
       spread.stddev AS images_per_s_stddev,
       spread.stddev * COALESCE(t.t, 1.959964) / sqrt(agg.n) AS images_per_s_ci95,
       agg.lo AS images_per_s_min,
       agg.hi AS images_per_s_max,
       agg.mean / MIN(agg.mean) OVER (PARTITION BY agg.sweep_id) AS speedup,
       info.step_ms_mean, info.data_wait_ms_mean, info.peak_allocated_bytes,
       info.gpu_util_mean_pct, info.power_mean_w,
       info.precision, info.batch_size, info.memory_format, info.stream, info.device,
       info.gpu_name, info.last_finished_at,
       spread.stddev * COALESCE(t.t, 1.959964) / sqrt(agg.n) / agg.mean
         AS images_per_s_ci95_share,
       -- NOISY as rank says it (analysis/statistics.h, kNoisyShare): the interval reaches
       -- further than 10% of the mean either side; a single run has no interval and is not.
       CASE WHEN spread.stddev * COALESCE(t.t, 1.959964) / sqrt(agg.n) > 0.10 * agg.mean
            THEN 1 ELSE 0 END AS noisy
FROM agg
JOIN spread ON spread.sweep_id = agg.sweep_id AND spread.config_hash = agg.config_hash
JOIN info ON info.sweep_id = agg.sweep_id AND info.config_hash = agg.config_hash
JOIN sweeps s ON s.id = agg.sweep_id
LEFT JOIN student_t_975 t ON t.dof = agg.n - 1
ORDER BY agg.sweep_id, images_per_s DESC;

-- Every run that did not succeed, with how it ended.
CREATE VIEW failures AS
SELECT r.id AS run_id, s.name AS sweep, r.experiment, r.name, r.config_hash, r.repeat,
       r.status, r.failure_class, r.attempts, r.gpu, r.batch_size, r.error, r.exit_code,
       r.term_signal, r.stderr_tail, r.finished_at
FROM runs r JOIN sweeps s ON s.id = r.sweep_id
WHERE r.status IN ('failed', 'oom', 'timeout', 'interrupted', 'skipped', 'diverged');

-- Progress of each sweep: runs by status.
CREATE VIEW sweep_status AS
SELECT s.id AS sweep_id, s.name AS sweep, s.experiment, s.created_at, s.updated_at,
       COUNT(r.id) AS runs,
       COALESCE(SUM(r.status = 'ok'), 0) AS ok,
       COALESCE(SUM(r.status IN ('failed', 'oom', 'timeout')), 0) AS failed,
       COALESCE(SUM(r.status = 'running'), 0) AS running,
       COALESCE(SUM(r.status = 'interrupted'), 0) AS interrupted,
       COALESCE(SUM(r.status = 'skipped'), 0) AS skipped,
       COALESCE(SUM(r.status = 'diverged'), 0) AS diverged,
       COALESCE(SUM(r.status = 'pruned'), 0) AS pruned
FROM sweeps s LEFT JOIN runs r ON r.sweep_id = s.id
GROUP BY s.id;

-- The environment of each run, one column per fact (from environment_json): what `orch compare`
-- judges two nights by. `variables` holds every watched variable that was set, as a JSON object;
-- the ones that change what is measured have a column of their own (NULL: unset).
CREATE VIEW run_environment AS
SELECT r.id AS run_id, s.name AS sweep, r.name, r.hostname, r.gpu, r.gpu_name,
       json_extract(r.environment_json, '$.device')                 AS device,
       json_extract(r.environment_json, '$.gpu_uuid')               AS gpu_uuid,
       json_extract(r.environment_json, '$.compute_capability')     AS compute_capability,
       json_extract(r.environment_json, '$.sm_count')               AS sm_count,
       json_extract(r.environment_json, '$.gpu_memory_bytes')       AS gpu_memory_bytes,
       json_extract(r.environment_json, '$.gpu_memory_cap_bytes')   AS gpu_memory_cap_bytes,
       r.driver_version, r.cuda_version, r.cudnn_version, r.torch_version,
       json_extract(r.environment_json, '$.torch_threads')          AS torch_threads,
       json_extract(r.environment_json, '$.orch_version')           AS orch_version,
       json_extract(r.environment_json, '$.git_revision')           AS git_revision,
       json_extract(r.environment_json, '$.cpu_model')              AS cpu_model,
       json_extract(r.environment_json, '$.cpu_count')              AS cpu_count,
       json_extract(r.environment_json, '$.persistence_mode')       AS persistence_mode,
       json_extract(r.environment_json, '$.pcie.gen_current')       AS pcie_gen_current,
       json_extract(r.environment_json, '$.pcie.width_current')     AS pcie_width_current,
       json_extract(r.environment_json, '$.pcie.gen_max')           AS pcie_gen_max,
       json_extract(r.environment_json, '$.pcie.width_max')         AS pcie_width_max,
       json_extract(r.environment_json, '$.variables.CUDA_LAUNCH_BLOCKING') AS cuda_launch_blocking,
       json_extract(r.environment_json, '$.variables.CUDA_VISIBLE_DEVICES') AS cuda_visible_devices,
       json_extract(r.environment_json, '$.variables.OMP_NUM_THREADS')      AS omp_num_threads,
       json_extract(r.environment_json, '$.variables.CUDA_DEVICE_MAX_CONNECTIONS')
         AS cuda_device_max_connections,
       json_extract(r.environment_json, '$.variables.CUBLAS_WORKSPACE_CONFIG')
         AS cublas_workspace_config,
       json_extract(r.environment_json, '$.variables.PYTORCH_CUDA_ALLOC_CONF')
         AS pytorch_cuda_alloc_conf,
       json_extract(r.environment_json, '$.variables.NVIDIA_TF32_OVERRIDE') AS nvidia_tf32_override,
       json_extract(r.environment_json, '$.variables.CUDA_MODULE_LOADING')  AS cuda_module_loading,
       json_extract(r.environment_json, '$.variables.ORCH_GPU_MEMORY_CAP')  AS orch_gpu_memory_cap,
       json_extract(r.environment_json, '$.variables')              AS variables
FROM runs r JOIN sweeps s ON s.id = r.sweep_id;

-- Per sweep, over all its invocations: the time there was (wall x slots) and the share of it
-- each phase took; measured_share is what a night was worth.
CREATE VIEW sweep_efficiency AS
SELECT s.id AS sweep_id, s.name AS sweep, COUNT(i.id) AS invocations, SUM(i.runs) AS runs,
       SUM(i.wall_s) AS wall_s, SUM(i.wall_s * i.slots) AS slot_s,
       SUM(i.measure_s) AS measure_s, SUM(i.warmup_s) AS warmup_s, SUM(i.startup_s) AS startup_s,
       SUM(i.setup_s) AS setup_s, SUM(i.after_s) AS after_s, SUM(i.teardown_s) AS teardown_s,
       SUM(i.batch_search_s) AS batch_search_s, SUM(i.unmeasured_s) AS unmeasured_s,
       SUM(i.measure_s) / NULLIF(SUM(i.wall_s * i.slots), 0) AS measured_share,
       SUM(i.warmup_s) / NULLIF(SUM(i.wall_s * i.slots), 0) AS warmup_share,
       SUM(i.startup_s) / NULLIF(SUM(i.wall_s * i.slots), 0) AS startup_share,
       SUM(i.setup_s) / NULLIF(SUM(i.wall_s * i.slots), 0) AS setup_share,
       SUM(i.after_s + i.teardown_s) / NULLIF(SUM(i.wall_s * i.slots), 0) AS after_share,
       SUM(i.batch_search_s) / NULLIF(SUM(i.wall_s * i.slots), 0) AS batch_search_share,
       MAX(0, SUM(i.wall_s * i.slots) - SUM(i.measure_s + i.warmup_s + i.startup_s + i.setup_s +
                                            i.after_s + i.teardown_s + i.batch_search_s +
                                            i.unmeasured_s))
         / NULLIF(SUM(i.wall_s * i.slots), 0) AS between_runs_share
FROM sweeps s JOIN sweep_invocations i ON i.sweep_id = s.id
GROUP BY s.id;
