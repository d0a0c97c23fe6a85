// The `orch` subcommands. Each registers itself on the CLI11 app and returns the exit code
// through `exit_code`: 0 success, 1 some run failed, 2 bad input (nothing ran, nothing written),
// 3 a sweep stopped before its end, 4 an environment fault.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "result/failure_class.h"

namespace orch::cli {

/// Options every command shares.
struct GlobalOptions {
  std::vector<std::string> plugin_paths;  ///< --plugin-path, searched after the build's folder
  std::string db = "results.db";          ///< --db
  std::vector<std::string> argv;          ///< the command line as given (for a restart)
};

constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;
/// Stopped before the end: a signal, or an output pipe whose reader went away.
constexpr int kExitStopped = 3;
/// An environment fault (a full disk, a database locked by another process): fix it and run
/// the same command again.
constexpr int kExitEnvironment = kEnvironmentExitCode;

void add_plugins_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_plan_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_run_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_rank_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_sweep_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_sweeps_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_exec_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_doctor_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_compare_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_export_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_report_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_dataset_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_submit_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_ingest_command(CLI::App& app, GlobalOptions& g, int& exit_code);
void add_health_check_command(CLI::App& app, GlobalOptions& g, int& exit_code);

}  // namespace orch::cli
