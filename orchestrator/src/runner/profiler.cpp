// Profiling extra steps with Kineto (see profiler.h).
#include "runner/profiler.h"

#include <ATen/record_function.h>
#include <kineto/ActivityType.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <string_view>
#include <system_error>

#include "runner/device.h"
#include "telemetry/profile_summary.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The profiler opens the path itself and would write through whatever stands there (a link
// planted in the run's folder, a FIFO it would wait on). So it writes into a private folder
// made beside the target (mkdtemp: mode 0700, a name nobody can guess), and the finished file is
// renamed over the target: a link there is replaced, never followed. Anything at the path but a
// regular file or a link (a folder, a device, a FIFO) is refused, never replaced.
void save_trace(prof::ProfilerResult& result, const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    throw std::runtime_error("it is not a regular file, and the trace replaces its target");
  }
  std::string folder = (path.parent_path() / ".orch-trace-XXXXXX").string();
  if (::mkdtemp(folder.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "cannot make a folder beside it");
  }
  const fs::path written = fs::path(folder) / "trace.json";
  std::error_code ec;
  try {
    result.save(written.string());
    if (!fs::is_regular_file(fs::symlink_status(written))) {
      throw std::runtime_error("the profiler wrote no file");
    }
    fs::rename(written, path);
  } catch (...) {
    fs::remove_all(folder, ec);
    throw;
  }
  fs::remove(folder, ec);
}

TraceEventKind kind_of(const prof::KinetoEvent& e) {
  switch (static_cast<libkineto::ActivityType>(e.activityType())) {
    case libkineto::ActivityType::CPU_OP:
      return TraceEventKind::kCpuOp;
    case libkineto::ActivityType::USER_ANNOTATION:
      return TraceEventKind::kUserScope;
    case libkineto::ActivityType::CONCURRENT_KERNEL:
      return TraceEventKind::kKernel;
    case libkineto::ActivityType::GPU_MEMCPY:
      return TraceEventKind::kMemcpy;
    case libkineto::ActivityType::GPU_MEMSET:
      return TraceEventKind::kMemset;
    case libkineto::ActivityType::CUDA_RUNTIME: {
      // Only the runtime API is counted: the driver calls it makes underneath would count
      // each launch twice.
      const std::string name = e.name();
      if (starts_with(name, "cudaLaunch") || starts_with(name, "cudaGraphLaunch")) {
        return TraceEventKind::kLaunch;
      }
      return TraceEventKind::kOther;
    }
    default:
      return TraceEventKind::kOther;
  }
}

// Disables the profiler on every way out, so a failed step never leaves it collecting.
struct EnabledProfiler {
  bool on = false;
  std::unique_ptr<prof::ProfilerResult> stop() {
    on = false;
    return prof::disableProfiler();
  }
  ~EnabledProfiler() {
    if (!on) return;
    try {
      prof::disableProfiler();
    } catch (...) {
      // nothing more to do: the error that brought us here is already being reported
    }
  }
};

// On a machine without a visible GPU, Kineto's initialisation logs "ERROR: gpuGetDeviceCount
// failed" into the run's output although CPU profiling works. Its log level is read once, from
// KINETO_LOG_LEVEL, when it initialises: with no GPU in this process, errors it could log are
// about the GPU (a CPU profiler failure still throws), so they are silenced, unless the user set
// a level.
void quiet_kineto_without_gpu() {
  if (std::getenv("KINETO_LOG_LEVEL") == nullptr && torch::cuda::device_count() == 0) {
    setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);  // above ERROR (4)
  }
}

}  // namespace

nlohmann::json profile_steps(std::int64_t steps, const c10::Device& device,
                             const std::string& trace_path, double measured_step_ms,
                             const std::function<void()>& step) {
  nlohmann::json out;
  out["steps"] = steps;
  out["profiler"] = "kineto";
  const bool gpu = device.is_cuda();
  out["activities"] = gpu ? nlohmann::json::array({"cpu", "cuda"}) : nlohmann::json::array({"cpu"});
  out["trace"] = nullptr;
  try {
    // No shapes, memory, stacks or FLOPs: each costs host time per operator and would widen the
    // gap between the profiled steps and the measured ones.
    quiet_kineto_without_gpu();
    const ProfilerConfig config(ProfilerState::KINETO);
    std::set<ActivityType> activities{ActivityType::CPU};
    if (gpu) activities.insert(ActivityType::CUDA);
    // prepareProfiler initialises Kineto (and CUPTI) before the clock starts.
    prof::prepareProfiler(config, activities);
    synchronize(device);
    EnabledProfiler guard;
    const auto t0 = std::chrono::steady_clock::now();
    prof::enableProfiler(config, activities);
    guard.on = true;
    for (std::int64_t i = 0; i < steps; ++i) {
      // The name TensorBoard and Perfetto's PyTorch views use for step boundaries.
      RECORD_USER_SCOPE("ProfilerStep#" + std::to_string(i));
      step();
    }
    synchronize(device);
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::unique_ptr<prof::ProfilerResult> result = guard.stop();

    std::vector<TraceEvent> events;
    events.reserve(result->events().size());
    for (const prof::KinetoEvent& e : result->events()) {
      TraceEvent t;
      t.kind = kind_of(e);
      if (t.kind == TraceEventKind::kOther) continue;
      t.name = e.name();
      t.thread = e.startThreadId();
      t.start_ns = static_cast<std::int64_t>(e.startNs());
      t.end_ns = static_cast<std::int64_t>(e.endNs());
      events.push_back(std::move(t));
    }
    out.update(summarize_profile(events, {steps, wall_ms, measured_step_ms, gpu}));

    if (!trace_path.empty()) {
      try {
        const fs::path path = fs::absolute(trace_path);
        if (path.has_parent_path()) fs::create_directories(path.parent_path());
        save_trace(*result, path);
        out["trace"] = path.string();
        out["trace_bytes"] = static_cast<std::int64_t>(fs::file_size(path));
      } catch (const std::exception& e) {
        out["error"] =
            std::string("the trace could not be written to ") + trace_path + ": " + e.what();
      }
    }
  } catch (const c10::Error& e) {
    out["error"] = std::string("profiling failed: ") + e.what_without_backtrace();
  } catch (const std::exception& e) {
    out["error"] = std::string("profiling failed: ") + e.what();
  }
  return out;
}

}  // namespace orch
