// Choosing the sweep to show.
#include "report/sweep_choice.h"

#include <fmt/format.h>

#include <filesystem>

#include "report/input_error.h"
#include "text/terminal_text.h"

namespace orch {
namespace {

std::string names_of(const std::vector<storage::SweepInfo>& sweeps) {
  std::string out;
  for (const auto& s : sweeps) out += (out.empty() ? "" : ", ") + s.name;
  return out.empty() ? "none" : out;
}

}  // namespace

std::unique_ptr<storage::Store> open_existing_store(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw InputError("no database at " + path + " (run an experiment first, or pass --db)");
  }
  auto store = std::make_unique<storage::Store>(path, storage::Store::ReadOnly{});
  if (store->schema_version() < storage::kSchemaVersion) {
    // An older orch database: migrated on open, as by every command that writes.
    store.reset();
    return std::make_unique<storage::Store>(path);
  }
  return store;
}

storage::SweepInfo choose_sweep(const storage::Store& store, const std::string& sweep_name,
                                const std::string& experiment) {
  const auto all = store.sweeps();  // the latest first
  if (all.empty()) throw InputError("the database has no sweeps yet (run an experiment first)");
  if (!sweep_name.empty()) {
    for (const auto& s : all) {
      if (s.name != sweep_name) continue;
      if (!experiment.empty() && s.experiment != experiment) {
        throw InputError(fmt::format("sweep '{}' is of experiment '{}', not '{}'", s.name,
                                     s.experiment, experiment));
      }
      return s;
    }
    throw InputError(fmt::format("no sweep named '{}'; sweeps: {}", sweep_name, names_of(all)));
  }
  if (!experiment.empty()) {
    for (const auto& s : all) {
      if (s.experiment == experiment) return s;
    }
    std::string experiments;
    for (const auto& s : all) experiments += (experiments.empty() ? "" : ", ") + s.experiment;
    throw InputError(
        fmt::format("no sweep of experiment '{}'; experiments: {}", experiment, experiments));
  }
  return all.front();
}

std::string describe_sweep(const storage::SweepInfo& s) {
  std::string out =
      fmt::format("sweep {} (experiment {}", terminal_text(s.name), terminal_text(s.experiment));
  if (!s.experiment_file.empty()) out += ", " + terminal_text(s.experiment_file);
  if (s.last_run_at.empty()) return out + "), created " + s.created_at + ", no run yet";
  return out + "), last run started " + s.last_run_at;
}

}  // namespace orch
