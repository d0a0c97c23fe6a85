// Each test process measures on its own devices' locks (sweep/device_lock.h): ctest runs test
// processes side by side, and sweeps of different tests waiting on one another's CPU lock
// would only make the suite slower. Tests of the locks themselves set ORCH_LOCK_DIR to a
// folder they share between the processes they start.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace orch::test {

inline void use_private_lock_dir() {
  if (const char* v = std::getenv("ORCH_LOCK_DIR"); v && *v) return;  // the caller chose one
  static std::string dir = (std::filesystem::temp_directory_path() / "orch-locks-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) return;  // the machine's folder, then
  ::setenv("ORCH_LOCK_DIR", dir.c_str(), 1);
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
}

}  // namespace orch::test
