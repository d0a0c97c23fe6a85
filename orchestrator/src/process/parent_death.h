// A process that must not outlive the one that started it (a run whose sweep was killed must not
// hold its GPU).
#pragma once

#include <sys/types.h>

namespace orch::process {

/// Asks the kernel for SIGKILL when this process's parent ends (PR_SET_PDEATHSIG). false when
/// `parent` is no longer the parent: it ended before the request took effect, and no signal
/// will come. Async-signal-safe.
bool die_with_parent(pid_t parent);

}  // namespace orch::process
