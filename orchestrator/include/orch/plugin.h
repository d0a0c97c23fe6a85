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
#include <memory>
#include <string>
#include <vector>

#include "orch/params.h"

/// Bumped whenever a change to the SDK headers breaks binary compatibility with built plugins.
/// 3: Model::counters() (a new virtual function: older models' vtables lack it).
#ifndef ORCH_SDK_VERSION
#define ORCH_SDK_VERSION 3
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

/// What a plugin says about itself, as data.
struct PluginInfo {
  std::string name;  ///< unique within its kind, e.g. "resnet"
  PluginKind kind = PluginKind::kModel;
  std::string version;      ///< the plugin's own version, e.g. "1.0.0"
  std::string description;  ///< one line
  std::vector<ParamSpec> params;
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
