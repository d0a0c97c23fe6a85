// The result store: owns the SQLite schema, its version and migrations; records the life of
// each run of a sweep (begin, heartbeat, result document, interruption), one durable
// transaction per step; keeps the sweeps' plan revisions; and answers the queries of rank,
// compare, export, report and the plan's estimate.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "result/run_phases.h"
#include "storage/run_samples.h"
#include "storage/sqlite.h"

namespace orch::storage {

/// The schema version this build writes. Older databases are migrated on open; newer ones
/// are refused (a newer orch wrote them, and this one would misread them).
constexpr int kSchemaVersion = 10;

/// How long a write waits for another connection's lock before it fails with SQLITE_BUSY:
/// 10 s, or ORCH_BUSY_TIMEOUT_MS (for tests that hold a lock on purpose).
int busy_timeout_ms();

/// What to tell the user about an environment error (SqliteError::environment()) on the
/// database at `path`, e.g. "database is locked by another process: PATH (held longer than
/// 10 s): ...", "no space left on PATH (SQLITE_FULL): free space and run the same command again".
std::string database_fault_text(const SqliteError& e, const std::string& path);

/// One configuration in the ranking view, aggregated over its successful runs.
struct RankRow {
  std::string experiment, name, config_hash, precision, memory_format, device;
  std::int64_t runs = 0;
  std::int64_t batch_size = 0;
  double images_per_s = 0, images_per_s_min = 0, images_per_s_max = 0, step_ms_mean = 0;
};

struct SweepInfo {
  std::int64_t id = 0;
  std::string name, experiment, experiment_file, description, created_at, updated_at;
  /// When the sweep's last run started (its runs' latest started_at); empty before any run.
  std::string last_run_at;
};

/// One sweep as `orch sweeps` lists it. The counts are of the runs its latest plan revision
/// owns (what rank and compare show), or of all its runs when it has no recorded revision.
struct SweepListing {
  SweepInfo sweep;
  int revision = 0;  ///< its latest plan revision; 0 when none was recorded
  std::int64_t runs = 0, ok = 0, running = 0;  ///< ok: pruned ones too (they measured)
  std::int64_t not_ok() const { return runs - ok - running; }  ///< failed, oom, skipped, ...
};

/// What the scheduler needs to know about a run of a sweep to resume it.
struct RunState {
  std::int64_t id;
  std::string name, status, owner_host, heartbeat_at;
  std::int64_t owner_pid = 0;
  int attempts = 0;
  std::optional<double> duration_s;
  std::optional<std::int64_t> batch_size;
  std::optional<double> images_per_s{};  ///< of a measured run (ok or pruned)
};

/// One entry of a profiled run's top kernels or host operators (run_profile_ops).
struct ProfileOp {
  std::string name;
  std::int64_t calls = 0;
  double total_ms = 0, self_ms = 0, share = 0;
};

/// What the profiler saw over a run's extra steps (run_profile, run_profile_ops).
struct RunProfile {
  std::int64_t steps = 0;
  std::string activities, trace_path, error;
  std::optional<double> step_ms, measured_step_ms, kernels_per_step, gpu_kernel_ms_per_step,
      gpu_busy_share, gpu_busy_share_profiled, cuda_launches_per_step;
  std::vector<ProfileOp> top_kernels, top_cpu_ops;  ///< most time first

  /// A profile of GPU work: CUDA activity recorded (kernels_per_step is 0 on the CPU).
  bool gpu() const { return gpu_busy_share.has_value(); }
};

/// One run as the read-only commands see it: its row, configuration and metrics.
struct RunRecord {
  std::int64_t id = 0, sweep_id = 0;
  std::string sweep, experiment, name, config_hash, status, error, device, gpu;
  std::string failure_class;  ///< configuration, device, environment; empty when unclassified
  int repeat = 0, attempts = 0;
  /// The rung of a shorter measurement of successive halving; none for a full measurement.
  std::optional<int> rung;
  std::optional<std::int64_t> batch_size, exit_code, term_signal;
  bool batch_auto = false;
  std::optional<double> duration_s;
  std::string started_at, finished_at, diagnosis, diagnosis_detail, stderr_tail;
  std::string gpu_name, driver_version, cuda_version, cudnn_version, torch_version, hostname;
  nlohmann::json config;  ///< the resolved configuration
  /// Everything the run recorded about where it ran (environment_json): versions, host, CPU,
  /// torch threads, the watched variables, the GPU memory cap; an empty object when none.
  nlohmann::json environment = nlohmann::json::object();
  std::map<std::string, double> metrics;  ///< every numeric metric (run_metrics)
  std::optional<RunProfile> profile;      ///< only for a run recorded with `profile.steps` > 0

