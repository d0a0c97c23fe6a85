#include "sweep/child_run.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "plan/run_spec_json.h"
#include "result/result_document.h"
#include "sweep/batch_search.h"
#include "sweep/child_process.h"
#include "sweep/sweep_paths.h"

namespace orch::sweep {
namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;
using json = nlohmann::json;

std::optional<ResultDocument> read_document(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    const json j = json::parse(in);
    if (j.is_object() && j.contains("status")) {
      ResultDocument doc = result_from_json(j);
      if (doc.format == kResultFormat) return doc;
    }
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

// One child process: `orch exec` for a run or a probe, with its timeout.
class Attempt {
 public:
  Attempt(const ChildLaunchOptions& o, const RunSpec& spec, const std::string& gpu,
          const fs::path& dir, std::optional<std::int64_t> batch, bool probe)
      : grace_(o.grace_s), timeout_(spec.timeout_s), dir_(dir) {
    fs::create_directories(dir_);
    const fs::path spec_path = dir_ / "spec.json";
    {
      std::ofstream out(spec_path);
      out << run_spec_json(spec).dump(2) << "\n";
    }
    fs::remove(dir_ / "result.json");
    // A retry must not leave the previous attempt's trace behind as if it were its own.
    fs::remove(dir_ / kTraceFileName);
    ChildOptions c;
    c.argv = {o.orch_binary};
    for (const auto& p : o.plugin_paths) {
      c.argv.push_back("--plugin-path");
      c.argv.push_back(p);
    }
    c.argv.insert(c.argv.end(),
                  {"exec", "--spec", spec_path.string(), "--out", (dir_ / "result.json").string(),
                   "--parent-pid", std::to_string(::getpid())});
    if (batch) {
      c.argv.push_back("--batch-size");
      c.argv.push_back(std::to_string(*batch));
    }
    if (probe) c.argv.push_back("--probe");
    if (!probe && spec.profile.enabled()) {
      c.argv.push_back("--trace");
      c.argv.push_back((dir_ / kTraceFileName).string());
    }
    // Pinned to its GPU: the child sees exactly one device, as cuda:0.
    if (!gpu.empty()) c.env["CUDA_VISIBLE_DEVICES"] = gpu;
    c.stdout_path = (dir_ / "stdout.log").string();
    c.stderr_path = (dir_ / "stderr.log").string();
    started_ = Steady::now();
    child_ = std::make_unique<ChildProcess>(c);
  }

  /// The attempt's document once the child has ended.
  std::optional<ResultDocument> poll() {
    auto st = child_->poll();
    if (!st) {
      enforce_timeout();
      return std::nullopt;
    }
    return finish(*st);
  }

  void interrupt() {
    if (stop_reason_.empty()) {
      stop_reason_ = "interrupted";
      stop_sent_ = Steady::now();
      child_->signal_group(SIGTERM);
    }
  }

 private:
  void enforce_timeout() {
    const auto now = Steady::now();
    if (stop_reason_.empty() && now - started_ > std::chrono::duration<double>(timeout_)) {
      stop_reason_ = "timeout";
      stop_sent_ = now;
      child_->signal_group(SIGTERM);
    } else if (!stop_reason_.empty() && !killed_ &&
               now - stop_sent_ > std::chrono::duration<double>(grace_)) {
      killed_ = true;
      child_->signal_group(SIGKILL);
    }
  }

  ResultDocument finish(const ExitStatus& st) {
    const std::string tail = file_tail((dir_ / "stderr.log").string());
    std::optional<ResultDocument> written = read_document(dir_ / "result.json");
    ResultDocument doc = written ? *written : ResultDocument{};
    if (stop_reason_ == "timeout") {
      doc.status = RunStatus::timeout;
      doc.error = fmt::format(
          "no result within the timeout of {:.0f} s: sent SIGTERM{}", timeout_,
          killed_ ? fmt::format(", then SIGKILL after {:.0f} s", grace_) : std::string());
    } else if (stop_reason_ == "interrupted") {
      doc.status = RunStatus::interrupted;
      doc.error = "the sweep was stopped (SIGINT/SIGTERM) while this run was in progress";
    } else if (!written) {
      doc.status = RunStatus::failed;
      std::string last_line = tail;
      while (!last_line.empty() && last_line.back() == '\n') last_line.pop_back();
      if (auto nl = last_line.rfind('\n'); nl != std::string::npos) last_line.erase(0, nl + 1);
      doc.error = "the run's process ended without a result (" + st.describe() + ")" +
                  (last_line.empty() ? "" : ": " + last_line);
    }
    ProcessOutcome outcome;
    if (st.signal)
      outcome.signal = st.signal;
    else
      outcome.exit_code = st.exit_code;
    outcome.stderr_tail = tail;
    doc.outcome = std::move(outcome);
    return doc;
  }

  double grace_, timeout_;
  fs::path dir_;
  Steady::time_point started_, stop_sent_;
  std::string stop_reason_;
  bool killed_ = false;
  std::unique_ptr<ChildProcess> child_;
};

// A run: for `batch_size: auto`, a series of probes first, then the run itself.
class ChildRun final : public RunHandle {
 public:
  ChildRun(const ChildLaunchOptions& o, std::map<std::string, std::int64_t>& chosen,
           const RunSpec& spec, const std::string& gpu)
      : o_(o), chosen_(chosen), spec_(spec), gpu_(gpu) {
    dir_ = fs::path(o.work_dir) / run_dir_name(spec);
    if (spec.batch_size) {
      start_run(*spec.batch_size);
    } else if (auto it = chosen_.find(spec.hash); it != chosen_.end()) {
      auto_ = true;
      start_run(it->second);
    } else {
      auto_ = true;
      search_.emplace(o.probe_start, o.probe_granularity);
      start_probe();
    }
  }

  std::optional<json> poll() override {
    if (done_) return done_;
    auto doc = attempt_->poll();
    if (!doc) return std::nullopt;
    if (!probing_) return done_ = complete(std::move(*doc));
    const RunStatus status = doc->status.value_or(RunStatus::failed);
    // A probe whose loss diverged still fitted in memory, which is all a probe asks; the run
    // itself will be recorded diverged.
    if (status == RunStatus::ok || status == RunStatus::oom || status == RunStatus::diverged) {
      search_->report(status != RunStatus::oom);
      if (search_->next()) {
        start_probe();
      } else if (auto b = search_->result()) {
        chosen_[spec_.hash] = *b;
        start_run(*b);
      } else {
        doc->status = RunStatus::oom;
        doc->error = fmt::format("batch_size: auto: even a batch of {} does not fit",
                                 search_->probes().back().batch);
        return done_ = complete(std::move(*doc));
      }
      return std::nullopt;
    }
    // Near the memory limit, memory exhaustion does not always surface as out-of-memory:
    // cuDNN reports CUDNN_STATUS_INTERNAL_ERROR when it cannot get its workspace (a ResNet50 in
    // bf16 between a batch that fitted and one that ran out of memory, for instance). A
    // probe that fails with an error above a batch that fitted is therefore "does not fit",
    // with the error kept; a crash, a hang or a failure before anything fitted ends the run.
    // Exit code 0: the child wrote the failure itself (an exception, not a crash).
    const bool exception = doc->outcome && doc->outcome->exit_code == 0;
    if (status == RunStatus::failed && exception && search_->result()) {
      search_->report(false, doc->error.value_or(""));
      if (search_->next()) {
        start_probe();
      } else {
        chosen_[spec_.hash] = *search_->result();
        start_run(*search_->result());
      }
      return std::nullopt;
    }
    doc->error = fmt::format("batch_size: auto: the probe at batch {} ended with {}: {}",
                             *search_->next(), to_string(status), doc->error.value_or(""));
    return done_ = complete(std::move(*doc));
  }

  void interrupt() override {
    if (attempt_) attempt_->interrupt();
  }

 private:
  void start_probe() {
    probing_ = true;
    attempt_ = std::make_unique<Attempt>(o_, spec_, gpu_,
                                         dir_ / fmt::format("probe-b{}", *search_->next()),
                                         *search_->next(), /*probe=*/true);
  }
  void start_run(std::int64_t batch) {
    probing_ = false;
    batch_ = batch;
    attempt_ = std::make_unique<Attempt>(o_, spec_, gpu_, dir_, batch, /*probe=*/false);
  }

  json complete(ResultDocument doc) {
    // The header is the parent's: a child that crashed wrote none.
    const ResultDocument header = result_from_json(run_spec_json(spec_));
    if (!doc.experiment) doc.experiment = header.experiment;
    if (!doc.run) doc.run = header.run;
    if (doc.config.is_null()) doc.config = header.config;
    if (doc.swept.is_null()) doc.swept = header.swept;
    doc.format = kResultFormat;
    if (!doc.version) doc.version = kResultVersion;
    doc.batch_auto = auto_;
    if (batch_) doc.batch_size = *batch_;
    if (search_) {
      json probes = json::array();
      for (const auto& p : search_->probes()) {
        json probe = {{"batch", p.batch}, {"fits", p.fits}};
        if (!p.note.empty()) probe["note"] = p.note;
        probes.push_back(probe);
      }
      doc.batch_search = {{"probes", probes}};
      if (auto b = search_->result()) doc.batch_search["chosen"] = *b;
    }
    doc.work_dir = dir_.string();
    return to_json(doc);
  }

  const ChildLaunchOptions& o_;
  std::map<std::string, std::int64_t>& chosen_;
  RunSpec spec_;
  std::string gpu_;
  fs::path dir_;
  bool auto_ = false, probing_ = false;
  std::optional<std::int64_t> batch_;
  std::optional<BatchSearch> search_;
  std::unique_ptr<Attempt> attempt_;
  std::optional<json> done_;
};

}  // namespace

std::string sweep_work_dir(const std::string& db, const std::string& sweep) {
  return db + ".runs/" + sweep_file_component(sweep);
}

std::string run_dir_name(const RunSpec& spec) {
  return fmt::format("{}-r{}", spec.hash.substr(0, std::min<std::size_t>(12, spec.hash.size())),
                     spec.repeat);
}

ChildLauncher::ChildLauncher(ChildLaunchOptions options) : options_(std::move(options)) {}

std::unique_ptr<RunHandle> ChildLauncher::launch(const RunSpec& spec, const std::string& gpu) {
  return std::make_unique<ChildRun>(options_, chosen_, spec, gpu);
}

}  // namespace orch::sweep
