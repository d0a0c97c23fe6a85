// `orch doctor`'s checks: what could spoil a night's sweep, judged from facts gathered
// beforehand. The checks are a pure function of DoctorFacts, so tests fake any machine;
// cli/cmd_doctor.cpp gathers the real facts (CUDA through LibTorch, NVML, the environment).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/gpu_facts.h"

namespace orch {

struct DoctorGpu {
  int cuda_index = 0;
  std::string name;        ///< CUDA's device name
  std::string pci_bus_id;  ///< "0000:3b:00.0"
  GpuFacts nvml;           ///< nvml.found == false: NVML does not know this device
  /// The PCIe link was read again while the GPU was busy: an idle GPU lowers its link
  /// generation to save power, so only a reading under load shows a real limit.
  bool pcie_read_under_load = false;
  int cc_major = 0, cc_minor = 0;  ///< compute capability; 0.0 = unknown
};

struct DoctorFacts {
  /// The relevant environment variables that are set (name -> value).
  std::map<std::string, std::string> variables;
  bool cuda_available = false;
  std::vector<DoctorGpu> gpus;  ///< the CUDA-visible devices
  bool nvml_available = false;
  std::string nvml_reason;  ///< why NVML is unusable
  // Versions, as display strings ("" = unknown).
  std::string driver_version, cuda_runtime_version, cuda_driver_api_version, cudnn_version,
      torch_version, orch_version, git_revision;
  /// The CMAKE_CUDA_ARCHITECTURES orch's kernels were built for ("" = built without them);
  /// nothing: not known, no check.
  std::optional<std::string> kernel_architectures;
};

enum class Severity { kOk, kWarning, kError };
std::string to_string(Severity s);  // "ok" | "warning" | "error"

struct Finding {
  Severity severity = Severity::kOk;
  std::string check;    ///< short id: "launch_blocking", "gpu", "nvml", "pcie", "kernels", ...
  std::string message;  ///< what was found
  std::string advice;   ///< what to do, and why (the article's advice); may be empty for ok
};

/// Every check, in a fixed order. Warnings allow a sweep; errors mean its numbers would be
/// wrong (a synchronous launch mode, another process on the GPU).
std::vector<Finding> doctor_checks(const DoctorFacts& facts);

bool has_error(const std::vector<Finding>& findings);

/// One line per finding ("ok       gpu        cuda:0 ..."), advice indented beneath.
std::string format_findings(const std::vector<Finding>& findings);

/// {ok: bool (no error), findings: [{severity, check, message, advice}], facts: {...}}.
nlohmann::json doctor_json(const DoctorFacts& facts, const std::vector<Finding>& findings);

}  // namespace orch
