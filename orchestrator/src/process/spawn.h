// How a Child is started (child.h): posix_spawn, or fork and execve where something has to be
// done in the child first. Private to the process library.
#pragma once

#include <sys/types.h>

#include "process/child.h"

namespace orch::process::detail {

struct Spawned {
  pid_t pid = -1;
  UniqueFd in, out, err;  ///< this process's ends of the pipes asked for
};

/// Starts the child described by `options`; throws SpawnError.
Spawned spawn(const ChildOptions& options);

}  // namespace orch::process::detail
