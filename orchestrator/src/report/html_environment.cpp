// Environment facts and warnings for the HTML report, from stored environments.
#include "report/html_environment.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "result/json_dump.h"
#include "telemetry/doctor.h"

namespace orch {
namespace {

using nlohmann::json;

// A scalar as text; "" for null, missing, objects and arrays.
std::string text_of(const json& env, const char* key) {
  if (!env.is_object() || !env.contains(key)) return "";
  const json& v = env.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return "";
}

std::optional<long long> int_of(const json& env, const char* key) {
  if (!env.is_object() || !env.contains(key) || !env.at(key).is_number()) return std::nullopt;
  return env.at(key).get<long long>();
}

std::optional<unsigned> link_value(const json& pcie, const char* key) {
  if (!pcie.is_object() || !pcie.contains(key) || !pcie.at(key).is_number()) return std::nullopt;
  return pcie.at(key).get<unsigned>();
}

std::string pcie_text(const json& env) {
  if (!env.is_object() || !env.contains("pcie")) return "";
  const json& p = env.at("pcie");
  const auto gc = link_value(p, "gen_current"), wc = link_value(p, "width_current"),
             gm = link_value(p, "gen_max"), wm = link_value(p, "width_max");
  if (!gc || !wc) return "";
  std::string out = fmt::format("gen{} x{}", *gc, *wc);
  if (gm && wm) out += fmt::format(" (maximum gen{} x{})", *gm, *wm);
  return out + ", read before the run";
}

std::string gpu_text(const json& env) {
  std::string name = text_of(env, "gpu_name");
  if (name.empty()) return "";
  std::vector<std::string> parts;
  if (auto cc = text_of(env, "compute_capability"); !cc.empty()) parts.push_back("compute " + cc);
  if (auto sm = int_of(env, "sm_count")) parts.push_back(fmt::format("{} SMs", *sm));
  if (auto mem = int_of(env, "gpu_memory_bytes")) {
    parts.push_back(
        fmt::format("{:.1f} GiB", static_cast<double>(*mem) / (1024.0 * 1024.0 * 1024.0)));
  }
  std::string extra;
  for (const auto& p : parts) extra += (extra.empty() ? "" : ", ") + p;
  return extra.empty() ? name : name + " (" + extra + ")";
}

std::string variables_text(const json& env) {
  if (!env.is_object() || !env.contains("variables") || !env.at("variables").is_object()) return "";
  std::string out;
  for (const auto& [k, v] : env.at("variables").items()) {
    out +=
        (out.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : json_dump(v));
  }
  return out.empty() ? "none of the watched variables set" : out;
}

}  // namespace

std::string cuda_version_text(long long v) {
  if (v <= 0) return "";
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::string cudnn_version_text(long long v) {
  if (v <= 0) return "";
  if (v >= 90000) return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  return fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100);
}

std::vector<EnvironmentFact> environment_facts(const std::vector<json>& environments) {
  struct Getter {
    const char* label;
    bool always;  // shown as "not recorded" when no run has it
    std::string (*get)(const json&);
  };
  static const Getter kGetters[] = {
      {"GPU", true, gpu_text},
      {"device", false, [](const json& e) { return text_of(e, "device"); }},
      {"driver", true, [](const json& e) { return text_of(e, "driver_version"); }},
      {"CUDA runtime", true,
       [](const json& e) {
         return cuda_version_text(int_of(e, "cuda_runtime_version").value_or(0));
       }},
      {"CUDA driver API", false,
       [](const json& e) {
         return cuda_version_text(int_of(e, "cuda_driver_api_version").value_or(0));
       }},
      {"cuDNN", true,
       [](const json& e) { return cudnn_version_text(int_of(e, "cudnn_version").value_or(0)); }},
      {"LibTorch", true, [](const json& e) { return text_of(e, "torch_version"); }},
      {"orch", false,
       [](const json& e) {
         std::string v = text_of(e, "orch_version"), g = text_of(e, "git_revision");
         return g.empty() || v.empty() ? v : v + " (" + g + ")";
       }},
      {"host", true, [](const json& e) { return text_of(e, "hostname"); }},
      {"CPU", false,
       [](const json& e) {
         std::string m = text_of(e, "cpu_model");
         auto n = int_of(e, "cpu_count");
         if (m.empty()) return n ? fmt::format("{} cores", *n) : std::string();
         return n ? fmt::format("{} ({} cores)", m, *n) : m;
       }},
      {"PCIe link", true, pcie_text},
      {"PCI bus id", false, [](const json& e) { return text_of(e, "pci_bus_id"); }},
      {"persistence mode", false, [](const json& e) { return text_of(e, "persistence_mode"); }},
      {"variables", false, variables_text},
  };
  std::vector<EnvironmentFact> out;
  for (const Getter& g : kGetters) {
    EnvironmentFact f{g.label, {}};
    for (const json& env : environments) {
      const std::string v = g.get(env);
      if (v.empty()) continue;
      auto it = std::find_if(f.values.begin(), f.values.end(),
                             [&](const auto& p) { return p.first == v; });
      if (it == f.values.end())
        f.values.emplace_back(v, 1);
      else
        ++it->second;
    }
    if (f.values.empty() && !g.always) continue;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<EnvironmentWarning> environment_warnings(const std::vector<json>& environments) {
  std::vector<EnvironmentWarning> out;
  auto add = [&](const std::string& severity, const std::string& check, const std::string& message,
                 const std::string& advice) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const auto& w) { return w.check == check && w.message == message; });
    if (it != out.end()) {
      ++it->runs;
      return;
    }
    out.push_back({severity, check, message, advice, 1});
  };
  for (const json& env : environments) {
    if (!env.is_object()) continue;
    const std::string device = text_of(env, "device");
    if (device == "cpu") {
      add("warning", "device", "the run used the CPU",
          "CPU numbers check an experiment but say nothing about a GPU; run the sweep on the GPU "
          "machine (device: auto picks the first visible CUDA device).");
    }
    DoctorFacts facts;
    if (env.contains("variables") && env.at("variables").is_object()) {
      for (const auto& [k, v] : env.at("variables").items()) {
        facts.variables[k] = v.is_string() ? v.get<std::string>() : json_dump(v);
      }
    }
    // A GPU run records its GPU's name; older documents may lack `device` in the environment.
    const bool on_gpu = device != "cpu" && !text_of(env, "gpu_name").empty();
    facts.cuda_available = on_gpu;
    facts.nvml_available = on_gpu;
    if (on_gpu) {
      DoctorGpu g;
      g.cuda_index = device.rfind("cuda:", 0) == 0 ? std::atoi(device.c_str() + 5) : 0;
      g.name = text_of(env, "gpu_name");
      g.pci_bus_id = text_of(env, "pci_bus_id");
      // The doctor labels a GPU "cuda:0 (name, bus id)"; without a bus id, "cuda:0 (name)".
      if (g.pci_bus_id.empty()) std::swap(g.name, g.pci_bus_id);
      // Only what the environment recorded: the link and persistence mode, read by NVML before
      // the run. The process list is not stored, so it is not judged.
      g.nvml.found = true;
      g.nvml.other_processes = std::vector<GpuProcess>{};
      if (env.contains("pcie")) {
        const json& p = env.at("pcie");
        g.nvml.pcie.gen_current = link_value(p, "gen_current");
        g.nvml.pcie.width_current = link_value(p, "width_current");
        g.nvml.pcie.gen_max = link_value(p, "gen_max");
        g.nvml.pcie.width_max = link_value(p, "width_max");
      }
      if (env.contains("persistence_mode") && env.at("persistence_mode").is_boolean()) {
        g.nvml.persistence_mode = env.at("persistence_mode").get<bool>();
      }
      facts.gpus.push_back(g);
    }
    for (const Finding& f : doctor_checks(facts)) {
      if (f.severity == Severity::kOk) continue;
      if (f.check != "launch_blocking" && f.check != "pcie" && f.check != "persistence") continue;
      add(to_string(f.severity), f.check, f.message, f.advice);
    }
  }
  return out;
}

}  // namespace orch
