// What a process's children leave behind. A program may start processes that leave its process
// group (setsid, a daemonising library, `nohup ... &`): signalling the group never reaches them,
// and they keep the GPU or the CPU busy under the next run's measurement. A process that makes
// itself a child subreaper gets every orphan below it, wherever it moved its group or session,
// as its own child instead of init's; whatever it then has as children besides its live Child
// objects (child.h) is left over, and it ends them. `orch exec` does so for a script's program,
// `orch sweep` and `orch run` for an `orch exec` that was killed before it could.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace orch::process {

/// How long a leftover has between SIGTERM and SIGKILL.
constexpr std::chrono::milliseconds kLeftoverGrace{2000};

/// prctl(PR_SET_CHILD_SUBREAPER, 1) for this process. false where the kernel refuses (errno
/// kept); orphans then go to init, as before.
bool become_child_subreaper();
/// Whether this process is a child subreaper.
bool is_child_subreaper();

/// A child of this process that no live Child owns.
struct Leftover {
  pid_t pid = 0;
  std::string command;  ///< its comm, as /proc names it
};

/// This process's living children that no live Child owns, read from /proc; such children that
/// are already zombies are reaped and left out. Live Children, zombies or not, are left to
/// their owners, who will want their exit status.
std::vector<Leftover> leftover_children();

/// Ends every leftover child: SIGTERM, `grace` for them to go, then SIGKILL; repeated while
/// orphans below them arrive (each one's own children are reparented here as it dies), reaping
/// each. Returns every process it signalled, the first time it did. Bounded: `grace` plus ten
/// seconds at most, however fast something forks.
std::vector<Leftover> end_leftover_children(std::chrono::milliseconds grace = kLeftoverGrace);

/// "3 processes (pid 41 sleep, pid 42 python3, ...)": for a run's log.
std::string describe_leftovers(const std::vector<Leftover>& left);

}  // namespace orch::process
