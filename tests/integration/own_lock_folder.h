// ORCH_LOCK_DIR set to a folder of the test's own while it lives (the child processes inherit
// it), so no other test's hold on a device meets this one's.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace orch::test {

struct OwnLockFolder {
  explicit OwnLockFolder(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    if (const char* v = std::getenv("ORCH_LOCK_DIR")) previous = v;
    ::setenv("ORCH_LOCK_DIR", dir.c_str(), 1);
  }
  ~OwnLockFolder() {
    if (previous)
      ::setenv("ORCH_LOCK_DIR", previous->c_str(), 1);
    else
      ::unsetenv("ORCH_LOCK_DIR");
  }
  OwnLockFolder(const OwnLockFolder&) = delete;
  OwnLockFolder& operator=(const OwnLockFolder&) = delete;
  std::optional<std::string> previous;
};

}  // namespace orch::test
