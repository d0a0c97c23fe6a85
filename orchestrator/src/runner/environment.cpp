// Environment collection: LibTorch's view of the CUDA device plus host facts.
#include "runner/environment.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

namespace orch {
namespace {

// Environment variables that change what a run measures (the article's CUDA_LAUNCH_BLOCKING
// makes every kernel synchronous) or where it runs.
constexpr const char* kRelevantVariables[] = {
    "CUDA_LAUNCH_BLOCKING", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "NVIDIA_TF32_OVERRIDE"};

}  // namespace

nlohmann::json collect_environment(const c10::Device& device) {
  nlohmann::json env;
  env["orch_version"] = ORCH_VERSION;
  env["torch_version"] = TORCH_VERSION;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) env["hostname"] = host;
  env["cpu_count"] = std::thread::hardware_concurrency();
  env["torch_threads"] = at::get_num_threads();
  nlohmann::json vars = nlohmann::json::object();
  for (const char* name : kRelevantVariables) {
    if (const char* v = std::getenv(name)) vars[name] = v;
  }
  env["variables"] = vars;
  env["device"] = device.str();
  if (device.is_cuda()) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(device.index());
    env["gpu_name"] = p->name;
    env["compute_capability"] = std::to_string(p->major) + "." + std::to_string(p->minor);
    env["sm_count"] = p->multiProcessorCount;
    env["gpu_memory_bytes"] = static_cast<std::int64_t>(p->totalGlobalMem);
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    env["cuda_runtime_version"] = runtime;
    env["cuda_driver_api_version"] = driver;
    env["cudnn_version"] = at::detail::getCUDAHooks().versionCuDNN();
  }
  return env;
}

}  // namespace orch
