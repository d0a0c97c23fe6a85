// Is a device still usable? The same few operations serve two purposes: a run's process that
// met an exception asks whether its device still works (if not, the failure was the device's,
// not the configuration's), and `orch health-check` asks it in a fresh process before the
// sweep retires a GPU.
#pragma once

#include <optional>
#include <string>

#include "result/result_document.h"

namespace orch {

/// Allocates on `device` ("cpu", "cuda:0"), launches a kernel, synchronises and checks the
/// answer. Returns nullopt when all of that worked, else what failed. On the CPU it trivially
/// works.
std::optional<std::string> device_fault(const std::string& device);

/// Sets a failed run's failure_class: the device's when its error names a sticky CUDA error or
/// its device then fails device_fault (the probe's error is appended to `error`); the
/// environment's when the error carries a file system's errno text; else the configuration's.
/// Leaves any other document as it is.
void classify_run_failure(ResultDocument& doc);

}  // namespace orch
