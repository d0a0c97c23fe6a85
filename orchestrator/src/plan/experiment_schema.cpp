// The experiment file's own keys and their normalisers (see experiment_schema.h).
#include "plan/experiment_schema.h"

#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "plan/did_you_mean.h"
#include "plan/plan_error.h"
#include "plan/scalars.h"

namespace orch {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const YNode& n, const std::string& key_path, const std::string& expected,
                      const std::string& allowed) {
  throw PlanError(n.mark, key_path, "expected " + expected + ", got " + describe(n), allowed);
}

std::int64_t int_at_least(const YNode& n, const std::string& key_path, std::int64_t min,
                          const std::string& allowed) {
  auto v = scalar_int(n);
  if (!v) bad(n, key_path, "an int", allowed);
  if (*v < min) {
    throw PlanError(n.mark, key_path,
                    std::to_string(*v) + " is below the minimum " + std::to_string(min), allowed);
  }
  return *v;
}

double number_at_least(const YNode& n, const std::string& key_path, double min, bool inclusive,
                       const std::string& allowed) {
  auto v = scalar_float(n);
  if (!v) bad(n, key_path, "a number", allowed);
  if (*v < min || (!inclusive && *v == min)) {
    throw PlanError(n.mark, key_path, number_text(*v) + " is out of range", allowed);
  }
  return *v;
}

std::string one_of(const YNode& n, const std::string& key_path,
                   const std::vector<std::string>& words) {
  auto s = scalar_string(n);
  if (s) {
    for (const std::string& w : words) {
      if (*s == w) return w;
    }
    throw PlanError(n.mark, key_path, unknown_with_suggestion("value", *s, words), join(words));
  }
  bad(n, key_path, "one of " + join(words, " | "), join(words));
}

json norm_batch_size(const YNode& n, const std::string& key_path) {
  const std::string allowed = "a positive int, auto (the fastest batch) or auto-largest";
  // `auto-fastest` is `auto` spelt out; both are stored as "auto".
  if (n.is_scalar() && (n.text == "auto" || n.text == "auto-fastest")) return "auto";
  if (n.is_scalar() && n.text == "auto-largest") return "auto-largest";
  auto v = scalar_int(n);
  if (!v) bad(n, key_path, "a positive int, auto or auto-largest", allowed);
  if (*v < 1) throw PlanError(n.mark, key_path, "batch size must be positive", allowed);
  return *v;
}

json norm_memory_format(const YNode& n, const std::string& key_path) {
  return one_of(n, key_path, {"contiguous", "channels_last"});
}

json norm_cudnn_benchmark(const YNode& n, const std::string& key_path) {
  // YAML 1.1 reads `on`/`off` as booleans; both spellings mean the same here.
  if (auto b = scalar_bool(n)) return *b ? "on" : "off";
  return one_of(n, key_path, {"on", "off", "auto"});
}

json norm_cuda_connections(const YNode& n, const std::string& key_path) {
  const std::string allowed = "driver, or an int from 1 to 32";
  if (n.is_scalar() && n.text == "driver") return "driver";
  auto v = scalar_int(n);
  if (!v) bad(n, key_path, "'driver' or an int", allowed);
  if (*v < 1 || *v > 32) {
    throw PlanError(n.mark, key_path, std::to_string(*v) + " is out of range", allowed);
  }
  return *v;
}

json norm_isolation(const YNode& n, const std::string& key_path) {
  return one_of(n, key_path, {"process", "worker"});
}

json norm_repeat(const YNode& n, const std::string& key_path) {
  return int_at_least(n, key_path, 1, "int >= 1");
}

json norm_timeout(const YNode& n, const std::string& key_path) {
  const std::string allowed = "seconds as a number, or a duration like 90s, 30m, 2h";
  if (auto v = scalar_float(n)) {
    if (*v <= 0) throw PlanError(n.mark, key_path, "the timeout must be positive", allowed);
    return *v;
  }
  static const std::regex kDuration(R"(([0-9]+(\.[0-9]+)?)\s*([smh]))");
  std::smatch m;
  if (n.is_scalar() && std::regex_match(n.text, m, kDuration)) {
    double v = std::stod(m[1].str());
    double unit = m[3] == "h" ? 3600 : m[3] == "m" ? 60 : 1;
    if (v <= 0) throw PlanError(n.mark, key_path, "the timeout must be positive", allowed);
    return v * unit;
  }
  bad(n, key_path, "a duration", allowed);
}

