#include "result/failure_class.h"

#include <array>
#include <utility>

#include "result/result_document.h"

namespace orch {
namespace {

constexpr std::array<std::pair<FailureClass, std::string_view>, 3> kNames = {{
    {FailureClass::configuration, "configuration"},
    {FailureClass::device, "device"},
    {FailureClass::environment, "environment"},
}};

// cudaGetErrorString's and the driver's spellings of the errors that poison a CUDA context
// (the CUDA runtime documents them as "sticky": every later call in the process fails too),
// and NVML's / the kernel's words for a GPU that is gone.
constexpr std::array<std::string_view, 17> kStickyCuda = {
    "an illegal memory access was encountered",
    "cudaErrorIllegalAddress",
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "unspecified launch failure",
    "cudaErrorLaunchFailure",
    "CUDA_ERROR_LAUNCH_FAILED",
    "an illegal instruction was encountered",
    "misaligned address",
    "device-side assert triggered",
    "uncorrectable ECC error",
    "cudaErrorECCUncorrectable",
    "CUDA_ERROR_ECC_UNCORRECTABLE",
    "hardware stack error",
    "invalid program counter",
    "the launch timed out and was terminated",
    "GPU is lost",
    "fallen off the bus",
};

// strerror(3)'s text for ENOSPC, EDQUOT, EROFS and EIO (glibc), which std::filesystem errors,
// iostream failures reported with errno and orch's own checked writes all carry; and EAGAIN's,
// which a run meets when a thread or process cannot be started at a process limit (ulimit -u, a
// cgroup's pids.max): std::thread's std::system_error says only that.
constexpr std::array<std::string_view, 5> kEnvironmentErrno = {
    "No space left on device", "Disk quota exceeded", "Read-only file system",
    "Input/output error",      kProcessLimitErrno,
};

template <std::size_t N>
bool contains_any(std::string_view text, const std::array<std::string_view, N>& needles) {
  for (const auto n : needles) {
    if (text.find(n) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

std::string to_string(FailureClass c) {
  for (const auto& [k, name] : kNames) {
    if (k == c) return std::string(name);
  }
  return "?";
}

std::optional<FailureClass> parse_failure_class(std::string_view text) {
  for (const auto& [k, name] : kNames) {
    if (name == text) return k;
  }
  return std::nullopt;
}

bool names_sticky_cuda_error(std::string_view error) { return contains_any(error, kStickyCuda); }

bool names_environment_errno(std::string_view error) {
  return contains_any(error, kEnvironmentErrno);
}

std::optional<FailureClass> classify_failure(const ResultDocument& doc) {
  if (!doc.status) return std::nullopt;
  switch (*doc.status) {
    case RunStatus::ok:
    case RunStatus::running:
    case RunStatus::interrupted:
    case RunStatus::skipped:
    case RunStatus::pruned:
      return std::nullopt;
    default:
      break;
  }
  // NVML's word outweighs what the run's process concluded from its exception.
  if (doc.gpu_lost()) return FailureClass::device;
  if (doc.failure_class) return doc.failure_class;
  switch (*doc.status) {
    case RunStatus::oom:
    case RunStatus::diverged:
      return FailureClass::configuration;  // the configuration's own outcome on a working device
    case RunStatus::timeout:
      // A hang is how a wedged GPU shows itself; whether it is one, the health check run before
      // retiring the GPU decides.
      return FailureClass::device;
    default:
      break;
  }
  const std::string error = doc.error.value_or("");
  if (doc.outcome && doc.outcome->signal) return FailureClass::device;
  // The child exits with this code when it could not write its result document.
  if (doc.outcome && doc.outcome->exit_code == kEnvironmentExitCode) {
    return FailureClass::environment;
  }
  if (names_sticky_cuda_error(error)) return FailureClass::device;
  if (names_environment_errno(error)) return FailureClass::environment;
  return FailureClass::configuration;
}

}  // namespace orch
