// `--check`: a rehearsal of a plan before the night. Every distinct configuration trains one
// step in a child process of its own (the sweep's launcher, so exactly as a sweep would start
// it), and every failure is listed together, so what would fail at 3 a.m. is known in minutes.
// Nothing is recorded: the caller gives a launcher whose folder is thrown away.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "plan/run_spec.h"
#include "sweep/scheduler.h"

namespace orch::sweep {

/// The run a rehearsal starts for `run`: no warmup, one measured step, no profiler and no
/// telemetry sampler, and `batch_size: auto` replaced by `auto_batch` (the batch search's first
/// probe, what a night would try first).
RunSpec rehearsal_spec(const RunSpec& run, std::int64_t auto_batch);

struct RehearsalFailure {
  std::string name;         ///< the configuration's name
  std::string status;       ///< failed, oom, timeout, diverged, ...
  std::string error;        ///< the result document's error
  std::string stderr_tail;  ///< the end of the child's stderr
};

struct Rehearsal {
  std::size_t configurations = 0;  ///< distinct configurations started
  std::vector<RehearsalFailure> failures;
  bool interrupted = false;  ///< `stop` was set before every configuration had finished
};

/// Rehearses the first repeat of every configuration of `runs`, at most one child per slot of
/// `gpus` at a time ("" is the CPU: one at a time), writing a line per finished configuration
/// to `progress`. `stop` (set by a signal handler) interrupts the children in flight.
Rehearsal rehearse(const std::vector<RunSpec>& runs, const std::vector<std::string>& gpus,
                   Launcher& launcher, std::ostream& progress, const std::atomic<bool>& stop,
                   std::int64_t auto_batch = 64);

/// The report of a rehearsal: every failure with its error and stderr tail, then a summary.
std::string format_rehearsal(const Rehearsal& r);

}  // namespace orch::sweep
