// `orch compare A B`: two configurations (or runs) of a sweep side by side, with the change.
// `orch compare --sweeps A B`: two sweeps (two nights) configuration by configuration.
#include <iostream>

#include "cli/commands.h"
#include "report/compare.h"
#include "report/input_error.h"
#include "report/shown_runs.h"
#include "report/sweep_choice.h"
#include "report/sweep_diff.h"

namespace orch::cli {
namespace {

struct CompareArgs {
  std::string a, b, sweep;
  std::vector<std::string> sweeps;
  int revision = 0;
  std::string fail_on;
};

// --sweeps A B: every configuration of two sweeps, and with --fail-on the gate.
int compare_sweeps(const CompareArgs& a, const GlobalOptions& g) {
  // Before the database is opened: a mistyped condition fails the same way every time.
  const double fail_pct = a.fail_on.empty() ? 0 : parse_fail_on(a.fail_on);
  if (!a.a.empty() || !a.sweep.empty() || a.revision != 0) {
    throw InputError(
        "--sweeps A B compares two whole sweeps; leave out the "
        "configurations, --sweep and --revision");
  }
  auto store = open_existing_store(g.db);
  const auto sa = choose_sweep(*store, a.sweeps[0]);
  const auto sb = choose_sweep(*store, a.sweeps[1]);
  const ShownRuns ra = shown_runs(*store, sa), rb = shown_runs(*store, sb);
  const SweepDiff diff = diff_sweeps(ra.runs, rb.runs);
  std::cout << format_sweep_diff(diff, sa.name, sb.name);
  if (!ra.note.empty()) std::cout << "A: " << ra.note << "\n";
  if (!rb.note.empty()) std::cout << "B: " << rb.note << "\n";
  if (a.fail_on.empty()) return kExitOk;
  const auto slower = slower_than(diff, fail_pct);
  std::cout << "\n" << format_gate(diff, slower, fail_pct);
  // 1, as for a run that failed: what cron mails about and CI marks red.
  return slower.empty() ? kExitOk : kExitRunFailed;
}

int run_compare(const CompareArgs& a, const GlobalOptions& g) {
  if (!a.fail_on.empty() && a.sweeps.empty()) {
    throw InputError("--fail-on judges two sweeps: use it with --sweeps A B");
  }
  if (!a.sweeps.empty()) return compare_sweeps(a, g);
  if (a.a.empty() || a.b.empty()) {
    throw InputError("compare needs two configurations (A B), or --sweeps A B");
  }
  auto store = open_existing_store(g.db);
  const auto sweep = choose_sweep(*store, a.sweep);
  const ShownRuns shown = shown_runs(*store, sweep, a.revision);
  const Selection before = select_runs(*store, shown.runs, a.a);
  const Selection after = select_runs(*store, shown.runs, a.b);
  std::cout << describe_sweep(sweep) << "\n" << format_comparison(before, after);
  if (!shown.note.empty()) std::cout << shown.note << "\n";
  return kExitOk;
}

}  // namespace

void add_compare_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "compare",
      "before/after table of two configurations: throughput, GPU use, memory, power, step split");
  auto a = std::make_shared<CompareArgs>();
  cmd->add_option("A", a->a,
                  "before: a configuration name, run id or config-hash prefix "
                  "(name:, run:, hash: force one reading)");
  cmd->add_option("B", a->b, "after: same forms as A");
  cmd->add_option("--sweep", a->sweep, "the sweep (default: the latest, whose run started last)");
  cmd->add_option("--revision", a->revision, "the sweep's plan revision (default: the latest)");
  cmd->add_option("--sweeps", a->sweeps,
                  "compare two sweeps instead (e.g. two nights): each "
                  "configuration faster, slower or inconclusive, by a "
                  "Welch t-test at 95%")
      ->expected(2);
  cmd->add_option("--fail-on", a->fail_on,
                  "with --sweeps, for cron and CI: exit 1 when any configuration is "
                  "significantly slower in B (slower), or slower by more than PCT percent "
                  "(slower=PCT), listing them")
      ->type_name("slower[=PCT]");
  cmd->callback([&g, &exit_code, a] { exit_code = run_compare(*a, g); });
}

}  // namespace orch::cli