json norm_device(const YNode& n, const std::string& key_path) {
  const std::string allowed = "auto, cpu, cuda, cuda:N";
  static const std::regex kDevice(R"(auto|cpu|cuda|cuda:[0-9]+)");
  if (n.is_scalar() && std::regex_match(n.text, kDevice)) return n.text;
  if (n.is_scalar()) throw PlanError(n.mark, key_path, "unknown device '" + n.text + "'", allowed);
  bad(n, key_path, "a device", allowed);
}

json norm_seed(const YNode& n, const std::string& key_path) {
  return int_at_least(n, key_path, 0, "int >= 0");
}

json norm_optimizer_name(const YNode& n, const std::string& key_path) {
  return one_of(n, key_path, {"sgd"});
}
json norm_optimizer_impl(const YNode& n, const std::string& key_path) {
  return one_of(n, key_path, {"loop", "foreach", "fused"});
}
// The optimizer's numbers are applied to fp32 parameters (the fused kernel takes lr as a
// float): one above the largest float is infinite there, so the first step turns every weight
// into inf or NaN whatever the model. That is the bound, rather than a guess at what is "too
// large": a huge but finite lr (1e30) still trains into a loss that diverges, and is recorded so.
constexpr double kMaxFloat = 3.4028234663852886e38;

double number_at_most(const YNode& n, const std::string& key_path, double value, double max,
                      const std::string& why, const std::string& allowed) {
  // Shortest form (1e+300), not std::to_string's three hundred digits.
  if (value > max) throw PlanError(n.mark, key_path, fmt::format("{}", value) + why, allowed);
  return value;
}

json norm_lr(const YNode& n, const std::string& key_path) {
  const std::string allowed = "a number > 0 and at most 3.4e38";
  return number_at_most(n, key_path, number_at_least(n, key_path, 0, false, allowed), kMaxFloat,
                        " is above the largest float (3.4e38): the first step would make every "
                        "weight infinite",
                        allowed);
}
json norm_momentum(const YNode& n, const std::string& key_path) {
  // Above 1 the momentum buffer grows geometrically with every step, whatever the gradients.
  const std::string allowed = "a number from 0 to 1";
  return number_at_most(n, key_path, number_at_least(n, key_path, 0, true, allowed), 1.0,
                        " is above 1: the momentum buffer would grow without bound", allowed);
}
json norm_non_negative(const YNode& n, const std::string& key_path) {
  const std::string allowed = "a number >= 0 and at most 3.4e38";
  return number_at_most(n, key_path, number_at_least(n, key_path, 0, true, allowed), kMaxFloat,
                        " is above the largest float (3.4e38)", allowed);
}
json norm_enabled(const YNode& n, const std::string& key_path) {
  if (auto b = scalar_bool(n)) return *b;
  bad(n, key_path, "true or false", "true, false");
}
json norm_interval_ms(const YNode& n, const std::string& key_path) {
  // Below 10 ms the sampler could not keep up anyway (NVML's two PCIe queries take 20 ms),
  // and would only cost CPU time next to the training thread.
  return int_at_least(n, key_path, 10, "int >= 10 (milliseconds)");
}
json norm_profile_steps(const YNode& n, const std::string& key_path) {
  // 0 is "not profiled" (the default). The cap keeps a trace loadable: a ResNet-50 step on a
  // GPU adds a few MB of events (CPU ops, runtime calls, kernels), and Perfetto or
  // chrome://tracing struggle past a few hundred MB.
  const std::string allowed = "0 (off), or an int from 1 to " + std::to_string(kMaxProfileSteps);
  const std::int64_t v = int_at_least(n, key_path, 0, allowed);
  if (v > kMaxProfileSteps) {
    throw PlanError(n.mark, key_path,
                    std::to_string(v) + " is above the maximum " + std::to_string(kMaxProfileSteps),
                    allowed);
  }
  return v;
}
json norm_warmup(const YNode& n, const std::string& key_path) {
  // auto: until the step times are steady (runner/steady_steps.h).
  if (n.is_scalar() && n.text == "auto") return "auto";
  return int_at_least(n, key_path, 0, "int >= 0, or auto");
}
json norm_measure(const YNode& n, const std::string& key_path) {
  return int_at_least(n, key_path, 1, "int >= 1");
}

json norm_workload_kind(const YNode& n, const std::string& key_path) {
  return one_of(n, key_path, {"builtin", "script"});
}
json norm_text(const YNode& n, const std::string& key_path) {
  if (n.is_null()) return "";
  if (!n.is_scalar()) bad(n, key_path, "text", "text");
  return n.text;
}
// An argument reaches the program as text, so only what YAML writes unambiguously is typed:
// `true`/`false`, ints and floats. YAML 1.1's other booleans (on, off, yes, no) stay words,
// because `compile: off` means the word `off` to the program that reads `--compile off`.
json norm_arg(const YNode& n, const std::string& key_path) {
  const std::string allowed = "a scalar: true, false, a number or text";
  if (!n.is_scalar()) bad(n, key_path, "a scalar", allowed);
  if (!n.quoted) {
    static const std::regex kBool(R"(true|True|TRUE|false|False|FALSE)");
    if (std::regex_match(n.text, kBool)) return n.text[0] == 't' || n.text[0] == 'T';
    if (auto i = scalar_int(n)) return *i;
    if (auto f = scalar_float(n)) return *f;
  }
  return n.text;
}

