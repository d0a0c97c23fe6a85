// One-off NVML queries about the GPUs (see gpu_facts.h).
#include "telemetry/gpu_facts.h"

#include <fmt/format.h>
#include <unistd.h>

#include "telemetry/nvml_library.h"

namespace orch {

namespace {

void query_link(const NvmlLibrary& lib, nvml::Device d, PcieLink& link) {
  auto one = [&](nvml::DeviceGetUintFn fn, const char* what, std::optional<unsigned>& out) {
    if (!fn) {
      if (link.reason.empty()) link.reason = fmt::format("{} lacks {}", lib.path(), what);
      return;
    }
    unsigned v = 0;
    if (const auto r = fn(d, &v); r == nvml::kSuccess) {
      out = v;
    } else if (link.reason.empty()) {
      link.reason = fmt::format("{}: {}", what, lib.describe(r));
    }
  };
  one(lib.device_get_curr_pcie_link_generation, "nvmlDeviceGetCurrPcieLinkGeneration",
      link.gen_current);
  one(lib.device_get_curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth", link.width_current);
  one(lib.device_get_max_pcie_link_generation, "nvmlDeviceGetMaxPcieLinkGeneration", link.gen_max);
  one(lib.device_get_max_pcie_link_width, "nvmlDeviceGetMaxPcieLinkWidth", link.width_max);
}

void query_processes(const NvmlLibrary& lib, nvml::Device d, GpuFacts& g) {
  if (!lib.device_get_compute_running_processes) {
    g.processes_reason = fmt::format("{} lacks nvmlDeviceGetComputeRunningProcesses", lib.path());
    return;
  }
  // NVML's two-call protocol: ask with room for some, grow on INSUFFICIENT_SIZE (processes
  // may start in between, so a few tries).
  std::vector<nvml::ProcessInfo> infos(16);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(infos.size());
    const auto r = lib.device_get_compute_running_processes(d, &count, infos.data());
    if (r == nvml::kErrorInsufficientSize) {
      infos.resize(count + 8);
      continue;
    }
    if (r != nvml::kSuccess) {
      g.processes_reason = lib.describe(r);
      return;
    }
    std::vector<GpuProcess> out;
    const auto self = static_cast<unsigned>(getpid());
    for (unsigned i = 0; i < count; ++i) {
      if (infos[i].pid == self) continue;  // orch itself once CUDA is initialised
      GpuProcess p;
      p.pid = infos[i].pid;
      // NVML_VALUE_NOT_AVAILABLE (all ones) when memory is not reported.
      if (infos[i].usedGpuMemory != ~0ULL) {
        p.used_memory_bytes = static_cast<std::int64_t>(infos[i].usedGpuMemory);
      }
      char name[256] = {};
      if (lib.system_get_process_name &&
          lib.system_get_process_name(p.pid, name, sizeof name) == nvml::kSuccess) {
        p.name = name;
      }
      out.push_back(std::move(p));
    }
    g.other_processes = std::move(out);
    return;
  }
  g.processes_reason = "the process list kept growing while it was read";
}

}  // namespace

std::string pci_bus_id(int domain, int bus, int device) {
  return fmt::format("{:04x}:{:02x}:{:02x}.0", domain, bus, device);
}

NvmlFacts gather_nvml_facts(const std::vector<std::string>& pci_bus_ids, bool list_processes) {
  NvmlFacts facts;
  auto lib = NvmlLibrary::open(facts.reason);
  if (!lib) return facts;
  facts.available = true;
  if (lib->system_get_driver_version) {
    char version[nvml::kSystemDriverVersionBufferSize] = {};
    if (lib->system_get_driver_version(version, sizeof version) == nvml::kSuccess) {
      facts.driver_version = version;
    }
  }
  for (const std::string& bus_id : pci_bus_ids) {
    GpuFacts g;
    g.pci_bus_id = bus_id;
    nvml::Device d = lib->device_by_pci_bus_id(bus_id, g.reason);
    if (d) {
      g.found = true;
      char text[nvml::kDeviceUuidBufferSize] = {};
      if (lib->device_get_name && lib->device_get_name(d, text, sizeof text) == nvml::kSuccess) {
        g.name = text;
      }
      if (lib->device_get_uuid && lib->device_get_uuid(d, text, sizeof text) == nvml::kSuccess) {
        g.uuid = text;
      }
      query_link(*lib, d, g.pcie);
      if (!lib->device_get_persistence_mode) {
        g.persistence_reason = fmt::format("{} lacks nvmlDeviceGetPersistenceMode", lib->path());
      } else {
        int mode = 0;
        if (const auto r = lib->device_get_persistence_mode(d, &mode); r == nvml::kSuccess) {
          g.persistence_mode = mode == nvml::kFeatureEnabled;
        } else {
          g.persistence_reason = lib->describe(r);
        }
      }
      if (list_processes) query_processes(*lib, d, g);
    }
    facts.gpus.push_back(std::move(g));
  }
  return facts;
}

nlohmann::json pcie_json(const PcieLink& link) {
  auto v = [](const std::optional<unsigned>& x) -> nlohmann::json {
    return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
  };
  return {{"gen_current", v(link.gen_current)},
          {"width_current", v(link.width_current)},
          {"gen_max", v(link.gen_max)},
          {"width_max", v(link.width_max)}};
}

}  // namespace orch
