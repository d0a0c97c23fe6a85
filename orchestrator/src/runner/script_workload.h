// A script run (`workload: {kind: script}`) executed by `orch exec`: the user's program is
// started as exec's child with the run's configuration (docs/script-workloads.md), exec samples
// NVML for the run's GPU meanwhile, and the report the program writes becomes the run's result
// document with the same outcomes as a built-in run (ok, diverged, failed, oom).
//
// Nothing here creates a CUDA context in exec: the GPU's PCI bus id for the sampler comes from
// the CUDA driver API (cuInit and cuDeviceGetPCIBusId make none), so the program has the GPU to
// itself.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/run_spec.h"
#include "result/result_document.h"

namespace orch {

/// The interpreter for a command whose first word ends in `.py`: the workload's `python`, else
/// $ORCH_PYTHON, else $ORCH_CACHE/venv-torch-2.11.0/bin/python (ORCH_CACHE defaulting to
/// $XDG_CACHE_HOME/orch, then ~/.cache/orch) when it exists, else `python3`.
std::string script_interpreter(const WorkloadSpec& workload);

/// The program's argv: the command's words (the script's word replaced by the path the planner
/// found), the interpreter first when the first word ends in `.py`, then `--<name> <value>`
/// per `args` entry. Throws std::invalid_argument for a command that does not split.
std::vector<std::string> script_argv(const RunSpec& spec);

/// The variables exec adds to the program's environment (besides CUDA_VISIBLE_DEVICES):
/// ORCH_RUN_SPEC, ORCH_SCRIPT_REPORT, ORCH_BATCH_SIZE, ORCH_WARMUP_STEPS, ORCH_MEASURE_STEPS,
/// ORCH_SEED, ORCH_DEVICE, and PYTHONPATH with orch's python/ folder first.
std::map<std::string, std::string> script_environment(const RunSpec& spec,
                                                      const std::string& spec_path,
                                                      const std::string& report_path,
                                                      const std::string& device);

/// What a finished program's exit and report make of the run: fills status, error, metrics,
/// steps, counters and the report's environment into `doc` (whose header is set). `report` is
/// the parsed report or nullopt when there was none; `report_error` says why a report that
/// exists could not be read. `exit_code` -1 with `signal` > 0: killed by that signal.
void script_outcome(ResultDocument& doc, const RunSpec& spec, int exit_code, int signal,
                    const std::string& stderr_tail, const std::optional<nlohmann::json>& report,
                    const std::string& report_error);

/// Runs the script run `spec` (its batch and steps already as exec adjusted them) and returns
/// its result document. The program's specification and report are written beside `out_path`
/// (`<out_path>.script-spec.json`, `<out_path>.script-report.json`). Never throws for what the
/// program does; SIGTERM and SIGINT sent to exec reach the program, and the program dies with
/// exec (PR_SET_PDEATHSIG), so it cannot outlive a killed run.
ResultDocument run_script_document(const RunSpec& spec, const std::string& out_path);

/// Where run_script_document writes the program's specification for the result at `out_path`.
std::string script_spec_path(const std::string& out_path);

/// Why the program's specification cannot be written at `path` ("" when it can): anything there
/// but a regular file (a symbolic link, a folder, a FIFO), which orch never writes through.
std::string script_spec_refusal(const std::string& path);

}  // namespace orch
