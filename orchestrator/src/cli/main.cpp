// orch: which training configuration is fastest on this GPU, measured.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>

#include "cli/command_failure.h"
#include "cli/commands.h"
#include "cli/pipe_guard.h"
#include "plan/plan_error.h"
#include "report/input_error.h"
#include "storage/store.h"
#include "sweep/environment_fault.h"
#include "text/terminal_text.h"

namespace {

// Standard output is written like any other file: `orch export > runs.csv` on a full disk must
// not exit 0 with half a table. A reader that went away (`orch rank | head -1`) gets no message,
// but the exit code says the output was not all delivered.
// Never destroyed: std::cout is flushed once more after main returns, through this buffer.
std::atomic<bool> g_stdout_closed{false};
orch::cli::PipeGuardBuf& g_stdout = *new orch::cli::PipeGuardBuf(STDOUT_FILENO, g_stdout_closed);

int finish_standard_output(int exit_code) {
  std::cout.flush();
  if (g_stdout.error() != 0) {
    std::cerr << "orch: " << orch::sweep::write_fault_text("standard output", g_stdout.error())
              << "\n";
    return orch::cli::kExitEnvironment;
  }
  if (g_stdout_closed.load()) {
    return exit_code == orch::cli::kExitOk ? orch::cli::kExitStopped : exit_code;
  }
  return exit_code;
}

// Every message that ends a command passes here: a name, value or file name quoted in it came
// from a command line, an experiment file or a database, and its control characters (an escape
// sequence, U+202E) must not act on the reader's terminal. Each line is escaped as the tables'
// cells are (terminal_text); the message's own line breaks stay.
std::string message_text(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (start > 0) out += '\n';
    out += orch::terminal_text(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// --plugin-path and --db, which may come before or after the command.
void add_global_options(CLI::App& app, orch::cli::GlobalOptions& global) {
  // A --plugin-path must be a folder: missing, a file or a symbolic-link loop is said as such
  // (an ORCH_PLUGIN_PATH entry that is missing or a file too, cli/plugin_loading.cpp; one that
  // cannot be read, a link loop, is reported and skipped).
  const CLI::Validator plugin_folder(
      [](std::string& path) -> std::string {
        std::error_code ec;
        const auto st = std::filesystem::status(path, ec);
        if (ec && st.type() != std::filesystem::file_type::not_found)
          return path + " cannot be read as a folder: " + ec.message();
        if (st.type() == std::filesystem::file_type::not_found) return path + " does not exist";
        if (st.type() != std::filesystem::file_type::directory) return path + " is not a folder";
        return {};
      },
      "DIR");
  app.add_option("--plugin-path", global.plugin_paths,
                 "extra folder to search for plugin libraries (repeatable; also ORCH_PLUGIN_PATH)")
      ->check(plugin_folder);  // a mistyped folder would only lose its plugins
  app.add_option("--db", global.db, "SQLite results database")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string& v) {
            return v.empty() ? std::string("the database's path is empty; give a file's path") : "";
          },
          ""));
}

}  // namespace

int main(int argc, char** argv) {
  // A closed output pipe is an error to handle (EPIPE), never a silent death by SIGPIPE.
  orch::cli::ignore_sigpipe();
  // Unbuffered, as the sweep's progress lines are, so the two never interleave out of order;
  // every write is checked.
  std::cout.rdbuf(&g_stdout);
  CLI::App app{"orch: run training-configuration experiments and rank them by measured speed"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the command: `orch rank --db x.db`
  app.set_version_flag("--version", std::string("orch ") + ORCH_VERSION);
  // A refused option value is quoted in CLI11's message too.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return message_text(CLI::FailureMessage::simple(a, e));
  });
  orch::cli::GlobalOptions global;
  global.argv.assign(argv, argv + argc);
  add_global_options(app, global);

  int exit_code = orch::cli::kExitOk;
  orch::cli::add_plugins_command(app, global, exit_code);
  orch::cli::add_plan_command(app, global, exit_code);
  orch::cli::add_run_command(app, global, exit_code);
  orch::cli::add_rank_command(app, global, exit_code);
  orch::cli::add_sweep_command(app, global, exit_code);
  orch::cli::add_sweeps_command(app, global, exit_code);
  orch::cli::add_exec_command(app, global, exit_code);
  orch::cli::add_doctor_command(app, global, exit_code);
  orch::cli::add_compare_command(app, global, exit_code);
  orch::cli::add_export_command(app, global, exit_code);
  orch::cli::add_report_command(app, global, exit_code);
  orch::cli::add_dataset_command(app, global, exit_code);
  orch::cli::add_submit_command(app, global, exit_code);
  orch::cli::add_ingest_command(app, global, exit_code);
  orch::cli::add_health_check_command(app, global, exit_code);
  orch::cli::add_help_command(app, global, exit_code);
  // The command runs inside parse() (its callback). What ends it early becomes the exit code and
  // the message on stderr here, for every command (docs/cli.md, "Exit codes").
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : orch::cli::kExitBadInput;
  } catch (const orch::cli::CommandFailure& e) {
    // A command that ended early (command_failure.h): its message, its code.
    if (*e.what()) std::cerr << message_text(e.what()) << "\n";
    return finish_standard_output(e.exit_code());
  } catch (const orch::PlanError& e) {
    // An experiment file or override that cannot be planned: its text says where, file:line:col.
    std::cerr << message_text(e.what()) << "\n";
    return finish_standard_output(orch::cli::kExitBadInput);
  } catch (const orch::InputError& e) {
    // A read command's sweep, metric, configuration or output file that is not there.
    std::cerr << "orch: " << message_text(e.what()) << "\n";
    return finish_standard_output(orch::cli::kExitBadInput);
  } catch (const orch::sweep::EnvironmentFault& e) {
    std::cerr << "orch: " << message_text(e.what()) << "\n";
    return orch::cli::kExitEnvironment;
  } catch (const orch::storage::SqliteError& e) {
    if (e.environment()) {  // full, locked past the busy timeout, failing I/O, read-only
      std::cerr << "orch: " << message_text(orch::storage::database_fault_text(e, global.db))
                << "\n";
      return orch::cli::kExitEnvironment;
    }
    // A database we cannot open or understand (newer schema, not SQLite): bad input.
    std::cerr << "orch: " << message_text(e.what()) << "\n";
    return orch::cli::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "orch: error: " << message_text(e.what()) << "\n";
    return orch::cli::kExitRunFailed;
  }
  return finish_standard_output(exit_code);
}
