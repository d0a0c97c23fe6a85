// The doctor's findings that change a sweep's numbers (see sweep_warnings.h).
#include "telemetry/sweep_warnings.h"

#include <set>

namespace orch {

std::vector<std::string> number_changing_warnings(const std::vector<Finding>& findings) {
  // Missing NVML or no GPU make telemetry or the run itself different, and are said elsewhere;
  // these four leave the run working but its numbers off.
  static const std::set<std::string> kChecks = {"launch_blocking", "processes", "persistence",
                                                "pcie"};
  std::vector<std::string> out;
  for (const Finding& f : findings) {
    if (f.severity == Severity::kOk || !kChecks.count(f.check)) continue;
    out.push_back(to_string(f.severity) + " " + f.check + ": " + f.message);
  }
  return out;
}

}  // namespace orch
