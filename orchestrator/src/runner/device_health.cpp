#include "runner/device_health.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include "result/failure_class.h"

namespace orch {

std::optional<std::string> device_fault(const std::string& device) {
  try {
    const c10::Device d(device.empty() ? std::string("cpu") : device);
    constexpr std::int64_t kSide = 256;  // 256 KiB per matrix: allocation and a real kernel
    if (d.is_cuda()) torch::cuda::synchronize(d.index());  // an error left pending shows here
    const auto options = torch::TensorOptions(d).dtype(torch::kFloat);
    const auto a = torch::ones({kSide, kSide}, options);
    const double sum = torch::mm(a, a).sum().item<double>();
    if (d.is_cuda()) torch::cuda::synchronize(d.index());
    const double expected = static_cast<double>(kSide) * kSide * kSide;
    if (sum != expected) {
      return "a kernel computed a wrong answer: sum " + std::to_string(sum) + ", expected " +
             std::to_string(expected);
    }
    return std::nullopt;
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  }
}

void classify_run_failure(ResultDocument& doc) {
  if (doc.status != RunStatus::failed || doc.failure_class) return;
  const std::string error = doc.error.value_or("");
  if (names_sticky_cuda_error(error) || doc.gpu_lost()) {
    doc.failure_class = FailureClass::device;
  } else if (names_environment_errno(error)) {
    doc.failure_class = FailureClass::environment;
    if (error.find(kProcessLimitErrno) != std::string::npos &&
        error.find("ulimit") == std::string::npos) {
      doc.error = error +
                  " (a thread or process could not be started: a process limit such as ulimit "
                  "-u or a cgroup's pids.max)";
    }
  } else if (const std::string dev = doc.device.value_or(""); dev.rfind("cuda", 0) == 0) {
    // An exception on a GPU: the configuration's only if the GPU still works afterwards.
    if (auto fault = device_fault(dev)) {
      doc.failure_class = FailureClass::device;
      doc.error = error + " (afterwards the device failed a check: " + *fault + ")";
    } else {
      doc.failure_class = FailureClass::configuration;
    }
  } else {
    doc.failure_class = FailureClass::configuration;
  }
}

}  // namespace orch
