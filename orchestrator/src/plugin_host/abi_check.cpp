// ABI compatibility between the host and a plugin library (PostgreSQL's PG_MODULE_MAGIC idea).
#include "plugin_host/abi_check.h"

#include <torch/version.h>

#include <cstring>
#include <string_view>

namespace orch {
namespace {

// "GNU 12.2.0" -> "GNU": libstdc++'s ABI is stable across GCC releases, so only the compiler
// family has to match; the LibTorch version has to match exactly at major.minor.
std::string_view family(const char* compiler) {
  std::string_view s(compiler);
  return s.substr(0, s.find(' '));
}

std::string_view major_minor(const char* version) {
  std::string_view s(version);
  auto first = s.find('.');
  if (first == std::string_view::npos) return s;
  auto second = s.find('.', first + 1);
  return s.substr(0, second);
}

std::string bounded(const char* s, std::size_t n) { return std::string(s, strnlen(s, n)); }

}  // namespace

const orch_abi_stamp& host_abi_stamp() {
  static const orch_abi_stamp stamp = {kOrchAbiMagic, ORCH_SDK_VERSION, _GLIBCXX_USE_CXX11_ABI,
                                       ORCH_COMPILER_ID, TORCH_VERSION};
  return stamp;
}

std::string abi_mismatch(const orch_abi_stamp& p, const orch_abi_stamp& h) {
  if (p.magic != kOrchAbiMagic) return "its ABI stamp is not an orch stamp (bad magic number)";
  if (p.sdk_version != h.sdk_version) {
    return "it was built against orch SDK version " + std::to_string(p.sdk_version) +
           ", this orch provides SDK version " + std::to_string(h.sdk_version) +
           "; rebuild the plugin against this SDK";
  }
  if (p.cxx11_abi != h.cxx11_abi) {
    return "it was built with _GLIBCXX_USE_CXX11_ABI=" + std::to_string(p.cxx11_abi) +
           ", this orch with _GLIBCXX_USE_CXX11_ABI=" + std::to_string(h.cxx11_abi);
  }
  const std::string pc = bounded(p.compiler, sizeof p.compiler);
  const std::string pt = bounded(p.torch_version, sizeof p.torch_version);
  if (family(pc.c_str()) != family(h.compiler)) {
    return "it was built with compiler '" + pc + "', this orch with '" + h.compiler + "'";
  }
  if (major_minor(pt.c_str()) != major_minor(h.torch_version)) {
    return "it was built against LibTorch " + (pt.empty() ? std::string("(none)") : pt) +
           ", this orch uses LibTorch " + h.torch_version;
  }
  return {};
}

}  // namespace orch
