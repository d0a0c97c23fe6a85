// Out of memory, however the allocation failure is spelled: a batch too large for the device
// or the host is the configuration's outcome (`oom`), not a crash (`failed`). LibTorch reports
// it in several ways, and an exception from a plugin's constructor reaches the runner only as
// its text (the registry wraps it, see plugin_host/registry.cpp), so the text decides.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orch {

/// The result document's error for a run that failed with `what` at batch size `batch`, when
/// `what` is an allocation failure: "out of memory at batch size N: ..." (the device's memory),
/// "out of host memory at batch size N: ..." (the CPU allocator, std::bad_alloc), or "out of
/// memory at batch size N: its tensors are too large to address ..." (sizes whose byte count
/// overflows). nullopt for any other error, which stays a plain failure.
std::optional<std::string> out_of_memory_error(std::string_view what, std::int64_t batch);

}  // namespace orch
