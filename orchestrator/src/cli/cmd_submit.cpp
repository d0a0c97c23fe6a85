// `orch submit FILE --slurm`: the sweep as one Slurm job array (cluster/), each task an
// `orch exec` writing its result document into a shared folder; `orch ingest DIR`: those
// documents into the database; and the `--launcher slurm` path of `orch sweep`.
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/number_checks.h"
#include "cli/plan_arguments.h"
#include "cli/plugin_loading.h"
#include "cli/slurm_commands.h"
#include "cli/stop_signals.h"
#include "cluster/ingest.h"
#include "cluster/slurm_client.h"
#include "cluster/submission.h"
#include "report/rank_table.h"
#include "storage/store.h"
#include "sweep/environment_fault.h"
#include "sweep/sweep_lock.h"
#include "sweep/sweep_name.h"
#include "sweep/sweep_paths.h"
#include "text/terminal_text.h"

namespace orch::cli {
namespace {

namespace fs = std::filesystem;

std::string safe_name(const std::string& sweep) {
  std::string safe = sweep;
  for (char& c : safe) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return safe;
}

struct SubmitArgs {
  PlanArguments plan;
  std::string sweep_name;
  bool slurm = false;
  SlurmCliOptions slurm_options;
};

const std::string kWho = "orch submit: ";

// The sweep's name in the database; a plan one job array cannot run is refused here.
std::string submission_name(const Plan& plan, const std::string& sweep_name) {
  if (plan.search.halving()) {
    throw bad_input(kWho + plan.file +
                    ": search: halving decides between rungs which configurations run on, which "
                    "one Slurm job array cannot; run it with `orch sweep` (the local launcher), "
                    "or use method: grid for Slurm");
  }
  return bad_input_if_invalid(kWho, [&] {
    return sweep_name.empty() ? plan.name : sweep::expand_sweep_name_now(sweep_name);
  });
}

// The database a submission reads (which runs are finished) and, with --wait, writes.
struct SubmissionStore {
  std::optional<sweep::SweepLock> lock;  ///< with --wait: one writer of the sweep
  std::optional<storage::Store> store;   ///< none without --wait and no database yet
  std::int64_t sweep_id = 0;             ///< 0: no such sweep recorded
};

// Without --wait a submission only reads which runs are finished: a database it may not write
// (read-only media, another user's) is read as it is. One it may write is opened as a writer,
// so that an older schema is brought up to date as every other command does.
void open_to_read(std::optional<storage::Store>& store, const std::string& db) {
  try {
    store.emplace(db);
  } catch (const storage::SqliteError& e) {
    if ((e.code() & 0xff) != SQLITE_READONLY) throw;
    store.emplace(db, storage::Store::ReadOnly{});
  }
}

std::unique_ptr<SubmissionStore> open_submission_store(const GlobalOptions& g, const Plan& plan,
                                                       const std::string& name, bool wait) {
  auto s = std::make_unique<SubmissionStore>();
  try {
    if (wait) {
      sweep::create_database_folder(g.db);
      s->lock.emplace(sweep::lock_path(g.db, name));
    }
    if (wait) {
      s->store.emplace(g.db);
    } else if (fs::exists(g.db)) {
      open_to_read(s->store, g.db);
    }
    if (wait) s->lock->hold_database(g.db, name, "submit --wait");
    if (wait) {
      s->sweep_id = s->store->open_sweep(name, plan.name, plan.file, plan.description);
    } else if (s->store) {
      if (auto id = s->store->find_sweep(name)) s->sweep_id = *id;
    }
  } catch (const storage::SqliteError& e) {
    if (e.environment()) throw;  // read-only or full media: exit 4 with the path (main.cpp)
    throw bad_input(kWho + e.what());
  } catch (const std::exception& e) {
    throw bad_input(kWho + e.what());
  }
  return s;
}

// What the job array's script is written from: the sweep, this orch and the Slurm options.
cluster::SlurmScriptInput script_input(const Plan& plan, const std::string& name,
                                       const GlobalOptions& g, const SlurmCliOptions& o) {
  cluster::SlurmScriptInput in;
  in.sweep = name;
  in.orch_binary = fs::read_symlink("/proc/self/exe").string();
  for (const auto& p : g.plugin_paths) in.plugin_paths.push_back(fs::absolute(p).string());
  in.dir = o.results.empty() ? g.db + ".slurm/" + safe_name(name) : o.results;
  if (o.results.empty()) {
    // orch's own folders beside the database, as DB.runs is for a sweep: a link planted there
    // would aim the job script, the specs and the results at its target.
    try {
      sweep::check_own_folder(g.db + ".slurm");
      sweep::check_own_folder(in.dir);
      for (const char* sub : {"specs", "results", "logs"})
        sweep::check_own_folder(in.dir + "/" + sub);
    } catch (const std::runtime_error& e) {
      throw bad_input(kWho + e.what());
    }
  }
  // sbatch runs the script, and the index is read back: a device or FIFO planted at either name
  // would be written into (and the script's node made executable), so only a file is replaced.
  for (const char* file : {cluster::kScriptFile, cluster::kIndexFile}) {
    const std::string path = in.dir + "/" + file;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      throw bad_input(kWho + path + " is not a regular file (a device, FIFO, socket or folder); " +
                      "orch writes its submission there: remove it");
    }
  }
  in.options.partition = o.partition;
  in.options.time = o.time;
  in.options.max_parallel = o.max_parallel;
  in.options.max_requeues = o.max_requeues;
  in.options.signal_seconds = o.signal_seconds;
  in.options.sbatch_args = o.sbatch_args;
  in.options.gpus_per_task = o.gpus_per_task;
  if (o.gpus_per_task < 0) {
    bool gpu = false;
    for (const RunSpec& r : plan.runs) gpu = gpu || r.device != "cpu";
    in.options.gpus_per_task = gpu ? 1 : 0;
  }
  return in;
}

int run_submit(const SubmitArgs& a, const GlobalOptions& g) {
  PluginRegistry registry;
  PlanArguments plan_args = a.plan;
  plan_args.on_this_machine = false;  // the runs execute on the cluster's nodes, not here
  const Plan plan = load_and_plan(registry, g, plan_args);
  return submit_to_slurm(plan, a.sweep_name, g, a.slurm_options, /*wait=*/false);
}

struct IngestArgs {
  std::string dir, sweep_name;
};

int run_ingest(const IngestArgs& a, const GlobalOptions& g) {
  std::optional<storage::Store> store;
  try {
    store.emplace(g.db);
  } catch (const storage::SqliteError& e) {
    if (e.environment()) throw;  // read-only or full media: exit 4 with the path (main.cpp)
    throw bad_input("orch ingest: " + std::string(e.what()));
  } catch (const std::exception& e) {
    throw bad_input("orch ingest: " + std::string(e.what()));
  }
  cluster::Ingester ingester(*store, a.sweep_name);
  const cluster::IngestReport r = ingester.ingest(a.dir);
  // The folder is shared (every task of a job writes into it): its file names, and the sweep
  // and experiment names in its documents, are anyone's text, escaped like every name shown.
  for (const auto& m : r.malformed) {
    std::cerr << "orch ingest: malformed: " << terminal_text(m) << "\n";
  }
  std::string sweeps;
  for (const auto& [n, id] : ingester.sweeps()) {
    sweeps += (sweeps.empty() ? "" : ", ") + terminal_text(n);
  }
  std::cout << fmt::format("ingested {}: {} recorded, {} already recorded, {} malformed{}\n",
                           terminal_text(a.dir), r.recorded, r.unchanged, r.malformed.size(),
                           sweeps.empty() ? "" : " (sweep " + sweeps + ")");
  return r.malformed.empty() ? kExitOk : kExitRunFailed;
}

}  // namespace

