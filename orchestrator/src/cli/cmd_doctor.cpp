// `orch doctor`: pre-flight checks before a night's sweep. This file gathers the facts (CUDA
// through LibTorch, NVML, the environment); telemetry/doctor.cpp judges them.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "cli/commands.h"
#include "cli/doctor_facts.h"
#include "result/json_dump.h"
#include "runner/environment.h"
#include "telemetry/doctor.h"
#include "telemetry/host_facts.h"
#include "text/terminal_text.h"

namespace orch::cli {
namespace {

// CUDA encodes versions as 1000 * major + 10 * minor (13000 = 13.0).
std::string cuda_version_string(int v) {
  if (v <= 0) return "";
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

// cuDNN 9 encodes 10000 * major + 100 * minor + patch; cuDNN 8 and older 1000 * major + ...
std::string cudnn_version_string(long v) {
  if (v <= 0) return "";
  if (v >= 90000) return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  return fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100);
}

// Keeps the GPU busy for about `seconds` with large matrix products, so that NVML reads the
// PCIe link as a run would see it: idle GPUs lower the link generation to save power.
// `read` is called while work is still queued.
template <class Read>
void under_load(int index, double seconds, Read read) {
  const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  auto a = torch::randn({4096, 4096}, torch::TensorOptions(device));
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         seconds) {
    for (int i = 0; i < 8; ++i) a = torch::tanh(torch::matmul(a, a));
    torch::cuda::synchronize(index);
  }
  for (int i = 0; i < 16; ++i) a = torch::tanh(torch::matmul(a, a));
  read();
  torch::cuda::synchronize(index);
}

}  // namespace

DoctorFacts gather_facts(bool load_gpus) {
  DoctorFacts f;
  f.variables = relevant_variables();
  f.orch_version = ORCH_VERSION;
  f.git_revision = git_revision();
  f.torch_version = TORCH_VERSION;
  // From cli/CMakeLists.txt, with commas for CMake's semicolons; "" = built without kernels.
  std::string archs = ORCH_CUDA_ARCHITECTURES;
  std::replace(archs.begin(), archs.end(), ',', ';');
  f.kernel_architectures = archs;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  f.cuda_runtime_version = cuda_version_string(runtime);
  f.cuda_driver_api_version = cuda_version_string(driver);
  try {
    if (at::detail::getCUDAHooks().hasCuDNN()) {
      f.cudnn_version = cudnn_version_string(at::detail::getCUDAHooks().versionCuDNN());
    }
  } catch (const std::exception&) {
    // A CPU-only LibTorch: no cuDNN to report.
  }

  f.cuda_available = torch::cuda::is_available();
  std::vector<std::string> bus_ids;
  if (f.cuda_available) {
    const int n = static_cast<int>(torch::cuda::device_count());
    for (int i = 0; i < n; ++i) {
      const cudaDeviceProp* p = at::cuda::getDeviceProperties(i);
      DoctorGpu g;
      g.cuda_index = i;
      g.name = p->name;
      g.pci_bus_id = pci_bus_id(p->pciDomainID, p->pciBusID, p->pciDeviceID);
      g.cc_major = p->major;
      g.cc_minor = p->minor;
      bus_ids.push_back(g.pci_bus_id);
      f.gpus.push_back(std::move(g));
    }
  }

  // Processes are listed before this process puts any load on a GPU (it excludes itself
  // anyway).
  NvmlFacts nvml = gather_nvml_facts(bus_ids, /*list_processes=*/true);
  f.nvml_available = nvml.available;
  f.nvml_reason = nvml.reason;
  f.driver_version = nvml.driver_version;
  for (std::size_t i = 0; i < f.gpus.size() && i < nvml.gpus.size(); ++i) {
    f.gpus[i].nvml = std::move(nvml.gpus[i]);
  }

  if (!load_gpus) return f;
  // A link below its maximum generation is read again under load before it is judged.
  for (DoctorGpu& g : f.gpus) {
    const PcieLink& l = g.nvml.pcie;
    if (!g.nvml.found || !l.gen_current || !l.gen_max || *l.gen_current >= *l.gen_max) continue;
    try {
      under_load(g.cuda_index, 1.0, [&] {
        NvmlFacts again = gather_nvml_facts({g.pci_bus_id}, false);
        if (!again.gpus.empty() && again.gpus[0].found) {
          g.nvml.pcie = again.gpus[0].pcie;
          g.pcie_read_under_load = true;
        }
      });
    } catch (const std::exception& e) {
      std::cerr << "orch doctor: could not load cuda:" << g.cuda_index
                << " to read its PCIe link: " << e.what() << "\n";
    }
  }
  return f;
}

namespace {

struct DoctorArgs {
  bool json = false;
};

int run_doctor(const DoctorArgs& a, const GlobalOptions& /*g*/) {
  const DoctorFacts facts = gather_facts();
  const std::vector<Finding> findings = doctor_checks(facts);
  if (a.json) {
    std::cout << json_dump(doctor_json(facts, findings), 2) << "\n";
  } else {
    // Findings quote the environment's values (CUDA_LAUNCH_BLOCKING=...): anyone's text, shown
    // with its control characters escaped, as every name orch prints is.
    std::vector<Finding> shown = findings;
    for (Finding& f : shown) {
      f.message = terminal_text(f.message);
      f.advice = terminal_text(f.advice);
    }
    std::cout << format_findings(shown);
    int warnings = 0, errors = 0;
    for (const Finding& f : findings) {
      warnings += f.severity == Severity::kWarning;
      errors += f.severity == Severity::kError;
    }
    if (warnings + errors == 0) {
      std::cout << "no problems found\n";
    } else {
      std::cout << fmt::format("{} warning(s), {} error(s){}\n", warnings, errors,
                               errors ? ": measurements taken now would be wrong" : "");
    }
  }
  return has_error(findings) ? kExitRunFailed : kExitOk;
}

}  // namespace

void add_doctor_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd =
      app.add_subcommand("doctor",
                         "check this machine before a sweep (launch blocking, PCIe link, other "
                         "processes on the GPU, persistence mode, orch's kernels for the GPU, "
                         "versions)");
  auto a = std::make_shared<DoctorArgs>();
  cmd->add_flag("--json", a->json, "print the findings and the facts as JSON");
  cmd->callback([&g, &exit_code, a] { exit_code = run_doctor(*a, g); });
}

}  // namespace orch::cli
