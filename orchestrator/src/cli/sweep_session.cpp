// open_sweep_session (sweep_session.h).
#include "cli/sweep_session.h"

#include <sys/stat.h>

#include <iostream>

#include "cli/command_failure.h"
#include "cli/device_locking.h"
#include "cli/stop_signals.h"
#include "process/leftovers.h"
#include "storage/sweep_plans.h"
#include "sweep/child_run.h"
#include "sweep/environment_fault.h"
#include "sweep/plan_revision.h"
#include "sweep/sweep_paths.h"

namespace orch::cli {
namespace {

// Opens (or creates) the database. A new one that fails before its schema is written (a full
// disk) is removed again, so that no empty database stays behind for the run of the same
// command that follows the fix.
void open_store(SweepSession& s, const std::string& db) {
  const bool existed = sweep::path_exists(db);
  try {
    s.store.emplace(db);
  } catch (...) {
    if (!existed) sweep::remove_new_database(db);
    throw;
  }
  if (!existed) s.new_database = db;
}

std::int64_t checked_sweep(storage::Store& store, const Plan& plan, const std::string& name,
                           bool replan, const std::string& who) {
  const storage::SweepPlan revision = sweep::sweep_plan_of(plan);
  const sweep::PlanCheck check = sweep::check_plan(store, name, revision, replan, &plan);
  if (!check.ok) {
    std::string message = who + check.message;
    if (!message.empty() && message.back() == '\n') message.pop_back();  // main.cpp adds it
    throw bad_input(message);
  }
  const std::int64_t sweep_id = bad_input_if_invalid(
      who, [&] { return store.open_sweep(name, plan.name, plan.file, plan.description); });
  if (check.record) store.record_plan(sweep_id, revision);
  std::cout << check.message;
  return sweep_id;
}

}  // namespace

std::unique_ptr<SweepSession> open_sweep_session(const GlobalOptions& g, const std::string& command,
                                                 const std::string& name,
                                                 const std::vector<sweep::LockedDevice>& devices,
                                                 bool wait) {
  const std::string who = "orch " + command + ": ";
  // A run's process that is killed (a timeout past the grace) cannot end what its program left
  // running outside its process group; as a child subreaper this process inherits those orphans
  // instead of init, and sweep/child_run.cpp ends them with the run. Where the kernel refuses,
  // they go to init as before.
  (void)process::become_child_subreaper();
  auto s = std::make_unique<SweepSession>();
  try {
    // Run folders go under these two: a link planted there is refused before anything runs or
    // is created (the database included).
    sweep::check_own_folder(g.db + ".runs");
    sweep::check_own_folder(sweep::sweep_work_dir(g.db, name));
    sweep::create_database_folder(g.db);
    s->lock.emplace(sweep::lock_path(g.db, name));
  } catch (const std::runtime_error& e) {
    // A full, read-only or failing file system is exit 4, as it is later in the sweep.
    const auto* fault = dynamic_cast<const sweep::EnvironmentFault*>(&e);
    throw CommandFailure(fault && fault->storage_fault() ? kExitEnvironment : kExitBadInput,
                         who + e.what());
  }
  // The same sweep through another name of the file (a hard link) is "already running", said
  // at once, not a wait for the devices that sweep holds: the file's lock comes first when the
  // file is there to lock. A new database has no other name yet.
  bool held = false;
  struct stat db_file {};
  if (::stat(g.db.c_str(), &db_file) == 0 && S_ISREG(db_file.st_mode)) {
    try {
      s->lock->hold_database(g.db, name, command);
      held = true;
    } catch (const sweep::SweepAlreadyRunning& e) {
      throw bad_input(who + e.what());
    } catch (const std::runtime_error&) {
      // A file that cannot be locked (not a database, read-only): the store says what it is
      // first, below, as for a new one.
    }
  }
  {
    StopSignals stop;
    int exit_code = kExitOk;
    s->devices = lock_devices(devices, command, name, wait, stop.flag(), exit_code);
    // lock_devices has said why (the holder, or the signal that stopped the wait).
    if (!s->devices) throw CommandFailure(exit_code, "");
  }
  open_store(*s, g.db);
  if (!held) {
    try {
      s->lock->hold_database(g.db, name, command);
    } catch (const std::runtime_error& e) {
      throw bad_input(who + e.what());
    }
  }
  return s;
}

std::int64_t open_checked_sweep(SweepSession& session, const Plan& plan, const std::string& name,
                                bool replan, const std::string& who) {
  try {
    return checked_sweep(*session.store, plan, name, replan, who);
  } catch (const storage::SqliteError&) {
    // The schema fitted, the sweep's first rows did not (a disk that filled midway): the new
    // database holds nothing of anyone's yet, so it goes as one whose schema failed would.
    if (!session.new_database.empty()) {
      session.store.reset();
      sweep::remove_new_database(session.new_database);
    }
    throw;
  }
}

}  // namespace orch::cli