  std::optional<double> metric(const std::string& key) const {
    auto it = metrics.find(key);
    return it == metrics.end() ? std::nullopt : std::optional<double>(it->second);
  }
};

/// One invocation of `orch sweep`: its wall time and where it went (sweep_invocations).
struct InvocationTime {
  std::string started_at, finished_at;  ///< ISO 8601 UTC
  double wall_s = 0;
  int slots = 1, runs = 0;
  RunPhases phases;  ///< summed over the runs that measured (process_s is not stored)
  double unmeasured_s = 0;
};

/// Every invocation of one sweep added up (the sweep_efficiency view): where its time went.
struct SweepTimeTotal {
  int invocations = 0, runs = 0;
  double wall_s = 0;  ///< the invocations' wall time
  double slot_s = 0;  ///< wall time x GPU (or CPU) slots: the time there was to measure in
  RunPhases phases;   ///< summed over the runs that measured (process_s is not stored)
  double unmeasured_s = 0;
};

/// A row of the `failures` view: a run that did not succeed, and how it ended.
struct FailureRecord {
  std::int64_t run_id = 0;
  std::string name, status, error, stderr_tail;
  int repeat = 0, attempts = 0;
  std::optional<std::int64_t> exit_code, term_signal;
};

/// One successful run of a configuration in some sweep, with where that sweep ran it.
struct ConfigRun {
  std::int64_t sweep_id = 0;
  std::string sweep, sweep_created_at;
  double images_per_s = 0;
  std::string driver_version, cudnn_version;  ///< empty when not recorded
};

/// How long one successful run took, and what it ran.
struct RunDuration {
  std::string config_hash;
  double duration_s = 0;
  /// The resolved configuration; not an object when the stored text does not parse.
  nlohmann::json config;
};

/// A sweep's plan revision (storage/sweep_plans.h, which callers of the plan methods include).
struct SweepPlan;

class Store {
 public:
  /// Opens or creates the database at `path`, sets WAL mode, FULL sync and the busy timeout
  /// (busy_timeout_ms()), and brings the schema to kSchemaVersion (migrating an older one in one
  /// transaction). Throws SqliteError for a newer schema or a file that is not a database.
  explicit Store(const std::string& path);

  /// Opens an existing database for the read commands, never writing to it (no schema, no WAL
  /// switch, no migration): read-only, or immutable where the media is read-only. Throws
  /// SqliteError for a file that is not an orch database (another program's SQLite file, an
  /// empty file) or has a newer schema. An older orch schema opens as it is: schema_version()
  /// tells, and the caller decides whether to migrate.
  struct ReadOnly {};
  Store(const std::string& path, ReadOnly);

  // --- sweeps ---------------------------------------------------------------------------------
  /// Creates the sweep if missing (by name), updates updated_at (and the file and description
  /// when given); returns its id. Throws std::invalid_argument when a sweep of that name exists
  /// for another experiment.
  std::int64_t open_sweep(const std::string& name, const std::string& experiment,
                          const std::string& experiment_file, const std::string& description = {});
  std::optional<std::int64_t> find_sweep(const std::string& name) const;
  std::optional<SweepInfo> sweep(std::int64_t id) const;
  /// All sweeps, the latest first: the one whose run started last. A sweep without a run
  /// counts from its creation; opening a sweep again (a resume that runs nothing) does not make
  /// it the latest.
  std::vector<SweepInfo> sweeps() const;
  /// sweeps(), each with its latest plan revision and how many of its runs succeeded.
  std::vector<SweepListing> sweep_listing() const;

  // --- the life of a run (for the scheduler) -------------------------------------------------
  /// Every run of the sweep, keyed by (config_hash, repeat).
  std::map<std::pair<std::string, int>, RunState> run_states(std::int64_t sweep_id) const;
  /// Marks a run as started: status 'running', owner host/pid, heartbeat now, attempts + 1.
  /// Inserts its row, or on a retry resets the existing one and deletes the previous attempt's
  /// metrics, steps and samples. `header` = {experiment, run: {name, hash, repeat}, config}.
  /// One transaction. Returns the run id (the same id on every retry).
  std::int64_t begin_run(std::int64_t sweep_id, const nlohmann::json& header,
                         const std::string& owner_host, std::int64_t owner_pid,
                         const std::string& gpu);
  /// Sets the run's heartbeat_at to now.
  void heartbeat(std::int64_t run_id);
  /// Records a finished run's document: upserts the (sweep, hash, repeat) row with the final
  /// status and everything in the document (metrics, steps, telemetry samples, diagnosis) in
  /// ONE durable transaction. Idempotent: recording the same document again leaves exactly one
  /// row and the same contents. Keeps the row's attempts (at least 1). Returns the run id.
  std::int64_t record(std::int64_t sweep_id, const nlohmann::json& document);
  /// A run still 'running' becomes 'interrupted' with `reason` as its error; a run that already
  /// finished is left as it is.
  void mark_interrupted(std::int64_t run_id, const std::string& reason);
  /// The run (sweep, hash, repeat), measured ok in a rung of successive halving, becomes
  /// 'pruned': its configuration was dropped at that rung. A run not 'ok' is left as it is.
  void mark_pruned(std::int64_t sweep_id, const std::string& hash, int repeat);
  /// Records where one invocation of `orch sweep` spent its time (sweep_invocations; the
  /// sweep_efficiency view adds them up).
  void record_invocation(std::int64_t sweep_id, const InvocationTime& t);
  /// The sweep's invocations added up; nullopt when none was recorded (a sweep from before
  /// schema 6, or one only run by `orch run`/Slurm, which record no invocation).
  std::optional<SweepTimeTotal> sweep_time(std::int64_t sweep_id) const;
  /// Records the verdict of a health check the sweep ran on GPU slot `gpu` (device_checks).
  void record_device_check(std::int64_t sweep_id, const std::string& gpu, bool healthy,
                           const std::string& detail);

