// Successive halving over the scheduler, with fakes: the cut's rule, the rungs a sweep runs,
// the runs it records `pruned`, and a sweep stopped by its deadline or a signal that a later
// invocation resumes at the rung it reached, from the recorded results.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "sweep/halving.h"
#include "unit/plan_test_catalog.h"

namespace orch::sweep {
namespace {

using json = nlohmann::json;
using Key = std::pair<std::string, int>;
using namespace std::chrono_literals;

class Clock0 final : public SweepClock {
 public:
  Clock::time_point now() const override { return t; }
  void sleep_for(std::chrono::milliseconds d) override { t += d; }
  Clock::time_point t = Clock::time_point{} + 1000h;
};

// Runs that take 10 s (a run of rung 0 as long as any: only the counts matter here) and
// measure the throughput scripted for their configuration's name.
class Launcher0 final : public Launcher {
 public:
  explicit Launcher0(Clock0& c) : clock(c) {}
  struct Handle final : RunHandle {
    Launcher0& l;
    RunSpec spec;
    Clock::time_point end;
    bool stopped = false;
    Handle(Launcher0& o, const RunSpec& s) : l(o), spec(s), end(o.clock.now() + 10s) {}
    std::optional<json> poll() override {
      json doc = {{"format", "orch.result"},
                  {"version", 2},
                  {"run", {{"name", spec.name}, {"hash", spec.hash}, {"repeat", spec.repeat}}},
                  {"config", spec.config.json()}};
      if (stopped) {
        doc["status"] = "interrupted";
        return doc;
      }
      if (l.clock.now() < end) return std::nullopt;
      const bool fails = l.failing.count(spec.name) > 0;
      doc["status"] = fails ? "failed" : "ok";
      if (!fails) doc["metrics"] = {{"images_per_s", l.ips.at(spec.name)}};
      return doc;
    }
    void interrupt() override { stopped = true; }
  };
  std::unique_ptr<RunHandle> launch(const RunSpec& spec, const std::string&) override {
    launched.push_back(spec);
    if (on_launch) on_launch(spec);
    return std::make_unique<Handle>(*this, spec);
  }
  Clock0& clock;
  std::map<std::string, double> ips;  // by configuration name
  std::set<std::string> failing;      // names whose runs fail
  std::vector<RunSpec> launched;
  std::function<void(const RunSpec&)> on_launch;
};

// The store, in memory: what prior_runs() reads is what finish() and mark_pruned() wrote.
class Recorder0 final : public Recorder {
 public:
  std::map<Key, PriorRun> runs;
  std::map<Key, int> rung;  // the rung each run was recorded in (-1: a full measurement)
  std::map<Key, PriorRun> prior_runs() override { return runs; }
  std::optional<double> measured_duration_s(const RunSpec&) override { return 10.0; }
  std::int64_t begin(const RunSpec& s, const std::string&) override {
    runs[{s.hash, s.repeat}] = PriorRun{"running", std::nullopt, std::nullopt};
    rung[{s.hash, s.repeat}] =
        s.config.json().contains("search") ? s.config.json()["search"]["rung"].get<int>() : -1;
    return 1;
  }
  void heartbeat(std::int64_t) override {}
  void finish(std::int64_t, const json& doc) override {
    const Key k{doc["run"]["hash"], doc["run"]["repeat"]};
    std::optional<double> v;
    if (doc.contains("metrics")) v = doc["metrics"]["images_per_s"].get<double>();
    runs[k] = PriorRun{doc["status"], 10.0, v};
  }
  void mark_stale(const RunSpec&, const std::string&) override {}
  void mark_pruned(const RunSpec& s) override {
    auto& r = runs.at({s.hash, s.repeat});
    if (r.status == "ok") r.status = "pruned";
  }
};

// Nine configurations b1..b9 (batch sizes), 2 repeats in full: rungs 9 -> 3 with eta 3.
Plan nine() {
  return test::plan_text(R"(name: h
base: {device: cpu, repeat: 2, steps: {warmup: 1, measure: 30}}
matrix:
  batch_size: [1, 2, 3, 4, 5, 6, 7, 8, 9]
search: {method: halving}
)");
}

struct Night {
  Clock0 clock;
  Launcher0 launcher{clock};
  Recorder0 recorder;
  SweepOptions options;
  std::ostringstream out;
  std::atomic<bool> stop{false};
  explicit Night(const Plan& p) {
    for (const RunSpec& r : p.runs) launcher.ips[r.name] = 100.0 * r.batch_size.value_or(1);
  }
  SweepSummary run(const Plan& p) {
    return run_halving(p, options, launcher, recorder, clock, out, stop);
  }
  // The names launched, with the measured steps of their runs.
  std::multiset<std::pair<std::string, std::int64_t>> launched() const {
    std::multiset<std::pair<std::string, std::int64_t>> out_;
    for (const RunSpec& s : launcher.launched) out_.insert({s.name, s.measure_steps});
    return out_;
  }
  // Configuration names whose runs in rung k (-1: full) have `status`.
  std::set<std::string> with(const std::string& status, int k) const {
    std::set<std::string> names;
    for (const RunSpec& s : launcher.launched) {
      const Key key{s.hash, s.repeat};
      if (recorder.rung.at(key) == k && recorder.runs.at(key).status == status)
        names.insert(s.name);
    }
    return names;
  }
};

RungEntrant entrant(const std::string& name, std::vector<double> ips, bool measured = true) {
  return RungEntrant{name, name, std::move(ips), measured};
}

TEST_CASE("halving cut: the best by mean, ties with the last kept stay, failures go",
          "[sweep][halving]") {
  RungCut c = cut_rung({entrant("a", {10}), entrant("b", {30}), entrant("c", {20}),
                        entrant("d", {}, false), entrant("e", {5})},
                       2);
  CHECK(c.kept == std::vector<std::string>{"b", "c"});
  CHECK(c.dropped == std::vector<std::string>{"a", "e"});
  CHECK(c.failed == std::vector<std::string>{"d"});
  // A single run ties only on an equal mean.
  c = cut_rung({entrant("a", {20}), entrant("b", {30}), entrant("c", {20}), entrant("d", {19.9})},
               2);
  CHECK(c.kept == std::vector<std::string>{"a", "b", "c"});
  CHECK(c.dropped == std::vector<std::string>{"d"});
  // With repeats, an interval that overlaps the last kept one's is a tie; one that does not is
  // dropped.
  c = cut_rung({entrant("a", {100, 102}), entrant("b", {90, 110}), entrant("c", {50, 52})}, 1);
  CHECK(c.kept == std::vector<std::string>{"a", "b"});
  CHECK(c.dropped == std::vector<std::string>{"c"});
  // At least one is kept; nothing measured keeps nothing.
  CHECK(cut_rung({entrant("a", {1}), entrant("b", {2})}, 0).kept == std::vector<std::string>{"b"});
  CHECK(cut_rung({entrant("a", {}, false)}, 1).kept.empty());
}

TEST_CASE("halving sweep: rung 0 measures all briefly, the best third in full, the rest pruned",
          "[sweep][halving]") {
  const Plan p = nine();
  Night n(p);
  const SweepSummary s = n.run(p);
  INFO(n.out.str());
  CHECK(s.exit_code() == 0);
  // 9 runs of 10 steps (30 / 3), then the three fastest (b7, b8, b9) twice over 30 steps.
  CHECK(n.launcher.launched.size() == 9 + 6);
  CHECK(n.launched().count({"b1", 10}) == 1);
  CHECK(n.launched().count({"b9", 30}) == 2);
  CHECK(n.launched().count({"b6", 30}) == 0);
  CHECK(n.with("pruned", 0) == std::set<std::string>{"b1", "b2", "b3", "b4", "b5", "b6"});
  CHECK(n.with("ok", 0) == std::set<std::string>{"b7", "b8", "b9"});
  CHECK(n.with("ok", -1) == std::set<std::string>{"b7", "b8", "b9"});
  CHECK_THAT(n.out.str(), Catch::Contains("rung 0 kept 3 of 9: b7, b8, b9"));

  // Run again: everything is recorded; nothing runs, the same cut is read back.
  Night again(p);
  again.recorder = n.recorder;
  CHECK(again.run(p).exit_code() == 0);
  CHECK(again.launcher.launched.empty());
  CHECK_THAT(again.out.str(), Catch::Contains("rung 0 kept 3 of 9: b7, b8, b9"));
}

TEST_CASE("halving sweep: a failed run is out; with --retry-failed only while its rung is open",
          "[sweep][halving]") {
  const Plan p = nine();
  Night n(p);
  n.launcher.failing.insert("b9");
  CHECK(n.run(p).exit_code() == 1);
  CHECK(n.with("failed", 0) == std::set<std::string>{"b9"});
  CHECK(n.with("ok", -1) == std::set<std::string>{"b6", "b7", "b8"});
  // The cut is made and b6 ran on: b9 is not run again, and the cut stays.
  Night retry(p);
  retry.recorder = n.recorder;
  retry.options.retry_failed = true;
  retry.run(p);
  CHECK(retry.launcher.launched.empty());
}

TEST_CASE("halving sweep: stopped in a rung, it is not cut; the next invocation goes on there",
          "[sweep][halving]") {
  const Plan p = nine();
  Night n(p);
  // Room for five of rung 0's runs (10 s each, one slot) before the deadline.
  n.options.deadline = n.clock.now() + 55s;
  const SweepSummary s = n.run(p);
  INFO(n.out.str());
  CHECK(s.exit_code() == 3);
  CHECK(n.launcher.launched.size() == 5);
  CHECK(n.with("pruned", 0).empty());  // no cut of an unfinished rung

  Night later(p);
  later.recorder = n.recorder;
  later.launcher.on_launch = [&](const RunSpec& r) {
    if (r.measure_steps == 30) later.stop = true;  // a signal once the last rung starts
  };
  const SweepSummary t = later.run(p);
  INFO(later.out.str());
  CHECK(t.exit_code() == 3);
  CHECK(t.interrupted);
  // The four runs of rung 0 left, then the first of the last rung (interrupted).
  REQUIRE(later.launcher.launched.size() == 5);
  CHECK(later.launcher.launched[0].name == "b6");
  CHECK(std::count_if(later.recorder.runs.begin(), later.recorder.runs.end(),
                      [](const auto& r) { return r.second.status == "pruned"; }) == 6);

  Night last(p);
  last.recorder = later.recorder;
  CHECK(last.run(p).exit_code() == 0);
  // Only the last rung's runs, all six of them (the interrupted one again).
  CHECK(last.launcher.launched.size() == 6);
  for (const RunSpec& r : last.launcher.launched) CHECK(r.measure_steps == 30);
}

}  // namespace
}  // namespace orch::sweep
