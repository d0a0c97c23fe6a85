// How a command ends early with a message: thrown from a command's body, turned into the
// message on stderr and the exit code in one place (main.cpp), instead of each command printing
// and setting its own exit code at every early return. main.cpp maps the read commands'
// InputError and the planner's PlanError the same way; this is for everything else a command
// refuses, with the command's own words.
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

/// Returns what `parse` returns; the std::invalid_argument that orch's parsers of command-line
/// values throw (sweep/deadline.h, sweep/sweep_name.h) becomes bad input, its message after
/// `who` ("orch sweep: "). Other code throws std::invalid_argument too, so it is not mapped in
/// main.cpp: only these calls say what it means.
template <class Parse>
auto bad_input_if_invalid(const std::string& who, Parse&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const std::invalid_argument& e) {
    throw bad_input(who + e.what());
  }
}

}  // namespace orch::cli
