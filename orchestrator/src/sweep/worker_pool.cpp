#include "sweep/worker_pool.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "result/json_dump.h"
#include "sweep/child_run.h"
#include "sweep/environment_fault.h"

namespace orch::sweep {
namespace {

process::ChildOptions worker_options(const ChildLaunchOptions& o, const std::string& gpu,
                                     const std::string& log) {
  process::ChildOptions c;
  c.argv = {o.orch_binary};
  for (const auto& p : o.plugin_paths) {
    c.argv.push_back("--plugin-path");
    c.argv.push_back(p);
  }
  c.argv.insert(c.argv.end(), {"exec", "--worker", "--parent-pid", std::to_string(::getpid())});
  // Pinned to its GPU as a run's own process is: it sees exactly one device, as cuda:0.
  if (!gpu.empty()) c.env["CUDA_VISIBLE_DEVICES"] = gpu;
  c.in = process::Stdio::pipe();
  c.out = process::Stdio::pipe();
  c.err = process::Stdio::file(log);
  return c;
}

}  // namespace

std::optional<std::string> own_process_reason(const RunSpec& spec) {
  if (spec.isolation != "worker") return "";
  if (spec.workload.is_script()) return "a script workload is a program of its own";
  if (spec.cuda_connections) {
    return "cuda_connections is read by the CUDA driver when the process makes its context";
  }
  return std::nullopt;
}

bool runs_in_worker(const RunSpec& spec) { return !own_process_reason(spec).has_value(); }

bool worker_reusable(std::optional<RunStatus> status, bool stopped) {
  return !stopped && status == RunStatus::ok;
}

Worker::Worker(const ChildLaunchOptions& o, const std::string& gpu, const std::string& log)
    : child_(worker_options(o, gpu, log)) {
  reader_.add(child_.stdout_fd(), [this](std::string_view s) { replies_.append(s); });
}

bool Worker::send(const WorkerRequest& r) {
  // The paths lie under the database's folder, whose name need not be UTF-8: sent byte for byte.
  nlohmann::json j = {{"spec", lossless_text(r.spec)},
                      {"out", lossless_text(r.out)},
                      {"stdout", lossless_text(r.stdout_log)},
                      {"stderr", lossless_text(r.stderr_log)}};
  if (!r.trace.empty()) j["trace"] = lossless_text(r.trace);
  if (r.batch_size) j["batch_size"] = *r.batch_size;
  const std::string line = j.dump() + "\n";
  ++runs_;
  // A request is far below the pipe's buffer, and the worker reads it when idle: this write
  // does not wait. A worker that is gone gives EPIPE (orch ignores SIGPIPE, cli/pipe_guard.h).
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(child_.stdin_fd(), line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool Worker::answered() {
  reader_.read_for(std::chrono::milliseconds(0));
  std::size_t nl;
  while ((nl = replies_.find('\n')) != std::string::npos) {
    replies_.erase(0, nl + 1);
    ++answers_;
  }
  return answers_ >= runs_;
}

void Worker::end(std::chrono::milliseconds grace) {
  child_.close_stdin();
  if (!child_.wait_for(grace)) child_.stop(std::chrono::milliseconds(0));
}

WorkerPool::WorkerPool(const ChildLaunchOptions& o, std::string log_dir)
    : o_(o), log_dir_(std::move(log_dir)) {}

namespace {

// Each leaves by itself once its stdin closes: all are told first, then each is waited for (a
// few seconds: it frees its device), then killed.
void end_all(std::vector<std::unique_ptr<Worker>>& workers) {
  for (auto& w : workers) w->close_input();
  for (auto& w : workers) w->end(std::chrono::seconds(5));
  workers.clear();
}

}  // namespace

WorkerPool::~WorkerPool() {
  for (auto& [gpu, workers] : idle_) end_all(workers);
}

void WorkerPool::end_idle(const std::string& gpu) {
  if (auto it = idle_.find(gpu); it != idle_.end()) end_all(it->second);
}

std::unique_ptr<Worker> WorkerPool::take(const std::string& gpu) {
  auto& idle = idle_[gpu];
  if (!idle.empty()) {
    auto w = std::move(idle.back());
    idle.pop_back();
    // One that died while idle (its parent check, an outside kill) is no worker to send to.
    if (!w->ended()) return w;
  }
  // Beside the run folders, and checked as they are: a link planted at workers/ would aim the
  // workers' logs at its target.
  check_own_folder(log_dir_);
  create_directories(log_dir_);
  const std::string log =
      (std::filesystem::path(log_dir_) / fmt::format("worker-{}.log", ++started_)).string();
  create_empty_file(log);
  return std::make_unique<Worker>(o_, gpu, log);
}

void WorkerPool::put_back(const std::string& gpu, std::unique_ptr<Worker> worker) {
  idle_[gpu].push_back(std::move(worker));
}

}  // namespace orch::sweep
