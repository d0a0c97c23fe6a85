// Plugin discovery and object creation.
#include "plugin_host/registry.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

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
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const auto name = entry.path().filename().string();
      if (entry.is_regular_file() && name.rfind("lib", 0) == 0 &&
          entry.path().extension() == ".so") {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) load_file(f);
  }
}

bool PluginRegistry::load_file(const fs::path& path) {
  try {
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
  return keep_library_alive(
      call_plugin(lib, [&] { return as_kind<Factory>(lib).create(c.params, ctx); }), lib.library);
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
