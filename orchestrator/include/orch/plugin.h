// The common plugin header: what every orch plugin is, and how a shared library says so.
//
// A plugin library exports exactly two symbols (see ORCH_PLUGIN below):
//   orch_plugin_abi      extern "C", returns a plain-old-data ABI stamp. The host reads it
//                        *before* touching any C++ object from the library, so a plugin built
//                        against another SDK, compiler or LibTorch is refused with a sentence,
//                        never a crash.
//   orch_plugin_factory  extern "C", returns the plugin's factory object (a static inside the
//                        library); the host looks both up by name with Boost.DLL.
// Everything a factory creates is wrapped by the host so that the library stays loaded for as
// long as the object lives (Boost.DLL "missuses": code must not outlive its library).
#pragma once

#include <boost/config.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orch/params.h"

/// Bumped whenever a change to the SDK headers breaks binary compatibility with built plugins.
/// 3: Model::counters() (a new virtual function: older models' vtables lack it).
/// 4: PluginInfo::check (a new member: PluginInfo's layout changed).
/// 5: ParamSpec::hash_file_content (a new member: ParamSpec's layout changed).
/// 6: the param() builder; ParamSpec::since and hash_exempt_since replace hashed_at_default;
///    Params carries its schema's defaults; PluginInfo::needs_cuda (layouts changed).
#ifndef ORCH_SDK_VERSION
#define ORCH_SDK_VERSION 6
#endif

namespace orch {

enum class PluginKind { kModel, kDataLoader, kPrecision, kStreamStrategy };

/// The name used in experiment files and listings: "model", "data", "precision", "stream".
inline const char* to_string(PluginKind k) {
  switch (k) {
    case PluginKind::kModel:
      return "model";
    case PluginKind::kDataLoader:
      return "data";
    case PluginKind::kPrecision:
      return "precision";
    case PluginKind::kStreamStrategy:
      return "stream";
  }
  return "?";
}

/// What a plan-time check sees: one resolved configuration, and where it is planned for.
struct PlanCheckInput {
  /// Every setting of the configuration by the dotted path an experiment file writes it with:
  /// "device", "batch_size" (absent for `auto`), "memory_format", "optimizer.impl",
  /// "optimizer.lr", and each role's plugin ("precision" -> "amp") and resolved parameters
  /// ("precision.dtype" -> "fp16", "data.root" -> "/data/imagenet").
  std::map<std::string, Value> settings;
  /// True when the runs will execute on this machine (`orch plan`, `run`, `sweep`); false when
  /// they run elsewhere (a Slurm submission), where this machine's GPUs and files prove nothing.
  bool on_this_machine = false;
  /// CUDA devices this process sees; meaningful only when on_this_machine.
  int visible_gpus = 0;

  /// The setting as the experiment file would write it ("fp16", "256"); "" when absent.
  std::string text(const std::string& key) const {
    auto it = settings.find(key);
    return it == settings.end() ? std::string() : to_string(it->second);
  }
};

/// One reason a configuration cannot run. `settings` names the settings that cause it, the
/// one to change first: the planner reports the problem at the line and column of the first of
/// them that the experiment file wrote.
struct PlanProblem {
  std::vector<std::string> settings;
  std::string message;  ///< what is wrong, without the key path (the planner adds it)
  std::string allowed;  ///< what would be accepted; may be empty
};

/// A plugin's own plan-time check: every problem of one configuration (none: it can run). It
/// must be quick (it runs for every configuration of a plan) and must not touch a GPU.
using PlanCheck = std::vector<PlanProblem> (*)(const PlanCheckInput&);

/// For a plugin that runs only on a CUDA device, said once: the host refuses it, in one sentence,
/// where a configuration's device is cpu (or auto on a machine without a visible GPU) when the
/// experiment is planned, and where a run's device is not CUDA before create() is called.
struct CudaNeed {
  std::string why;     ///< what it does there, e.g. "it decodes on the GPU"; may be empty
  std::string on_cpu;  ///< what to choose instead, e.g. "data.plugin: imagefolder"
};

/// What a plugin says about itself, as data.
struct PluginInfo {
  std::string name;  ///< unique within its kind, e.g. "resnet"
  PluginKind kind = PluginKind::kModel;
  std::string version;      ///< the plugin's own version, e.g. "1.0.0"
  std::string description;  ///< one line
  std::vector<ParamSpec> params;
  /// Checks that single parameters' bounds cannot state (a combination with other roles' settings,
  /// a file that must exist, a GPU it needs); nullptr: none. Called only while the library is
  /// loaded (the registry keeps it so).
  PlanCheck check = nullptr;
  std::optional<CudaNeed> needs_cuda = std::nullopt;  ///< set for one that cannot run on the CPU
};

/// Base of every plugin factory. Implementations are `final` and hold no state that outlives
/// the objects they create.
class BOOST_SYMBOL_VISIBLE Plugin {
 public:
  virtual ~Plugin() = default;
  virtual PluginInfo info() const = 0;
};

}  // namespace orch

/// The ABI stamp: plain C data, so reading it is safe whatever the library was built with.
extern "C" struct orch_abi_stamp {
  unsigned magic;          ///< kOrchAbiMagic; anything else is not an orch plugin
  unsigned sdk_version;    ///< ORCH_SDK_VERSION the plugin was built against
  int cxx11_abi;           ///< _GLIBCXX_USE_CXX11_ABI (std::string layout)
  char compiler[64];       ///< e.g. "GNU 12.2.0"
  char torch_version[32];  ///< TORCH_VERSION of the LibTorch headers, "" if built without
};

constexpr unsigned kOrchAbiMagic = 0x4f524348u;  // "ORCH"

#define ORCH_STRINGIFY_IMPL(x) #x
#define ORCH_STRINGIFY(x) ORCH_STRINGIFY_IMPL(x)

#if defined(__clang__)
#define ORCH_COMPILER_ID "Clang " __clang_version__
#elif defined(__GNUC__)
#define ORCH_COMPILER_ID                                                                 \
  "GNU " ORCH_STRINGIFY(__GNUC__) "." ORCH_STRINGIFY(__GNUC_MINOR__) "." ORCH_STRINGIFY( \
      __GNUC_PATCHLEVEL__)
#else
#define ORCH_COMPILER_ID "unknown"
#endif

/// Filled in from <torch/version.h> by the kind headers that include LibTorch.
#ifndef ORCH_TORCH_VERSION_STRING
#define ORCH_TORCH_VERSION_STRING ""
#endif

/// Exports a plugin factory class from a shared library. Use once per library:
///   ORCH_PLUGIN(orch::plugins::ResnetFactory)
#define ORCH_PLUGIN(FactoryClass)                                                                 \
  extern "C" BOOST_SYMBOL_EXPORT const orch_abi_stamp* orch_plugin_abi() {                        \
    static const orch_abi_stamp stamp = {kOrchAbiMagic, ORCH_SDK_VERSION, _GLIBCXX_USE_CXX11_ABI, \
                                         ORCH_COMPILER_ID, ORCH_TORCH_VERSION_STRING};            \
    return &stamp;                                                                                \
  }                                                                                               \
  extern "C" BOOST_SYMBOL_EXPORT orch::Plugin* orch_plugin_factory() {                            \
    static FactoryClass factory;                                                                  \
    return &factory;                                                                              \
  }
