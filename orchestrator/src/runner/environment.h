// The environment a run executed in (GPU, versions, host), recorded with every result so two
// numbers are never compared without knowing what produced them.
#pragma once

#include <c10/core/Device.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace orch {

/// LibTorch's and CUDA's view of the device, plus what NVML adds (driver version, PCIe link
/// current and maximum, persistence mode, UUID; telemetry/gpu_facts.h) and host facts (CPU
/// model, host name, CPU count, relevant environment variables, orch version and git
/// revision). Never throws for a missing NVML: the NVML fields are null and `nvml_error`
/// says why.
nlohmann::json collect_environment(const c10::Device& device);

/// The host facts alone, without LibTorch or CUDA (orch version and git revision, host name,
/// CPU model and count, relevant environment variables): what a script run's `orch exec`
/// records beside the script's own facts.
nlohmann::json host_environment();

/// NVML's facts added to `env`: the driver version, and for the GPU at `pci_bus_id` (empty:
/// none) its bus id, UUID, PCIe link and persistence mode; `nvml_error` says why any is null.
void add_nvml_environment(nlohmann::json& env, const std::string& pci_bus_id);

/// The environment variables that change what a run measures or where it runs (the article's
/// CUDA_LAUNCH_BLOCKING, CUDA_VISIBLE_DEVICES, ...), those that are set, with their values.
std::map<std::string, std::string> relevant_variables();

/// The PCI bus id of a CUDA device ("0000:3b:00.0"), which names the same GPU to NVML
/// whatever CUDA_VISIBLE_DEVICES did to CUDA's numbering. Empty for the CPU.
std::string pci_bus_id_of(const c10::Device& device);

/// The CUDA device's UUID as nvidia-smi spells it ("GPU-8a1f0c2e-..."; a MIG instance's too,
/// with its own bytes): one name for one GPU, whatever CUDA_VISIBLE_DEVICES calls it.
std::string gpu_uuid_of(int cuda_index);

}  // namespace orch
