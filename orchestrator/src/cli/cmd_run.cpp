// `orch run FILE [key=value ...]`: plan the experiment, run each configuration in turn in this
// process, record every result in the database, print the ranking.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/plugin_loading.h"
#include "plan/plan_error.h"
#include "plan/planner.h"
#include "report/rank_table.h"
#include "runner/runner.h"
#include "storage/store.h"

namespace orch::cli {
namespace {

std::string summary(const nlohmann::json& doc) {
  if (doc.value("status", "") != "ok") {
    return fmt::format("{}: {}", doc.value("status", "?"), doc.value("error", ""));
  }
  const auto& m = doc["metrics"];
  return fmt::format("{:.1f} img/s, step {:.2f} ms (p90 {:.2f}), loss {:.3f} -> {:.3f}, on {}",
                     m["images_per_s"].get<double>(), m["step_ms_mean"].get<double>(),
                     m["step_ms_p90"].get<double>(), m["loss_first"].get<double>(),
                     m["loss_last"].get<double>(), doc.value("device", "?"));
}

}  // namespace

void add_run_command(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "run", "run every configuration of an experiment in this process and record the results");
  struct Args {
    std::string file;
    std::vector<std::string> overrides;
    std::size_t max_runs = 10000;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("file", args->file, "experiment YAML")->required();
  cmd->add_option("overrides", args->overrides, "key=value overrides (dotted keys, YAML values)");
  cmd->add_option("--max-runs", args->max_runs, "refuse plans with more runs than this")
      ->capture_default_str();
  cmd->callback([&g, &exit_code, args] {
    PluginRegistry registry;
    load_registry(registry, g);
    Plan plan;
    try {
      plan = make_plan(args->file, registry, {args->overrides, args->max_runs});
    } catch (const PlanError& e) {
      // Bad input: nothing runs and no database is created.
      std::cerr << e.what() << "\n";
      exit_code = kExitBadInput;
      return;
    }
    storage::Store store(g.db);
    std::cout << plan.name << (plan.description.empty() ? "" : ": " + plan.description) << "\n";
    int failed = 0;
    const std::size_t total = plan.runs.size();
    for (std::size_t i = 0; i < total; ++i) {
      const RunSpec& spec = plan.runs[i];
      std::cout << fmt::format("[{}/{}] {} (repeat {}) ... ", i + 1, total, spec.name,
                               spec.repeat)
                << std::flush;
      const nlohmann::json doc = run_one(spec, registry);
      store.record(doc);
      if (doc.value("status", "") != "ok") ++failed;
      std::cout << summary(doc) << std::endl;
    }
    std::cout << "\nRanking for " << plan.name << " (" << g.db << "):\n"
              << format_ranking(store.ranking(plan.name));
    if (failed > 0) {
      std::cerr << "orch: " << failed << " of " << total << " runs did not succeed\n";
      exit_code = kExitRunFailed;
    }
  });
}

}  // namespace orch::cli
