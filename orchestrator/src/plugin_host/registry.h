// The plugin registry: every plugin library found on the search path, by kind and name, and
// the only place where plugin objects are created (each one keeps its library loaded).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "orch/data_loader.h"
#include "orch/model.h"
#include "orch/precision.h"
#include "orch/stream_strategy.h"
#include "plan/run_spec.h"
#include "plugin_host/plugin_library.h"
#include "plugin_host/probe_cache.h"

namespace orch {

/// A library that was found but not used, and why.
struct RefusedLibrary {
  std::filesystem::path path;
  std::string reason;
};

/// How a library is vetted before it is loaded into this process: loaded in a child process
/// first (load_probe.h), unless a verdict for the same file is in the cache.
struct LoadProbeOptions {
  bool enabled = true;
  std::chrono::milliseconds timeout{30'000};
  std::filesystem::path cache_file;  ///< empty: nothing remembered, every library is probed
};

class PluginRegistry final : public SchemaCatalog {
 public:
  /// The directories searched, in order: the build's plugin folder, each --plugin-path, then
  /// each entry of ORCH_PLUGIN_PATH (colon-separated). Missing directories are skipped.
  static std::vector<std::filesystem::path> search_path(const std::vector<std::string>& cli_paths);

  /// Loads every lib*.so in each directory (sorted by name, so the result is reproducible).
  /// A folder or entry that cannot be read (a symbolic link loop) is recorded in refused()
  /// and skipped.
  void load_directories(const std::vector<std::filesystem::path>& dirs);
  /// Loads one library; a failure is recorded in refused() and returns false.
  bool load_file(const std::filesystem::path& path);

  void set_load_probe(LoadProbeOptions options) { probe_ = std::move(options); }
  /// How many libraries were loaded in a child process (not found in the cache).
  int probes_run() const { return probes_run_; }

  const std::vector<PluginLibrary>& plugins() const { return plugins_; }
  const std::vector<RefusedLibrary>& refused() const { return refused_; }

  const PluginInfo* find(PluginKind kind, const std::string& name) const override;
  std::vector<std::string> names(PluginKind kind) const override;

  std::shared_ptr<Model> create_model(const PluginChoice& c, const ModelContext& ctx) const;
  std::shared_ptr<DataLoader> create_loader(const PluginChoice& c, const LoaderContext& ctx) const;
  std::shared_ptr<Precision> create_precision(const PluginChoice& c,
                                              const PrecisionContext& ctx) const;
  std::shared_ptr<StreamStrategy> create_strategy(const PluginChoice& c,
                                                  const StrategyContext& ctx) const;

 private:
  const PluginLibrary& library_for(PluginKind kind, const std::string& name) const;
  template <class Factory, class Ctx>
  auto create(PluginKind kind, const PluginChoice& c, const Ctx& ctx) const;
  std::string vet(const std::filesystem::path& path);
  std::vector<PluginLibrary> plugins_;
  std::vector<RefusedLibrary> refused_;
  LoadProbeOptions probe_;
  std::shared_ptr<ProbeCache> cache_;  ///< read on first use
  int probes_run_ = 0;
};

}  // namespace orch
