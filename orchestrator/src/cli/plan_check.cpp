#include "cli/plan_check.h"

#include <c10/cuda/CUDAFunctions.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command_failure.h"
#include "cli/device_locking.h"
#include "cli/stop_signals.h"
#include "process/leftovers.h"
#include "sweep/child_run.h"
#include "sweep/environment_fault.h"
#include "sweep/rehearsal.h"

namespace orch::cli {
std::vector<std::string> visible_gpu_slots() {
  const int count = static_cast<int>(c10::cuda::device_count());
  std::vector<std::string> visible;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    std::stringstream in(v);
    for (std::string item; std::getline(in, item, ',');) {
      if (!item.empty()) visible.push_back(item);
    }
  }
  std::vector<std::string> slots;
  for (int i = 0; i < count; ++i) {
    const auto u = static_cast<std::size_t>(i);
    slots.push_back(u < visible.size() ? visible[u] : std::to_string(i));
  }
  return slots;
}

namespace {

// The rehearsal's folder goes however the check ends, a full TMPDIR's fault included.
class RemovedAtEnd {
 public:
  explicit RemovedAtEnd(std::filesystem::path path) : path_(std::move(path)) {}
  RemovedAtEnd(const RemovedAtEnd&) = delete;
  RemovedAtEnd& operator=(const RemovedAtEnd&) = delete;
  ~RemovedAtEnd() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

 private:
  std::filesystem::path path_;
};

// Runs the rehearsal; a temporary folder that cannot take its files (full, read-only) is said
// as TMPDIR's fault, which "no space left on /tmp/orch-check-x/.../spec.json" leaves to guess.
sweep::Rehearsal rehearse_in(const Plan& plan, const std::vector<std::string>& gpus,
                             sweep::ChildLauncher& launcher,
                             const sweep::ChildLaunchOptions& launch,
                             const std::filesystem::path& tmp, const std::atomic<bool>& stop) {
  try {
    std::cout << "check: one training step of each configuration of " << plan.name << ", on "
              << (gpus.empty() ? std::string("the CPU") : std::to_string(gpus.size()) + " GPU(s)")
              << std::endl;
    return sweep::rehearse(plan.runs, gpus, launcher, std::cout, stop, launch.probe_start);
  } catch (const sweep::EnvironmentFault& e) {
    if (!e.storage_fault()) throw;
    throw CommandFailure(
        kExitEnvironment,
        "orch: --check: the temporary folder " + tmp.string() + " (TMPDIR) " +
            (e.error() == ENOSPC
                 ? std::string("is full")
                 : "cannot take the rehearsal's files: " + std::string(std::strerror(e.error()))) +
            "; free space there or set TMPDIR to another folder (" + e.what() + ")");
  }
}

// The check in a temporary folder of its own, removed however it ends.
int rehearse_plan_in_folder(const Plan& plan, const GlobalOptions& g,
                            const std::vector<std::string>& gpus, double grace_s, bool wait,
                            const std::atomic<bool>& stop) {
  // The children's specs, results and logs go to a folder of their own, never beside the
  // database: a rehearsal leaves nothing behind.
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) {
    // std::filesystem's own words ("temp_directory_path: No such file or directory") do not say
    // which folder or what to do.
    const char* env = std::getenv("TMPDIR");
    std::cerr << "orch: --check needs a temporary folder: "
              << (env ? "TMPDIR=" + std::string(env) : std::string("/tmp")) << ": " << ec.message()
              << "; set TMPDIR to a folder you can write\n";
    return kExitBadInput;
  }
  std::string tmpl = (tmp / "orch-check-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    const int err = errno;
    std::cerr << "orch: --check: cannot create a temporary folder in " << tmp.string() << ": "
              << std::strerror(err) << "; set TMPDIR to a folder you can write\n";
    // A full or read-only TMPDIR is the machine's state; one that is no folder, the setting's.
    return sweep::EnvironmentFault::is_storage_errno(err) ? kExitEnvironment : kExitBadInput;
  }
  const std::filesystem::path work = tmpl;
  const RemovedAtEnd removed(work);
  // A rehearsal's step on a GPU another sweep measures on would slow that sweep's runs.
  std::optional<sweep::DeviceLocks> devices;
  {
    int exit_code = kExitOk;
    devices = lock_devices(devices_of_slots(gpus.empty() ? std::vector<std::string>{""} : gpus),
                           "plan --check", plan.name, wait, stop, exit_code);
    if (!devices) return exit_code;
  }
  // As `orch sweep` (sweep_session.cpp): what a killed rehearsal leaves running ends with it.
  (void)process::become_child_subreaper();
  sweep::ChildLaunchOptions launch;
  launch.orch_binary = std::filesystem::read_symlink("/proc/self/exe").string();
  launch.plugin_paths = g.plugin_paths;
  launch.work_dir = work.string();
  launch.grace_s = grace_s;
  sweep::ChildLauncher launcher(launch);

  const sweep::Rehearsal r = rehearse_in(plan, gpus, launcher, launch, tmp, stop);

  std::cout << sweep::format_rehearsal(r);
  if (r.interrupted) return kExitStopped;
  return r.failures.empty() ? kExitOk : kExitBadInput;
}

}  // namespace

int rehearse_plan(const Plan& plan, const GlobalOptions& g, const std::vector<std::string>& gpus,
                  double grace_s, bool wait) {
  // Caught from here until the temporary folder is gone: a signal while the summary prints or
  // the folder is removed stops the check as one during the steps does (exit 3, nothing left
  // behind), rather than ending the process before its folder is removed.
  StopSignals stop;
  const int code = rehearse_plan_in_folder(plan, g, gpus, grace_s, wait, stop.flag());
  const bool stopped = stop.flag() && code != kExitEnvironment;
  hold_stop_signals_until_exit();
  return stopped ? kExitStopped : code;
}

}  // namespace orch::cli
