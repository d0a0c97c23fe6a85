#include "sweep/child_run.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "plan/bounded_file.h"
#include "plan/run_spec_json.h"
#include "process/child.h"
#include "process/leftovers.h"
#include "result/json_dump.h"
#include "result/result_document.h"
#include "result/run_phases.h"
#include "sweep/batch_search.h"
#include "sweep/environment_fault.h"
#include "sweep/fastest_batch_search.h"
#include "sweep/file_tail.h"
#include "sweep/sweep_paths.h"
#include "sweep/worker_pool.h"

namespace orch::sweep {
namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;
using json = nlohmann::json;

std::optional<ResultDocument> read_document(const fs::path& path) {
  // Bounded and never blocking: something else planted at the path (a FIFO, a device, a file
  // that never ends) is no document.
  std::string text;
  try {
    text = read_bounded_file(path.string(), kMaxResultDocumentBytes, "a result document");
  } catch (const BoundedReadError&) {
    return std::nullopt;
  }
  try {
    const json j = json::parse(text);
    if (j.is_object() && j.contains("status")) {
      ResultDocument doc = result_from_json(j);
      if (doc.format == kResultFormat) return doc;
    }
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

// A run, a probe that asks whether a batch fits, or one that also measures its throughput.
enum class ProbeKind { none, fit, speed };
// The header is the parent's: a child that crashed wrote none.
void complete_header(ResultDocument& doc, const RunSpec& spec, const fs::path& dir) {
  const ResultDocument header = result_from_json(run_spec_json(spec));
  if (!doc.experiment) doc.experiment = header.experiment;
  if (!doc.run) doc.run = header.run;
  if (doc.config.is_null()) doc.config = header.config;
  if (doc.swept.is_null()) doc.swept = header.swept;
  doc.format = kResultFormat;
  if (!doc.version) doc.version = kResultVersion;
  doc.work_dir = dir.string();
}

// A child that could not write its result often could not write its stderr either (a full
// disk): then the folder's free space is the only witness left.
std::string free_space_note(const fs::path& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return {};
  if (st.f_bavail == 0) return "no space left on " + dir.string();
  return {};
}

// One child process: `orch exec` for a run or a probe, with its timeout; or, with a pool, a run
// sent to a warm worker (worker_pool.h), with the same timeout, stop and crash handling.
class Attempt {
 public:
  Attempt(const ChildLaunchOptions& o, const RunSpec& spec, const std::string& gpu,
          const fs::path& dir, std::optional<std::int64_t> batch, ProbeKind kind,
          WorkerPool* pool = nullptr)
      : grace_(o.grace_s), timeout_(spec.timeout_s), dir_(dir), gpu_(gpu), pool_(pool) {
    // Every write is checked (an EnvironmentFault names the path and the error). The previous
    // attempt's result goes first: left behind, a resume would record it as this attempt's.
    check_own_folder(dir_.string());
    remove_file((dir_ / "result.json").string());
    create_directories(dir_.string());
    const fs::path spec_path = dir_ / "spec.json";
    write_file(spec_path.string(), json_dump(run_spec_json(spec), 2) + "\n");
    // A retry must not leave the previous attempt's trace behind as if it were its own.
    remove_file((dir_ / kTraceFileName).string());
    if (pool_) {
      send_to_worker(spec_path, batch, spec.profile.enabled());
      return;
    }
    process::ChildOptions c;
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
    if (kind == ProbeKind::fit) c.argv.push_back("--probe");
    if (kind == ProbeKind::speed) c.argv.push_back("--probe-speed");
    if (kind == ProbeKind::none && spec.profile.enabled()) {
      c.argv.push_back("--trace");
      c.argv.push_back((dir_ / kTraceFileName).string());
    }
    // Pinned to its GPU: the child sees exactly one device, as cuda:0.
    if (!gpu.empty()) c.env["CUDA_VISIBLE_DEVICES"] = gpu;
    c.out = process::Stdio::file((dir_ / "stdout.log").string());
    c.err = process::Stdio::file((dir_ / "stderr.log").string());
    // Made here, checked, so a log that cannot be created is named (the child reopens them).
    create_empty_file(c.out.path);
    create_empty_file(c.err.path);
    started_ = Steady::now();
    child_ = std::make_unique<process::Child>(c);
  }

  /// The attempt's document once the child has ended (or the worker has answered).
  std::optional<ResultDocument> poll() {
    if (worker_) return poll_worker();
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
      signal_group(SIGTERM);
    }
  }

 private:
  void signal_group(int sig) {
    if (worker_)
      worker_->signal_group(sig);
    else
      child_->signal_group(sig);
  }

  void send_to_worker(const fs::path& spec_path, std::optional<std::int64_t> batch, bool profiled) {
    WorkerRequest r;
    r.spec = spec_path.string();
    r.out = (dir_ / "result.json").string();
    r.stdout_log = (dir_ / "stdout.log").string();
    r.stderr_log = (dir_ / "stderr.log").string();
    if (profiled) r.trace = (dir_ / kTraceFileName).string();
    r.batch_size = batch;
    // Made here, checked, so a log that cannot be created is named (the worker reopens them).
    create_empty_file(r.stdout_log);
    create_empty_file(r.stderr_log);
    started_ = Steady::now();
    worker_ = pool_->take(gpu_);
    // A worker that cannot take it (gone between runs) is found ended by the first poll.
    (void)worker_->send(r);
  }

  std::optional<ResultDocument> poll_worker() {
    if (worker_->answered()) {
      ResultDocument doc = finish(process::ExitStatus{0, 0});
      if (worker_reusable(doc.status, !stop_reason_.empty()))
        pool_->put_back(gpu_, std::move(worker_));
      else
        worker_.reset();  // killed with its group, reaped
      return doc;
    }
    if (auto st = worker_->ended()) {
      ResultDocument doc = finish(*st);
      worker_.reset();
      return doc;
    }
    enforce_timeout();
    return std::nullopt;
  }

  // Which worker ran it, and its how-many-th run that was: the worker's pid changes when a
  // fault ended the previous one.
  void record_worker(ResultDocument& doc) const {
    if (!worker_) return;
    if (!doc.environment.is_object()) doc.environment = nlohmann::json::object();
    doc.environment["worker"] = {{"pid", static_cast<long>(worker_->pid())},
                                 {"run", worker_->runs()}};
  }

  void enforce_timeout() {
    const auto now = Steady::now();
    if (stop_reason_.empty() && now - started_ > std::chrono::duration<double>(timeout_)) {
      stop_reason_ = "timeout";
      stop_sent_ = now;
      signal_group(SIGTERM);
    } else if (!stop_reason_.empty() && !killed_ &&
               now - stop_sent_ > std::chrono::duration<double>(grace_)) {
      killed_ = true;
      signal_group(SIGKILL);
    }
  }

  // An `orch exec` killed before it could end what its program left running outside its process
  // group (a run that ignored SIGTERM past the grace, a crash) leaves those orphans to the
  // nearest child subreaper: this process, when the command made itself one
  // (cli/sweep_session.cpp). They are ended here, and named in the run's log. The other runs'
  // `orch exec` processes and the device checks are live Child objects, never touched. Returns
  // the sentence, or "" when nothing was left.
  std::string end_leftovers() {
    if (!process::is_child_subreaper()) return {};
    const auto left = process::end_leftover_children();
    if (left.empty()) return {};
    const std::string said = "the run's process left " + process::describe_leftovers(left) +
                             " running when it ended; ended them";
    try {
      append_to_file((dir_ / "stderr.log").string(), "orch: " + said + "\n");
    } catch (const EnvironmentFault&) {
      // The log only repeats it: the sentence still reaches the run's error.
    }
    return said;
  }

  ResultDocument finish(const process::ExitStatus& st) {
    // Ending leftovers takes time of its own, not the run's.
    const double process_s = std::chrono::duration<double>(Steady::now() - started_).count();
    const std::string log = (dir_ / "stderr.log").string();
    const std::string run_tail = file_tail(log);
    const std::string ended = end_leftovers();
    const std::string tail = ended.empty() ? run_tail : file_tail(log);
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
      std::string last_line = run_tail;
      while (!last_line.empty() && last_line.back() == '\n') last_line.pop_back();
      if (auto nl = last_line.rfind('\n'); nl != std::string::npos) last_line.erase(0, nl + 1);
      if (last_line.empty() && st.exit_code == kEnvironmentExitCode) {
        last_line = "it could not write its result document in " + dir_.string();
        if (const std::string note = free_space_note(dir_); !note.empty()) {
          last_line += " (" + note + "): free space and run the same command again";
        }
      }
      doc.error = "the run's process ended without a result (" + st.describe() + ")" +
                  (last_line.empty() ? "" : ": " + last_line);
    }
    if (!ended.empty() && doc.error) *doc.error += "; " + ended;
    // The process's wall time as the sweep saw it, and what of it the run did not measure itself
    // (result/run_phases.h); a run that wrote no document gets its process time alone.
    if (doc.metrics.is_null()) doc.metrics = nlohmann::json::object();
    add_process_phases(doc.metrics, process_s);
    ProcessOutcome outcome;
    if (st.signal)
      outcome.signal = st.signal;
    else
      outcome.exit_code = st.exit_code;
    outcome.stderr_tail = tail;
    doc.outcome = std::move(outcome);
    record_worker(doc);
    return doc;
  }

  double grace_, timeout_;
  fs::path dir_;
  std::string gpu_;
  WorkerPool* pool_;
  std::unique_ptr<Worker> worker_;
  Steady::time_point started_, stop_sent_;
  std::string stop_reason_;
  bool killed_ = false;
  std::unique_ptr<process::Child> child_;
};

// What a probe's document says, for the search.
ProbeMeasurement measurement_of(const ResultDocument& doc, std::string outcome, std::string note,
                                double seconds) {
  ProbeMeasurement m;
  m.outcome = std::move(outcome);
  m.note = std::move(note);
  m.seconds = seconds;
  if (m.outcome == "ok") {
    const CoreMetrics core = doc.core_metrics();
    m.images_per_s = core.images_per_s;
    m.peak_memory_bytes = core.peak_reserved_bytes;
  }
  if (doc.environment.is_object()) {
    auto it = doc.environment.find("gpu_memory_bytes");
    if (it != doc.environment.end() && it->is_number_integer())
      m.device_memory_bytes = it->get<std::int64_t>();
  }
  return m;
}

// `batch_size: auto-largest` asks for the largest batch that fits; `auto`, the fastest.
bool wants_largest_batch(const RunSpec& spec) {
  const nlohmann::json config = spec.config.json();
  auto it = config.find("batch_size");
  return it != config.end() && it->is_string() && it->get<std::string>() == "auto-largest";
}

// Whose batch a search finds: the configuration's, so that the rungs of successive halving
// (plan/halving_schedule.h: shorter runs of the same configuration) search once between them.
std::string batch_key(const RunSpec& spec) {
  const nlohmann::json config = spec.config.json();
  const auto it = config.find("search");
  if (it != config.end() && it->is_object() && it->contains("configuration"))
    return it->value("configuration", spec.hash);
  return spec.hash;
}

// A run: for `batch_size: auto`, a series of probes first, then the run itself.
class ChildRun final : public RunHandle {
 public:
  ChildRun(const ChildLaunchOptions& o, std::map<std::string, std::int64_t>& chosen,
           WorkerPool* pool, const RunSpec& spec, const std::string& gpu)
      : o_(o), chosen_(chosen), pool_(pool), spec_(spec), gpu_(gpu) {
    dir_ = fs::path(o.work_dir) / run_dir_name(spec);
    check_own_folder(dir_.string());
    // An earlier attempt's result must not outlive this attempt's probes (a resume would take
    // it for this attempt's).
    remove_file((dir_ / "result.json").string());
    if (spec.batch_size) {
      start_run(*spec.batch_size);
    } else if (auto it = chosen_.find(batch_key(spec)); it != chosen_.end()) {
      auto_ = true;
      start_run(it->second);
    } else {
      auto_ = true;
      if (wants_largest_batch(spec)) {
        search_ = std::make_unique<BatchSearch>(o.probe_start, o.probe_granularity);
      } else {
        FastestSearchOptions f;
        f.granularity = o.probe_granularity;
        f.headroom = o.batch_headroom;
        search_ = std::make_unique<FastestBatchSearch>(f);
      }
      search_started_ = Steady::now();
      start_probe();
    }
  }

