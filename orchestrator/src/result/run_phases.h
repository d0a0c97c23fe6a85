// Where a run's wall time went, phase by phase. A sweep's night is worth its measured steps;
// the rest (process start, CUDA context and plugin loading, model build, cuDNN autotuning in the
// warm-up, teardown) is what worker processes and adaptive warm-ups exist to shrink, so every
// run records its phases and `orch sweep` adds them up ("measured N% of the sweep's wall
// time"), as the database's sweep_efficiency view does.
//
// The run's process measures, in its document's metrics:
//   startup_s  from the process's start (exec, dynamic loading, plugin loading) until the run
//              began; in a process that runs several, from the previous run's end
//   setup_s    from the run's start to its first warm-up step (environment, plugins, model and
//              data built, moved to the device)
//   warmup_s   the warm-up steps; measure_s the measured steps
//   after_s    from the last measured step until the document was complete (results read
//              back, profiled steps, telemetry stopped)
// The sweep, which saw the process from outside, adds:
//   process_s  from starting the process until it was reaped
//   teardown_s process_s less the phases above: writing the document, freeing the device, exit
//   batch_search_s  a `batch_size: auto` search's probes, before the run's own process
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace orch {

namespace phase_key {
constexpr const char* kStartup = "startup_s";
constexpr const char* kSetup = "setup_s";
constexpr const char* kWarmup = "warmup_s";
constexpr const char* kMeasure = "measure_s";
constexpr const char* kAfter = "after_s";
constexpr const char* kTeardown = "teardown_s";
constexpr const char* kProcess = "process_s";
constexpr const char* kBatchSearch = "batch_search_s";
}  // namespace phase_key

/// Seconds per phase; absent ones are 0.
struct RunPhases {
  double startup_s = 0, setup_s = 0, warmup_s = 0, measure_s = 0, after_s = 0, teardown_s = 0;
  double process_s = 0, batch_search_s = 0;

  RunPhases& operator+=(const RunPhases& o);
  /// The phases the run's own process measured (start-up to after).
  double inside_s() const { return startup_s + setup_s + warmup_s + measure_s + after_s; }
};

/// One part of a sweep's slot time (wall time x GPU slots).
struct PhaseShare {
  std::string label;  ///< "measured", "warm-up", ..., "between runs"
  double seconds = 0;
  double share = 0;  ///< of slot_s, 0..1
};

/// Where slot_s seconds went: "measured" first, then the other phases largest first ("failed
/// runs" is unmeasured_s, the slot time of runs that measured nothing), then "between runs",
/// what no run took (the scheduler, recording, idle slots), which absorbs rounding and is never
/// negative. Empty when slot_s is not positive. `orch sweep`'s closing line and the report's
/// time section both read this, so they cannot disagree.
std::vector<PhaseShare> phase_shares(const RunPhases& p, double unmeasured_s, double slot_s);

/// The phases in a document's metrics; nullopt when it has none of them (a run that failed
/// before measuring, a document from an older orch).
std::optional<RunPhases> run_phases(const nlohmann::json& metrics);

/// Adds the sweep's view of the run to `metrics` (an object; anything else is left alone):
/// process_s and teardown_s (process_s less the phases inside, at least 0).
void add_process_phases(nlohmann::json& metrics, double process_s);

}  // namespace orch
