// The error type for everything that goes wrong finding, loading or calling a plugin.
#pragma once

#include <stdexcept>
#include <string>

namespace orch {

class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace orch
