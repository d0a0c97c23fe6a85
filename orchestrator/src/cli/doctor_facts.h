// The facts `orch doctor` judges (CUDA through LibTorch, NVML, the environment), gathered once
// more by `orch sweep` before its first run.
#pragma once

#include "telemetry/doctor.h"

namespace orch::cli {

/// Reads this machine's facts. With `load_gpus`, a GPU whose PCIe link is below its maximum is
/// put under load for about a second and read again (idle GPUs lower the link to save power).
/// `orch sweep` passes false: its own process must hold no memory and run no work on a GPU
/// its runs will measure, so the link is judged as read while idle (and the finding says so).
DoctorFacts gather_facts(bool load_gpus = true);

}  // namespace orch::cli
