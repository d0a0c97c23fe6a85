// A script run on a real GPU through `orch sweep`: exec samples NVML for the run's GPU while the
// program runs (found through the CUDA driver's PCI bus id), the summaries cover the measured
// steps, and exec itself holds no CUDA context on that GPU. The program is standard-library
// Python that only sleeps: what is checked is exec's side, not a training step.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "integration/test_support.h"
#include "storage/store.h"

using namespace orch;
namespace fs = std::filesystem;

TEST_CASE("script workload on a GPU: NVML telemetry from exec, no CUDA context in exec",
          "[script][telemetry]") {
  test::TempDir tmp;
  const fs::path db = tmp.path() / "r.db";
  std::ofstream(tmp.path() / "gpu.py") << R"PY(import json, os, subprocess, sys, time
warmup, measure = int(os.environ["ORCH_WARMUP_STEPS"]), int(os.environ["ORCH_MEASURE_STEPS"])
batch = int(os.environ["ORCH_BATCH_SIZE"])
for _ in range(warmup):
    time.sleep(0.2)
times = []
t0 = time.perf_counter()
for _ in range(measure):
    s = time.perf_counter()
    time.sleep(0.3)
    times.append(1000 * (time.perf_counter() - s))
measure_s = time.perf_counter() - t0
# Does the parent (orch exec) hold a CUDA context? nvidia-smi lists the GPU's compute processes.
try:
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30).stdout
    parent_on_gpu = 1 if str(os.getppid()) in out.split() else 0
except Exception:
    parent_on_gpu = -1
doc = {"format": "orch.script-report", "version": 1, "batch_size": batch, "device": "cuda:0",
       "metrics": {"images_per_s": batch * measure / measure_s,
                   "step_ms_mean": 1000 * measure_s / measure, "measure_s": measure_s},
       "steps": [{"step": i, "step_ms": t, "loss": 1.0} for i, t in enumerate(times)],
       "environment": {"python_version": sys.version.split()[0]},
       "counters": {"script.parent_on_gpu": parent_on_gpu}}
with open(sys.argv[sys.argv.index("--facts") + 1], "w") as f:
    json.dump({"parent_on_gpu": parent_on_gpu,
               "visible": os.environ.get("CUDA_VISIBLE_DEVICES", "")}, f)
with open(os.environ["ORCH_SCRIPT_REPORT"] + ".tmp", "w") as f:
    json.dump(doc, f)
os.rename(os.environ["ORCH_SCRIPT_REPORT"] + ".tmp", os.environ["ORCH_SCRIPT_REPORT"])
)PY";
  std::ofstream(tmp.path() / "gpu.yaml")
      << "name: gpu-script\nbase:\n"
         "  workload: {kind: script, command: gpu.py, python: /usr/bin/python3}\n"
         "  device: cuda\n  batch_size: 16\n  steps: {warmup: 1, measure: 6}\n"
         "  telemetry: {enabled: true, interval_ms: 50}\n"
         "  args: {facts: '"
      << (tmp.path() / "facts.json").string() << "'}\n";
  const auto r = test::run_orch("--db '" + db.string() + "' sweep '" +
                                (tmp.path() / "gpu.yaml").string() + "' --gpus 0");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  storage::Store store(db.string());
  const auto runs = store.runs(*store.find_sweep("gpu-script"));
  REQUIRE(runs.size() == 1);
  const auto& run = runs[0];
  CHECK(run.status == "ok");
  // 6 steps of 0.3 s sampled every 50 ms: about 36 samples inside the measured window.
  REQUIRE(run.metric("telemetry_samples"));
  CHECK(*run.metric("telemetry_samples") >= 20);
  CHECK(run.metric("power_mean_w").value_or(0) > 0);
  const auto facts = nlohmann::json::parse(test::slurp(tmp.path() / "facts.json"));
  CHECK(facts["parent_on_gpu"] != 1);  // -1 where nvidia-smi is missing
  // Only the run's GPU is visible to the program.
  CHECK(facts["visible"].get<std::string>().find(',') == std::string::npos);
  CHECK_FALSE(facts["visible"].get<std::string>().empty());
}
