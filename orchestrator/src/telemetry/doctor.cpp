// `orch doctor`'s checks over gathered facts (see doctor.h). The advice follows the tuning
// article the project is built on (shared SEED-NOTES.md: #8 PCIe, #9 CUDA_LAUNCH_BLOCKING,
// #10 versions).
#include "telemetry/doctor.h"

#include <fmt/format.h>

#include "telemetry/kernel_coverage.h"

namespace orch {

namespace {

std::string gpu_label(const DoctorGpu& g) {
  std::string name = g.name.empty() ? g.nvml.name : g.name;
  return fmt::format("cuda:{} ({}{}{})", g.cuda_index, name, name.empty() ? "" : ", ",
                     g.pci_bus_id);
}

std::string or_unknown(const std::string& s) { return s.empty() ? "unknown" : s; }

void check_launch_blocking(const DoctorFacts& f, std::vector<Finding>& out) {
  auto it = f.variables.find("CUDA_LAUNCH_BLOCKING");
  if (it == f.variables.end()) {
    out.push_back({Severity::kOk, "launch_blocking", "CUDA_LAUNCH_BLOCKING is not set", ""});
    return;
  }
  if (it->second.empty() || it->second == "0") {
    out.push_back({Severity::kOk, "launch_blocking",
                   fmt::format("CUDA_LAUNCH_BLOCKING={} (launches stay asynchronous)", it->second),
                   ""});
    return;
  }
  out.push_back(
      {Severity::kError, "launch_blocking",
       fmt::format("CUDA_LAUNCH_BLOCKING={}: every kernel launch waits for the kernel to finish",
                   it->second),
       "It kills the asynchrony training depends on: steps run 5-10x slower while GPU-Util "
       "still shows 100%, so every number measured would be wrong. Unset it "
       "(`unset CUDA_LAUNCH_BLOCKING`); use it only to find which kernel fails."});
}

void check_gpus_visible(const DoctorFacts& f, std::vector<Finding>& out) {
  if (f.cuda_available && !f.gpus.empty()) {
    std::string names;
    for (const DoctorGpu& g : f.gpus) names += (names.empty() ? "" : ", ") + gpu_label(g);
    out.push_back(
        {Severity::kOk, "gpu", fmt::format("{} GPU(s) visible: {}", f.gpus.size(), names), ""});
    return;
  }
  std::string why = f.nvml_available ? "CUDA sees no device" : f.nvml_reason;
  auto cvd = f.variables.find("CUDA_VISIBLE_DEVICES");
  if (cvd != f.variables.end()) why += fmt::format("; CUDA_VISIBLE_DEVICES='{}'", cvd->second);
  out.push_back({Severity::kWarning, "gpu",
                 "no GPU visible: runs will use the CPU / telemetry unavailable (" + why + ")",
                 "CPU runs check an experiment but say nothing about a GPU. Check `nvidia-smi`, "
                 "the driver, and CUDA_VISIBLE_DEVICES."});
}

void check_nvml(const DoctorFacts& f, std::vector<Finding>& out) {
  if (!f.cuda_available || f.gpus.empty()) return;  // already said by the gpu check
  if (!f.nvml_available) {
    out.push_back({Severity::kWarning, "nvml",
                   "NVML unavailable: telemetry unavailable (" + f.nvml_reason + ")",
                   "Runs still measure throughput, but without utilization, power, clocks and "
                   "PCIe traffic the cause of a slow configuration cannot be seen. NVML is "
                   "libnvidia-ml.so.1, installed with the driver."});
    return;
  }
  out.push_back({Severity::kOk, "nvml", "NVML available: telemetry will be sampled", ""});
}

// A link that runs below its maximum generation: under load that caps host<->GPU copies, while
// idle it may only be the GPU saving power.
void check_pcie_generation(const DoctorGpu& g, const std::string& label, const std::string& link,
                           std::vector<Finding>& out) {
  const std::string when = g.pcie_read_under_load ? "under load" : "while idle";
  std::string advice =
      "Each generation down halves the link's bandwidth; input-heavy "
      "configurations will look PCIe-bound. Check `lspci -vv` (LnkSta vs LnkCap) and the "
      "BIOS PCIe setting.";
  if (!g.pcie_read_under_load) {
    advice =
        "Idle GPUs lower the link generation to save power, so this may be normal: "
        "read it during a run (`nvidia-smi -q -d PCIE`, or the run's "
        "environment.pcie). " +
        advice;
  }
  out.push_back(
      {Severity::kWarning, "pcie",
       fmt::format("{}: PCIe link runs at {} {}: below its maximum generation", label, link, when),
       advice});
}

// PCIe (article #8): a link below its maximum caps host<->GPU copies.
void check_pcie(const DoctorGpu& g, const std::string& label, std::vector<Finding>& out) {
  const PcieLink& l = g.nvml.pcie;
  if (!(l.gen_current && l.gen_max && l.width_current && l.width_max)) {
    out.push_back(
        {Severity::kOk, "pcie",
         fmt::format("{}: PCIe link not fully reported ({})", label, or_unknown(l.reason)), ""});
    return;
  }
  const std::string link = fmt::format("gen{} x{} (maximum gen{} x{})", *l.gen_current,
                                       *l.width_current, *l.gen_max, *l.width_max);
  if (*l.width_current < *l.width_max) {
    out.push_back(
        {Severity::kWarning, "pcie",
         fmt::format("{}: PCIe link runs at {}: fewer lanes than the GPU supports", label, link),
         "A narrow link caps every host-to-GPU copy; input-heavy configurations will look "
         "PCIe-bound (PCIe RX/TX high while GPU-Util and memory use move together). Check "
         "the slot (`lspci -vv`: LnkSta vs LnkCap), risers and BIOS lane settings."});
  }
  if (*l.gen_current < *l.gen_max) check_pcie_generation(g, label, link, out);
  if (*l.width_current >= *l.width_max && *l.gen_current >= *l.gen_max) {
    out.push_back(
        {Severity::kOk, "pcie", fmt::format("{}: PCIe link at its maximum, {}", label, link), ""});
  }
}

void check_persistence(const DoctorGpu& g, const std::string& label, std::vector<Finding>& out) {
  if (!g.nvml.persistence_mode) {
    out.push_back({Severity::kOk, "persistence",
                   fmt::format("{}: persistence mode not reported ({})", label,
                               or_unknown(g.nvml.persistence_reason)),
                   ""});
  } else if (!*g.nvml.persistence_mode) {
    out.push_back(
        {Severity::kWarning, "persistence", fmt::format("{}: persistence mode is off", label),
         "Without it the driver tears the GPU down whenever no process uses it, so each run "
         "(each child process of a sweep) pays the driver's initialisation again and starts "
         "from reset clocks. Enable it: `sudo nvidia-smi -pm 1`."});
  } else {
    out.push_back(
        {Severity::kOk, "persistence", fmt::format("{}: persistence mode is on", label), ""});
  }
}

// "pid 123 python (1.5 GiB), pid 456 (name unknown)".
std::string describe_processes(const std::vector<GpuProcess>& processes) {
  std::string list;
  for (const GpuProcess& p : processes) {
    list += fmt::format("{}pid {} {}", list.empty() ? "" : ", ", p.pid,
                        p.name.empty() ? "(name unknown)" : p.name);
    if (p.used_memory_bytes >= 0) {
      list += fmt::format(" ({:.1f} GiB)", static_cast<double>(p.used_memory_bytes) / (1 << 30));
    }
  }
  return list;
}

void check_other_processes(const DoctorGpu& g, const std::string& label,
                           std::vector<Finding>& out) {
  if (!g.nvml.other_processes) {
    out.push_back({Severity::kWarning, "processes",
                   fmt::format("{}: could not list the processes using the GPU ({})", label,
                               or_unknown(g.nvml.processes_reason)),
                   "Check `nvidia-smi` yourself: another process would corrupt the numbers."});
  } else if (!g.nvml.other_processes->empty()) {
    out.push_back(
        {Severity::kError, "processes",
         fmt::format("{}: in use by {} other process(es): {}", label,
                     g.nvml.other_processes->size(), describe_processes(*g.nvml.other_processes)),
         "They share the GPU's SMs, memory and bandwidth with every run, so throughput, "
         "utilization and memory measured now would be corrupted. Stop them, or choose another "
         "GPU with CUDA_VISIBLE_DEVICES."});
  } else {
    out.push_back({Severity::kOk, "processes",
                   fmt::format("{}: no other process is computing on it", label), ""});
  }
}

void check_gpu(const DoctorGpu& g, std::vector<Finding>& out) {
  const std::string label = gpu_label(g);
  if (!g.nvml.found) {
    out.push_back({Severity::kWarning, "nvml",
                   fmt::format("{}: unknown to NVML, telemetry unavailable for it ({})", label,
                               g.nvml.reason),
                   ""});
    return;
  }
  check_pcie(g, label, out);
  check_persistence(g, label, out);
  check_other_processes(g, label, out);
}

// Whether orch's kernels (fused batch-norm, max pooling, the nvjpeg crop) have an image or PTX
// for the GPU; where not, the plugins run ATen's / cuDNN's operations (counted in each run's
// counters), so configurations that ask for ours measure something else.
void check_kernels(const DoctorGpu& g, const std::vector<CudaArch>& built, const std::string& list,
                   std::vector<Finding>& out) {
  if (g.cc_major == 0) return;
  const std::string label = gpu_label(g);
  const CoverageDecision d = kernel_coverage(built, g.cc_major, g.cc_minor);
  const std::string cc = fmt::format("compute capability {}.{}", g.cc_major, g.cc_minor);
  const std::string have =
      fmt::format("orch's kernels are built for {}", describe_architectures(built));
  const std::string fallback =
      "fused_bn, max_pool_impl: orch and the nvjpeg loader's crop then run ATen's or cuDNN's "
      "operations instead (slower; each run counts it: model.*.kernel_unavailable.*, "
      "data.crop_kernel_unavailable)";
  switch (d.coverage) {
    case KernelCoverage::kNative:
      out.push_back({Severity::kOk, "kernels",
                     fmt::format("{}: {}: orch's kernels run natively (sm_{} image; {})", label, cc,
                                 d.used->number(), have),
                     ""});
      return;
    case KernelCoverage::kPtxJit:
      out.push_back(
          {Severity::kOk, "kernels",
           fmt::format("{}: {}: no image for it, orch's kernels run from PTX compute_{} that the "
                       "driver compiles ({})",
                       label, cc, d.used->number(), have),
           "The first launch of each kernel compiles it (cached in ~/.nv/ComputeCache); a build "
           "for this GPU avoids that: -DCMAKE_CUDA_ARCHITECTURES=" +
               fmt::format("{}{}", g.cc_major, g.cc_minor)});
      return;
    case KernelCoverage::kNone:
      out.push_back({Severity::kWarning, "kernels",
                     fmt::format("{}: {}: orch's kernels have neither an image nor PTX for it ({})",
                                 label, cc, have),
                     fallback + fmt::format(". Rebuild with -DCMAKE_CUDA_ARCHITECTURES=\"{};{}{}\" "
                                            "(now \"{}\").",
                                            list, g.cc_major, g.cc_minor, list)});
      return;
    case KernelCoverage::kTooOld:
      out.push_back(
          {Severity::kWarning, "kernels",
           fmt::format("{}: {}: orch's kernels need compute capability 8.0 or newer", label, cc),
           fallback + "."});
      return;
    case KernelCoverage::kNotBuilt:
      out.push_back(
          {Severity::kWarning, "kernels",
           fmt::format("{}: {}: this orch was built without its CUDA kernels (no nvcc)", label, cc),
           fallback + ". scripts/setup.sh installs what the build needs."});
      return;
  }
}

void check_versions(const DoctorFacts& f, std::vector<Finding>& out) {
  std::string orch = or_unknown(f.orch_version);
  if (!f.git_revision.empty() && f.git_revision != "unknown") orch += " (" + f.git_revision + ")";
  out.push_back(
      {Severity::kOk, "versions",
       fmt::format("driver {}, CUDA runtime {} (driver API {}), cuDNN {}, LibTorch {}, orch {}",
                   or_unknown(f.driver_version), or_unknown(f.cuda_runtime_version),
                   or_unknown(f.cuda_driver_api_version), or_unknown(f.cudnn_version),
                   or_unknown(f.torch_version), orch),
       "Every run records these with its result: compare numbers only across the same "
       "versions."});
}

}  // namespace

std::string to_string(Severity s) {
  switch (s) {
    case Severity::kOk:
      return "ok";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "?";
}

std::vector<Finding> doctor_checks(const DoctorFacts& facts) {
  std::vector<Finding> out;
  check_launch_blocking(facts, out);
  check_gpus_visible(facts, out);
  check_nvml(facts, out);
  if (facts.cuda_available && facts.nvml_available) {
    for (const DoctorGpu& g : facts.gpus) check_gpu(g, out);
  }
  if (facts.cuda_available && facts.kernel_architectures) {
    const std::vector<CudaArch> built = parse_cuda_architectures(*facts.kernel_architectures);
    for (const DoctorGpu& g : facts.gpus) check_kernels(g, built, *facts.kernel_architectures, out);
  }
  check_versions(facts, out);
  return out;
}

bool has_error(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.severity == Severity::kError) return true;
  }
  return false;
}

