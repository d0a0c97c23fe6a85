// Loading a plugin library safely: dlopen errors are reported with dlerror()'s text, the ABI
// stamp is read through a C function before any C++ object is used, and info() is called
// inside a try block while the library is loaded.
#include "plugin_host/plugin_library.h"

#include <dlfcn.h>

#include "plugin_host/abi_check.h"
#include "plugin_host/plugin_error.h"

namespace orch {
namespace {

namespace dll = boost::dll;

// Boost.DLL's own exceptions do not carry dlerror()'s text, which is what tells a user *why*
// (missing dependency, not an ELF file, undefined symbol). So the library is opened first with
// dlopen directly to get that text, and that handle is held until Boost.DLL has opened the
// library too: closing it before would unload the library and load it again, running its
// static constructors and destructors twice. For a plugin with CUDA kernels those register and
// unregister its device code with the CUDA runtime, and a reloaded plugin's kernels then fail
// to launch ("named symbol not found"; the nvjpeg plugin's crop kernel in `orch dataset bench`).
class ProbeHandle {
 public:
  explicit ProbeHandle(const std::filesystem::path& path)
      : handle_(::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      const char* err = ::dlerror();
      throw PluginError("cannot load plugin library " + path.string() + ": " +
                        (err ? err : "unknown dlopen error"));
    }
  }
  ~ProbeHandle() { ::dlclose(handle_); }  // Boost.DLL's handle keeps the library loaded
  ProbeHandle(const ProbeHandle&) = delete;
  ProbeHandle& operator=(const ProbeHandle&) = delete;

 private:
  void* handle_;
};

}  // namespace

PluginLibrary load_plugin_library(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) {
    throw PluginError("cannot load plugin library " + path.string() + ": no such file");
  }
  const ProbeHandle probe(path);
  PluginLibrary out;
  out.path = path;
  try {
    out.library = std::make_shared<dll::shared_library>(
        path, dll::load_mode::rtld_now | dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw PluginError("cannot load plugin library " + path.string() + ": " + e.what());
  }
  if (!out.library->has("orch_plugin_abi") || !out.library->has("orch_plugin_factory")) {
    throw PluginError("refusing " + path.string() +
                      ": not an orch plugin (it exports no orch_plugin_abi/orch_plugin_factory; "
                      "build it with ORCH_PLUGIN(...))");
  }
  const orch_abi_stamp* stamp = out.library->get<const orch_abi_stamp*()>("orch_plugin_abi")();
  if (auto why = abi_mismatch(*stamp, host_abi_stamp()); !why.empty()) {
    throw PluginError("refusing plugin " + path.string() + ": " + why);
  }
  try {
    out.factory = out.library->get<Plugin*()>("orch_plugin_factory")();
    out.info = out.factory->info();
  } catch (const std::exception& e) {
    throw PluginError("plugin " + path.string() + " failed to describe itself: " + e.what());
  }
  return out;
}

}  // namespace orch
