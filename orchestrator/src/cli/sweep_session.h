// What `orch sweep` and `orch run` hold while they measure one sweep into a database, taken in
// one order by both: the database's folder, the sweep's lock beside the database, the devices'
// locks (one measurement per device), the database itself, the sweep's lock on the database's
// inode (hard links and bind mounts are the same database), and the run folders checked for
// planted links. Nothing is written to the database before all of them are held.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "plan/run_spec.h"
#include "storage/store.h"
#include "sweep/device_lock.h"
#include "sweep/sweep_lock.h"

namespace orch::cli {

struct SweepSession {
  std::optional<sweep::SweepLock> lock;
  std::optional<sweep::DeviceLocks> devices;
  std::optional<storage::Store> store;
  std::string new_database;  ///< the database's path when this session created it, else ""
};

/// Takes all of it for `command` ("sweep", "run") of the sweep `name` on `devices`, waiting for
/// busy devices unless `wait` is false. Throws CommandFailure (command_failure.h): exit 4 for a
/// file system that cannot hold the sweep's lock (full, read-only, failing), 2 for anything else
/// refused (another process holds the sweep, a busy device under --no-wait, a planted link),
/// 3 when a signal came while it waited. Messages start "orch COMMAND: ".
std::unique_ptr<SweepSession> open_sweep_session(const GlobalOptions& g, const std::string& command,
                                                 const std::string& name,
                                                 const std::vector<sweep::LockedDevice>& devices,
                                                 bool wait);

/// Opens (or resumes) the sweep `name` in `store` with `plan` checked against the plan revision
/// it last ran (sweep/plan_revision.h): a first plan, or with `replan` a changed one, is recorded
/// as a revision; a changed plan without `replan` is bad input (CommandFailure, exit 2), the
/// message prefixed with `who` ("orch sweep: "), nothing written. Prints what was recorded.
/// Returns the sweep's id. A database the session created that cannot take the sweep (a full
/// disk) is closed and removed again before the error goes on.
std::int64_t open_checked_sweep(SweepSession& session, const Plan& plan, const std::string& name,
                                bool replan, const std::string& who);

}  // namespace orch::cli
