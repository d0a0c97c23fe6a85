// The hash of a script's content: a script workload's configuration records it
// (plan/workload_config.h), so editing the script makes a new configuration. XXH3-128, the
// configuration hash's own function (config_hash.cpp), from the xxHash library orch already
// links: a change detector, not a signature. `xxhsum -H2 FILE` prints the same digits.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace orch {

/// Lowercase hex XXH3-128 of `bytes` (32 digits, the canonical big-endian order).
std::string content_hash_hex(std::string_view bytes);

/// Lowercase hex XXH3-128 of the file's bytes; nullopt when it cannot be read.
std::optional<std::string> file_content_hash_hex(const std::string& path);

}  // namespace orch
