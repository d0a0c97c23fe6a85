// Plugin discovery and object creation.
#include "plugin_host/registry.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "plugin_host/load_probe.h"
#include "plugin_host/plugin_error.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

// Wraps an object made by a plugin so that its library outlives it: the deleter holds a
// reference to the library and runs the object's (plugin-side) destructor first.
template <class T>
std::shared_ptr<T> keep_library_alive(std::unique_ptr<T> obj,
                                      std::shared_ptr<boost::dll::shared_library> lib) {
  return std::shared_ptr<T>(obj.release(), [lib = std::move(lib)](T* p) { delete p; });
}

// Calls a plugin's create() while its library is loaded, turning any exception into a
// PluginError that names the plugin (the exception object itself never leaves this frame).
template <class Fn>
auto call_plugin(const PluginLibrary& lib, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    throw PluginError(std::string(to_string(lib.info.kind)) + " plugin '" + lib.info.name + "' (" +
                      lib.path.string() + "): " + e.what());
  }
}

template <class Iface>
const Iface& as_kind(const PluginLibrary& lib) {
  auto* p = dynamic_cast<const Iface*>(lib.factory);
  if (p == nullptr) {
    throw PluginError("plugin '" + lib.info.name + "' (" + lib.path.string() + ") says it is a " +
                      to_string(lib.info.kind) + " plugin but does not implement that interface");
  }
  return *p;
}

// A plugin that declares needs_cuda is not created for a run off CUDA: the sentence is the
// host's, the same for every such plugin (the model's context has no device: the host moves it).
template <class Ctx>
void check_cuda_need(const PluginInfo& info, const Ctx& ctx) {
  if constexpr (requires { ctx.device; }) {
    if (!info.needs_cuda || ctx.device.is_cuda()) return;
    const CudaNeed& need = *info.needs_cuda;
    throw std::invalid_argument(
        info.name + " needs a CUDA device" + (need.why.empty() ? "" : " (" + need.why + ")") +
        ", and this run's device is " + ctx.device.str() + "; use " + need.on_cpu + " on the CPU");
  }
}

}  // namespace

std::vector<fs::path> PluginRegistry::search_path(const std::vector<std::string>& cli_paths) {
  std::vector<fs::path> dirs{fs::path(ORCH_DEFAULT_PLUGIN_DIR)};
  for (const auto& p : cli_paths) dirs.emplace_back(p);
  if (const char* env = std::getenv("ORCH_PLUGIN_PATH")) {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (!item.empty()) dirs.emplace_back(item);
    }
  }
  return dirs;
}

void PluginRegistry::load_directories(const std::vector<fs::path>& dirs) {
  for (const auto& dir : dirs) {
    // Every check reports through an error_code: a symbolic link loop (or an unreadable
    // entry) would otherwise throw out of here and stop every command that loads plugins.
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
        refused_.push_back({dir, "skipped plugin folder " + dir.string() + ": " + ec.message()});
      }
      continue;
    }
    std::vector<fs::path> files;
    fs::directory_iterator it(dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const auto& p = it->path();
      const auto name = p.filename().string();
      if (name.rfind("lib", 0) != 0 || p.extension() != ".so") continue;
      std::error_code entry_ec;
      if (it->is_regular_file(entry_ec)) {
        files.push_back(p);
      } else if (entry_ec && entry_ec != std::errc::no_such_file_or_directory) {
        // A dangling link is no library and is passed over as before; a loop is reported.
        refused_.push_back(
            {p, "skipped plugin folder entry " + p.string() + ": " + entry_ec.message()});
      }
    }
    if (ec) {
      refused_.push_back({dir, "skipped plugin folder " + dir.string() + ": " + ec.message()});
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) load_file(f);
  }
}

std::string PluginRegistry::vet(const fs::path& path) {
  if (!probe_.enabled) return {};
  const auto id = identify(path);
  if (!id) return {};  // load_plugin_library says why it cannot be read
  if (!cache_ && !probe_.cache_file.empty()) {
    cache_ = std::make_shared<ProbeCache>(probe_.cache_file);
  }
  std::optional<LoadProbeVerdict> v;
  if (cache_) v = cache_->find(*id);
  if (!v) {
    ++probes_run_;
    v = probe_load_in_child(path, probe_.timeout);
    if (cache_) cache_->put(*id, *v);
  }
  return v->safe ? std::string() : "plugin library " + path.string() + " refused: " + v->reason;
}

bool PluginRegistry::load_file(const fs::path& path) {
  try {
    if (auto why = vet(path); !why.empty()) {
      refused_.push_back({path, std::move(why)});
      return false;
    }
    PluginLibrary lib = load_plugin_library(path);
    if (const PluginInfo* existing = find(lib.info.kind, lib.info.name)) {
      const auto& first = library_for(existing->kind, existing->name);
      refused_.push_back({path, std::string("duplicate ") + to_string(lib.info.kind) + " plugin '" +
                                    lib.info.name + "': already provided by " +
                                    first.path.string()});
      return false;
    }
    plugins_.push_back(std::move(lib));
    return true;
  } catch (const PluginError& e) {
    refused_.push_back({path, e.what()});
    return false;
  }
}

const PluginInfo* PluginRegistry::find(PluginKind kind, const std::string& name) const {
  for (const auto& p : plugins_) {
    if (p.info.kind == kind && p.info.name == name) return &p.info;
  }
  return nullptr;
}

std::vector<std::string> PluginRegistry::names(PluginKind kind) const {
  std::vector<std::string> out;
  for (const auto& p : plugins_) {
    if (p.info.kind == kind) out.push_back(p.info.name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const PluginLibrary& PluginRegistry::library_for(PluginKind kind, const std::string& name) const {
  for (const auto& p : plugins_) {
    if (p.info.kind == kind && p.info.name == name) return p;
  }
  std::string known;
  for (const auto& n : names(kind)) known += (known.empty() ? "" : ", ") + n;
  throw PluginError(std::string("no ") + to_string(kind) + " plugin named '" + name +
                    "' (known: " + (known.empty() ? "none" : known) + ")");
}

template <class Factory, class Ctx>
auto PluginRegistry::create(PluginKind kind, const PluginChoice& c, const Ctx& ctx) const {
  const auto& lib = library_for(kind, c.plugin);
  // Parameters a hand-built choice leaves out read as the schema's defaults (Params::at).
  const Params params = c.params.with_schema(lib.info.params);
  return keep_library_alive(call_plugin(lib,
                                        [&] {
                                          check_cuda_need(lib.info, ctx);
                                          return as_kind<Factory>(lib).create(params, ctx);
                                        }),
                            lib.library);
}

std::shared_ptr<Model> PluginRegistry::create_model(const PluginChoice& c,
                                                    const ModelContext& ctx) const {
  return create<ModelPlugin>(PluginKind::kModel, c, ctx);
}

std::shared_ptr<DataLoader> PluginRegistry::create_loader(const PluginChoice& c,
                                                          const LoaderContext& ctx) const {
  return create<DataLoaderPlugin>(PluginKind::kDataLoader, c, ctx);
}

std::shared_ptr<Precision> PluginRegistry::create_precision(const PluginChoice& c,
                                                            const PrecisionContext& ctx) const {
  return create<PrecisionPlugin>(PluginKind::kPrecision, c, ctx);
}

std::shared_ptr<StreamStrategy> PluginRegistry::create_strategy(const PluginChoice& c,
                                                                const StrategyContext& ctx) const {
  return create<StreamStrategyPlugin>(PluginKind::kStreamStrategy, c, ctx);
}

}  // namespace orch
