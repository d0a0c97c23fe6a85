// SHA-256 (FIPS 180-4), for the hash of a script's content: a script workload's configuration
// records it (plan/workload_config.h), so editing the script makes a new configuration. Small
// and self-contained because the host links no cryptography library.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace orch {

/// Lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

/// Lowercase hex SHA-256 of the file's bytes; nullopt when it cannot be read.
std::optional<std::string> sha256_file_hex(const std::string& path);

}  // namespace orch
