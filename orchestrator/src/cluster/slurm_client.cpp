#include "cluster/slurm_client.h"

#include <fmt/format.h>

#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cluster/shell.h"
#include "cluster/submission.h"
#include "result/run_status.h"

namespace orch::cluster {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

FollowResult tally_runs(storage::Store& store, std::int64_t sweep_id,
                        const std::set<std::pair<std::string, int>>& keys) {
  FollowResult r;
  const auto states = store.run_states(sweep_id);
  for (const auto& key : keys) {
    auto it = states.find(key);
    if (it == states.end() || !is_finished(it->second.status, false)) {
      ++r.unfinished;
    } else if (parse_run_status(it->second.status) == RunStatus::ok) {
      ++r.ok;
    } else {
      ++r.not_ok;
    }
  }
  return r;
}

std::string sbatch(const std::string& script_path) {
  auto r = run_capture({"sbatch", "--parsable", script_path});
  std::string out = trim(r.output);
  if (r.exit_code != 0) {
    throw std::runtime_error(fmt::format("sbatch failed (exit {}): {}", r.exit_code, out));
  }
  // --parsable prints `jobid[;cluster]`, possibly after warnings on earlier lines.
  if (auto nl = out.rfind('\n'); nl != std::string::npos) out.erase(0, nl + 1);
  if (auto semi = out.find(';'); semi != std::string::npos) out.erase(semi);
  if (out.empty() || out.find_first_not_of("0123456789") != std::string::npos) {
    throw std::runtime_error("sbatch printed no job id: " + trim(r.output));
  }
  return out;
}

std::optional<std::size_t> squeue_lines(const std::string& job_id) {
  auto r = run_capture({"squeue", "-h", "-j", job_id, "-o", "%i %T"});
  if (r.exit_code != 0) {
    // Once the job is purged from the controller's memory, squeue calls the id invalid.
    if (r.output.find("Invalid job id") != std::string::npos) return 0;
    return std::nullopt;
  }
  std::size_t lines = 0;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (!trim(line).empty()) ++lines;
  }
  return lines;
}

std::string sacct_states(const std::string& job_id) {
  auto r = run_capture({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,ExitCode"});
  return r.exit_code == 0 ? trim(r.output) : std::string();
}

FollowResult follow_job(storage::Store& store, Ingester& ingester, std::int64_t sweep_id,
                        const std::string& dir, const std::string& job_id,
                        const std::set<std::pair<std::string, int>>& keys,
                        std::chrono::milliseconds interval, std::ostream& out,
                        const std::atomic<bool>& stop) {
  const auto started = std::chrono::steady_clock::now();
  std::size_t last_done = static_cast<std::size_t>(-1), malformed = 0;
  int squeue_failures = 0;
  bool stopped = false;
  for (;;) {
    const auto queued = squeue_lines(job_id);
    const IngestReport rep = ingester.ingest(dir);
    for (const auto& m : rep.malformed) out << "malformed result document: " << m << "\n";
    malformed += rep.malformed.size();
    const FollowResult now = tally_runs(store, sweep_id, keys);
    const std::size_t done = now.ok + now.not_ok;
    if (done != last_done) {
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::steady_clock::now() - started)
                            .count();
      out << fmt::format("[{}/{}] ok {}, not ok {} | job {}: {} | elapsed {}:{:02}\n", done,
                         keys.size(), now.ok, now.not_ok, job_id,
                         queued ? fmt::format("{} queue entries", *queued) : "squeue failed",
                         secs / 60, secs % 60)
          << std::flush;
      last_done = done;
    }
    if (queued && *queued == 0) break;
    squeue_failures = queued ? 0 : squeue_failures + 1;
    if (squeue_failures >= 10) {
      out << "squeue failed 10 times in a row; stopped following job " << job_id << "\n";
      stopped = true;
      break;
    }
    if (stop.load()) {
      out << "stopped following job " << job_id << " (it keeps running; `orch ingest " << dir
          << "` loads its results later)\n";
      stopped = true;
      break;
    }
    std::this_thread::sleep_for(interval);
  }
  // Documents written between the last listing and the job's end.
  const IngestReport last = ingester.ingest(dir);
  for (const auto& m : last.malformed) out << "malformed result document: " << m << "\n";
  FollowResult result = tally_runs(store, sweep_id, keys);
  result.malformed = malformed + last.malformed.size();
  result.stopped = stopped;
  if (result.unfinished > 0 && !stopped) {
    out << fmt::format(
        "{} runs have no final result (interrupted, or the task ended without a "
        "document); run the same command again to submit them again\n",
        result.unfinished);
    const std::string states = sacct_states(job_id);
    if (!states.empty()) out << "sacct:\n" << states << "\n";
  }
  return result;
}

}  // namespace orch::cluster