void add_slurm_options(CLI::App& cmd, SlurmCliOptions& o) {
  cmd.add_option("--partition", o.partition, "Slurm partition (default: the cluster's default)");
  cmd.add_option("--gpus-per-task", o.gpus_per_task,
                 "GPUs per array task (default: 1, or 0 when the runs use device: cpu)")
      ->check(non_negative_number());
  cmd.add_option("--time", o.time,
                 "time limit of each task, e.g. 00:30:00 (default: the partition's)");
  cmd.add_option("--max-parallel", o.max_parallel,
                 "at most K tasks at once (--array=0-N%K; default: no limit)")
      ->check(positive_number());
  cmd.add_option("--results", o.results,
                 "shared folder for specs, script, result documents and logs "
                 "(default: DB.slurm/<sweep>/)");
  cmd.add_option("--max-requeues", o.max_requeues,
                 "requeue a task stopped by Slurm at most this many times")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd.add_option("--signal-seconds", o.signal_seconds,
                 "SIGTERM to the task this many seconds before its time limit")
      ->capture_default_str()
      ->check(positive_number());
  cmd.add_option("--sbatch-arg", o.sbatch_args,
                 "one more #SBATCH option, e.g. --sbatch-arg=--account=proj (repeatable)");
  cmd.add_flag("--dry-run", o.dry_run,
               "write the submission folder and print the script; do not call sbatch");
  cmd.add_option("--poll", o.poll_s, "with --wait: seconds between squeue polls")
      ->capture_default_str()
      ->check(positive_number());
}

