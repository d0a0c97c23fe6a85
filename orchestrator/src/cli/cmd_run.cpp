// `orch run FILE [key=value ...]`: plan the experiment, run each configuration in turn in this
// process, record every result in the database, print the ranking.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/device_locking.h"
#include "cli/plan_arguments.h"
#include "cli/plugin_loading.h"
#include "cli/sweep_session.h"
#include "plan/plan_error.h"
#include "report/rank_table.h"
#include "result/result_document.h"
#include "runner/cuda_connections.h"
#include "runner/runner.h"
#include "runner/script_workload.h"
#include "storage/store.h"
#include "sweep/child_run.h"
#include "sweep/sweep_name.h"
#include "sweep/sweep_paths.h"
#include "text/terminal_text.h"

namespace orch::cli {
namespace {

std::string summary(const ResultDocument& doc) {
  if (!doc.ok()) {
    return fmt::format("{}: {}", doc.status ? to_string(*doc.status) : "?",
                       terminal_text(doc.error.value_or("")));
  }
  // A run that succeeded has every one of these (runner.cpp).
  const CoreMetrics c = doc.core_metrics();
  return fmt::format("{:.1f} img/s, step {:.2f} ms (p90 {:.2f}), loss {:.3f} -> {:.3f}, on {}",
                     c.images_per_s.value_or(0.0), c.step_ms_mean.value_or(0.0),
                     c.step_ms_p90.value_or(0.0), c.loss_first.value_or(0.0),
                     c.loss_last.value_or(0.0), doc.device.value_or("?"));
}

struct RunArgs {
  PlanArguments plan;
  bool no_wait = false;    // a device in use ends the command instead of a wait
  bool replan = false;     // a changed plan becomes the sweep's next revision
  std::string sweep_name;  // empty: the experiment's name
};

// One process for every configuration: cuda_connections can be set once, before the first run
// makes the CUDA context; configurations that differ in it are refused before anything runs or
// is written. Returns only when this process runs with the plan's setting.
void set_cuda_connections(const Plan& plan, const GlobalOptions& g) {
  std::optional<std::int64_t> n;
  try {
    n = common_cuda_connections(plan.runs);
  } catch (const std::invalid_argument& e) {
    // At the axis that varies it, as the planner reports bad input.
    const auto at = plan.axis_marks.find("cuda_connections");
    const std::string allowed = "one value with orch run; any with orch sweep";
    if (at != plan.axis_marks.end())
      throw bad_input(PlanError(at->second, "matrix.cuda_connections", e.what(), allowed).what());
    throw bad_input(plan.file + ": cuda_connections: " + e.what() + " (allowed: " + allowed + ")");
  }
  if (!n) return;
  if (cuda_connections_mismatch(plan.runs.front())) {
    // Planning loaded LibTorch and the plugins into this process; whether something has
    // started CUDA's driver by now is not ours to know, so the same command starts again
    // (execv: same process id and terminal) with the variable set from its start.
    apply_cuda_connections(plan.runs.front());
    std::cerr << "orch run: restarting with " << kCudaConnectionsVariable << "=" << *n << "\n";
    std::vector<std::string> argv = g.argv;
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv("/proc/self/exe", args.data());
    throw CommandFailure(kExitRunFailed,
                         std::string("orch run: cannot restart itself: ") + std::strerror(errno));
  }
  std::cerr << "orch run: " << kCudaConnectionsVariable << "=" << *n << " for every run\n";
}

// Runs `spec` in this process; its files go where `orch sweep` would put them: the run's folder.
ResultDocument run_here(const RunSpec& spec, const std::string& sweep_name,
                        PluginRegistry& registry, const GlobalOptions& g) {
  const std::filesystem::path run_dir =
      std::filesystem::path(sweep::sweep_work_dir(g.db, sweep_name)) / sweep::run_dir_name(spec);
  // A script run's program writes its specification and report in the run's folder.
  if (spec.workload.is_script()) {
    std::filesystem::create_directories(run_dir);
    return run_script_document(spec, (run_dir / "result.json").string());
  }
  RunOutputs outputs;
  if (spec.profile.enabled()) outputs.trace_path = (run_dir / sweep::kTraceFileName).string();
  return run_document(spec, registry, outputs);
}

int run_run(const RunArgs& a, const GlobalOptions& g) {
  PluginRegistry registry;
  const Plan plan = load_and_plan(registry, g, a.plan);
  set_cuda_connections(plan, g);
  if (plan.search.halving()) {
    std::cerr << "orch run: search: halving is for `orch sweep`; `orch run` measures every "
                 "configuration in full, as the grid does\n";
  }
  // The sweep's lock, the devices its runs measure on and the database, as `orch sweep` takes
  // them: never two writers measuring one sweep, never two measurements on one device.
  const std::string name = bad_input_if_invalid("orch run: ", [&] {
    return a.sweep_name.empty() ? plan.name : sweep::expand_sweep_name_now(a.sweep_name);
  });
  const auto session = open_sweep_session(g, "run", name, devices_of_runs(plan.runs), !a.no_wait);
  storage::Store& store = *session->store;
  // One plan per sweep, as `orch sweep` keeps it: the plan is recorded as a revision, so rank,
  // compare and the report show this plan's runs, and a changed file stops here.
  const std::int64_t sweep_id = open_checked_sweep(*session, plan, name, a.replan, "orch run: ");
  std::cout << plan.name << (plan.description.empty() ? "" : ": " + terminal_text(plan.description))
            << "\n";
  int failed = 0;
  const std::size_t total = plan.runs.size();
  for (std::size_t i = 0; i < total; ++i) {
    const RunSpec& spec = plan.runs[i];
    std::cout << fmt::format("[{}/{}] {} (repeat {}) ... ", i + 1, total, terminal_text(spec.name),
                             spec.repeat)
              << std::flush;
    const ResultDocument doc = run_here(spec, name, registry, g);
    store.record(sweep_id, to_json(doc));
    if (!doc.ok()) ++failed;
    std::cout << summary(doc) << std::endl;
  }
  std::cout << "\n" << format_sweep_ranking(store, sweep_id);
  if (failed == 0) return kExitOk;
  std::cerr << "orch: " << failed << " of " << total << " runs did not succeed\n";
  return kExitRunFailed;
}

}  // namespace

void add_run_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "run", "run every configuration of an experiment in this process and record the results");
  auto a = std::make_shared<RunArgs>();
  add_plan_arguments(*cmd, a->plan);
  cmd->add_flag("--no-wait", a->no_wait,
                "when a device is in use by another orch (a sweep, run or check), exit at once "
                "(code 2) naming it, instead of waiting for it");
  cmd->add_option("--sweep", a->sweep_name,
                  "name of the sweep in the database (default: the experiment's name); "
                  "{date} (YYYY-MM-DD) and {time} (HHMM), local time, as for orch sweep");
  cmd->add_flag("--replan", a->replan,
                "the file's plan differs from the one the sweep ran: "
                "record it as the sweep's new plan revision and run it");
  cmd->callback([&g, &exit_code, a] { exit_code = run_run(*a, g); });
}

}  // namespace orch::cli
