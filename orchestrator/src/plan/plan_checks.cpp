// Plan-time checks of resolved configurations (see plan_checks.h).
#include "plan/plan_checks.h"

#include <regex>

#include "plan/experiment_schema.h"

namespace orch {

namespace {

using nlohmann::json;

std::optional<Value> as_value(const json& j) {
  if (j.is_boolean()) return Value{j.get<bool>()};
  if (j.is_number_integer()) return Value{j.get<std::int64_t>()};
  if (j.is_number_float()) return Value{j.get<double>()};
  if (j.is_string()) return Value{j.get<std::string>()};
  return std::nullopt;
}

std::optional<std::int64_t> int_setting(const PlanCheckInput& in, const std::string& key) {
  auto it = in.settings.find(key);
  if (it == in.settings.end()) return std::nullopt;
  if (auto* i = std::get_if<std::int64_t>(&it->second)) return *i;
  return std::nullopt;
}

std::string string_setting(const PlanCheckInput& in, const std::string& key) {
  auto it = in.settings.find(key);
  if (it == in.settings.end()) return "";
  if (auto* s = std::get_if<std::string>(&it->second)) return *s;
  return "";
}

// A plugin that declares needs_cuda, refused where its configuration cannot give it a CUDA
// device: `device: cpu`, or `auto` on this machine without a visible one (`device: cuda` there
// is host_plan_checks' own problem).
std::optional<PlanProblem> cuda_problem(const PluginInfo& info, const std::string& role,
                                        const PlanCheckInput& in) {
  if (!info.needs_cuda) return std::nullopt;
  const std::string device = string_setting(in, "device");
  const std::string why = info.needs_cuda->why.empty() ? "" : " (" + info.needs_cuda->why + ")";
  const std::string needs = info.name + " needs a CUDA device" + why;
  if (device == "cpu") {
    return PlanProblem{{role, "device"},
                       needs + ", and this configuration's device is cpu",
                       info.needs_cuda->on_cpu + " on the CPU"};
  }
  if (device == "auto" && in.on_this_machine && in.visible_gpus == 0) {
    return PlanProblem{
        {role},
        needs + ", and none is visible on this machine (device: auto would run on the CPU)",
        info.needs_cuda->on_cpu + " on the CPU"};
  }
  return std::nullopt;
}

// The written place of the first of `settings` the draft wrote, else of the role or group one
// of them belongs to.
std::optional<WrittenAt> blamed_place(const Draft& draft,
                                      const std::vector<std::string>& settings) {
  for (const std::string& s : settings) {
    if (auto it = draft.written.find(s); it != draft.written.end()) return it->second;
  }
  for (const std::string& s : settings) {
    const std::string parent = s.substr(0, s.find('.'));
    if (auto it = draft.written.find(parent); it != draft.written.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, Value> configuration_settings(const json& config) {
  std::map<std::string, Value> out;
  for (const auto& [key, value] : config.items()) {
    if (value.is_object() && value.contains("plugin") && value.contains("params")) {
      out[key] = value.at("plugin").get<std::string>();
      for (const auto& [param, v] : value.at("params").items()) {
        if (auto x = as_value(v)) out[key + "." + param] = *x;
      }
    } else if (value.is_object()) {
      for (const auto& [field, v] : value.items()) {
        if (auto x = as_value(v)) out[key + "." + field] = *x;
      }
    } else if (key == "batch_size" && value.is_string()) {
      continue;  // auto: the sweep searches it
    } else if (auto x = as_value(value)) {
      out[key] = *x;
    }
  }
  return out;
}

std::vector<PlanProblem> host_plan_checks(const PlanCheckInput& in) {
  std::vector<PlanProblem> out;
  const std::string device = string_setting(in, "device");
  static const std::regex kCuda(R"(cuda(:([0-9]+))?)");
  std::smatch m;
  if (in.on_this_machine && std::regex_match(device, m, kCuda)) {
    if (in.visible_gpus == 0) {
      out.push_back({{"device"},
                     "'" + device +
                         "' needs a CUDA device, and none is visible on this machine (check the "
                         "driver and CUDA_VISIBLE_DEVICES)",
                     "auto, cpu"});
    } else if (m[2].matched && std::stoll(m[2].str()) >= in.visible_gpus) {
      out.push_back({{"device"},
                     "'" + device + "' is not visible on this machine, which sees " +
                         std::to_string(in.visible_gpus) + " CUDA device(s)",
                     "auto, cpu, cuda, cuda:0 to cuda:" + std::to_string(in.visible_gpus - 1)});
    }
  }
  // A script run has no `data` (plan/workload_config.h): its images' size is the program's.
  const bool script = string_setting(in, "workload.kind") == "script";
  // The warm-up of a script run is the program's loop, which orch only tells a number of steps.
  if (script && string_setting(in, "steps.warmup") == "auto") {
    out.push_back({{"steps.warmup"},
                   "auto needs orch's own training loop to time the warm-up steps; a script "
                   "run's loop is its program's",
                   "an int >= 0 for a script workload"});
  }
  if (auto batch = int_setting(in, "batch_size"); batch && !script) {
    // The loaders' own names for a sample's size where they declare them, else ImageNet's.
    const double channels = static_cast<double>(int_setting(in, "data.channels").value_or(3));
    const double side = static_cast<double>(int_setting(in, "data.image_size").value_or(224));
    const double bytes = static_cast<double>(*batch) * channels * side * side * 4.0;
    if (bytes > kMaxBatchBytes) {
      out.push_back({{"batch_size"},
                     "a batch of " + std::to_string(*batch) + " images of " +
                         std::to_string(static_cast<long long>(channels)) + "x" +
                         std::to_string(static_cast<long long>(side)) + "x" +
                         std::to_string(static_cast<long long>(side)) +
                         " floats needs more than 2^48 bytes (256 TiB), more than any device has",
                     "a batch whose images take at most 2^48 bytes"});
    }
  }
  return out;
}

std::vector<PlanError> check_configuration(const Draft& draft, const nlohmann::json& config,
                                           const SchemaCatalog& catalog,
                                           const std::optional<MachineFacts>& machine,
                                           const SourceMark& fallback) {
  PlanCheckInput in;
  in.settings = configuration_settings(config);
  in.on_this_machine = machine.has_value();
  in.visible_gpus = machine ? machine->visible_gpus : 0;
  std::vector<PlanProblem> problems = host_plan_checks(in);
  for (const KeySpec& key : experiment_keys()) {
    // A script run has no plugins (plan/workload_config.h), so none of their checks apply.
    if (key.kind != KeyKind::kPlugin || !config.contains(key.name)) continue;
    const PluginInfo* info =
        catalog.find(key.role, config.at(key.name).at("plugin").get<std::string>());
    if (!info) continue;
    if (auto p = cuda_problem(*info, key.name, in)) problems.push_back(std::move(*p));
    if (!info->check) continue;
    for (PlanProblem& p : info->check(in)) problems.push_back(std::move(p));
  }
  std::vector<PlanError> out;
  for (const PlanProblem& p : problems) {
    if (auto at = blamed_place(draft, p.settings)) {
      out.emplace_back(at->mark, at->key_path, p.message, p.allowed);
    } else {
      // Nothing the file wrote causes it: the defaults do, so the whole configuration is blamed.
      out.emplace_back(fallback, "base",
                       p.message + " (" + (p.settings.empty() ? "" : p.settings.front()) +
                           " has its default value)",
                       p.allowed);
    }
  }
  return out;
}

}  // namespace orch
