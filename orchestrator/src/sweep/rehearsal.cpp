#include "sweep/rehearsal.h"

#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <thread>

#include "plan/run_spec_json.h"
#include "result/result_document.h"

namespace orch::sweep {

RunSpec rehearsal_spec(const RunSpec& run, std::int64_t auto_batch) {
  RunSpec r = run;
  nlohmann::json config = run.config.json();
  config["steps"] = {{"warmup", 0}, {"measure", 1}};
  if (config.contains("profile")) config["profile"]["steps"] = 0;  // none in a script run
  config["telemetry"]["enabled"] = false;
  if (config["batch_size"].is_string()) config["batch_size"] = auto_batch;
  set_run_config(r, config);
  return r;
}

namespace {

struct InFlight {
  std::string slot, name;
  std::unique_ptr<RunHandle> handle;
};

std::string indented(const std::string& text, const std::string& prefix) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

Rehearsal rehearse(const std::vector<RunSpec>& runs, const std::vector<std::string>& gpus,
                   Launcher& launcher, std::ostream& progress, const std::atomic<bool>& stop,
                   std::int64_t auto_batch) {
  Rehearsal out;
  std::deque<const RunSpec*> pending;
  std::set<std::string> hashes;
  for (const RunSpec& r : runs) {
    if (hashes.insert(r.hash).second) pending.push_back(&r);
  }
  std::deque<std::string> free_slots(gpus.begin(), gpus.end());
  if (free_slots.empty()) free_slots.push_back("");
  std::vector<InFlight> running;
  bool interrupting = false;
  while (!pending.empty() || !running.empty()) {
    if (stop.load() && !interrupting) {
      interrupting = true;
      out.interrupted = true;
      pending.clear();
      for (InFlight& f : running) f.handle->interrupt();
    }
    while (!pending.empty() && !free_slots.empty()) {
      const RunSpec spec = rehearsal_spec(*pending.front(), auto_batch);
      pending.pop_front();
      InFlight f{free_slots.front(), spec.name, nullptr};
      free_slots.pop_front();
      f.handle = launcher.launch(spec, f.slot);
      ++out.configurations;
      running.push_back(std::move(f));
    }
    bool any = false;
    for (auto it = running.begin(); it != running.end();) {
      std::optional<nlohmann::json> j = it->handle->poll();
      if (!j) {
        ++it;
        continue;
      }
      any = true;
      const ResultDocument doc = result_from_json(*j);
      const std::string status = doc.status ? to_string(*doc.status) : "failed";
      progress << fmt::format("  {:<8} {}", status, it->name) << std::endl;
      if (!doc.status || *doc.status != RunStatus::ok) {
        out.failures.push_back({it->name, status, doc.error.value_or(""),
                                doc.outcome ? doc.outcome->stderr_tail : std::string()});
      }
      free_slots.push_back(it->slot);
      it = running.erase(it);
    }
    if (!any && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return out;
}

std::string format_rehearsal(const Rehearsal& r) {
  std::string out;
  for (const RehearsalFailure& f : r.failures) {
    out += fmt::format("\n{} ({}): {}\n", f.name, f.status, f.error.empty() ? "no error" : f.error);
    if (!f.stderr_tail.empty()) out += "  its stderr ends:\n" + indented(f.stderr_tail, "    ");
  }
  if (r.interrupted) {
    out += fmt::format("\ncheck stopped by a signal after {} configuration(s); {} failed\n",
                       r.configurations, r.failures.size());
  } else if (r.failures.empty()) {
    out += fmt::format("\ncheck: all {} configuration(s) trained a step\n", r.configurations);
  } else {
    out += fmt::format("\ncheck: {} of {} configuration(s) failed their first step\n",
                       r.failures.size(), r.configurations);
  }
  return out;
}

}  // namespace orch::sweep
