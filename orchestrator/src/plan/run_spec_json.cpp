// RunSpec <-> JSON.
#include "plan/run_spec_json.h"

#include <stdexcept>

#include "result/json_dump.h"

namespace orch {
namespace {

using json = nlohmann::json;

const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) {
    throw std::invalid_argument("run specification: missing '" + where + key + "'");
  }
  return j.at(key);
}

template <class T>
T get(const json& j, const char* key, const std::string& where) {
  try {
    return field(j, key, where).get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument("run specification: '" + where + key + "' has the wrong type");
  }
}

// Plugin parameters keep their declared types through JSON: integers stay integers, floats
// are written with a decimal point by nlohmann (65536.0) and read back as floats.
Value value_from_json(const json& v, const std::string& where) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  throw std::invalid_argument("run specification: '" + where + "' is not a bool, number or string");
}

PluginChoice choice_from_json(const json& config, const char* role) {
  const json& c = field(config, role, "config.");
  PluginChoice choice;
  choice.plugin = get<std::string>(c, "plugin", std::string("config.") + role + ".");
  const json& params = field(c, "params", std::string("config.") + role + ".");
  for (const auto& [name, v] : params.items()) {
    choice.params.set(name, value_from_json(v, std::string("config.") + role + ".params." + name));
  }
  return choice;
}

void fill_builtin_settings(RunSpec& run, const json& c);

// A script run's configuration holds no built-in trainer keys (plan/workload_config.h): its
// plugin choices and trainer settings stay at RunSpec's defaults, which nothing reads for it.
void fill_workload(RunSpec& run, const json& c) {
  run.workload = WorkloadSpec{};
  run.args = json::object();
  if (!c.contains("workload")) return;  // a built-in run
  const json& w = field(c, "workload", "config.");
  run.workload.kind = get<std::string>(w, "kind", "config.workload.");
  run.workload.command = get<std::string>(w, "command", "config.workload.");
  run.workload.python = get<std::string>(w, "python", "config.workload.");
  if (w.contains("script_word")) {
    run.workload.script_word = get<int>(w, "script_word", "config.workload.");
    run.workload.script_path = get<std::string>(w, "script_path", "config.workload.");
    run.workload.script_xxh128 = get<std::string>(w, "script_xxh128", "config.workload.");
  }
  if (c.contains("args")) {
    run.args = field(c, "args", "config.");
    if (!run.args.is_object())
      throw std::invalid_argument("run specification: 'config.args' has the wrong type");
  }
}

}  // namespace

void set_run_config(RunSpec& run, const json& c) {
  fill_workload(run, c);
  if (!run.workload.is_script()) fill_builtin_settings(run, c);
  const json& bs = field(c, "batch_size", "config.");
  if (bs.is_number_integer())
    run.batch_size = bs.get<std::int64_t>();
  else
    run.batch_size.reset();  // "auto"
  const json& steps = field(c, "steps", "config.");
  if (const auto it = steps.find("warmup");
      it != steps.end() && it->is_string() && it->get<std::string>() == "auto") {
    run.warmup_auto = true;
    run.warmup_steps = kAutoWarmupMinSteps;
  } else {
    run.warmup_auto = false;
    run.warmup_steps = get<std::int64_t>(steps, "warmup", "config.steps.");
  }
  run.measure_steps = get<std::int64_t>(steps, "measure", "config.steps.");
  const json& tel = field(c, "telemetry", "config.");
  run.telemetry.enabled = get<bool>(tel, "enabled", "config.telemetry.");
  run.telemetry.interval_ms = get<std::int64_t>(tel, "interval_ms", "config.telemetry.");
  run.timeout_s = get<double>(c, "timeout", "config.");
  run.device = get<std::string>(c, "device", "config.");
  run.seed = get<std::int64_t>(c, "seed", "config.");
  run.config = c;
}

namespace {

// The built-in trainer's settings.
void fill_builtin_settings(RunSpec& run, const json& c) {
  run.model = choice_from_json(c, "model");
  run.data = choice_from_json(c, "data");
  run.precision = choice_from_json(c, "precision");
  run.stream = choice_from_json(c, "stream");
  run.memory_format = get<std::string>(c, "memory_format", "config.");
  run.cudnn_benchmark = get<std::string>(c, "cudnn_benchmark", "config.");
  // Optional, like `profile`: a specification written before the key existed leaves it to
  // the driver.
  run.cuda_connections.reset();
  if (c.contains("cuda_connections") && c["cuda_connections"].is_number_integer())
    run.cuda_connections = c["cuda_connections"].get<std::int64_t>();
  // Optional: a specification written before the key existed ran in a process of its own.
  run.isolation = "process";
  if (c.contains("isolation") && c["isolation"].is_string())
    run.isolation = c["isolation"].get<std::string>();
  const json& opt = field(c, "optimizer", "config.");
  run.optimizer.name = get<std::string>(opt, "name", "config.optimizer.");
  run.optimizer.impl = get<std::string>(opt, "impl", "config.optimizer.");
  run.optimizer.lr = get<double>(opt, "lr", "config.optimizer.");
  run.optimizer.momentum = get<double>(opt, "momentum", "config.optimizer.");
  run.optimizer.weight_decay = get<double>(opt, "weight_decay", "config.optimizer.");
  // Optional: a specification written before the key existed (a Slurm submission folder made
  // by an older orch) is an unprofiled run.
  run.profile = ProfileSpec{};
  if (c.contains("profile")) {
    run.profile.steps =
        get<std::int64_t>(field(c, "profile", "config."), "steps", "config.profile.");
  }
}

}  // namespace

json run_spec_json(const RunSpec& spec) {
  json swept = json::object();
  for (const auto& [axis, value] : spec.swept) swept[axis] = value;
  return {{"experiment", spec.experiment},
          {"run", {{"name", spec.name}, {"hash", spec.hash}, {"repeat", spec.repeat}}},
          {"config", spec.config.json()},
          {"swept", swept}};
}

RunSpec run_spec_from_json(const json& j) {
  RunSpec spec;
  spec.experiment = get<std::string>(j, "experiment", "");
  const json& run = field(j, "run", "");
  spec.name = get<std::string>(run, "name", "run.");
  spec.hash = get<std::string>(run, "hash", "run.");
  spec.repeat = get<int>(run, "repeat", "run.");
  if (j.contains("swept") && j.at("swept").is_object()) {
    for (const auto& [axis, value] : j.at("swept").items()) {
      spec.swept[axis] = value.is_string() ? value.get<std::string>() : json_dump(value);
    }
  }
  set_run_config(spec, field(j, "config", ""));
  return spec;
}

}  // namespace orch
