// The `orch` subcommands. Each is a function, `int run_<command>(const <Command>Args&, const
// GlobalOptions&)` in its cmd_<command>.cpp, that returns the exit code of what it did: 0
// success, 1 some run failed, 3 a sweep stopped before its end. Whatever ends a command early
// is thrown, and main.cpp alone turns it into the message on stderr and the exit code: 2 bad
// input (nothing ran, nothing written; CommandFailure, InputError, PlanError), 4 an environment
// fault. add_<command>_command declares the options into the Args struct and stores the
// function's exit code in `exit_code`.
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
void add_help_command(CLI::App& app, GlobalOptions& g, int& exit_code);

}  // namespace orch::cli
