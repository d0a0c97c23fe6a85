// How many runs a plan may hold before building it would exhaust this process's memory. A
// plan is built whole (every run's spec, name and configuration), so a matrix of a million
// configurations with --max-runs raised used to grow until the allocator failed (bad_alloc,
// exit 134) or the kernel's OOM killer stepped in; the planner now estimates what the plan
// needs before it expands the matrix, and refuses one that would not fit (exit 2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace orch {

/// What one planned run takes at the peak of building the plan, besides what grows with its
/// configuration: the RunSpec (name, hash, swept values, typed settings) and the planner's
/// working copies. bench/plan (orch_bench_plan_memory) measures a run's share of the peak as a
/// few KiB plus about twice its configuration's text; the two constants leave a margin of
/// about half again over that, at small and at large configurations.
inline constexpr std::uint64_t kPlanRunBytes = 8 * 1024;
/// And for each byte of the configuration's JSON text: the text itself (shared by the repeats),
/// the plugins' parameters parsed from it, the tree it was resolved in.
inline constexpr std::uint64_t kPlanBytesPerConfigByte = 3;

/// The estimate of one run for configurations of `config_bytes` bytes of JSON text each.
std::uint64_t plan_bytes_per_run(std::uint64_t config_bytes);

/// Bytes this process can still allocate: the least of the system's MemAvailable, the
/// address-space limit (RLIMIT_AS, `ulimit -v`) less what is mapped and the data limit
/// (RLIMIT_DATA, `ulimit -d`) less what is used; nullopt where none of them is known.
std::optional<std::uint64_t> allocatable_bytes();

/// How many runs of `bytes_per_run` fit in half of `bytes` (the rest is left to the command
/// that uses the plan: the sweep's store, the table that prints it).
std::size_t runs_that_fit(std::uint64_t bytes, std::uint64_t bytes_per_run);

/// "about 1.5 GiB", "about 320 MiB", "about 12 KiB": a size for a message.
std::string approximate_size(std::uint64_t bytes);

}  // namespace orch
