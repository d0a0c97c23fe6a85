// Guards a trap: libtorch.so exports its own copy of std::filesystem, and when libtorch comes
// before libstdc++ in a binary's DT_NEEDED list the process uses libtorch's copy, whose
// remove_all/copy_file crash (jump to address 0). CMakeLists.txt puts libstdc++ first; this
// checks, in a binary linked exactly like orch, that the symbols really come from libstdc++.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

namespace {

std::string library_defining(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

}  // namespace

TEST_CASE("std::filesystem resolves to libstdc++, not to libtorch's private copy", "[link]") {
  using RemoveAll = std::uintmax_t (*)(const std::filesystem::path&, std::error_code&);
  using CopyFile = bool (*)(const std::filesystem::path&, const std::filesystem::path&,
                            std::filesystem::copy_options);
  RemoveAll remove_all = &std::filesystem::remove_all;
  CopyFile copy_file = &std::filesystem::copy_file;
  const std::string a = library_defining(reinterpret_cast<const void*>(remove_all));
  const std::string b = library_defining(reinterpret_cast<const void*>(copy_file));
  INFO("remove_all from " << a << ", copy_file from " << b);
  CHECK(a.find("libstdc++") != std::string::npos);
  CHECK(b.find("libstdc++") != std::string::npos);
}
