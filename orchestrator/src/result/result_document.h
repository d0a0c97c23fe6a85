// The result document of one run: what the runner (or the sweep, for a run that could not
// write one) records, what `orch exec` writes to a file, and what the store and `orch ingest`
// read. Its JSON form is written and read here only (to_json, result_from_json).
//
// A field the commands read or write is a typed member. Sections that are passed through
// whole (the configuration, metrics, environment, telemetry, profile, steps...) stay JSON:
// their readers each want a few entries, and a struct would only copy them. Keys this orch
// does not know, and known keys whose value is not of the member's type (a document from
// another program or version), are kept in `extra` and written back as they were, so a
// document read and written again is the same document.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "result/core_metrics.h"
#include "result/failure_class.h"
#include "result/run_status.h"

namespace orch {

constexpr const char* kResultFormat = "orch.result";
/// The version written. 2 added `telemetry`, the telemetry summaries and host_peak_rss_bytes
/// in `metrics`; version 1 documents (without them) are still read.
constexpr std::int64_t kResultVersion = 2;
constexpr std::int64_t kOldestResultVersion = 1;

/// `run`: which run of which configuration.
struct RunIdentity {
  std::string name, hash;
  std::int64_t repeat = 0;
};

/// `outcome`: how the run's process ended, as the sweep saw it (written by the parent).
struct ProcessOutcome {
  std::optional<std::int64_t> exit_code;  ///< none when a signal ended it
  std::optional<std::int64_t> signal;     ///< none when it exited
  std::string stderr_tail;
};

struct ResultDocument {
  std::optional<std::string> format = std::string(kResultFormat);
  std::optional<std::int64_t> version = kResultVersion;
  std::optional<RunStatus> status;

  // The header: the run specification's identity and resolved configuration.
  std::optional<std::string> experiment;
  std::optional<RunIdentity> run;
  nlohmann::json config, swept;  ///< null when absent

  std::optional<std::string> error, device, gpu, started_at, finished_at, work_dir;
  std::optional<double> duration_s;
  std::optional<std::int64_t> batch_size;  ///< the batch a `batch_size: auto` run chose
  std::optional<bool> batch_auto, probe;
  std::optional<ProcessOutcome> outcome;
  /// Whose fault a run that did not succeed was: written by the run's process when it knows
  /// (an exception on a healthy device, a sticky CUDA error), else decided by the sweep.
  std::optional<FailureClass> failure_class;

  // Passed through whole; null when absent.
  nlohmann::json metrics;      ///< name -> number: the core ones (CoreMetrics) and any other
  nlohmann::json counters;     ///< plugin counters, "<role>.<name>" -> number
  nlohmann::json steps;        ///< one entry per measured step
  nlohmann::json environment;  ///< GPU, driver, library versions, host
  nlohmann::json telemetry;    ///< NVML samples and summaries (version 2)
  /// The host's CPU, load and memory samples (telemetry/host_sampler.h); an optional section
  /// that older readers keep in `extra`, so the version stays 2.
  nlohmann::json host_telemetry;
  nlohmann::json profile;       ///< the profiled steps' summary
  nlohmann::json batch_search;  ///< the probes of `batch_size: auto`

  nlohmann::json extra = nlohmann::json::object();  ///< everything else, as read

  bool ok() const { return status == RunStatus::ok; }
  /// The core metrics, typed (read leniently from `metrics`, core_metrics.h).
  CoreMetrics core_metrics() const { return read_core_metrics(metrics); }
  /// A numeric metric (json_number's leniency), or nullopt; `name` is a metric_key.
  std::optional<double> metric(const char* name) const;
  /// NVML reported the GPU lost during the run (telemetry.gpu_lost).
  bool gpu_lost() const;
};

/// The document as JSON: `extra`, then every member that is set.
nlohmann::json to_json(const ResultDocument& doc);

/// Reads any JSON value: members whose key is missing or of another type stay unset (and the
/// value stays in `extra`); never throws. A run specification's JSON (plan/run_spec_json.h)
/// reads as a document holding only the header, ready to be completed.
ResultDocument result_from_json(const nlohmann::json& j);

}  // namespace orch
