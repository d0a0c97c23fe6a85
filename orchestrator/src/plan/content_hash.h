// The hash of a script's content: a script workload's configuration records it
// (plan/workload_config.h), so editing the script makes a new configuration. XXH3-128, the
// configuration hash's own function (config_hash.cpp), from the xxHash library orch already
// links: a change detector, not a signature. `xxhsum -H2 FILE` prints the same digits.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace orch {

/// Lowercase hex XXH3-128 of `bytes` (32 digits, the canonical big-endian order).
std::string content_hash_hex(std::string_view bytes);

/// Lowercase hex XXH3-128 of the file's bytes, read in chunks; nullopt when it cannot be read.
std::optional<std::string> file_content_hash_hex(const std::string& path);

/// The digests of the files one plan names, each file read once however many of the plan's
/// configurations name it (a model archive of hundreds of MB in every combination of a matrix).
/// One per planning: a file edited between two plans is read again.
class FileDigests {
 public:
  std::optional<std::string> of(const std::string& path);

 private:
  std::map<std::string, std::optional<std::string>> known_;
};

}  // namespace orch