KeySpec plugin_key(std::string name, PluginKind role, std::string default_plugin) {
  KeySpec k;
  k.name = std::move(name);
  k.kind = KeyKind::kPlugin;
  k.role = role;
  k.default_plugin = std::move(default_plugin);
  return k;
}

KeySpec scalar_key(std::string name, Normaliser f, json def, std::string allowed,
                   bool sweepable = true) {
  KeySpec k;
  k.name = name;
  k.kind = KeyKind::kScalar;
  k.scalar = FieldSpec{std::move(name), f, std::move(def), std::move(allowed)};
  k.sweepable = sweepable;
  return k;
}

KeySpec group_key(std::string name, std::vector<FieldSpec> fields) {
  KeySpec k;
  k.name = std::move(name);
  k.kind = KeyKind::kGroup;
  k.fields = std::move(fields);
  return k;
}

KeySpec open_group_key(std::string name) {
  KeySpec k;
  k.name = std::move(name);
  k.kind = KeyKind::kGroup;
  k.open_fields = true;
  return k;
}

std::vector<KeySpec> make_keys() {
  return {
      plugin_key("model", PluginKind::kModel, "resnet"),
      plugin_key("data", PluginKind::kDataLoader, "synthetic"),
      plugin_key("precision", PluginKind::kPrecision, "fp32"),
      plugin_key("stream", PluginKind::kStreamStrategy, "default"),
      scalar_key("batch_size", norm_batch_size, 64,
                 "a positive int, auto (the fastest batch) or auto-largest"),
      scalar_key("memory_format", norm_memory_format, "contiguous", "contiguous, channels_last"),
      scalar_key("cudnn_benchmark", norm_cudnn_benchmark, "auto", "on, off, auto"),
      // CUDA_DEVICE_MAX_CONNECTIONS for the run's process (runner/cuda_connections.h); driver
      // leaves the environment as it is. Hashed only when set, like `telemetry`.
      scalar_key("cuda_connections", norm_cuda_connections, "driver",
                 "driver, or an int from 1 to 32"),
      // How `orch sweep` runs a configuration: a long-lived `orch exec --worker` per GPU that
      // takes run after run (worker, sweep/worker_pool.h), or a fresh process per run (process).
      // worker is the default because it measures what process measures, within noise, and
      // spends far less of a sweep outside the measured steps (docs/benchmarks.md, "Warm
      // workers"). Hashed when not the default, like `cuda_connections`, so configurations
      // recorded before the default moved keep their hashes, and a configuration measured both
      // ways (`isolation: [process, worker]`) is two configurations, each with its own numbers.
      scalar_key("isolation", norm_isolation, "worker", "process, worker"),
      // `impl` is how the same SGD update is computed: one kernel chain per tensor (loop),
      // multi-tensor ops (foreach, PyTorch's default on CUDA), or ATen's fused kernel.
      group_key("optimizer",
                {{"name", norm_optimizer_name, "sgd", "sgd"},
                 {"impl", norm_optimizer_impl, "foreach", "loop, foreach, fused"},
                 {"lr", norm_lr, 0.1, "a number > 0, at most 3.4e38"},
                 {"momentum", norm_momentum, 0.9, "a number from 0 to 1"},
                 {"weight_decay", norm_non_negative, 1e-4, "a number >= 0, at most 3.4e38"}}),
      group_key("steps", {{"warmup", norm_warmup, 10, "int >= 0, or auto"},
                          {"measure", norm_measure, 50, "int >= 1"}}),
      // The NVML sampler during the run. A measurement setting, sweepable so that a user can
      // measure the sampler's own cost (`telemetry.enabled: [true, false]`); see config_hash.cpp
      // for how it enters the configuration hash.
      group_key("telemetry", {{"enabled", norm_enabled, true, "true, false"},
                              {"interval_ms", norm_interval_ms, 100, "int >= 10 (milliseconds)"}}),
      // LibTorch's profiler over `steps` extra steps after the measured ones (so the throughput
      // is not perturbed); 0 is off. Hashed only when not the default, like `telemetry`.
      group_key("profile", {{"steps", norm_profile_steps, 0,
                             "0 (off), or an int from 1 to " + std::to_string(kMaxProfileSteps)}}),
      // Repeats are runs of one configuration, and the timeout does not change what is
      // measured (neither is hashed), so neither can vary between configurations.
      scalar_key("repeat", norm_repeat, 1, "int >= 1", false),
      scalar_key("timeout", norm_timeout, 1800.0,
                 "seconds as a number, or a duration like 90s, 30m, 2h", false),
      scalar_key("device", norm_device, "auto", "auto, cpu, cuda, cuda:N"),
      scalar_key("seed", norm_seed, 0, "int >= 0"),
      // What a configuration runs: orch's LibTorch trainer, or the user's program
      // (plan/workload_config.h); sweepable, so one experiment can rank both.
      group_key("workload", {{"kind", norm_workload_kind, "builtin", "builtin, script"},
                             {"command", norm_text, "", "the program and its arguments"},
                             {"python", norm_text, "", "an interpreter; empty: orch's"}}),
      open_group_key("args"),
  };
}

}  // namespace

