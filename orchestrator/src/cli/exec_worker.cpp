// `orch exec --worker` (exec_worker.h).
#include "cli/exec_worker.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "cli/plugin_loading.h"
#include "plan/bounded_file.h"
#include "plan/run_spec_json.h"
#include "process/log_file.h"
#include "report/output_target.h"
#include "result/json_dump.h"
#include "result/result_document.h"
#include "runner/run_reset.h"
#include "runner/runner.h"
#include "runner/script_workload.h"
#include "sweep/environment_fault.h"
#include "text/terminal_text.h"

namespace orch::cli {
namespace {

using json = nlohmann::json;

// A descriptor that survives no exec: the programs a run starts must not hold the reply pipe.
int keep_copy(int fd) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0)
    throw std::runtime_error(std::string("orch exec --worker: dup: ") + std::strerror(errno));
  return copy;
}

// Points `fd` at `path` (created or emptied, as a run's own process gets its logs), checked as
// process/log_file.h says; a character device (the worker's own /dev/null between runs) is
// written in place.
void point_at_file(int fd, const std::string& path) {
  try {
    const process::UniqueFd log = process::open_log_file(path, /*devices=*/true);
    ::dup2(log.get(), fd);
  } catch (const process::LogFileError& e) {
    throw sweep::EnvironmentFault(e.what(), false, e.error);
  }
}

void flush_streams() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
}

// One request: the run, its document written. Errors reading the specification propagate (the
// worker ends, and the sweep records the run failed with them, as for a run's own process).
void run_request(const json& request, const PluginRegistry& registry, const GlobalOptions& g,
                 int seq) {
  const auto spec_path = lossless_text_from(request.at("spec"));
  const auto out = lossless_text_from(request.at("out"));
  check_output_target(out, g.db, OutputKind::kResultDocument);  // as `orch exec --out` does
  RunSpec spec = run_spec_from_json(
      json::parse(read_bounded_file(spec_path, kMaxRunSpecBytes, "a run specification")));
  const std::int64_t batch = request.value("batch_size", std::int64_t{0});
  if (batch > 0) spec.batch_size = batch;
  ResultDocument doc;
  if (spec.workload.is_script()) {
    // The sweep keeps script runs in processes of their own; one sent here anyway runs as
    // `orch exec` would run it.
    if (spec.batch_size) {
      json config = spec.config.json();
      config["batch_size"] = *spec.batch_size;
      spec.config = config;
    }
    doc = run_script_document(spec, out);
  } else {
    RunOutputs outputs;
    if (spec.profile.enabled()) {
      outputs.trace_path =
          request.contains("trace") ? lossless_text_from(request["trace"]) : out + ".trace.json";
    }
    doc = run_document(spec, registry, outputs);
  }
  if (batch > 0) doc.batch_size = batch;
  if (!doc.environment.is_object()) doc.environment = json::object();
  doc.environment["worker"] = {{"pid", static_cast<long>(::getpid())}, {"run", seq}};
  sweep::write_file_atomically(out, json_dump(to_json(doc), 1) + "\n");
  std::cerr << "orch exec: " << terminal_text(spec.name) << " (repeat " << spec.repeat
            << "): " << (doc.status ? to_string(*doc.status) : "?") << " (worker run " << seq
            << ")\n";
}

}  // namespace

int run_exec_worker(const GlobalOptions& g) {
  // The reply channel is the stdout the sweep gave; fd 1 is the run's log during a run and
  // /dev/null between runs, so nothing a plugin prints can land in a reply.
  const int reply = keep_copy(STDOUT_FILENO);
  const int own_err = keep_copy(STDERR_FILENO);
  point_at_file(STDOUT_FILENO, "/dev/null");
  PluginRegistry registry;
  load_registry(registry, g, /*warn=*/false);
  // What a fresh process has: every run starts from these (runner/run_reset.h).
  const ProcessSettings initial = ProcessSettings::current();
  std::string line;
  int seq = 0;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    ++seq;
    // The first run's start-up is the process's (plugins loaded); a later run's starts now, not
    // at the previous run's end: the worker's idle time is no run's.
    if (seq > 1) start_up_begins_now();
    const json request = json::parse(line);
    point_at_file(STDOUT_FILENO, lossless_text_from(request.at("stdout")));
    point_at_file(STDERR_FILENO, lossless_text_from(request.at("stderr")));
    run_request(request, registry, g, seq);
    flush_streams();
    point_at_file(STDOUT_FILENO, "/dev/null");
    ::dup2(own_err, STDERR_FILENO);
    reset_between_runs(initial);
    const std::string answer = json{{"seq", seq}, {"status", "ok"}}.dump() + "\n";
    if (::write(reply, answer.data(), answer.size()) != static_cast<ssize_t>(answer.size()))
      return kExitStopped;  // the sweep is gone
  }
  return kExitOk;
}

}  // namespace orch::cli
