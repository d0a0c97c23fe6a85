// The sweep scheduler: decides where and when each run of a plan executes. It is written
// against small interfaces so that its logic (resume, one run per GPU, consecutive device
// failures and the health check before retiring a GPU, environment faults, deadline, order,
// progress, stopping) is tested with fakes, and the real sweep plugs in child processes
// (sweep/child_run.h, sweep/device_check.h), the SQLite store and the wall clock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/run_spec.h"
#include "result/run_phases.h"

namespace orch::sweep {

/// The monotonic clock: a wall-clock jump during a night (NTP, a manual change) moves neither
/// the deadline nor the ETAs (cmd_sweep turns `--until` into a time on this clock once).
using Clock = std::chrono::steady_clock;

/// Time, injectable: tests advance a fake one.
class SweepClock {
 public:
  virtual ~SweepClock() = default;
  virtual Clock::time_point now() const = 0;
  virtual void sleep_for(std::chrono::milliseconds d) = 0;
};

class SteadyClock final : public SweepClock {
 public:
  Clock::time_point now() const override;
  void sleep_for(std::chrono::milliseconds d) override;
};

/// One run in flight.
class RunHandle {
 public:
  virtual ~RunHandle() = default;
  /// The finished run's result document, once it has finished (whatever the outcome).
  virtual std::optional<nlohmann::json> poll() = 0;
  /// Asks the run to stop now (SIGINT/SIGTERM of the sweep); poll() then yields an
  /// `interrupted` document.
  virtual void interrupt() = 0;
};

/// Starts runs. `gpu` is the slot's name ("0", "1", ... or "" for the CPU).
class Launcher {
 public:
  virtual ~Launcher() = default;
  /// Throws EnvironmentFault (sweep/environment_fault.h) when the run's files cannot be written.
  virtual std::unique_ptr<RunHandle> launch(const RunSpec& spec, const std::string& gpu) = 0;
  /// The complete result document of a run that finished in an earlier invocation without
  /// being recorded (the database could not be written then), if one was left on disk.
  virtual std::optional<nlohmann::json> unrecorded_result(const RunSpec&) { return std::nullopt; }
  /// Keeps a finished run's document where unrecorded_result finds it, because the database
  /// cannot record it now. Best effort.
  virtual void keep_unrecorded(const RunSpec&, const nlohmann::json&) {}
};

/// What a health check found.
struct DeviceVerdict {
  bool healthy = false;
  std::string detail;  ///< what the check saw: its error when unhealthy
};

/// A health check in flight.
class CheckHandle {
 public:
  virtual ~CheckHandle() = default;
  virtual std::optional<DeviceVerdict> poll() = 0;
};

/// Checks a GPU slot in a fresh process (allocate, launch a kernel, synchronise) before the
/// sweep retires it.
class DeviceChecker {
 public:
  virtual ~DeviceChecker() = default;
  virtual std::unique_ptr<CheckHandle> start(const std::string& gpu) = 0;
};

/// What the store knows about a run from an earlier (possibly killed) invocation.
struct PriorRun {
  /// ok | failed | oom | timeout | interrupted | skipped | diverged | pruned | running
  std::string status;
  std::optional<double> duration_s;      ///< of a finished attempt
  std::optional<double> images_per_s{};  ///< of a measured run: what halving cuts by
};

/// Where results go. Implemented over the SQLite store by `orch sweep`; by a fake in tests.
class Recorder {
 public:
  virtual ~Recorder() = default;
  /// (config hash, repeat) -> what is recorded for this sweep.
  virtual std::map<std::pair<std::string, int>, PriorRun> prior_runs() = 0;
  /// Measured duration of earlier runs like this one (same configuration, else similar), if any.
  virtual std::optional<double> measured_duration_s(const RunSpec& spec) = 0;
  /// A run starts on `gpu`: returns the id its result will be recorded under.
  virtual std::int64_t begin(const RunSpec& spec, const std::string& gpu) = 0;
  virtual void heartbeat(std::int64_t id) = 0;
  /// A run ended; `document` is its result document. One durable transaction.
  virtual void finish(std::int64_t id, const nlohmann::json& document) = 0;
  /// A run found `running` from a dead invocation (we hold the sweep's lock, so nobody else
  /// owns it): recorded as interrupted before it is run again.
  virtual void mark_stale(const RunSpec& spec, const std::string& reason) = 0;
  /// A health check's verdict on `gpu`. Recorders that keep no history of devices ignore it.
  virtual void device_checked(const std::string& gpu, const DeviceVerdict& verdict) {
    (void)gpu;
    (void)verdict;
  }
  /// Successive halving dropped the configuration of `spec`, a run measured ok in one of its
  /// rungs (sweep/halving.h): the run is recorded `pruned`. Recorders that keep no statuses
  /// ignore it.
  virtual void mark_pruned(const RunSpec& spec) { (void)spec; }
  // Every write above throws EnvironmentFault when the surroundings keep it from happening.
};

struct SweepOptions {
  std::vector<std::string> gpus{""};  ///< one slot per GPU; {""}: one CPU slot
  /// After this many device failures in a row on a slot, its health is checked; it is retired
  /// when the check fails. Failures of the configuration never count.
  int max_consecutive_failures = 3;
  /// Runs the health checks; null: the count alone retires a slot (no check).
  DeviceChecker* device_checker = nullptr;
  bool retry_failed = false;                  ///< re-run failed/oom/timeout/skipped runs too
  std::optional<Clock::time_point> deadline;  ///< --until: start nothing that cannot finish
                                              ///< (on the monotonic clock: steady_deadline)
  bool fast_first = false;                    ///< --order fast-first
  std::chrono::milliseconds poll_interval{100};
  std::chrono::seconds heartbeat_interval{10};
};

/// Where one invocation's wall time went (result/run_phases.h): what time_shares_line prints
/// and the database's sweep_efficiency view adds up over invocations.
struct SweepTime {
  double wall_s = 0;        ///< from the start of run_sweep to its end
  int slots = 1;            ///< GPU (or CPU) slots: the time there was is wall_s x slots
  bool cpu = false;         ///< the one slot is the CPU
  RunPhases phases;         ///< summed over the runs of this invocation that measured
  int runs = 0;             ///< runs whose phases are in `phases`
  double unmeasured_s = 0;  ///< slot time of runs that measured nothing (failed, interrupted)
};

/// How the sweep ended.
struct SweepSummary {
  int total = 0;             ///< runs in the plan
  int already_done = 0;      ///< finished before this invocation (resume)
  int already_not_ok = 0;    ///< of those, recorded failed/oom/timeout/skipped (not retried)
  int ok = 0, failed = 0;    ///< finished in this invocation; failed = any non-ok outcome
  int diverged = 0;          ///< of `failed`, runs whose loss became NaN or infinite
  int skipped = 0;           ///< recorded `skipped`: no usable GPU was left
  int deferred = 0;          ///< not started: the deadline would have been missed
  bool interrupted = false;  ///< stopped by a signal
  int recovered = 0;         ///< of already_done: results left on disk by an earlier invocation
  /// Set when an environment fault stopped the sweep: what happened and what to do.
  std::string environment_fault;
  SweepTime time;  ///< this invocation's wall time, phase by phase
  /// 0 every run of the plan ok (this invocation's and earlier ones'); 1 some run did not
  /// succeed, now or in an earlier invocation; 3 the sweep stopped before the end
  /// (deadline or signal): run the same command again to resume; 4 (kEnvironmentExitCode)
  /// an environment fault stopped it: fix it and run the same command again.
  int exit_code() const;
};

/// Estimated cost of a run when nothing was measured yet, in arbitrary units, for ordering:
/// steps x batch x pixels x a precision factor (fp32 ~3x slower than TF32, ~4x than AMP on
/// Tensor-Core GPUs). Only the order matters.
double cost_proxy(const RunSpec& spec);

/// Runs the plan's runs that are not finished yet. `stop` is set by signal handlers.
SweepSummary run_sweep(const std::vector<RunSpec>& runs, const SweepOptions& options,
                       Launcher& launcher, Recorder& recorder, SweepClock& clock,
                       std::ostream& progress, const std::atomic<bool>& stop);

}  // namespace orch::sweep
