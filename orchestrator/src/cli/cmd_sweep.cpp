// `orch sweep FILE`: the whole matrix, unattended. Each run in its own child process (one per
// GPU at a time), every outcome recorded, and running the same command again resumes: finished
// runs are skipped, interrupted ones run again.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/device_locking.h"
#include "cli/doctor_facts.h"
#include "cli/number_checks.h"
#include "cli/pipe_guard.h"
#include "cli/plan_arguments.h"
#include "cli/plan_check.h"
#include "cli/plugin_loading.h"
#include "cli/slurm_commands.h"
#include "cli/stop_signals.h"
#include "cli/sweep_session.h"
#include "report/rank_table.h"
#include "storage/row_values.h"
#include "storage/store.h"
#include "sweep/child_run.h"
#include "sweep/deadline.h"
#include "sweep/device_check.h"
#include "sweep/environment_fault.h"
#include "sweep/halving.h"
#include "sweep/plan_revision.h"
#include "sweep/store_recorder.h"
#include "sweep/sweep_name.h"
#include "sweep/sweep_paths.h"
#include "sweep/time_shares.h"
#include "sweep/watched_recorder.h"
#include "telemetry/sweep_warnings.h"
#include "text/terminal_text.h"

namespace orch::cli {
namespace {

const std::string kWho = "orch sweep: ";

struct SweepArgs {
  PlanArguments plan;
  std::string sweep_name, gpus, until, order = "as-written";
  bool resume = false, retry_failed = false, replan = false;
  bool until_given = false;  // --until '' is an error, not "no deadline"
  int max_consecutive_failures = 3;
  double grace_s = 10;
  double batch_headroom = 0.9;
  std::string launcher = "local";
  bool wait = false;
  bool check = false;    // --check: rehearse the plan, record nothing
  bool no_wait = false;  // --no-wait: a device in use ends the command instead of a wait
  SlurmCliOptions slurm;
};

// The invocation's time in the database (sweep_efficiency). Losing it loses no result, so a
// database that cannot take it now is said on stderr and the sweep's outcome stands.
void record_invocation(storage::Store& store, std::int64_t sweep_id, const std::string& started,
                       const sweep::SweepTime& t) {
  storage::InvocationTime row;
  row.started_at = started;
  row.finished_at = storage::utc_now();
  row.wall_s = t.wall_s;
  row.slots = t.slots;
  row.runs = t.runs;
  row.phases = t.phases;
  row.unmeasured_s = t.unmeasured_s;
  try {
    store.record_invocation(sweep_id, row);
  } catch (const storage::SqliteError& e) {
    std::cerr << "orch sweep: this invocation's time split was not recorded: "
              << storage::database_fault_text(e, store.path()) << "\n";
  }
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Slot names are what each child's CUDA_VISIBLE_DEVICES is set to (visible_gpu_slots: the
// entries of our own CUDA_VISIBLE_DEVICES when it is set, so `CUDA_VISIBLE_DEVICES=2,3 orch
// sweep` uses GPUs 2 and 3, else the device indices). --gpus selects among them by position.
std::vector<std::string> gpu_slots(const std::string& requested) {
  const std::vector<std::string> visible = visible_gpu_slots();
  const int count = static_cast<int>(visible.size());
  std::vector<std::string> slots;
  if (requested == "none") return {""};  // the CPU, one run at a time (see run_sweep)
  if (requested.empty()) {
    if (visible.empty()) return {""};  // no GPU: one run at a time on the CPU
    return visible;
  }
  for (const auto& item : split_commas(requested)) {
    int index = -1;
    try {
      std::size_t used = 0;
      index = std::stoi(item, &used);
      if (used != item.size()) index = -1;
    } catch (const std::exception&) {
    }
    if (index < 0 || index >= count) {
      throw std::invalid_argument(
          fmt::format("--gpus: '{}' is not a visible GPU (visible: {})", item,
                      count == 0 ? std::string("none") : fmt::format("0..{}", count - 1)));
    }
    const std::string& name = visible[static_cast<std::size_t>(index)];
    if (std::find(slots.begin(), slots.end(), name) != slots.end()) {
      throw std::invalid_argument("--gpus: GPU " + item + " is listed twice; one run per GPU");
    }
    slots.push_back(name);
  }
  return slots;
}

// The sweep's own options; --gpus and --until refused here are bad input, before anything runs.
sweep::SweepOptions sweep_options(const SweepArgs& a) {
  sweep::SweepOptions options;
  options.retry_failed = a.retry_failed;
  options.max_consecutive_failures = a.max_consecutive_failures;
  options.fast_first = a.order == "fast-first";
  options.gpus = bad_input_if_invalid(kWho, [&] { return gpu_slots(a.gpus); });
  if (a.until_given) {
    options.deadline = bad_input_if_invalid(kWho, [&] {
      const auto wall_now = std::chrono::system_clock::now();
      return sweep::steady_deadline(sweep::parse_until(a.until, wall_now), wall_now,
                                    std::chrono::steady_clock::now());
    });
  }
  return options;
}

// What would make tonight's numbers wrong is said before the first run, and kept with the plan
// revision for whoever reads the results.
void say_number_changing_warnings(storage::Store& store, std::int64_t sweep_id) {
  const std::vector<std::string> warnings =
      number_changing_warnings(doctor_checks(gather_facts(/*load_gpus=*/false)));
  if (!warnings.empty()) {
    std::cout << "orch doctor found what changes the numbers measured now:\n";
    for (const auto& w : warnings) std::cout << "  " << terminal_text(w) << "\n";
  }
  store.set_latest_plan_warnings(sweep_id, warnings);
}

// Where and how each run's child process starts.
sweep::ChildLaunchOptions launch_options(const SweepArgs& a, const GlobalOptions& g,
                                         const std::string& name) {
  sweep::ChildLaunchOptions launch;
  launch.orch_binary = std::filesystem::read_symlink("/proc/self/exe").string();
  launch.plugin_paths = g.plugin_paths;
  launch.work_dir = sweep::sweep_work_dir(g.db, name);
  launch.grace_s = a.grace_s;
  launch.batch_headroom = a.batch_headroom;
  return launch;
}

// Every run of `plan` through `launcher`, until the end, a signal or --until.
sweep::SweepSummary measure(const Plan& plan, const std::string& name,
                            const sweep::SweepOptions& options, sweep::ChildLauncher& launcher,
                            sweep::Recorder& recorder) {
  sweep::SteadyClock clock;
  StopSignals stop;
  std::cout << terminal_text(name)
            << (plan.description.empty() ? "" : ": " + terminal_text(plan.description))
            << std::endl;
  // Progress goes through a stream that turns a vanished reader of stdout into a stop.
  PipeGuardStream progress(STDOUT_FILENO, stop.flag());
  if (plan.search.halving())
    return sweep::run_halving(plan, options, launcher, recorder, clock, progress, stop.flag());
  return sweep::run_sweep(plan.runs, options, launcher, recorder, clock, progress, stop.flag());
}

// The lines under the progress: how the runs ended, where the time went, then the ranking.
void print_sweep_end(const sweep::SweepSummary& s, const std::string& name, storage::Store& store,
                     std::int64_t sweep_id, const std::string& started) {
  std::cout << fmt::format(
      "\nsweep {}: {} runs: {} finished before, {} ok, {} not ok{}, {} skipped, {} deferred{}\n",
      terminal_text(name), s.total, s.already_done, s.ok, s.failed,
      s.diverged > 0 ? fmt::format(" ({} diverged)", s.diverged) : "", s.skipped, s.deferred,
      s.interrupted ? ", stopped by a signal" : "");
  if (const auto line = sweep::time_shares_line(s.time); !line.empty()) {
    std::cout << line << "\n";
    record_invocation(store, sweep_id, started, s.time);
  }
  if (s.already_not_ok > 0) {
    std::cout << fmt::format(
        "{} runs recorded earlier did not succeed; --retry-failed runs "
        "them again\n",
        s.already_not_ok);
  }
  if (s.exit_code() == kExitStopped) {
    std::cout << "run the same command again to continue where it stopped\n";
  }
  if (!s.environment_fault.empty()) {
    std::cerr << "orch sweep: stopped by an environment fault: " << s.environment_fault << "\n";
  }
  std::cout << "\n" << format_sweep_ranking(store, sweep_id);
}

// The sweep on this machine: its locks and database (sweep_session.h), its plan checked, then
// every run in a child process, each outcome recorded.
int sweep_with_session(const Plan& plan, const std::string& name, const SweepArgs& a,
                       const GlobalOptions& g, const sweep::SweepOptions& options) {
  // One measurement per device: another sweep's runs on the same GPU would slow both
  // without a word. Held until the sweep ends; taken before anything is written.
  const auto session =
      open_sweep_session(g, "sweep", name, devices_of_slots(options.gpus), !a.no_wait);
  storage::Store& store = *session->store;
  const std::int64_t sweep_id = open_checked_sweep(*session, plan, name, a.replan, kWho);
  say_number_changing_warnings(store, sweep_id);
  sweep::StoreRecorder store_recorder(store, sweep_id);
  sweep::WatchedRecorder recorder(store_recorder, g.db);
  // Held until the summary is printed: its warm workers (`isolation: worker`) end with it.
  const sweep::ChildLaunchOptions launch = launch_options(a, g, name);
  sweep::ChildLauncher launcher(launch);
  sweep::ChildDeviceChecker checker({launch.orch_binary, launch.work_dir});
  sweep::SweepOptions checked = options;
  checked.device_checker = &checker;
  const std::string invocation_started = storage::utc_now();
  const sweep::SweepSummary s = measure(plan, name, checked, launcher, recorder);
  print_sweep_end(s, name, store, sweep_id, invocation_started);
  return s.exit_code();
}

// Signals are caught from the start to the end, the locks' release and the warm workers' end
// included: one that lands while the ranking prints stops the command as one during the runs
// does (exit 3), rather than killing it with its lock file and workers left.
int run_local_sweep(const Plan& plan, const std::string& name, const SweepArgs& a,
                    const GlobalOptions& g, const sweep::SweepOptions& options) {
  StopSignals stop;
  const int code = sweep_with_session(plan, name, a, g, options);
  const bool late_stop = stop.flag() && (code == kExitOk || code == kExitRunFailed);
  hold_stop_signals_until_exit();
  if (!late_stop) return code;
  std::cerr << "orch sweep: stopped by a signal after its runs ended; every run is recorded\n";
  return kExitStopped;
}

int run_sweep(const SweepArgs& a, const GlobalOptions& g) {
  const bool slurm = a.launcher == "slurm";
  // Caught from the first moment, plugin loading and planning included: a signal then stops
  // the sweep before its first run (exit 3) rather than killing it. Slurm's path has its own.
  std::optional<StopSignals> stop;
  if (!slurm) stop.emplace();
  // --gpus none hides every GPU as CUDA_VISIBLE_DEVICES= would, before anything asks CUDA how
  // many there are: the plan's checks see none (a configuration that needs one is refused by
  // name), and so do the device locks, the health checks and every child, whose `device:
  // auto` then means the CPU.
  if (a.gpus == "none" && !slurm) ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  PluginRegistry registry;
  PlanArguments plan_args = a.plan;
  plan_args.on_this_machine = !slurm;  // Slurm runs it on other machines
  const Plan plan = load_and_plan(registry, g, plan_args);
  if (slurm && a.check) {
    throw bad_input(
        "orch sweep: --check rehearses on this machine; with --launcher slurm, run "
        "`orch plan --check` on a node of the cluster");
  }
  if (slurm) {
    SlurmCliOptions slurm_options = a.slurm;
    slurm_options.retry_failed = a.retry_failed;
    return submit_to_slurm(plan, a.sweep_name, g, slurm_options, a.wait);
  }
  const sweep::SweepOptions options = sweep_options(a);
  if (a.check) {
    const bool cpu = options.gpus.size() == 1 && options.gpus[0].empty();
    return rehearse_plan(plan, g, cpu ? std::vector<std::string>{} : options.gpus, a.grace_s,
                         !a.no_wait);
  }
  const std::string name = bad_input_if_invalid(kWho, [&] {
    return a.sweep_name.empty() ? plan.name : sweep::expand_sweep_name_now(a.sweep_name);
  });
  return run_local_sweep(plan, name, a, g, options);
}

}  // namespace

void add_sweep_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "run a whole experiment unattended: each run in its own process, one per GPU, "
      "resumable");
  auto a = std::make_shared<SweepArgs>();
  add_plan_arguments(*cmd, a->plan);
  cmd->add_option("--sweep", a->sweep_name,
                  "name of the sweep in the database (default: the "
                  "experiment's name); the same name resumes it. "
                  "{date} (YYYY-MM-DD) and {time} (HHMM), local "
                  "time, make one sweep per night: 'nightly-{date}'");
  cmd->add_flag("--replan", a->replan,
                "the file's plan differs from the one the sweep ran: "
                "record it as the sweep's new plan revision and run it");
  cmd->add_flag("--check", a->check,
                "rehearse instead of running: one training step of each configuration in a "
                "child process (one per GPU at a time), every failure listed; records nothing");
  cmd->add_flag("--no-wait", a->no_wait,
                "when a device is in use by another orch (a sweep, run or check), exit at once "
                "(code 2) naming it, instead of waiting for it");
  cmd->add_option("--gpus", a->gpus,
                  "GPUs to use, by index among the visible ones, e.g. 0,1 "
                  "(default: all visible; none: no GPU, one run at a time on the CPU)");
  auto* until = cmd->add_option("--until", a->until,
                                "HH:MM, local time (tomorrow if already past): start no run that "
                                "would not finish by then");
  cmd->add_option("--order", a->order, "as-written, or fast-first (cheap configurations first)")
      ->capture_default_str()
      ->check(CLI::IsMember({"as-written", "fast-first"}));
  cmd->add_flag("--resume", a->resume, "resume the sweep (the default behaviour; for clarity)");
  cmd->add_flag("--retry-failed", a->retry_failed,
                "run again the runs recorded failed, oom, timeout, skipped or diverged");
  cmd->add_option("--max-consecutive-failures", a->max_consecutive_failures,
                  "check a GPU's health after this many device failures in a row (a "
                  "sticky CUDA error, a crash, a hang), and stop using it if the check fails")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--batch-headroom", a->batch_headroom,
                  "batch_size: auto probes no batch whose peak memory would pass this share of "
                  "the device's memory")
      ->capture_default_str()
      ->check(number_between(0.05, 1.0, "FLOAT"));
  cmd->add_option("--grace", a->grace_s,
                  "seconds between SIGTERM and SIGKILL when a run times "
                  "out or the sweep is stopped")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->add_option("--launcher", a->launcher,
                  "local (child processes on this machine), or slurm "
                  "(one job array; see `orch submit`)")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_flag("--wait", a->wait,
                "with --launcher slurm: follow the job, ingest the results as "
                "they arrive, print the ranking");
  add_slurm_options(*cmd, a->slurm);
  cmd->callback([&g, &exit_code, a, until] {
    a->until_given = until->count() > 0;
    exit_code = run_sweep(*a, g);
  });
}

}  // namespace orch::cli
