#include "sweep/sweep_paths.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "plan/content_hash.h"
#include "storage/database_files.h"
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
  if (out.size() <= kMaxSweepComponentBytes) return out;
  // Too long for a file name beside the database's own (NAME_MAX is 255 bytes, and each
  // non-ASCII byte took three): a prefix cut between escapes, then a hash of the whole name,
  // so two long names that share the prefix still get their own lock and folder.
  constexpr std::size_t kHashChars = 16;
  std::size_t cut = kMaxSweepComponentBytes - kHashChars - 1;
  if (cut >= 1 && out[cut - 1] == '%') cut -= 1;
  if (cut >= 2 && out[cut - 2] == '%') cut -= 2;
  return out.substr(0, cut) + "~" + content_hash_hex(sweep).substr(0, kHashChars);
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
  // "x.db/" names a folder: its parent_path() is x.db itself, which would be made here only for
  // the database's open to refuse it. Refused first, so that nothing is created.
  if (!db.empty() && db.back() == '/') {
    throw EnvironmentFault("cannot use the database " + db +
                           ": the path ends in '/', so it names a folder; pass the path of a "
                           "database file");
  }
  const std::filesystem::path folder = std::filesystem::path(real_db_path(db)).parent_path();
  if (!folder.empty()) create_directories(folder.string());
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

void remove_new_database(const std::string& db) {
  // What SQLite wrote before the creation failed: nothing, or a first page, a WAL holding part
  // of the schema and its index (a disk that filled midway). Only files of one name, no larger
  // than a schema's pages, are removed: a database another process filled meanwhile stays.
  constexpr off_t kSchemaBytes = 1 << 20;
  auto removable = [](const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
           st.st_size <= kSchemaBytes;
  };
  if (!removable(db)) return;
  ::unlink(db.c_str());
  for (const char* suffix : storage::kCompanionSuffixes) {
    const std::string companion = db + suffix;
    if (removable(companion)) ::unlink(companion.c_str());
  }
}

}  // namespace orch::sweep