  std::optional<json> poll() override {
    if (done_) return done_;
    auto doc = attempt_->poll();
    if (!doc) return std::nullopt;
    if (!probing_) return done_ = complete(std::move(*doc));
    const RunStatus status = doc->status.value_or(RunStatus::failed);
    const double seconds = std::chrono::duration<double>(Steady::now() - probe_started_).count();
    // A probe whose loss diverged still fitted in memory and was timed, which is all a probe
    // asks; the run itself will be recorded diverged.
    if (status == RunStatus::ok || status == RunStatus::oom || status == RunStatus::diverged) {
      search_->report(measurement_of(*doc, status == RunStatus::oom ? "oom" : "ok", "", seconds));
      if (search_->next()) {
        start_probe();
      } else if (auto b = search_->result()) {
        chosen_[batch_key(spec_)] = *b;
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
      search_->report(measurement_of(*doc, "failed", doc->error.value_or(""), seconds));
      if (search_->next()) {
        start_probe();
      } else {
        chosen_[batch_key(spec_)] = *search_->result();
        start_run(*search_->result());
      }
      return std::nullopt;
    }
    doc->error = fmt::format("batch_size: auto: the probe at batch {} ended with {}: {}",
                             *search_->next(), to_string(status), doc->error.value_or(""));
    // The probe that ended the search is part of its curve, with the status that ended it.
    search_->report(measurement_of(*doc, to_string(status), *doc->error, seconds));
    return done_ = complete(std::move(*doc));
  }

  void interrupt() override {
    if (attempt_) attempt_->interrupt();
  }

 private:
  void start_probe() {
    pool_->end_idle(gpu_);
    probing_ = true;
    probe_started_ = Steady::now();
    attempt_ = std::make_unique<Attempt>(
        o_, spec_, gpu_, dir_ / fmt::format("probe-b{}", *search_->next()), *search_->next(),
        search_->mode() == "fastest" ? ProbeKind::speed : ProbeKind::fit);
  }
  void start_run(std::int64_t batch) {
    if (search_ && probing_) {
      search_s_ = std::chrono::duration<double>(Steady::now() - search_started_).count();
    }
    probing_ = false;
    batch_ = batch;
    const bool in_worker = runs_in_worker(spec_);
    if (!in_worker) pool_->end_idle(gpu_);
    // The probes of `batch_size: auto` stay processes of their own: one that runs out of memory
    // is expected, and would cost a worker each time.
    attempt_ = std::make_unique<Attempt>(o_, spec_, gpu_, dir_, batch, ProbeKind::none,
                                         in_worker ? pool_ : nullptr);
  }

  json complete(ResultDocument doc) {
    complete_header(doc, spec_, dir_);
    doc.batch_auto = auto_;
    if (batch_) doc.batch_size = *batch_;
    if (search_) {
      json probes = json::array();
      for (const BatchProbe& p : search_->probes()) {
        json probe = {{"batch", p.batch}, {"fits", p.fits}, {"outcome", p.outcome}};
        if (p.images_per_s) probe["images_per_s"] = *p.images_per_s;
        if (p.peak_memory_bytes) probe["peak_memory_bytes"] = *p.peak_memory_bytes;
        if (p.seconds) probe["seconds"] = *p.seconds;
        if (!p.note.empty()) probe["note"] = p.note;
        probes.push_back(probe);
      }
      doc.batch_search = {{"mode", search_->mode()}, {"probes", probes}};
      if (search_->mode() == "fastest") doc.batch_search["headroom"] = o_.batch_headroom;
      if (search_s_) {
        doc.batch_search["search_s"] = *search_s_;
        if (doc.metrics.is_object()) doc.metrics[phase_key::kBatchSearch] = *search_s_;
      }
      if (auto b = search_->result()) doc.batch_search["chosen"] = *b;
    }
    return to_json(doc);
  }

  const ChildLaunchOptions& o_;
  std::map<std::string, std::int64_t>& chosen_;
  WorkerPool* pool_;
  RunSpec spec_;
  std::string gpu_;
  fs::path dir_;
  bool auto_ = false, probing_ = false;
  std::optional<std::int64_t> batch_;
  std::unique_ptr<AutoBatchSearch> search_;
  Steady::time_point search_started_, probe_started_;
  std::optional<double> search_s_;  // from the first probe to the start of the run
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

ChildLauncher::ChildLauncher(ChildLaunchOptions options)
    : options_(std::move(options)),
      pool_(std::make_unique<WorkerPool>(options_, options_.work_dir + "/workers")) {}

ChildLauncher::~ChildLauncher() = default;

std::unique_ptr<RunHandle> ChildLauncher::launch(const RunSpec& spec, const std::string& gpu) {
  return std::make_unique<ChildRun>(options_, chosen_, pool_.get(), spec, gpu);
}

std::optional<json> ChildLauncher::unrecorded_result(const RunSpec& spec) {
  const fs::path dir = fs::path(options_.work_dir) / run_dir_name(spec);
  std::optional<ResultDocument> doc = read_document(dir / "result.json");
  // This run's (the folder name holds only a prefix of the hash), and a finished one: not a
  // probe's, not one the environment spoiled (that one runs again).
  if (!doc || !doc->status || !doc->run || doc->run->hash != spec.hash ||
      doc->run->repeat != spec.repeat || doc->probe.value_or(false)) {
    return std::nullopt;
  }
  const RunStatus st = *doc->status;
  if (st != RunStatus::ok && st != RunStatus::failed && st != RunStatus::oom &&
      st != RunStatus::diverged) {
    return std::nullopt;
  }
  if (classify_failure(*doc) == FailureClass::environment) return std::nullopt;
  complete_header(*doc, spec, dir);
  return to_json(*doc);
}

void ChildLauncher::keep_unrecorded(const RunSpec& spec, const json& document) {
  const fs::path path = fs::path(options_.work_dir) / run_dir_name(spec) / "result.json";
  try {
    write_file_atomically(path.string(), json_dump(document, 1) + "\n");
  } catch (const EnvironmentFault&) {
    // The child's own document is still there, less what the sweep added to it.
  }
}

}  // namespace orch::sweep