int submit_to_slurm(const Plan& plan, const std::string& sweep_name, const GlobalOptions& g,
                    const SlurmCliOptions& o, bool wait) {
  const std::string name = submission_name(plan, sweep_name);
  const auto db = open_submission_store(g, plan, name, wait);
  std::map<std::pair<std::string, int>, std::string> done;
  if (db->sweep_id != 0) {
    for (const auto& [key, st] : db->store->run_states(db->sweep_id)) done[key] = st.status;
  }
  const auto pending = cluster::pending_runs(plan.runs, done, o.retry_failed);
  const cluster::Submission sub =
      cluster::write_submission({name, plan.name, plan.file, plan.description}, pending,
                                plan.runs.size(), script_input(plan, name, g, o));
  std::cout << fmt::format("sweep {}: {} runs, {} already finished, {} to submit\n",
                           terminal_text(name), plan.runs.size(), sub.already_done, pending.size());

  std::set<std::pair<std::string, int>> keys;
  for (const RunSpec& r : plan.runs) keys.insert({r.hash, r.repeat});
  auto finish = [&](const cluster::FollowResult& r) {
    std::cout << fmt::format("\nsweep {}: {} runs: {} ok, {} not ok, {} without a final result\n",
                             terminal_text(name), keys.size(), r.ok, r.not_ok, r.unfinished);
    std::cout << "\n" << format_sweep_ranking(*db->store, db->sweep_id);
    return r.exit_code();
  };

  if (pending.empty()) {
    std::cout << "nothing to submit: every run of the plan is finished\n";
    if (!wait) return kExitOk;
    return finish(cluster::tally_runs(*db->store, db->sweep_id, keys));
  }
  if (o.dry_run) {
    std::cout << "# " << terminal_text(sub.script_path) << " (not submitted: --dry-run)\n"
              << sub.script;
    return kExitOk;
  }
  // Following: SIGINT, SIGTERM and SIGHUP are caught from before the submission, so a terminal
  // closed right after it (or while sbatch runs) stops the following with its message and
  // exit 3, never kills orch silently between the two.
  std::optional<StopSignals> stop;
  if (wait) stop.emplace();
  std::string job;
  try {
    job = cluster::sbatch(sub.script_path);
  } catch (const std::exception& e) {
    throw CommandFailure(kExitRunFailed, kWho + e.what());  // the scheduler refused it
  }
  std::cout << fmt::format("submitted job array {} ({} tasks); results in {}\n", terminal_text(job),
                           pending.size(), terminal_text(sub.dir))
            << std::flush;
  if (!wait) {
    std::cout << fmt::format("load them with: orch --db {} ingest {}\n", terminal_text(g.db),
                             terminal_text(sub.dir));
    return kExitOk;
  }
  cluster::Ingester ingester(*db->store, name);
  const auto result = cluster::follow_job(
      *db->store, ingester, db->sweep_id, sub.dir, job, keys,
      std::chrono::milliseconds(static_cast<long>(o.poll_s * 1000)), std::cout, stop->flag());
  stop.reset();
  return finish(result);
}

void add_submit_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd =
      app.add_subcommand("submit",
                         "submit the runs not finished yet to a cluster scheduler (Slurm: one job "
                         "array; each task writes its result document into a shared folder)");
  auto a = std::make_shared<SubmitArgs>();
  add_plan_arguments(*cmd, a->plan);
  cmd->add_flag("--slurm", a->slurm, "submit to Slurm (sbatch); the only scheduler so far")
      ->required();
  cmd->add_option("--sweep", a->sweep_name, "name of the sweep (default: the experiment's name)");
  cmd->add_flag("--retry-failed", a->slurm_options.retry_failed,
                "submit again the runs recorded failed, oom, timeout, skipped or diverged");
  add_slurm_options(*cmd, a->slurm_options);
  cmd->callback([&g, &exit_code, a] { exit_code = run_submit(*a, g); });
}

void add_ingest_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "ingest",
      "load the result documents of a folder (written by cluster tasks) into the "
      "database; running it again adds nothing");
  auto a = std::make_shared<IngestArgs>();
  cmd->add_option("DIR", a->dir,
                  "a submission folder, its results/ folder, or any folder of "
                  "result documents")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--sweep", a->sweep_name,
                  "the sweep to record into (default: the submission's, else each document's "
                  "experiment name)");
  cmd->callback([&g, &exit_code, a] { exit_code = run_ingest(*a, g); });
}

}  // namespace orch::cli
