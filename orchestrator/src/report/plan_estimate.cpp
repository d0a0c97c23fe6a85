// The plan's estimate (see plan_estimate.h).
#include "report/plan_estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "result/json_dump.h"
#include "text/terminal_text.h"

namespace orch {
namespace {

using nlohmann::json;

// What makes two runs "similar" for timing: the same model (or the same script command), batch
// and device setting. Precision, layout and the like change the time by a factor of a few at
// most, where another model or batch changes it by more.
std::string similarity_key(const json& config) {
  auto part = [&](const char* key) {
    return config.contains(key) ? json_dump(config.at(key)) : std::string("-");
  };
  std::string what = config.contains("workload") && config.at("workload").is_object()
                         ? config.at("workload").value("command", "")
                         : part("model");
  return what + "|" + part("batch_size") + "|" + part("device");
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

}  // namespace

PlanEstimate estimate_plan(const Plan& plan, const storage::Store* store) {
  std::map<std::string, std::vector<double>> by_hash, by_kind;
  std::vector<double> all;
  if (store) {
    // Successful runs only (Store::successful_run_durations says why).
    for (const storage::RunDuration& run : store->successful_run_durations()) {
      by_hash[run.config_hash].push_back(run.duration_s);
      if (run.config.is_object()) by_kind[similarity_key(run.config)].push_back(run.duration_s);
      all.push_back(run.duration_s);
    }
  }
  PlanEstimate e;
  if (!all.empty()) {
    std::nth_element(all.begin(), all.begin() + static_cast<long>(all.size() / 2), all.end());
    e.median_s = all[all.size() / 2];
  }
  std::map<std::string, double> per_run;  // configuration hash -> seconds a run
  for (const RunSpec& run : plan.runs) {
    ++e.runs;
    auto [it, fresh] = per_run.emplace(run.hash, 0.0);
    if (fresh) {
      if (auto own = by_hash.find(run.hash); own != by_hash.end()) {
        it->second = mean(own->second);
        ++e.own;
      } else if (auto kind = by_kind.find(similarity_key(run.config.json()));
                 kind != by_kind.end()) {
        it->second = mean(kind->second);
        ++e.similar;
      } else if (!all.empty()) {
        it->second = e.median_s;
        ++e.median;
      } else {
        it->second = kDefaultRunSeconds;
        ++e.fallback;
      }
    }
    e.seconds += it->second;
  }
  return e;
}

std::string duration_text(double s) {
  if (s < 90) return fmt::format("{:.0f} s", s);
  if (s < 90 * 60) return fmt::format("{:.0f} min", s / 60);
  if (s < 48 * 3600) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

std::string format_plan_estimate(const PlanEstimate& e, const std::string& db) {
  std::vector<std::string> parts;
  auto configs = [](std::size_t n) {
    return fmt::format("{} configuration{}", n, n == 1 ? "" : "s");
  };
  const std::string where = terminal_text(db);
  if (e.own) parts.push_back(configs(e.own) + " from their own runs in " + where);
  if (e.similar) parts.push_back(configs(e.similar) + " from runs of the same model and batch");
  if (e.median) {
    parts.push_back(configs(e.median) + " at the database's median run (" +
                    duration_text(e.median_s) + ")");
  }
  if (e.fallback) {
    parts.push_back(configs(e.fallback) + " at a guessed " + duration_text(kDefaultRunSeconds) +
                    " a run, with no successful run in " + where + " to go by");
  }
  std::string how;
  for (const std::string& p : parts) how += (how.empty() ? "" : ", ") + p;
  std::string out = fmt::format("estimate: {} run{}, about {} ({})\n", e.runs,
                                e.runs == 1 ? "" : "s", duration_text(e.seconds), how);
  if (e.seconds > kLongPlanSeconds) {
    out += fmt::format(
        "warning: this plan would run for about {}, more than {}: narrow the matrix or the "
        "repeats, or split it over nights (`orch sweep --until 07:00` stops in time, and the "
        "same command resumes)\n",
        duration_text(e.seconds), duration_text(kLongPlanSeconds));
  }
  return out;
}

}  // namespace orch