bool valid_arg_name(std::string_view name) {
  static const std::regex kArgName(kArgNamePattern);
  return std::regex_match(name.begin(), name.end(), kArgName);
}

bool builtin_only_key(std::string_view name) {
  static const char* const kBuiltinOnly[] = {
      "model",           "data",      "precision",        "stream",  "memory_format",
      "cudnn_benchmark", "optimizer", "cuda_connections", "profile", "isolation"};
  for (const char* k : kBuiltinOnly) {
    if (name == k) return true;
  }
  return false;
}

const FieldSpec* KeySpec::find_field(std::string_view field) const {
  if (open_fields) {
    static const FieldSpec kArg{"", norm_arg, nullptr, "a scalar: true, false, a number or text"};
    return valid_arg_name(field) ? &kArg : nullptr;
  }
  for (const FieldSpec& f : fields) {
    if (f.name == field) return &f;
  }
  return nullptr;
}

std::vector<std::string> KeySpec::field_names() const {
  std::vector<std::string> names;
  for (const FieldSpec& f : fields) names.push_back(f.name);
  return names;
}

json KeySpec::field_defaults() const {
  json out = json::object();
  for (const FieldSpec& f : fields) out[f.name] = f.default_value;
  return out;
}

const std::vector<KeySpec>& experiment_keys() {
  static const std::vector<KeySpec> kKeys = make_keys();
  return kKeys;
}

const KeySpec* find_experiment_key(std::string_view name) {
  for (const KeySpec& k : experiment_keys()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::vector<std::string> experiment_key_names() {
  std::vector<std::string> names;
  for (const KeySpec& k : experiment_keys()) names.push_back(k.name);
  return names;
}

SettingPath parse_setting_path(const std::string& text, const SourceMark& at,
                               const std::string& key_path, bool varying) {
  SettingPath out;
  out.text = text;
  std::string head = text, rest;
  if (auto dot = text.find('.'); dot != std::string::npos) {
    head = text.substr(0, dot);
    rest = text.substr(dot + 1);
    if (head.empty() || rest.empty()) {
      throw PlanError(at, key_path, "'" + text + "' is not a valid key path",
                      "key or key.sub, e.g. precision.dtype");
    }
  }
  out.key = find_experiment_key(head);
  if (!out.key) {
    throw PlanError(at, key_path, unknown_with_suggestion("key", head, experiment_key_names()),
                    join(experiment_key_names()));
  }
  if (varying && !out.key->sweepable) {
    throw PlanError(at, key_path,
                    "'" + head + "' cannot vary between configurations; set it in base");
  }
  if (rest.empty()) return out;
  if (rest.find('.') != std::string::npos) {
    throw PlanError(at, key_path, "'" + text + "' is nested too deeply",
                    "key or key.sub, e.g. precision.dtype");
  }
  switch (out.key->kind) {
    case KeyKind::kScalar:
      throw PlanError(at, key_path, "'" + head + "' is a single value and has no '" + rest + "'");
    case KeyKind::kGroup:
      if (out.key->open_fields && !valid_arg_name(rest)) {
        throw PlanError(
            at, key_path,
            "'" + rest + "' is not a valid name in '" + head + "' (letters, digits, '_' and '-')",
            kArgNamePattern);
      }
      if (!out.key->find_field(rest)) {
        throw PlanError(
            at, key_path,
            unknown_with_suggestion("key", rest, out.key->field_names()) + " in '" + head + "'",
            join(out.key->field_names()));
      }
      break;
    case KeyKind::kPlugin:
      break;  // checked against the plugin chosen when the value is applied
  }
  out.sub = rest;
  return out;
}

}  // namespace orch
