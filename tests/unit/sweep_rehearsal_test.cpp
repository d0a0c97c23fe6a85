// --check's rehearsal (sweep/rehearsal.h) with a fake launcher: one step per distinct
// configuration, one child per slot at a time, every failure kept with its error and stderr.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "result/result_document.h"
#include "sweep/rehearsal.h"
#include "unit/plan_test_catalog.h"

namespace orch::sweep {
namespace {

using nlohmann::json;

struct Fake;

// Finishes on its third poll: failed where the launcher says so, else ok.
class FakeHandle final : public RunHandle {
 public:
  FakeHandle(Fake& f, RunSpec spec, std::string gpu);
  ~FakeHandle() override;
  std::optional<json> poll() override;
  void interrupt() override {}

 private:
  Fake& f_;
  RunSpec spec_;
  std::string gpu_;
  int polls_ = 0;
};

struct Fake final : Launcher {
  std::unique_ptr<RunHandle> launch(const RunSpec& spec, const std::string& gpu) override {
    started.push_back(spec);
    slots.push_back(gpu);
    if (++in_flight[gpu] > 1) shared_a_slot = true;
    return std::make_unique<FakeHandle>(*this, spec, gpu);
  }
  std::map<std::string, std::string> failing;  // name -> error
  std::vector<RunSpec> started;
  std::vector<std::string> slots;  // where each was started
  std::map<std::string, int> in_flight;
  bool shared_a_slot = false;
};

FakeHandle::FakeHandle(Fake& f, RunSpec spec, std::string gpu)
    : f_(f), spec_(std::move(spec)), gpu_(std::move(gpu)) {}
FakeHandle::~FakeHandle() = default;

std::optional<json> FakeHandle::poll() {
  if (++polls_ < 3) return std::nullopt;
  --f_.in_flight[gpu_];
  ResultDocument doc;
  auto it = f_.failing.find(spec_.name);
  doc.status = it == f_.failing.end() ? RunStatus::ok : RunStatus::failed;
  if (it != f_.failing.end()) {
    doc.error = it->second;
    ProcessOutcome o;
    o.exit_code = 1;
    o.stderr_tail = "line one\nline two\n";
    doc.outcome = o;
  }
  return to_json(doc);
}

Plan three_configurations() {
  return test::plan_text(R"(name: rehearsal
base:
  batch_size: auto
  repeat: 2
  steps: {warmup: 10, measure: 50}
  profile: {steps: 5}
matrix:
  memory_format: [contiguous, channels_last]
  precision: [fp32, tf32]
  exclude:
    - {memory_format: channels_last, precision: tf32}
)");
}

TEST_CASE("rehearsal: one step of each configuration, every failure listed", "[sweep]") {
  const Plan plan = three_configurations();
  REQUIRE(plan.runs.size() == 6);  // 3 configurations x 2 repeats
  Fake launcher;
  launcher.failing[plan.runs[2].name] = "the model threw at its first step";
  std::ostringstream progress;
  std::atomic<bool> stop{false};
  const Rehearsal r = rehearse(plan.runs, {"0", "1"}, launcher, progress, stop, 64);
  CHECK(r.configurations == 3);  // repeats are not rehearsed twice
  REQUIRE(launcher.started.size() == 3);
  CHECK_FALSE(launcher.shared_a_slot);  // one child per GPU at a time
  for (const RunSpec& s : launcher.started) {
    CHECK(s.warmup_steps == 0);
    CHECK(s.measure_steps == 1);
    CHECK_FALSE(s.profile.enabled());
    CHECK_FALSE(s.telemetry.enabled);
    CHECK(s.batch_size == 64);  // auto: the search's first probe
    CHECK(s.config.json().at("batch_size") == 64);
  }
  REQUIRE(r.failures.size() == 1);
  CHECK(r.failures[0].name == plan.runs[2].name);
  CHECK(r.failures[0].status == "failed");
  CHECK(r.failures[0].error == "the model threw at its first step");
  const std::string report = format_rehearsal(r);
  CHECK_THAT(report,
             Catch::Contains(plan.runs[2].name + " (failed): the model threw at its first step"));
  CHECK_THAT(report, Catch::Contains("    line one\n    line two\n"));
  CHECK_THAT(report, Catch::Contains("1 of 3 configuration(s) failed"));
  CHECK_THAT(progress.str(), Catch::Contains("failed   " + plan.runs[2].name));
}

TEST_CASE("rehearsal: on the CPU one configuration at a time, and all ok says so", "[sweep]") {
  const Plan plan = three_configurations();
  Fake launcher;
  std::ostringstream progress;
  std::atomic<bool> stop{false};
  const Rehearsal r = rehearse(plan.runs, {}, launcher, progress, stop);
  CHECK(r.configurations == 3);
  CHECK(r.failures.empty());
  CHECK_FALSE(launcher.shared_a_slot);
  CHECK(launcher.slots == std::vector<std::string>{"", "", ""});
  CHECK_THAT(format_rehearsal(r), Catch::Contains("all 3 configuration(s) trained a step"));
}

}  // namespace
}  // namespace orch::sweep
