// How many runs a plan may hold before building it would exhaust this process's memory. A
// plan is built whole (every run's resolved configuration, spec and name), so a matrix of a
// million configurations with --max-runs raised used to grow until the allocator failed
// (bad_alloc, exit 134) or the kernel's OOM killer stepped in; the planner now caps what it
// expands by what it could hold and says so (exit 2) instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace orch {

/// A generous figure for the memory one planned run holds while the plan is built (its
/// resolved configuration tree, spec, name and hash): measured about 24 KB a run with the
/// built-in model and up to 65 KB with larger configurations.
inline constexpr std::uint64_t kPlanBytesPerRun = 64 * 1024;

/// Bytes this process can still allocate: the least of the system's MemAvailable, the
/// address-space limit (RLIMIT_AS) less what is mapped and the data limit (RLIMIT_DATA) less
/// what is used; nullopt where none of them is known.
std::optional<std::uint64_t> allocatable_bytes();

/// How many planned runs fit in half of `bytes` (the rest is left to the command that uses
/// the plan: the sweep's store, the table that prints it).
std::size_t runs_that_fit(std::uint64_t bytes);

/// "about 1.5 GiB", "about 320 MiB": a size for a message.
std::string approximate_size(std::uint64_t bytes);

}  // namespace orch
