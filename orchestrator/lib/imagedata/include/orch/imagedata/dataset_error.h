// DatasetError: the one exception orch::imagedata throws. Its message always names what is wrong
// and, where there is one, the file (`path: what is wrong`), so a loader can pass it on as is.
#pragma once

#include <stdexcept>
#include <string>

namespace orch::imagedata {

struct DatasetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace orch::imagedata
