#include "runner/cuda_connections.h"

#include <cstdlib>
#include <stdexcept>

namespace orch {
namespace {

std::string describe(const std::optional<std::int64_t>& n) {
  return n ? std::to_string(*n) : std::string("driver");
}

}  // namespace

void apply_cuda_connections(const RunSpec& spec) {
  if (!spec.cuda_connections) return;
  ::setenv(kCudaConnectionsVariable, std::to_string(*spec.cuda_connections).c_str(),
           /*overwrite=*/1);
}

std::optional<std::string> cuda_connections_mismatch(const RunSpec& spec) {
  if (!spec.cuda_connections) return std::nullopt;
  const char* v = std::getenv(kCudaConnectionsVariable);
  const std::string want = std::to_string(*spec.cuda_connections);
  if (v && want == v) return std::nullopt;
  // Appended piece by piece: GCC 12 misreads the one-expression form's temporaries
  // (-Wstringop-overflow inside char_traits, a known false positive).
  std::string message =
      "cuda_connections: " + want + " is applied when a process starts, and this one has ";
  message += kCudaConnectionsVariable;
  if (v) {
    message += '=';
    message += v;
  } else {
    message += " unset";
  }
  message += " (run it with `orch sweep` or `orch exec`, which start a process per run)";
  return message;
}

std::optional<std::int64_t> common_cuda_connections(const std::vector<RunSpec>& runs) {
  if (runs.empty()) return std::nullopt;
  for (const RunSpec& r : runs) {
    if (r.cuda_connections != runs.front().cuda_connections) {
      throw std::invalid_argument(
          "cuda_connections differs between configurations ('" + runs.front().name +
          "': " + describe(runs.front().cuda_connections) + ", '" + r.name + "': " +
          describe(r.cuda_connections) + "), and `orch run` runs them all in one process, " +
          "where it can be set only once; use `orch sweep`, which runs each in its own process");
    }
  }
  return runs.front().cuda_connections;
}

}  // namespace orch