std::string format_findings(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) {
    out += fmt::format("{:<8} {:<16} {}\n", to_string(f.severity), f.check, f.message);
    if (f.severity != Severity::kOk && !f.advice.empty()) {
      out += fmt::format("{:<8} {:<16} -> {}\n", "", "", f.advice);
    }
  }
  return out;
}

nlohmann::json doctor_json(const DoctorFacts& facts, const std::vector<Finding>& findings) {
  using nlohmann::json;
  json list = json::array();
  for (const Finding& f : findings) {
    list.push_back({{"severity", to_string(f.severity)},
                    {"check", f.check},
                    {"message", f.message},
                    {"advice", f.advice}});
  }
  json gpus = json::array();
  for (const DoctorGpu& g : facts.gpus) {
    json procs = nullptr;
    if (g.nvml.other_processes) {
      procs = json::array();
      for (const GpuProcess& p : *g.nvml.other_processes) {
        procs.push_back(
            {{"pid", p.pid}, {"name", p.name}, {"used_memory_bytes", p.used_memory_bytes}});
      }
    }
    gpus.push_back({{"cuda_index", g.cuda_index},
                    {"name", g.name},
                    {"pci_bus_id", g.pci_bus_id},
                    {"nvml_found", g.nvml.found},
                    {"uuid", g.nvml.uuid},
                    {"pcie", pcie_json(g.nvml.pcie)},
                    {"pcie_read_under_load", g.pcie_read_under_load},
                    {"persistence_mode",
                     g.nvml.persistence_mode ? json(*g.nvml.persistence_mode) : json(nullptr)},
                    {"other_processes", procs}});
    gpus.back()["compute_capability"] =
        g.cc_major ? json(fmt::format("{}.{}", g.cc_major, g.cc_minor)) : json(nullptr);
  }
  json facts_json = {{"variables", facts.variables},
                     {"cuda_available", facts.cuda_available},
                     {"gpus", gpus},
                     {"nvml_available", facts.nvml_available},
                     {"nvml_reason", facts.nvml_reason},
                     {"driver_version", facts.driver_version},
                     {"cuda_runtime_version", facts.cuda_runtime_version},
                     {"cuda_driver_api_version", facts.cuda_driver_api_version},
                     {"cudnn_version", facts.cudnn_version},
                     {"torch_version", facts.torch_version},
                     {"orch_version", facts.orch_version},
                     {"git_revision", facts.git_revision}};
  facts_json["kernel_architectures"] =
      facts.kernel_architectures ? json(*facts.kernel_architectures) : json(nullptr);
  return {{"ok", !has_error(findings)}, {"findings", list}, {"facts", facts_json}};
}

}  // namespace orch
