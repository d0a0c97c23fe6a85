// Torch-free facts about the host a run executes on: the CPU model, this process's peak
// resident memory, and the revision of orch that was built.
#pragma once

#include <cstdint>
#include <string>

namespace orch {

/// The "model name" line of /proc/cpuinfo (e.g. "AMD EPYC 9454 48-Core Processor"), or ""
/// when the file has none (some ARM kernels).
std::string cpu_model();
/// The same, read from any cpuinfo-formatted file (for tests).
std::string cpu_model_from(const std::string& cpuinfo_path);

/// This process's peak resident set size in bytes (getrusage; Linux reports kilobytes).
std::int64_t host_peak_rss_bytes();

/// `git describe --always --dirty` of the source tree when orch was built, or "unknown"
/// outside a git checkout. Defined in a generated file (see git_revision.cmake).
const char* git_revision();

}  // namespace orch
