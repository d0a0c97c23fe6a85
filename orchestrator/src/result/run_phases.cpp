#include "result/run_phases.h"

#include <algorithm>

#include "result/json_fields.h"

namespace orch {

RunPhases& RunPhases::operator+=(const RunPhases& o) {
  startup_s += o.startup_s;
  setup_s += o.setup_s;
  warmup_s += o.warmup_s;
  measure_s += o.measure_s;
  after_s += o.after_s;
  teardown_s += o.teardown_s;
  process_s += o.process_s;
  batch_search_s += o.batch_search_s;
  return *this;
}

std::vector<PhaseShare> phase_shares(const RunPhases& p, double unmeasured_s, double slot_s) {
  if (!(slot_s > 0)) return {};
  std::vector<PhaseShare> named = {
      {"warm-up", p.warmup_s, 0},      {"start-up", p.startup_s, 0},
      {"set-up", p.setup_s, 0},        {"after the steps", p.after_s, 0},
      {"exit", p.teardown_s, 0},       {"batch search", p.batch_search_s, 0},
      {"failed runs", unmeasured_s, 0}};
  std::stable_sort(named.begin(), named.end(),
                   [](const PhaseShare& a, const PhaseShare& b) { return a.seconds > b.seconds; });
  double accounted = p.measure_s;
  std::vector<PhaseShare> out{{"measured", p.measure_s, 0}};
  for (const PhaseShare& s : named) {
    accounted += s.seconds;
    out.push_back(s);
  }
  out.push_back({"between runs", std::max(0.0, slot_s - accounted), 0});
  for (PhaseShare& s : out) s.share = s.seconds / slot_s;
  return out;
}

std::optional<RunPhases> run_phases(const nlohmann::json& metrics) {
  RunPhases p;
  bool any = false;
  auto take = [&](const char* key, double& into) {
    if (auto v = json_number(metrics, key); v && *v >= 0) {
      into = *v;
      any = true;
    }
  };
  take(phase_key::kStartup, p.startup_s);
  take(phase_key::kSetup, p.setup_s);
  take(phase_key::kWarmup, p.warmup_s);
  take(phase_key::kMeasure, p.measure_s);
  take(phase_key::kAfter, p.after_s);
  take(phase_key::kTeardown, p.teardown_s);
  take(phase_key::kProcess, p.process_s);
  take(phase_key::kBatchSearch, p.batch_search_s);
  if (!any) return std::nullopt;
  return p;
}

void add_process_phases(nlohmann::json& metrics, double process_s) {
  if (!metrics.is_object()) return;
  metrics[phase_key::kProcess] = process_s;
  const auto inside = run_phases(metrics);
  // Only a run that measured its own phases has a teardown to tell apart.
  if (inside && inside->measure_s > 0) {
    metrics[phase_key::kTeardown] = std::max(0.0, process_s - inside->inside_s());
  }
}

}  // namespace orch
