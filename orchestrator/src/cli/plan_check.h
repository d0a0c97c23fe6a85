// `orch plan --check` and `orch sweep --check`: the plan rehearsed, one training step per
// configuration in child processes (sweep/rehearsal.h), every failure listed at once.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"
#include "plan/run_spec.h"

namespace orch::cli {

/// Every GPU this process sees, as the names a child's CUDA_VISIBLE_DEVICES takes (the entries
/// of our own CUDA_VISIBLE_DEVICES when it is set); empty without a GPU.
std::vector<std::string> visible_gpu_slots();

/// Rehearses `plan` on `gpus` (empty: the CPU, one configuration at a time), holding their
/// device locks (cli/device_locking.h; `wait` for a device in use, else exit 2), prints each
/// configuration's outcome and then every failure with its error and stderr tail. Writes only
/// into a temporary folder, removed afterwards; nothing reaches the results database. Returns
/// kExitOk when every configuration trained its step, kExitBadInput when any failed, 3 when a
/// signal stopped it.
int rehearse_plan(const Plan& plan, const GlobalOptions& g, const std::vector<std::string>& gpus,
                  double grace_s, bool wait);

}  // namespace orch::cli
