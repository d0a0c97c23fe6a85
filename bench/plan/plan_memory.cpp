// orch_bench_plan_memory CONFIGS [REPEAT] [MODEL]: plans an experiment of CONFIGS
// configurations (a seed x batch_size matrix over MODEL, the YAML of `base.model`, default
// resnet, with the build's plugins) and REPEAT repeats each, and prints what it cost: the bytes
// the finished plan keeps (malloc's count of bytes in use, before and after) and the peak
// resident set while it was built (VmHWM, reset first), both per run, with the configuration's
// JSON size and the time. A longer configuration: MODEL "{plugin: torchscript, path: /aaaa...}".
//
// Planning runs in this process alone, after the plugins are loaded, so the differences are
// the plan's. The peak includes what the planner frees again (drafts, copies, the estimate's
// working set); the kept bytes are what a command holds while it uses the plan.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "plan/planner.h"
#include "plan/run_spec_json.h"
#include "plugin_host/registry.h"

namespace {

// A "Key:   123 kB" line of /proc/self/status, in bytes.
long long status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::atoll(line.c_str() + key.size() + 1) * 1024;
  }
  return -1;
}

// Bytes malloc has handed out and not had back: small chunks in the arenas and large ones
// mapped on their own (a vector of many RunSpecs is one of those).
std::size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: orch_bench_plan_memory CONFIGS [REPEAT] [MODEL]\n";
    return 2;
  }
  const long configs = std::atol(argv[1]);
  const long repeat = argc > 2 ? std::atol(argv[2]) : 1;
  const std::string model = argc > 3 ? argv[3] : "resnet";
  if (configs < 1 || repeat < 1) {
    std::cerr << "CONFIGS and REPEAT must be positive\n";
    return 2;
  }
  orch::PluginRegistry registry;
  orch::LoadProbeOptions trusted;  // the build's own plugins
  trusted.enabled = false;
  registry.set_load_probe(trusted);
  registry.load_directories(orch::PluginRegistry::search_path({}));

  // seed x batch_size: every combination one configuration, none merged.
  const long seeds = configs < 1000 ? configs : 1000;
  const long batches = (configs + seeds - 1) / seeds;
  std::string yaml = "name: planmem\nbase:\n  model: " + model +
                     "\n  device: cpu\n  repeat: " + std::to_string(repeat) +
                     "\nmatrix:\n  seed: [";
  for (long i = 0; i < seeds; ++i) yaml += (i ? ", " : "") + std::to_string(i);
  yaml += "]\n  batch_size: [";
  for (long i = 0; i < batches; ++i) yaml += (i ? ", " : "") + std::to_string(i + 1);
  yaml += "]\n";

  orch::PlanOptions opts;
  opts.max_runs = static_cast<std::size_t>(seeds * batches * repeat);
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS
  const long long rss_before = status_bytes("VmRSS");
  const std::size_t heap_before = heap_in_use();
  const auto start = std::chrono::steady_clock::now();
  const orch::Plan plan = orch::make_plan_from_string(yaml, "planmem.yaml", registry, opts);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::size_t heap_after = heap_in_use();
  const long long hwm = status_bytes("VmHWM");
  const double runs = static_cast<double>(plan.runs.size());
  const std::size_t config_bytes = orch::run_spec_json(plan.runs.front())["config"].dump().size();
  // A model with a long parameter (how a larger configuration is measured) is shown cut.
  const std::string shown_model = model.size() > 48 ? model.substr(0, 45) + "..." : model;
  std::printf(
      "%zu runs (%ld configurations x %ld repeats, model %s): config %zu bytes as JSON text; "
      "kept %.0f bytes a run, peak %.0f bytes a run over the RSS before; %.2f s\n",
      plan.runs.size(), seeds * batches, repeat, shown_model.c_str(), config_bytes,
      static_cast<double>(heap_after - heap_before) / runs,
      static_cast<double>(hwm - rss_before) / runs, seconds);
  return 0;
}
