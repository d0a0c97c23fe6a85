// The doctor's findings that change a sweep's numbers, as `orch sweep` prints them before its
// first run and stores them with the sweep: a night measured under CUDA_LAUNCH_BLOCKING, beside
// another process, without persistence mode or on a slowed PCIe link should say so where it is
// read, not only in `orch doctor`'s output that nobody ran.
#pragma once

#include <string>
#include <vector>

#include "telemetry/doctor.h"

namespace orch {

/// One line per warning or error of the checks that change measured numbers
/// (launch_blocking, processes, persistence, pcie): "error launch_blocking: CUDA_LAUNCH_...".
std::vector<std::string> number_changing_warnings(const std::vector<Finding>& findings);

}  // namespace orch
