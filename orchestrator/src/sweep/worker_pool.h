// Warm workers for `isolation: worker`: one long-lived `orch exec --worker` per GPU
// (cli/exec_worker.h) that takes the sweep's runs one after another, so a run pays no process
// start, CUDA context or plugin loading of its own. A worker is used again only after a run that
// ended `ok`; anything else (a crash, a timeout, out of memory, a failure, a divergence, a stop)
// discards it, and the next run gets a fresh one. Runs that need a process of their own (their
// settings are process-wide and set before CUDA starts, or they are a program of their own)
// never go to a worker (runs_in_worker).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/run_spec.h"
#include "process/child.h"
#include "process/pipe_reader.h"
#include "result/run_status.h"

namespace orch::sweep {

struct ChildLaunchOptions;

/// Why `spec` needs a process of its own although it asks for a worker (`cuda_connections`
/// is read by the driver when the CUDA context is made; a script workload is its own program);
/// nothing when it may run in a worker; "" when it asks for `process` anyway.
std::optional<std::string> own_process_reason(const RunSpec& spec);
/// Whether `spec` runs in a warm worker.
bool runs_in_worker(const RunSpec& spec);
/// Whether the worker that ran a run may take the next one: only when the run ended `ok` and
/// the sweep did not stop it (timeout, interrupt).
bool worker_reusable(std::optional<RunStatus> status, bool stopped);

/// One request to a worker (the fields of cli/exec_worker.h's JSON line).
struct WorkerRequest {
  std::string spec, out, stdout_log, stderr_log, trace;
  std::optional<std::int64_t> batch_size;
};

/// One `orch exec --worker` process, pinned to its GPU.
class Worker {
 public:
  /// Starts it; its own stderr (outside runs) goes to `log`. Throws process::SpawnError.
  Worker(const ChildLaunchOptions& o, const std::string& gpu, const std::string& log);
  pid_t pid() const { return child_.pid(); }
  /// Runs sent so far (1 after the first send).
  int runs() const { return runs_; }
  /// Sends a run; false when the worker is gone (it cannot take it).
  bool send(const WorkerRequest& request);
  /// Whether the last run sent has been answered (reads what the reply pipe holds, no wait).
  bool answered();
  /// The exit status once the process has ended.
  std::optional<process::ExitStatus> ended() { return child_.poll(); }
  void signal_group(int sig) { child_.signal_group(sig); }
  /// Closes its stdin: an idle worker leaves.
  void close_input() { child_.close_stdin(); }
  /// Ends an idle worker: stdin closed (it leaves by itself), `grace`, then SIGKILL.
  void end(std::chrono::milliseconds grace);

 private:
  process::Child child_;
  process::PipeReader reader_;
  std::string replies_;
  int runs_ = 0, answers_ = 0;
};

/// The idle workers of one sweep, by GPU. Ended with the pool (and, killed, with the sweep:
/// every worker has --parent-pid).
class WorkerPool {
 public:
  WorkerPool(const ChildLaunchOptions& o, std::string log_dir);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  /// An idle worker for `gpu`, or a fresh one (throws process::SpawnError).
  std::unique_ptr<Worker> take(const std::string& gpu);
  /// A worker whose run ended `ok`, idle again.
  void put_back(const std::string& gpu, std::unique_ptr<Worker> worker);
  /// Ends the idle workers of `gpu`: before a run in a process of its own there, which must
  /// find the GPU as a process-isolated run always does (no other process's context or memory
  /// on it, none counted in its environment's `gpu_other_processes`).
  void end_idle(const std::string& gpu);

 private:
  const ChildLaunchOptions& o_;
  std::string log_dir_;
  int started_ = 0;
  std::map<std::string, std::vector<std::unique_ptr<Worker>>> idle_;
};

}  // namespace orch::sweep
