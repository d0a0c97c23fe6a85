// Whose fault a run that did not succeed was: the configuration's, the device's or the
// environment's. The sweep acts on the answer: only the device's failures count towards
// retiring a GPU, and an environment fault (a full disk, a locked database) stops the sweep
// instead of spoiling the rest of the plan.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace orch {

struct ResultDocument;

enum class FailureClass {
  configuration,  ///< an error on a healthy device: a bad parameter, a corrupt image, ...
  device,         ///< a sticky CUDA error, a lost GPU, a process killed by a signal, a hang
  environment,    ///< a write that failed (disk full, read-only, I/O error), a locked database
};

/// "configuration", "device", "environment": the spelling in documents and `runs.failure_class`.
std::string to_string(FailureClass c);
std::optional<FailureClass> parse_failure_class(std::string_view text);

/// The exit code of an orch process stopped by an environment fault (`orch sweep`), or of an
/// `orch exec` child that could not write its result document: the sweep reads it as the
/// environment's failure, never the configuration's.
constexpr int kEnvironmentExitCode = 4;

/// An error text that names a CUDA error after which the process's CUDA context is unusable
/// (an illegal address, a launch failure, an uncorrectable ECC error, a device-side assert,
/// ...): such an error says something about the device, whatever the configuration was.
bool names_sticky_cuda_error(std::string_view error);

/// strerror(EAGAIN): what a thread or process that could not be started at a process limit
/// (ulimit -u, a cgroup's pids.max) says.
inline constexpr std::string_view kProcessLimitErrno = "Resource temporarily unavailable";

/// An error text that carries the strerror of a failing file system (no space, quota, read-only
/// file system, I/O error) or of a process limit (kProcessLimitErrno).
bool names_environment_errno(std::string_view error);

/// The class of a finished run's failure as the sweep decides it: the document's own
/// `failure_class` when the run's process wrote one; otherwise from what the sweep saw (a
/// signal, a timeout, the exit code, the error text). Nullopt for a run that did not fail
/// (`ok`), or was not run to an end by its own doing (`interrupted`, `skipped`, `running`).
std::optional<FailureClass> classify_failure(const ResultDocument& doc);

}  // namespace orch
