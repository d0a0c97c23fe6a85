#include "cli/device_locking.h"

#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "cli/plan_check.h"
#include "runner/device.h"
#include "runner/environment.h"

namespace orch::cli {

namespace {

sweep::LockedDevice cpu_device() { return {"cpu", "the CPU"}; }

sweep::LockedDevice gpu_device(int cuda_index, const std::string& slot_name) {
  const std::string uuid = gpu_uuid_of(cuda_index);
  return {"gpu-" + uuid, "GPU " + slot_name + " (" + uuid + ")"};
}

}  // namespace

std::vector<sweep::LockedDevice> devices_of_slots(const std::vector<std::string>& slots) {
  const std::vector<std::string> visible = visible_gpu_slots();
  std::vector<sweep::LockedDevice> out;
  for (const std::string& slot : slots) {
    if (slot.empty()) {
      out.push_back(cpu_device());
      continue;
    }
    // The slot's position among the visible GPUs is its CUDA index in this process.
    const auto it = std::find(visible.begin(), visible.end(), slot);
    if (it != visible.end())
      out.push_back(gpu_device(static_cast<int>(it - visible.begin()), slot));
  }
  return out;
}

std::vector<sweep::LockedDevice> devices_of_runs(const std::vector<RunSpec>& runs) {
  const std::vector<std::string> visible = visible_gpu_slots();
  std::vector<sweep::LockedDevice> out;
  for (const RunSpec& spec : runs) {
    c10::Device device(c10::kCPU);
    try {
      device = resolve_device(spec.device);  // as the runner will
    } catch (const std::exception&) {
      continue;  // the run fails with the runner's own message, on no device
    }
    const auto index = static_cast<std::size_t>(device.index());
    if (!device.is_cuda()) {
      out.push_back(cpu_device());
    } else if (index < visible.size()) {
      out.push_back(gpu_device(device.index(), visible[index]));
    }
  }
  return out;
}

std::optional<sweep::DeviceLocks> lock_devices(const std::vector<sweep::LockedDevice>& devices,
                                               const std::string& command, const std::string& name,
                                               bool wait, const std::atomic<bool>& stop,
                                               int& exit_code) {
  try {
    auto locks = sweep::DeviceLocks::acquire(devices, sweep::lock_holder_text(command, name), wait,
                                             std::cout, stop);
    if (!locks) {
      std::cout << "stopped while waiting for a device; nothing ran\n";
      exit_code = kExitStopped;
    }
    return locks;
  } catch (const std::runtime_error& e) {  // DeviceBusy, or a lock folder or file refused
    std::cerr << "orch " << command << ": " << e.what() << "\n";
    exit_code = kExitBadInput;
    return std::nullopt;
  }
}

}  // namespace orch::cli
