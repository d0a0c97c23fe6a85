// How a command ends early with a message: thrown from a command's body, turned into the
// message on stderr and the exit code in one place (main.cpp), instead of each command printing
// and setting its own exit code at every early return.
#pragma once

#include <stdexcept>
#include <string>

#include "cli/commands.h"

namespace orch::cli {

/// The whole message (as "orch sweep: ...") and the exit code the command ends with.
class CommandFailure : public std::runtime_error {
 public:
  CommandFailure(int exit_code, const std::string& message)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// Bad input: exit 2, nothing ran, nothing was written.
inline CommandFailure bad_input(const std::string& message) {
  return CommandFailure(kExitBadInput, message);
}

}  // namespace orch::cli
