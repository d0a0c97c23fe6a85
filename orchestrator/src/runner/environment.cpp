// Environment collection: LibTorch's view of the CUDA device, NVML's facts about the GPU, and
// host facts. The torch-free parts live in telemetry/ (gpu_facts, host_facts).
#include "runner/environment.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "telemetry/gpu_facts.h"
#include "telemetry/host_facts.h"

namespace orch {
namespace {

// Environment variables that change what a run measures (the article's CUDA_LAUNCH_BLOCKING
// makes every kernel synchronous) or where it runs.
constexpr const char* kRelevantVariables[] = {
    "CUDA_LAUNCH_BLOCKING",    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS",      "PYTORCH_CUDA_ALLOC_CONF",
    "NVIDIA_TF32_OVERRIDE",    "CUDA_MODULE_LOADING",  "ORCH_GPU_MEMORY_CAP"};

nlohmann::json string_or_null(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

}  // namespace

std::map<std::string, std::string> relevant_variables() {
  std::map<std::string, std::string> out;
  for (const char* name : kRelevantVariables) {
    if (const char* v = std::getenv(name)) out[name] = v;
  }
  return out;
}

std::string pci_bus_id_of(const c10::Device& device) {
  if (!device.is_cuda()) return "";
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(device.index());
  return pci_bus_id(p->pciDomainID, p->pciBusID, p->pciDeviceID);
}

std::string gpu_uuid_of(int cuda_index) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(cuda_index);
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(p->uuid.bytes[i]));
    out += hex;
  }
  return out;
}

namespace {

// The executable a process runs, "" when it cannot be read (another user's process).
std::string executable_of(pid_t pid) {
  std::error_code ec;
  const auto exe =
      std::filesystem::read_symlink("/proc/" + std::to_string(static_cast<long>(pid)) + "/exe", ec);
  return ec ? std::string() : exe.string();
}

}  // namespace

nlohmann::json host_environment() {
  nlohmann::json env;
  env["orch_version"] = ORCH_VERSION;
  env["git_revision"] = git_revision();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) env["hostname"] = host;
  env["cpu_model"] = string_or_null(cpu_model());
  env["cpu_count"] = std::thread::hardware_concurrency();
  nlohmann::json vars = nlohmann::json::object();
  for (const auto& [name, value] : relevant_variables()) vars[name] = value;
  env["variables"] = vars;
  return env;
}

void add_nvml_environment(nlohmann::json& env, const std::string& pci_bus_id) {
  // NVML: the driver version on any machine that has one; the GPU's link, persistence mode
  // and UUID when the run is on a GPU. A failure only leaves these null.
  std::vector<std::string> bus_ids;
  if (!pci_bus_id.empty()) bus_ids.push_back(pci_bus_id);
  const NvmlFacts nvml = gather_nvml_facts(bus_ids, /*list_processes=*/!bus_ids.empty());
  env["driver_version"] = string_or_null(nvml.driver_version);
  if (!nvml.available) env["nvml_error"] = nvml.reason;
  if (pci_bus_id.empty()) return;
  env["pci_bus_id"] = pci_bus_id;
  const GpuFacts* g = nvml.gpus.empty() ? nullptr : &nvml.gpus.front();
  if (g && !g->found) env["nvml_error"] = g->reason;
  const bool known = g && g->found;
  env["gpu_uuid"] = known ? string_or_null(g->uuid) : nlohmann::json(nullptr);
  // Read before the run starts: an idle GPU may have lowered its link generation to save
  // power, so gen_current can be below what the run itself gets.
  env["pcie"] = pcie_json(known ? g->pcie : PcieLink{});
  env["persistence_mode"] =
      known && g->persistence_mode ? nlohmann::json(*g->persistence_mode) : nlohmann::json(nullptr);
  // Who else computes on this GPU as the run starts: their kernels share its SMs and memory
  // bandwidth, and the run's numbers with them. The sweep that started this run is orch,
  // holding the device's lock, not a neighbour.
  env["gpu_other_processes"] = nullptr;
  if (known && g->other_processes) {
    const std::string parent_exe = executable_of(::getppid()), own_exe = executable_of(::getpid());
    nlohmann::json list = nlohmann::json::array();
    for (const GpuProcess& p : *g->other_processes) {
      if (static_cast<pid_t>(p.pid) == ::getppid() && !own_exe.empty() && parent_exe == own_exe)
        continue;
      list.push_back(
          {{"pid", p.pid},
           {"name", p.name},
           {"used_memory_bytes", p.used_memory_bytes < 0 ? nlohmann::json(nullptr)
                                                         : nlohmann::json(p.used_memory_bytes)}});
    }
    env["gpu_other_processes"] = list;
  }
}

nlohmann::json collect_environment(const c10::Device& device) {
  nlohmann::json env = host_environment();
  env["torch_version"] = TORCH_VERSION;
  env["torch_threads"] = at::get_num_threads();
  env["device"] = device.str();

  std::string bus_id;
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
    bus_id = pci_bus_id(p->pciDomainID, p->pciBusID, p->pciDeviceID);
  }
  add_nvml_environment(env, bus_id);
  return env;
}

}  // namespace orch