  // --- queries ---------------------------------------------------------------------------------
  /// Configurations ranked by mean throughput (the `ranking` view); all experiments when
  /// `experiment` is empty.
  std::vector<RankRow> ranking(const std::string& experiment = {}) const;
  /// Every run of a sweep, ordered by name then repeat; `status` filters when not empty.
  std::vector<RunRecord> runs(std::int64_t sweep_id, const std::string& status = {}) const;
  /// One run by id, whatever its sweep.
  std::optional<RunRecord> run(std::int64_t run_id) const;
  /// The recorded environment of each run of the sweep, by run id; null where none was
  /// recorded or the stored text does not parse.
  std::vector<nlohmann::json> run_environments(std::int64_t sweep_id) const;
  /// The sweep's runs that did not succeed (the `failures` view), by name then repeat.
  std::vector<FailureRecord> failures(const std::string& sweep_name) const;
  /// The configuration's successful runs with a throughput, in `sweep` and every sweep created
  /// before it (same creation time: lower id), by sweep creation, sweep id, then repeat.
  std::vector<ConfigRun> config_history(const std::string& config_hash,
                                        const SweepInfo& sweep) const;
  /// Every successful run with a positive duration, in any sweep: what a new plan's runs may
  /// take. A run still running has no duration, and one that failed at once would make its
  /// configuration look cheap, so only these count.
  std::vector<RunDuration> successful_run_durations() const;

  // --- what a run recorded beside its row (store_samples.cpp) ---------------------------------
  /// The run's GPU and host samples that have a time, and their measured windows; empty
  /// series for a run recorded without them (or an unknown id).
  RunTelemetry run_telemetry(std::int64_t run_id) const;
  /// The run's measured steps, by step.
  std::vector<StepRow> run_steps(std::int64_t run_id) const;
  /// Every sample of the run in `table`, its measured columns (SampleSeries).
  SampleSeries sample_series(std::int64_t run_id, SampleTable table) const;
  /// The run's batch search summary and probes; empty fields for a run that did not search.
  BatchSearchRecord batch_search(std::int64_t run_id) const;

  // --- plan revisions (sweep_plans.cpp; the callers include storage/sweep_plans.h) -----------
  /// The sweep's latest plan revision; none when none was recorded.
  std::optional<SweepPlan> latest_plan(std::int64_t sweep_id) const;
  /// One revision of the sweep's plan; none when it does not exist (or `revision` <= 0).
  std::optional<SweepPlan> plan_revision(std::int64_t sweep_id, int revision) const;
  /// How many plan revisions the sweep has (0: none recorded).
  int plan_revisions(std::int64_t sweep_id) const;
  /// Records `plan` as the sweep's next revision, in one transaction; returns its number.
  int record_plan(std::int64_t sweep_id, const SweepPlan& plan);
  /// Replaces the warnings kept with the sweep's latest revision by `warnings`; does nothing
  /// when it has none. Returns the revision changed (0: none).
  int set_latest_plan_warnings(std::int64_t sweep_id, const std::vector<std::string>& warnings);

  int schema_version() const;
  /// The database's file as SQLite opened it.
  std::string path() const;
  /// The raw connection, for storage/ itself and tests: other code reads and writes through
  /// the methods above, so the SQL stays beside the schema it depends on.
  Database& database() { return db_; }
  const Database& database() const { return db_; }

 private:
  /// Throws SqliteError (bad input) for a database with tables of its own and no orch schema.
  void refuse_foreign(const std::string& path) const;
  std::vector<RunRecord> query_runs(const std::string& where, std::int64_t key,
                                    const std::string& status) const;
  void touch_sweep(std::int64_t sweep_id);

  Database db_;
};

}  // namespace orch::storage
