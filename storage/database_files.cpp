#include "storage/database_files.h"

#include <cstdlib>

namespace orch::storage {

std::vector<std::string> database_spellings(const std::string& path) {
  std::vector<std::string> spellings{path};
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    if (real != path) spellings.emplace_back(real);
    std::free(real);
  }
  return spellings;
}

}  // namespace orch::storage
