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

void add_compare_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "compare",
      "before/after table of two configurations: throughput, GPU use, memory, power, step split");
  struct Options {
    std::string a, b, sweep;
    std::vector<std::string> sweeps;
    int revision = 0;
    std::string fail_on;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("A", o->a,
                  "before: a configuration name, run id or config-hash prefix "
                  "(name:, run:, hash: force one reading)");
  cmd->add_option("B", o->b, "after: same forms as A");
  cmd->add_option("--sweep", o->sweep, "the sweep (default: the latest, whose run started last)");
  cmd->add_option("--revision", o->revision, "the sweep's plan revision (default: the latest)");
  cmd->add_option("--sweeps", o->sweeps,
                  "compare two sweeps instead (e.g. two nights): each "
                  "configuration faster, slower or inconclusive, by a "
                  "Welch t-test at 95%")
      ->expected(2);
  cmd->add_option("--fail-on", o->fail_on,
                  "with --sweeps, for cron and CI: exit 1 when any configuration is "
                  "significantly slower in B (slower), or slower by more than PCT percent "
                  "(slower=PCT), listing them")
      ->type_name("slower[=PCT]");
  cmd->callback([&g, &exit_code, o] {
    try {
      if (!o->fail_on.empty() && o->sweeps.empty()) {
        throw InputError("--fail-on judges two sweeps: use it with --sweeps A B");
      }
      if (!o->sweeps.empty()) {
        // Before the database is opened: a mistyped condition fails the same way every time.
        const double fail_pct = o->fail_on.empty() ? 0 : parse_fail_on(o->fail_on);
        if (!o->a.empty() || !o->sweep.empty() || o->revision != 0) {
          throw InputError(
              "--sweeps A B compares two whole sweeps; leave out the "
              "configurations, --sweep and --revision");
        }
        auto store = open_existing_store(g.db);
        const auto a = choose_sweep(*store, o->sweeps[0]);
        const auto b = choose_sweep(*store, o->sweeps[1]);
        const ShownRuns ra = shown_runs(*store, a), rb = shown_runs(*store, b);
        const SweepDiff diff = diff_sweeps(ra.runs, rb.runs);
        std::cout << format_sweep_diff(diff, a.name, b.name);
        if (!ra.note.empty()) std::cout << "A: " << ra.note << "\n";
        if (!rb.note.empty()) std::cout << "B: " << rb.note << "\n";
        if (!o->fail_on.empty()) {
          const auto slower = slower_than(diff, fail_pct);
          std::cout << "\n" << format_gate(diff, slower, fail_pct);
          // 1, as for a run that failed: what cron mails about and CI marks red.
          if (!slower.empty()) exit_code = kExitRunFailed;
        }
        return;
      }
      if (o->a.empty() || o->b.empty()) {
        throw InputError("compare needs two configurations (A B), or --sweeps A B");
      }
      auto store = open_existing_store(g.db);
      const auto sweep = choose_sweep(*store, o->sweep);
      const ShownRuns shown = shown_runs(*store, sweep, o->revision);
      const Selection a = select_runs(*store, shown.runs, o->a);
      const Selection b = select_runs(*store, shown.runs, o->b);
      std::cout << describe_sweep(sweep) << "\n" << format_comparison(a, b);
      if (!shown.note.empty()) std::cout << shown.note << "\n";
    } catch (const InputError& e) {
      std::cerr << "orch: " << e.what() << "\n";
      exit_code = kExitBadInput;
    }
  });
}

}  // namespace orch::cli
