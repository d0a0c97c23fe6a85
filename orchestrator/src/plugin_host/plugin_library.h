// One loaded plugin library: the shared library handle, its factory and what it declared.
#pragma once

#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <memory>

#include "orch/plugin.h"

namespace orch {

struct PluginLibrary {
  std::filesystem::path path;
  /// Shared so that every object created by the plugin can keep the library loaded.
  std::shared_ptr<boost::dll::shared_library> library;
  Plugin* factory = nullptr;  ///< owned by the library (a static inside it)
  PluginInfo info;
};

/// Loads one library, checks its ABI stamp and reads its info. Throws PluginError with a
/// sentence that names the path and the reason (dlerror() text, ABI difference, a throwing
/// info()).
PluginLibrary load_plugin_library(const std::filesystem::path& path);

}  // namespace orch
