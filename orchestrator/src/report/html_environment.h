// The environment section of the HTML report: the facts each run recorded (GPU, driver, CUDA,
// cuDNN, LibTorch, host, PCIe link, variables), with the runs that saw each value, and the
// doctor's warnings that the stored environment still allows to judge (CUDA_LAUNCH_BLOCKING,
// a PCIe link below its maximum, persistence mode off) plus runs that used the CPU.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace orch {

struct EnvironmentFact {
  std::string label;                                ///< "GPU", "driver", ...
  std::vector<std::pair<std::string, int>> values;  ///< value -> number of runs, first seen first
};

/// One row per fact, over the environments of a sweep's runs (`environment_json`, any may be
/// null). A fact no run recorded shows as "not recorded" for the main ones, else is left out.
std::vector<EnvironmentFact> environment_facts(const std::vector<nlohmann::json>& environments);

struct EnvironmentWarning {
  std::string severity;  ///< "warning" or "error", as `orch doctor` says it
  std::string check;  ///< the doctor's check ("launch_blocking", "pcie", "persistence") or "device"
  std::string message, advice;
  int runs = 0;  ///< how many runs' environments gave it
};

/// The doctor's pure checks (telemetry/doctor.h) over each stored environment, keeping the
/// findings that are not ok, merged by message.
std::vector<EnvironmentWarning> environment_warnings(
    const std::vector<nlohmann::json>& environments);

/// CUDA's 13000 -> "13.0"; cuDNN's 91900 -> "9.19.0" (8907 -> "8.9.7"); "" for <= 0.
std::string cuda_version_text(long long v);
std::string cudnn_version_text(long long v);

}  // namespace orch
