// Which devices a command measures on, as sweep/device_lock.h locks them: each GPU by its
// UUID (one name whatever CUDA_VISIBLE_DEVICES calls it), the host's CPU as "cpu".
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "plan/run_spec.h"
#include "sweep/device_lock.h"

namespace orch::cli {

/// The devices of a sweep's slots (names from visible_gpu_slots; "" is the CPU).
std::vector<sweep::LockedDevice> devices_of_slots(const std::vector<std::string>& slots);

/// The devices `orch run` measures on: each run's `device` as this process resolves it.
std::vector<sweep::LockedDevice> devices_of_runs(const std::vector<RunSpec>& runs);

/// Takes the devices' locks for `command` (e.g. "sweep") of `name`; says on stdout when it
/// waits. Returns nullopt and sets `exit_code` when it does not: 2 with the holder named
/// (DeviceBusy, under --no-wait, or a lock folder refused), 3 when `stop` was set while
/// waiting.
std::optional<sweep::DeviceLocks> lock_devices(const std::vector<sweep::LockedDevice>& devices,
                                               const std::string& command, const std::string& name,
                                               bool wait, const std::atomic<bool>& stop,
                                               int& exit_code);

}  // namespace orch::cli
