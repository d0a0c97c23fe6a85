// The error of a read-only command given input that names nothing in the database (an unknown
// sweep, metric or configuration): the CLI prints it and exits 2.
#pragma once

#include <stdexcept>

namespace orch {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace orch
