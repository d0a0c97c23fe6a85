// What a script workload's program leaves running when it ends. A program may start processes
// that leave its process group (setsid, a daemonising library, `nohup ... &`): a sweep that ends
// the run by signalling the group never reaches them, and they keep the GPU or the CPU busy
// under the next run's measurement. `orch exec` makes itself a child subreaper before starting
// the program, so every orphan below it, wherever it moved its group or session, becomes exec's
// child instead of init's; once the program has ended, whatever exec still has as children is
// the program's, and exec ends it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace orch {

/// prctl(PR_SET_CHILD_SUBREAPER, 1) for this process. false where the kernel refuses (errno kept);
/// the program's leftovers then go to init, as before.
bool become_child_subreaper();

/// A process this process ended.
struct Leftover {
  pid_t pid = 0;
  std::string command;  ///< its comm, as /proc names it
};

/// This process's living children, read from /proc (zombies reaped first and left out).
std::vector<Leftover> own_children();

/// Ends every child this process has: SIGTERM, `grace` for them to go, then SIGKILL; repeated
/// while orphans below them arrive (each one's own children are reparented here as it dies),
/// reaping each. Returns every process it signalled, the first time it did. Call only when no
/// child of this process should be left (the program has ended and been waited for).
std::vector<Leftover> end_own_children(std::chrono::milliseconds grace);

/// "3 processes (pid 41 sleep, pid 42 python3, ...)": for the run's log.
std::string describe_leftovers(const std::vector<Leftover>& left);

}  // namespace orch
