#include "sweep/device_check.h"

#include <signal.h>

#include <chrono>
#include <filesystem>

#include "process/child.h"
#include "sweep/environment_fault.h"
#include "sweep/file_tail.h"

namespace orch::sweep {
namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (auto nl = text.rfind('\n'); nl != std::string::npos) text.erase(0, nl + 1);
  return text;
}

class ChildCheck final : public CheckHandle {
 public:
  ChildCheck(const DeviceCheckOptions& o, const std::string& gpu, const fs::path& base)
      : timeout_(o.timeout_s), out_(base.string() + ".out"), err_(base.string() + ".err") {
    create_directories(base.parent_path().string());
    create_empty_file(out_);
    create_empty_file(err_);
    process::ChildOptions c;
    c.argv = {o.orch_binary, "health-check", "--device", gpu.empty() ? "cpu" : "cuda:0"};
    // Pinned like a run: the child sees exactly the slot's GPU, as cuda:0.
    if (!gpu.empty()) c.env["CUDA_VISIBLE_DEVICES"] = gpu;
    c.out = process::Stdio::file(out_);
    c.err = process::Stdio::file(err_);
    started_ = Steady::now();
    child_ = std::make_unique<process::Child>(c);
  }

  std::optional<DeviceVerdict> poll() override {
    auto st = child_->poll();
    if (!st) {
      if (Steady::now() - started_ > std::chrono::duration<double>(timeout_)) {
        child_->signal_group(SIGKILL);
        child_->wait();
        return DeviceVerdict{
            false, "no answer within " + std::to_string(int(timeout_)) + " s: the device hangs"};
      }
      return std::nullopt;
    }
    if (st->signal == 0 && st->exit_code == 0) {
      return DeviceVerdict{true, last_line(file_tail(out_))};
    }
    std::string why = last_line(file_tail(err_));
    return DeviceVerdict{false, st->describe() + (why.empty() ? "" : ": " + why)};
  }

 private:
  double timeout_;
  std::string out_, err_;
  Steady::time_point started_;
  std::unique_ptr<process::Child> child_;
};

}  // namespace

std::unique_ptr<CheckHandle> ChildDeviceChecker::start(const std::string& gpu) {
  std::string name = gpu.empty() ? std::string("cpu") : "gpu" + gpu;
  for (char& c : name) {
    if (c == '/') c = '_';  // MIG device names have slashes
  }
  const fs::path base =
      fs::path(options_.work_dir) / ("health-check-" + name + "-" + std::to_string(++count_));
  return std::make_unique<ChildCheck>(options_, gpu, base);
}

}  // namespace orch::sweep
