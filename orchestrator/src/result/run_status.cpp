#include "result/run_status.h"

#include <array>
#include <utility>

namespace orch {
namespace {

constexpr std::array<std::pair<RunStatus, std::string_view>, 9> kNames = {{
    {RunStatus::running, "running"},
    {RunStatus::ok, "ok"},
    {RunStatus::failed, "failed"},
    {RunStatus::oom, "oom"},
    {RunStatus::timeout, "timeout"},
    {RunStatus::interrupted, "interrupted"},
    {RunStatus::skipped, "skipped"},
    {RunStatus::diverged, "diverged"},
    {RunStatus::pruned, "pruned"},
}};

}  // namespace

std::string to_string(RunStatus status) {
  for (const auto& [s, name] : kNames) {
    if (s == status) return std::string(name);
  }
  return "?";
}

std::optional<RunStatus> parse_run_status(std::string_view text) {
  for (const auto& [s, name] : kNames) {
    if (name == text) return s;
  }
  return std::nullopt;
}

bool is_final_failure(RunStatus status) {
  return status == RunStatus::failed || status == RunStatus::oom || status == RunStatus::timeout ||
         status == RunStatus::skipped || status == RunStatus::diverged;
}

}  // namespace orch
