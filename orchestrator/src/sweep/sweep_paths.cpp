#include "sweep/sweep_paths.h"

#include <fmt/format.h>

#include <filesystem>

#include "sweep/environment_fault.h"

namespace orch::sweep {

std::string sweep_file_component(const std::string& sweep) {
  std::string out;
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    const auto c = static_cast<unsigned char>(sweep[i]);
    const bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || (c == '.' && i > 0);
    out += keep ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return out;
}

std::string real_db_path(const std::string& db) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = db;
  // A link to a database not created yet: weakly_canonical keeps a dangling link as it is, so
  // its target is followed here (a bounded number of times: a loop of links stays a link).
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  const fs::path real = fs::weakly_canonical(p, ec);
  return ec ? db : real.string();
}

void create_database_folder(const std::string& db) {
  const std::filesystem::path folder = std::filesystem::path(real_db_path(db)).parent_path();
  if (!folder.empty()) create_directories(folder.string());
}

}  // namespace orch::sweep
