// The end of a child's log, for the error a run that wrote no result is recorded with.
#pragma once

#include <cstddef>
#include <string>

namespace orch::sweep {

/// The last `max_bytes` of a text file (from a line start where possible); empty if unreadable
/// or not a regular file (a symbolic link is not followed, a FIFO not waited on).
std::string file_tail(const std::string& path, std::size_t max_bytes = 4000);

}  // namespace orch::sweep
