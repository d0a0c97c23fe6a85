// RunSpec: one fully resolved run of an experiment, and Plan: all of them.
//
// The planner (plan/) turns an experiment YAML into a Plan; the runner and the scheduler only
// ever see RunSpecs. Every default is filled in here, so a RunSpec alone says exactly what ran.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "orch/params.h"
#include "orch/plugin.h"
#include "plan/config_text.h"
#include "plan/plan_error.h"
#include "plan/search_spec.h"

namespace orch {

/// A plugin chosen for one of the four roles, with every declared parameter resolved.
struct PluginChoice {
  std::string plugin;  ///< plugin name, e.g. "amp"
  Params params;       ///< all declared parameters, defaults filled in
};

struct OptimizerSpec {
  std::string name = "sgd";      ///< only "sgd" for now
  std::string impl = "foreach";  ///< loop | foreach | fused: how the update is computed
  double lr = 0.1;
  double momentum = 0.9;
  double weight_decay = 1e-4;
};

/// The GPU telemetry sampler during a run (telemetry/nvml_sampler.h).
struct TelemetrySpec {
  bool enabled = true;
  std::int64_t interval_ms = 100;
};

/// LibTorch's profiler (Kineto) over extra steps after the measured ones (runner/profiler.h).
struct ProfileSpec {
  std::int64_t steps = 0;  ///< 0: not profiled
  bool enabled() const { return steps > 0; }
};

/// What a configuration runs: orch's LibTorch trainer with its four plugins (`builtin`), or an
/// external program (`script`, runner/script_workload.h) that reports through orch_workload.
struct WorkloadSpec {
  std::string kind = "builtin";  ///< builtin | script
  std::string command;           ///< the program and its fixed arguments, as written
  std::string python;            ///< interpreter for a `.py` first word; empty: orch's
  /// The command's word that names the script file (-1: none), and that file's absolute path
  /// as the planner found it, so the child need not know where the experiment file was.
  int script_word = -1;
  std::string script_path;
  std::string script_xxh128;  ///< of the script file's bytes; empty when no word names a file
  bool is_script() const { return kind == "script"; }
};

/// `steps.warmup: auto` warms up at least this many steps before it looks for steady ones.
constexpr std::int64_t kAutoWarmupMinSteps = 3;

/// The fewest warm-up steps after which a stream strategy's steps are the ones it will time:
/// its own eager steps before a capture (its integer parameter `warmup_steps`), the capture
/// step and one replay; 0 for a strategy that declares none. `warmup: auto` and
/// `orch exec --probe-speed` both start from it.
inline std::int64_t stream_warmup_floor(const PluginChoice& stream) {
  const Params& p = stream.params;
  if (!p.has("warmup_steps") || !std::holds_alternative<std::int64_t>(p.at("warmup_steps")))
    return 0;
  return p.get_int("warmup_steps") + 2;
}

struct RunSpec {
  std::string name;  ///< short, stable, built from the swept values: "amp-bf16/channels_last/b256"
  std::string hash;  ///< configuration hash (32 hex digits); independent of repeat index
  int repeat = 0;    ///< 0-based repeat index
  std::string experiment;  ///< the experiment's `name`

  PluginChoice model, data, precision, stream;
  std::optional<std::int64_t> batch_size;    ///< empty means `auto`
  std::string memory_format = "contiguous";  ///< contiguous | channels_last
  std::string cudnn_benchmark = "auto";      ///< on | off | auto
  /// CUDA_DEVICE_MAX_CONNECTIONS for the run's process; empty: `driver` (left as it is)
  std::optional<std::int64_t> cuda_connections;
  /// How `orch sweep` runs it: `worker` (a warm `orch exec --worker` that takes run after run,
  /// sweep/worker_pool.h; the experiment key's default) or `process` (an `orch exec` of its own).
  std::string isolation = "worker";
  OptimizerSpec optimizer;
  /// Warm-up steps; with warmup_auto, the fewest (runner/steady_steps.h says what follows).
  std::int64_t warmup_steps = 10;
  bool warmup_auto = false;  ///< `steps.warmup: auto`: on until the step times are steady
  std::int64_t measure_steps = 50;
  TelemetrySpec telemetry;
  ProfileSpec profile;
  double timeout_s = 1800;      ///< wall-clock limit of one run
  std::string device = "auto";  ///< auto | cpu | cuda | cuda:N
  std::int64_t seed = 0;
  WorkloadSpec workload;
  /// `args` of a script run: name -> scalar (bool, number or string); empty for builtin runs.
  nlohmann::json args = nlohmann::json::object();

  /// The resolved configuration as canonical JSON (sorted keys). The hash is computed from it.
  /// Held as shared text (config_text.h): the repeats of a configuration share one copy.
  ConfigText config;
  /// The axis values of this run, axis path -> rendered value, for tables.
  std::map<std::string, std::string> swept;
};

struct Plan {
  std::string name;
  std::string description;
  std::string file;               ///< the experiment file it came from
  std::vector<std::string> axes;  ///< swept axis paths, in file order
  /// Where each axis was written (its first place: a matrix key, or an include entry's), for
  /// errors about a whole axis found after planning (e.g. `orch run` and cuda_connections).
  std::map<std::string, SourceMark> axis_marks;
  std::vector<RunSpec> runs;  ///< configurations x repeats, repeats adjacent
  /// `baseline:` the name of the configuration every other is compared with (rank's speed-up,
  /// the report's before); empty when the file names none.
  std::string baseline;
  /// What the planner did that the file does not say (combinations merged into one
  /// configuration), one sentence each, for under the plan's table.
  std::vector<std::string> notes;
  /// `search:` how a sweep goes through the configurations: the grid (all in full) or
  /// successive halving (plan/halving_schedule.h).
  SearchSpec search;
};

/// What the planner needs to know about plugins: their schemas. The host's plugin registry
/// implements it from loaded libraries; tests use a fixed catalogue.
class SchemaCatalog {
 public:
  virtual ~SchemaCatalog() = default;
  /// nullptr when no plugin of that kind has that name.
  virtual const PluginInfo* find(PluginKind kind, const std::string& name) const = 0;
  /// All names of one kind, for "unknown plugin (known: a, b)" messages.
  virtual std::vector<std::string> names(PluginKind kind) const = 0;
};

}  // namespace orch
