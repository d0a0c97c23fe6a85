// Remembered load-probe verdicts, keyed on a library file's identity, so that only a new or
// changed library costs a child process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "plugin_host/load_probe.h"

namespace orch {

/// What tells a file apart from the one that was probed: its path, size, modification time
/// and inode (a library replaced by `cp -p` or `install` keeps size and time, not the inode).
struct FileIdentity {
  std::string path;  ///< absolute
  std::uintmax_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

/// The identity of the file `path` names (symbolic links followed); nullopt when it cannot be
/// read with stat().
std::optional<FileIdentity> identify(const std::filesystem::path& path);

/// A text file of verdicts, one a line. Unreadable, foreign or damaged files count as empty
/// (the cache only saves time); writing goes to a temporary file renamed into place, so
/// concurrent commands never read half a file.
class ProbeCache {
 public:
  explicit ProbeCache(std::filesystem::path file);

  /// The remembered verdict for exactly this file, if any.
  std::optional<LoadProbeVerdict> find(const FileIdentity& id) const;
  /// Remembers a verdict (a cacheable one; others are ignored) and writes the file.
  void put(const FileIdentity& id, const LoadProbeVerdict& v);

  const std::filesystem::path& file() const { return file_; }

 private:
  void save() const;
  std::filesystem::path file_;
  std::map<std::string, std::pair<FileIdentity, LoadProbeVerdict>> entries_;  ///< by path
};

}  // namespace orch
