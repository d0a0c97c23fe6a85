// `batch_size: auto` (the fastest batch) as a unit: the search driven by an injected
// measurement, a throughput and memory model of a device, one probe at a time.
#include "sweep/fastest_batch_search.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <map>

namespace orch::sweep {
namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

// A device: throughput and peak memory by batch, and where allocation fails.
struct FakeDevice {
  std::function<double(std::int64_t)> images_per_s;
  std::int64_t fixed_bytes = 0, per_sample_bytes = 0;  // peak = fixed + per_sample * batch
  std::int64_t total_bytes = 0;                        // 0: not reported (the CPU)
  std::int64_t oom_above = 0;                          // 0: never

  ProbeMeasurement measure(std::int64_t batch) const {
    ProbeMeasurement m;
    if (total_bytes > 0) m.device_memory_bytes = total_bytes;
    if (oom_above > 0 && batch > oom_above) {
      m.outcome = "oom";
      return m;
    }
    m.images_per_s = images_per_s(batch);
    if (total_bytes > 0) m.peak_memory_bytes = fixed_bytes + per_sample_bytes * batch;
    return m;
  }
};

std::vector<std::int64_t> run(FastestBatchSearch& s, const FakeDevice& d) {
  std::vector<std::int64_t> probed;
  while (auto b = s.next()) {
    REQUIRE(probed.size() < 40);  // the search ends
    probed.push_back(*b);
    s.report(d.measure(*b));
  }
  return probed;
}

std::vector<std::string> outcomes(const FastestBatchSearch& s) {
  std::vector<std::string> out;
  for (const auto& p : s.probes()) out.push_back(p.outcome);
  return out;
}

// Most cases below start at 64, below the default start, so each curve is walked from well
// below its knee and every branch of the search is reached.
FastestSearchOptions starting_at(std::int64_t start) {
  FastestSearchOptions o;
  o.start = start;
  return o;
}

TEST_CASE("fastest batch: a throughput that saturates stops doubling and keeps the smaller batch",
          "[sweep][batch]") {
  FakeDevice d;
  d.images_per_s = [](std::int64_t b) { return 5000.0 * std::min(1.0, b / 200.0); };
  FastestBatchSearch s(starting_at(64));
  // 512 makes no more than 256: doubling stops. Between 256 and 512 throughput is flat, so no
  // probe there; 192, between 128 (slower) and 256, refines.
  CHECK(run(s, d) == std::vector<std::int64_t>{64, 128, 256, 512, 192});
  CHECK(s.result() == 256);
  CHECK(s.mode() == "fastest");
  REQUIRE(s.probes().size() == 5);
  CHECK(s.probes()[2].images_per_s == Approx(5000));
}

TEST_CASE("fastest batch: a growth under 2% counts as saturated", "[sweep][batch]") {
  FakeDevice d;
  // +1.5% from 256 to 512: not worth doubling again.
  d.images_per_s = [](std::int64_t b) { return b <= 256 ? 16.0 * b : 4096 * 1.015; };
  FastestBatchSearch s(starting_at(64));
  const auto probed = run(s, d);
  CHECK(std::find(probed.begin(), probed.end(), 1024) == probed.end());
  CHECK(probed[3] == 512);
  // 256 to 512 is flat, and nothing above 512 is expected to pay: the search ends there.
  CHECK(probed.size() == 4);
  CHECK(s.result() == 512);
}

TEST_CASE("fastest batch: a saturated curve is not refined where it is flat, only where it rises",
          "[sweep][batch]") {
  // The shape `bench/run sweeps --cases auto-batch` measured on an H200 (ResNet-50 AMP fp16
  // channels-last): a steep rise to 256, then a few percent per doubling, under 2% from 1024 to
  // 2048. Memory here would allow 4096: saturation alone ends the search, with nothing probed
  // above 2048 and nothing between 1024 and 2048.
  FakeDevice d;
  const std::map<std::int64_t, double> curve = {{64, 3260},  {128, 3649},  {256, 6047},
                                                {512, 6614}, {1024, 6885}, {2048, 7012}};
  d.images_per_s = [&](std::int64_t b) {
    auto it = curve.find(b);
    REQUIRE(it != curve.end());  // no midpoint of a flat interval is probed
    return it->second;
  };
  d.total_bytes = 140 * 1024 * kMiB;
  d.fixed_bytes = 2 * 1024 * kMiB;
  d.per_sample_bytes = 20 * kMiB;  // 4096: 82 GiB
  FastestBatchSearch s(starting_at(64));
  CHECK(run(s, d) == std::vector<std::int64_t>{64, 128, 256, 512, 1024, 2048});
  CHECK(s.result() == 2048);

  SECTION("a bump between two probes that differ by more than the gain is still refined") {
    FakeDevice bumpy = d;
    bumpy.images_per_s = [](std::int64_t b) {
      return b == 768 ? 7200.0 : b >= 1024 ? 6500.0 : 6.0 * static_cast<double>(b);
    };
    FastestBatchSearch t(starting_at(64));
    const auto probed = run(t, bumpy);
    CHECK(std::find(probed.begin(), probed.end(), 1536) == probed.end());
    // 2048 makes no more than 1024, so doubling stops and 1536 is not probed (flat); 512 to
    // 1024 rose far more than 2%, so 768 is probed, and wins.
    CHECK(std::find(probed.begin(), probed.end(), 768) != probed.end());
    CHECK(t.result() == 768);
  }
}

TEST_CASE("fastest batch: a speed probe times fewer steps at large batches", "[sweep][batch]") {
  CHECK(probe_measure_steps(64, 30) == 10);
  CHECK(probe_measure_steps(256, 30) == 10);
  CHECK(probe_measure_steps(512, 30) == 5);
  CHECK(probe_measure_steps(1024, 30) == 3);
  CHECK(probe_measure_steps(2048, 30) == 3);  // never fewer than 3
  CHECK(probe_measure_steps(64, 4) == 4);     // never more than the run's own
  CHECK(probe_measure_steps(64, 0) == 1);
}

TEST_CASE("fastest batch: a throughput that peaks then drops chooses the peak's neighbourhood",
          "[sweep][batch]") {
  FakeDevice d;
  // Best near 352: 512 is slower than 256's neighbour 384.
  d.images_per_s = [](std::int64_t b) {
    const double x = static_cast<double>(b) - 352;
    return 6000.0 - x * x / 50.0;
  };
  FastestBatchSearch s(starting_at(64));
  CHECK(run(s, d) == std::vector<std::int64_t>{64, 128, 256, 512, 384, 192});
  CHECK(s.result() == 384);
  CHECK(outcomes(s) == std::vector<std::string>(6, "ok"));
}

TEST_CASE("fastest batch: no probe whose predicted peak would pass the memory headroom",
          "[sweep][batch]") {
  FakeDevice d;
  d.images_per_s = [](std::int64_t b) { return 10.0 * b; };  // always faster
  d.total_bytes = 10240 * kMiB;
  d.fixed_bytes = 1024 * kMiB;
  d.per_sample_bytes = 20 * kMiB;  // 512 would need 11 GiB; 384 needs 8.5 of the 9 allowed
  FastestBatchSearch s(starting_at(64));
  CHECK(run(s, d) == std::vector<std::int64_t>{64, 128, 256, 384, 192});
  CHECK(s.result() == 384);
  for (const auto& p : s.probes()) {
    CHECK(*p.peak_memory_bytes <= 0.9 * d.total_bytes);
  }

  SECTION("a stricter headroom stops earlier") {
    FastestSearchOptions o = starting_at(64);
    o.headroom = 0.5;  // 5 GiB: 256 (6 GiB) is predicted over it
    FastestBatchSearch strict(o);
    CHECK(run(strict, d) == std::vector<std::int64_t>{64, 128, 192, 96});
    CHECK(strict.result() == 192);
  }
}

TEST_CASE("fastest batch: a probe that ran over the headroom is not chosen", "[sweep][batch]") {
  FakeDevice d;
  d.images_per_s = [](std::int64_t b) { return 10.0 * b; };
  d.total_bytes = 1000 * kMiB;
  // The first two probes suggest little growth; the third uses far more than predicted.
  FastestBatchSearch s(starting_at(64));
  auto measure = [&](std::int64_t b) {
    ProbeMeasurement m = d.measure(b);
    m.peak_memory_bytes = b == 256 ? 950 * kMiB : 100 * kMiB + b * kMiB;
    return m;
  };
  while (auto b = s.next()) s.report(measure(*b));
  REQUIRE(s.probes().size() >= 3);
  CHECK(s.probes()[2].batch == 256);
  CHECK(s.probes()[2].outcome == "over_headroom");
  CHECK_FALSE(s.probes()[2].fits);
  // Refined between the best (128) and the batch over the headroom.
  CHECK(s.probes()[3].batch == 192);
  CHECK(s.result() == 192);
}

TEST_CASE("fastest batch: out of memory ends doubling and bounds the refinement",
          "[sweep][batch]") {
  FakeDevice d;
  d.images_per_s = [](std::int64_t b) { return 10.0 * b; };
  d.oom_above = 700;
  FastestBatchSearch s(starting_at(64));
  CHECK(run(s, d) == std::vector<std::int64_t>{64, 128, 256, 512, 1024, 768, 384});
  CHECK(s.result() == 512);
  CHECK(outcomes(s) == std::vector<std::string>{"ok", "ok", "ok", "ok", "oom", "oom", "ok"});
  CHECK_FALSE(s.probes()[4].images_per_s.has_value());
}

TEST_CASE("fastest batch: when even the first probe runs out of memory it halves",
          "[sweep][batch]") {
  FakeDevice d;
  d.images_per_s = [](std::int64_t b) { return 10.0 * b; };
  d.oom_above = 40;
  FastestBatchSearch s(starting_at(64));
  CHECK(run(s, d) == std::vector<std::int64_t>{64, 32, 48});
  CHECK(s.result() == 32);

  FastestBatchSearch nothing(starting_at(64));
  while (auto b = nothing.next()) nothing.report({"oom", {}, {}, {}, "", {}});
  CHECK_FALSE(nothing.result().has_value());
  CHECK(nothing.probes().back().batch == 1);
}

TEST_CASE("fastest batch: a failure above a fit counts as not fitting", "[sweep][batch]") {
  FastestBatchSearch s(starting_at(64));
  s.report({"ok", 100.0, {}, {}, "", {}});                              // 64
  s.report({"ok", 200.0, {}, {}, "", {}});                              // 128
  s.report({"failed", {}, {}, {}, "CUDNN_STATUS_INTERNAL_ERROR", {}});  // 256
  CHECK(s.probes()[2].outcome == "failed");
  CHECK(s.probes()[2].note == "CUDNN_STATUS_INTERNAL_ERROR");
  REQUIRE(s.next() == 192);  // between the best and the failure
  s.report({"ok", 150.0, {}, {}, "", {}});
  REQUIRE(s.next() == 96);  // between the best and the batch below it
  s.report({"ok", 150.0, {}, {}, "", {}});
  CHECK_FALSE(s.next());
  CHECK(s.result() == 128);
}

TEST_CASE("fastest batch: by default the search starts at 128", "[sweep][batch]") {
  // `bench/run sweeps --cases auto-batch` on an H200 (ResNet-50 AMP fp16 channels-last): every
  // probe cost 8-14 s, most of it process start and cuDNN's autotuning, and 64 (a third of the
  // best) was never a candidate. From 128 the same curve takes five probes, not six.
  FakeDevice d;
  const std::map<std::int64_t, double> curve = {
      {128, 4432}, {256, 5810}, {512, 6458}, {1024, 6800}, {2048, 6820}};
  d.images_per_s = [&](std::int64_t b) {
    auto it = curve.find(b);
    REQUIRE(it != curve.end());
    return it->second;
  };
  FastestBatchSearch s;
  CHECK(s.options().start == kFastestSearchStart);
  CHECK(run(s, d) == std::vector<std::int64_t>{128, 256, 512, 1024, 2048});
  CHECK(s.result() == 2048);

  SECTION("a batch that does not fit at 128 still halves") {
    FakeDevice small = d;
    small.images_per_s = [](std::int64_t b) { return 10.0 * b; };
    small.oom_above = 80;
    FastestBatchSearch t;
    CHECK(run(t, small) == std::vector<std::int64_t>{128, 64, 96});
    CHECK(t.result() == 64);
  }
}

TEST_CASE("fastest batch: a peak below the first probe is found by refining below it",
          "[sweep][batch]") {
  // The integration test's fault model: 100 ms a step up to batch 96, 100 ms * (batch/96)^1.75
  // above, so throughput peaks at 96 and falls from 128 on.
  FakeDevice d;
  d.images_per_s = [](std::int64_t b) {
    const double x = static_cast<double>(b);
    return x / (0.1 * std::pow(std::max(1.0, x / 96.0), 1.75));
  };
  FastestBatchSearch s;
  // 256 is slower than 128: doubling stops; 192 refines above the best, and 96, the midpoint
  // between 128 and half of it, below.
  CHECK(run(s, d) == std::vector<std::int64_t>{128, 256, 192, 96});
  CHECK(s.result() == 96);

  SECTION("a best that is not the first probe gets no extra probe below its lower neighbour") {
    FastestBatchSearch t(starting_at(32));
    CHECK(run(t, d) == std::vector<std::int64_t>{32, 64, 128, 256, 192, 96});
    CHECK(t.result() == 96);
  }
}

TEST_CASE("batch midpoints are multiples of 32 where the gap allows, else of 8", "[sweep][batch]") {
  CHECK(batch_midpoint(256, 512) == 384);
  CHECK(batch_midpoint(64, 128) == 96);
  CHECK(batch_midpoint(32, 64) == 48);
  CHECK(batch_midpoint(256, 288) == 272);
  CHECK_FALSE(batch_midpoint(8, 16).has_value());
  CHECK_FALSE(batch_midpoint(256, 264).has_value());
}

TEST_CASE("auto-largest keeps the largest-fit search and reports the probes' measurements",
          "[sweep][batch]") {
  BatchSearch s;
  AutoBatchSearch& any = s;
  CHECK(any.mode() == "largest");
  any.report({"ok", 123.0, 5 * kMiB, 10 * kMiB, "", {}});
  REQUIRE(any.probes().size() == 1);
  CHECK(any.probes()[0].outcome == "ok");
  CHECK(any.probes()[0].images_per_s == Approx(123.0));
  CHECK(any.probes()[0].peak_memory_bytes == 5 * kMiB);
  CHECK(any.next() == 128);  // doubling on: the largest search ignores throughput
}

}  // namespace
}  // namespace orch::sweep
