// `orch exec --spec SPEC --out RESULT`: one run specification, executed in this process, its
// result document written to RESULT. This is what `orch sweep` starts in a child process for
// every run and batch-size probe (and what a cluster task runs): whatever happens in here
// (a CUDA error, a crash) dies with this process, not with the sweep.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/device_locking.h"
#include "cli/exec_worker.h"
#include "cli/number_checks.h"
#include "cli/plugin_loading.h"
#include "cli/stop_signals.h"
#include "plan/bounded_file.h"
#include "plan/run_spec_json.h"
#include "process/leftovers.h"
#include "process/parent_death.h"
#include "report/output_target.h"
#include "result/json_dump.h"
#include "result/result_document.h"
#include "runner/cuda_connections.h"
#include "runner/runner.h"
#include "runner/script_workload.h"
#include "sweep/child_run.h"
#include "sweep/environment_fault.h"
#include "sweep/fastest_batch_search.h"
#include "sweep/sweep_paths.h"
#include "text/terminal_text.h"

namespace orch::cli {
namespace {

struct ExecArgs {
  std::string spec, out, trace;
  std::int64_t batch_size = 0;
  bool probe = false, probe_speed = false;
  double batch_headroom = 0.9;
  long parent_pid = 0;
  std::string write_outcome, reason;
  bool supervise = false, worker = false;
  double grace_s = 10;
  std::string work_dir;
};

// --supervise: the run goes through the local sweep's launcher (a child `orch exec`, its
// timeout, a document written for a crash, the batch_size: auto probes), so a cluster task runs
// its run exactly as `orch sweep` would. CUDA_VISIBLE_DEVICES is left as the scheduler set it.
nlohmann::json supervise(const RunSpec& spec, const GlobalOptions& g, const ExecArgs& a) {
  // As `orch sweep` (sweep_session.cpp): what a killed child leaves running comes here, and ends.
  (void)process::become_child_subreaper();
  sweep::ChildLaunchOptions launch;
  launch.orch_binary = std::filesystem::read_symlink("/proc/self/exe").string();
  launch.plugin_paths = g.plugin_paths;
  // The child's spec, result and logs: outside any folder `orch ingest` reads.
  launch.work_dir = a.work_dir.empty() ? a.out + ".work" : a.work_dir;
  if (a.work_dir.empty()) {
    // orch's own folder beside the result, as DB.runs is a sweep's: a link planted there would
    // aim the child's spec, result and logs at its target. A --work-dir given is the user's.
    try {
      sweep::check_own_folder(launch.work_dir);
    } catch (const std::runtime_error& e) {
      throw bad_input(std::string("orch exec: ") + e.what());
    }
  }
  launch.grace_s = a.grace_s;
  launch.batch_headroom = a.batch_headroom;
  sweep::ChildLauncher launcher(launch);
  auto handle = launcher.launch(spec, /*gpu=*/"");
  for (;;) {
    if (auto doc = handle->poll()) return *doc;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string status_text(const ResultDocument& doc) {
  return doc.status ? to_string(*doc.status) : "?";
}

// Written to a temporary name and renamed: the parent never reads half a document. A write
// that fails throws sweep::EnvironmentFault, and orch exits with kExitEnvironment, which the
// sweep reads as the environment's failure.
void write_atomically(const std::string& path, const ResultDocument& doc) {
  sweep::write_file_atomically(path, json_dump(to_json(doc), 1) + "\n");
}

// The specification `orch sweep` (or a Slurm task) wrote; one that cannot be read is bad input.
RunSpec read_spec(const std::string& path) {
  try {
    return run_spec_from_json(
        nlohmann::json::parse(read_bounded_file(path, kMaxRunSpecBytes, "a run specification")));
  } catch (const BoundedReadError& e) {
    throw bad_input(std::string("orch exec: ") + e.what());  // it names the file
  } catch (const std::exception& e) {
    throw bad_input("orch exec: " + path + ": " + e.what());
  }
}

// A document for a run that did not run: the header of the specification, and the outcome.
void write_outcome(const RunSpec& spec, const std::string& status, const std::string& reason,
                   const std::string& out) {
  ResultDocument doc = result_from_json(run_spec_json(spec));
  doc.format = kResultFormat;
  doc.version = kResultVersion;
  doc.status = parse_run_status(status);
  doc.error = reason;
  doc.device = spec.device;
  write_atomically(out, doc);
  std::cerr << "orch exec: " << terminal_text(spec.name) << " (repeat " << spec.repeat
            << "): recorded " << status << ": " << reason << "\n";
}

// --write-outcome: no plugin is loaded and nothing runs.
void record_outcome(const RunSpec& spec, const ExecArgs& a) {
  // The status is one of two, checked by the option.
  write_outcome(spec, a.write_outcome,
                a.reason.empty() ? "recorded by orch exec --write-outcome" : a.reason, a.out);
}

// Who holds a device for a supervised run, as the waiting side reads it: the Slurm job and task
// where there is one (what `scancel` needs), the experiment and the run.
std::string supervise_holder(const RunSpec& spec) {
  std::string command = "exec --supervise";
  const char* job = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  if (job && *job && task && *task) command += std::string(" in Slurm job ") + job + "_" + task;
  return sweep::lock_holder_text(command, spec.experiment + ": " + spec.name);
}

// --supervise runs where no sweep of this machine holds the device (a Slurm task on its node),
// so it takes the locks of the devices its run uses (sweep/device_lock.h) as `orch sweep` does,
// and holds them to the end: a sweep started on the node outside Slurm, or a task of another
// job sharing the node, never measures on the same device at once. It waits for a held device,
// saying for whom in the task's log. A signal while it waits (Slurm's time limit, preemption)
// ends it with exit 3 and nothing run, and the task's script records the run interrupted. A
// lock folder or file refused is the run's failure, with the reason in its document, so that
// it reaches the database and not only the task's log.
std::optional<sweep::DeviceLocks> lock_supervised_devices(const RunSpec& spec, const ExecArgs& a,
                                                          int& exit_code) {
  const std::vector<sweep::LockedDevice> devices = devices_of_runs({spec});
  StopSignals stop;
  try {
    auto locks = sweep::DeviceLocks::acquire(devices, supervise_holder(spec), /*wait=*/true,
                                             std::cout, stop.flag());
    if (!locks) {
      std::cout << "stopped while waiting for a device; nothing ran" << std::endl;
      exit_code = kExitStopped;
    }
    return locks;
  } catch (const std::runtime_error& e) {  // a lock folder or file refused
    write_outcome(spec, "failed", std::string("orch exec --supervise: ") + e.what(), a.out);
    exit_code = kExitBadInput;
    return std::nullopt;
  }
}

// --probe and --probe-speed: the run cut down to what a batch-size probe asks.
void adjust_for_probe(RunSpec& spec, const ExecArgs& a) {
  if (a.probe) {
    spec.warmup_auto = false;  // a probe's warm-up is its own (below), never `auto`'s
    spec.warmup_steps = 2;     // the first optimizer step allocates its state; the second
    spec.measure_steps = 1;    // step runs with everything allocated
    spec.telemetry.enabled = false;
    spec.profile.steps = 0;  // a probe asks "does it fit", nothing more
  } else if (a.probe_speed) {
    // Measured as the run itself would be, but briefly: three warm-up steps (cuDNN
    // autotuning and allocator growth for the new shape, the optimizer state, one steady
    // step), or the strategy's own eager steps before a capture and the capture step, so the
    // timed steps replay a graph when the run would. The runner adds steps the fp16 loss
    // scaler skipped, so the optimizer's first real step is never timed.
    spec.warmup_steps = std::max<std::int64_t>(3, stream_warmup_floor(spec.stream));
    spec.warmup_auto = false;
    spec.measure_steps =
        sweep::probe_measure_steps(spec.batch_size.value_or(0), spec.measure_steps);
    spec.telemetry.enabled = false;
    spec.profile.steps = 0;
  }
}

// Writes the run's document (marked as a probe's where it was one) and says how it ended.
void finish_run(const RunSpec& spec, ResultDocument doc, const ExecArgs& a) {
  if (a.batch_size > 0) doc.batch_size = a.batch_size;
  if (a.probe || a.probe_speed) doc.probe = true;
  write_atomically(a.out, doc);
  std::cerr << "orch exec: " << terminal_text(spec.name) << " (repeat " << spec.repeat
            << "): " << status_text(doc) << "\n";
}

// A script workload: the program reads its batch and steps from the configuration, so exec's
// adjustments go there too, and no profiler or CUDA setting of exec's applies to it.
void run_script(RunSpec spec, const ExecArgs& a) {
  nlohmann::json config = spec.config.json();
  if (spec.batch_size) config["batch_size"] = *spec.batch_size;
  config["steps"] = {{"warmup", spec.warmup_steps}, {"measure", spec.measure_steps}};
  config["telemetry"]["enabled"] = spec.telemetry.enabled;
  spec.config = config;
  finish_run(spec, run_script_document(spec, a.out), a);
}

// Where a profiled run of orch's trainer writes its trace ("" when it writes none).
std::string trace_path_of(const RunSpec& spec, const ExecArgs& a) {
  if (spec.workload.is_script() || !spec.profile.enabled()) return {};
  return a.trace.empty() ? std::filesystem::path(a.out).replace_extension(".trace.json").string()
                         : a.trace;
}

// The files a run writes beside its result, checked before anything runs, as --out is: found
// only when written, a link or a special file there failed the run after its set-up (and exec
// still exited 0), and a mistyped --trace would have replaced the file it named.
void check_side_outputs(const RunSpec& spec, const ExecArgs& a, const GlobalOptions& g) {
  if (spec.workload.is_script()) {
    const std::string refused = script_spec_refusal(script_spec_path(a.out));
    if (!refused.empty()) throw bad_input("orch exec: " + refused);
  }
  if (const std::string trace = trace_path_of(spec, a); !trace.empty()) {
    check_output_target(trace, g.db, OutputKind::kTrace);
  }
}

// orch's trainer, in this process, with the plugins loaded here.
void run_trainer(const RunSpec& spec, const ExecArgs& a, const GlobalOptions& g) {
  RunOutputs outputs;
  outputs.trace_path = trace_path_of(spec, a);
  // Before anything here uses CUDA: the driver reads it when the context is made.
  apply_cuda_connections(spec);
  PluginRegistry registry;  // nothing of the run outlives its plugins: unloaded after the write
  load_registry(registry, g, /*warn=*/false);
  finish_run(spec, run_document(spec, registry, outputs), a);
}

int run_exec(const ExecArgs& a, const GlobalOptions& g) {
  if (a.parent_pid > 0 && !process::die_with_parent(static_cast<pid_t>(a.parent_pid))) {
    throw CommandFailure(kExitRunFailed, "orch exec: the sweep that started this run is gone");
  }
  if (a.worker) return run_exec_worker(g);
  if (a.spec.empty() || a.out.empty()) {
    throw bad_input("orch exec: --spec and --out are required (or --worker)");
  }
  // Before anything runs: a --out that is the database, a link or a file of another kind costs
  // nothing. Only a new file, an empty one or an earlier result document is replaced.
  check_output_target(a.out, g.db, OutputKind::kResultDocument);
  RunSpec spec = read_spec(a.spec);
  if (!a.write_outcome.empty()) {
    record_outcome(spec, a);
  } else if (a.supervise) {
    int exit_code = kExitOk;
    const std::optional<sweep::DeviceLocks> devices = lock_supervised_devices(spec, a, exit_code);
    if (!devices) return exit_code;
    // The child `orch exec` sets cuda_connections for itself.
    const ResultDocument doc = result_from_json(supervise(spec, g, a));
    write_atomically(a.out, doc);
    std::cerr << "orch exec: " << terminal_text(spec.name) << " (repeat " << spec.repeat
              << "): " << status_text(doc) << " (supervised)\n";
  } else {
    if (a.batch_size > 0) spec.batch_size = a.batch_size;
    adjust_for_probe(spec, a);
    // A sweep's run (--parent-pid) writes in its own run folder, where a file planted meanwhile
    // is the surroundings' fault: the run records it and the sweep stops (exit 4).
    if (a.parent_pid <= 0) check_side_outputs(spec, a, g);
    if (spec.workload.is_script()) {
      run_script(spec, a);
    } else {
      run_trainer(spec, a, g);
    }
  }
  return kExitOk;
}

}  // namespace

void add_exec_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "exec",
      "execute one run specification (JSON) in this process and write its result "
      "document; `orch sweep` runs each run this way in a child process");
  auto a = std::make_shared<ExecArgs>();
  cmd->add_option("--spec", a->spec,
                  "run specification (JSON), as written by `orch sweep` (required without "
                  "--worker)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", a->out,
                  "where to write the result document (JSON; required without "
                  "--worker)");
  cmd->add_flag("--worker", a->worker,
                "a warm worker (`isolation: worker`): load the plugins once, then run one "
                "request a line from stdin and answer each on stdout, until stdin closes");
  cmd->add_option("--batch-size", a->batch_size,
                  "the batch to use when the specification says `auto`")
      ->check(positive_number());
  cmd->add_option("--trace", a->trace,
                  "where a profiled run (profile.steps > 0) writes its Chrome trace (default: "
                  "RESULT with the extension .trace.json)");
  cmd->add_flag("--probe", a->probe,
                "a batch-size probe: 2 warm-up steps and 1 measured step, no telemetry");
  cmd->add_flag("--probe-speed", a->probe_speed,
                "a batch-size probe that measures throughput (batch_size: auto): the stream "
                "strategy's own warm-up and capture, then up to 10 timed steps, no telemetry");
  cmd->add_option("--parent-pid", a->parent_pid,
                  "die with this process (the sweep): a killed sweep leaves no run behind "
                  "holding its GPU");
  cmd->add_option("--write-outcome", a->write_outcome,
                  "do not run: write a result document with this status for the specification "
                  "(what a Slurm task records when it is stopped or its run crashed)")
      ->check(CLI::IsMember({"interrupted", "failed"}));
  cmd->add_option("--reason", a->reason, "the error text of --write-outcome's document");
  cmd->add_flag("--supervise", a->supervise,
                "run it as `orch sweep` does, in a child process: timeout, a document for a "
                "crash, batch_size: auto searched, the devices it uses locked for its whole "
                "length, waiting for another orch that holds one (what a Slurm task runs)");
  cmd->add_option("--grace", a->grace_s, "with --supervise: seconds between SIGTERM and SIGKILL")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->add_option("--batch-headroom", a->batch_headroom,
                  "with --supervise: batch_size: auto probes no batch whose peak memory would "
                  "pass this share of the device's memory")
      ->capture_default_str()
      ->check(number_between(0.05, 1.0, "FLOAT"));
  cmd->add_option("--work-dir", a->work_dir,
                  "with --supervise: where the child's spec, result and logs go (default: "
                  "RESULT.work)");
  cmd->callback([&g, &exit_code, a] { exit_code = run_exec(*a, g); });
}

}  // namespace orch::cli
