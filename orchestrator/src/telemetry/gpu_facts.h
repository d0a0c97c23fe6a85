// What NVML says about the machine's GPUs once, before a run or in `orch doctor`: driver
// version, PCIe link (current and maximum), persistence mode, UUID, and the other processes
// computing on the GPU. Torch-free; the caller maps its CUDA devices to PCI bus ids.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace orch {

struct PcieLink {
  std::optional<unsigned> gen_current, width_current, gen_max, width_max;
  std::string reason;  ///< why a value is missing (first failure), empty when all are known
};

struct GpuProcess {
  unsigned pid = 0;
  std::string name;                     ///< the executable, or "" when NVML cannot name it
  std::int64_t used_memory_bytes = -1;  ///< -1 when NVML does not report it
};

struct GpuFacts {
  std::string pci_bus_id;
  bool found = false;
  std::string reason;  ///< why NVML does not know this device, when !found
  std::string name, uuid;
  PcieLink pcie;
  std::optional<bool> persistence_mode;
  std::string persistence_reason;  ///< why persistence_mode is unknown
  /// Other processes computing on this GPU (this process excluded); empty optional when
  /// NVML could not list them (processes_reason says why).
  std::optional<std::vector<GpuProcess>> other_processes;
  std::string processes_reason;
};

struct NvmlFacts {
  bool available = false;
  std::string reason;          ///< why NVML is unusable, when !available
  std::string driver_version;  ///< "" when unknown
  std::vector<GpuFacts> gpus;  ///< one per requested PCI bus id, in order
};

/// Opens NVML (ORCH_NVML_LIBRARY overrides the library), and describes each GPU named by a
/// PCI bus id. Never throws. `list_processes` asks for the compute processes too (slower).
NvmlFacts gather_nvml_facts(const std::vector<std::string>& pci_bus_ids, bool list_processes);

/// The bus id NVML accepts for CUDA's cudaDeviceProp pciDomainID/pciBusID/pciDeviceID:
/// "0000:3b:00.0" (function 0: a GPU is always function 0).
std::string pci_bus_id(int domain, int bus, int device);

/// {gen_current, width_current, gen_max, width_max}, null where unknown.
nlohmann::json pcie_json(const PcieLink& link);

}  // namespace orch
