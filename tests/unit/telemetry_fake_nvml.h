// Points NVML loading at the fake NVML (tests/fixtures/fake_nvml) in a given mode for the
// lifetime of one object, and puts the environment back afterwards.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "telemetry/nvml_library.h"

namespace orch::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The fake NVML in `mode` (see fake_nvml.c): ok, not_supported_pcie, gpu_lost_after_N,
/// init_fails, no_devices, busy.
struct FakeNvml {
  explicit FakeNvml(const std::string& mode)
      : library(kNvmlLibraryVariable, ORCH_FAKE_NVML), behaviour("FAKE_NVML_MODE", mode) {}
  ScopedEnv library, behaviour;
};

/// The PCI bus id the fake GPU answers to.
inline constexpr const char* kFakeBusId = "0000:3b:00.0";

}  // namespace orch::test
