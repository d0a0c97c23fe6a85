// Sizes of memory written by people: "24GiB", "24 GB", "512MiB", "1.5TiB", "25769803776".
#pragma once

#include <cstdint>
#include <string>

namespace orch {

/// Bytes. Units (case-insensitive, optional space before them): B, KB/MB/GB/TB (powers of 1000)
/// and KiB/MiB/GiB/TiB (powers of 1024); a bare number is bytes. Throws std::invalid_argument
/// saying what is allowed for anything else, a negative or a zero size.
std::int64_t parse_memory_size(const std::string& text);

}  // namespace orch
