// The runner: one RunSpec, start to finish, in this process. It builds the four plugins,
// wires them into a training step, runs warm-up and measured steps, and returns the run's
// result document (see result_document.h) whatever happened: a failure is an outcome, not an
// exception.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "plan/run_spec.h"
#include "plugin_host/registry.h"
#include "result/result_document.h"

namespace orch {

/// Where a run writes files of its own, beside the result document.
struct RunOutputs {
  /// The Chrome trace of a profiled run (`profile.steps` > 0). Empty: the summary is still in
  /// the document, but no trace file is written.
  std::string trace_path;
};

ResultDocument run_document(const RunSpec& spec, const PluginRegistry& registry,
                            const RunOutputs& outputs = {});
/// run_document's result as JSON.
nlohmann::json run_one(const RunSpec& spec, const PluginRegistry& registry,
                       const RunOutputs& outputs = {});

/// The next run's start-up phase (result/run_phases.h) starts now rather than at the previous
/// run's end: a warm worker that has just been given a run (its idle time was no run's).
void start_up_begins_now();

/// `auto` cuDNN benchmarking: on only when batch, channels, height and width are all
/// multiples of 8 (the shapes Tensor Cores want, as the article advises).
bool cudnn_benchmark_enabled(const std::string& setting, std::int64_t batch,
                             const std::vector<std::int64_t>& sample_shape);

}  // namespace orch
