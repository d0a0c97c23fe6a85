// The real DeviceChecker: `orch health-check --device cuda:0` (or `cpu`) in a child process
// pinned to the slot's GPU, like a run. It allocates, launches a kernel and synchronises; a
// process of its own, because a GPU that a run left in a sticky error state poisons only the
// process that met it, and the question is whether a fresh one works.
#pragma once

#include <string>

#include "sweep/scheduler.h"

namespace orch::sweep {

struct DeviceCheckOptions {
  std::string orch_binary;  ///< the orch executable
  std::string work_dir;     ///< the check's output files go here
  double timeout_s = 120;   ///< a check with no answer by then is a failed check
};

class ChildDeviceChecker final : public DeviceChecker {
 public:
  explicit ChildDeviceChecker(DeviceCheckOptions options) : options_(std::move(options)) {}
  std::unique_ptr<CheckHandle> start(const std::string& gpu) override;

 private:
  DeviceCheckOptions options_;
  int count_ = 0;
};

}  // namespace orch::sweep
