// The sweep loop: one run per GPU slot at a time, polled without blocking.
#include "sweep/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <numeric>
#include <ostream>
#include <thread>

#include "plan/run_spec_json.h"
#include "result/failure_class.h"
#include "result/result_document.h"
#include "sweep/environment_fault.h"
#include "sweep/progress.h"
#include "text/terminal_text.h"

namespace orch::sweep {

Clock::time_point SteadyClock::now() const { return Clock::now(); }
void SteadyClock::sleep_for(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

int SweepSummary::exit_code() const {
  if (!environment_fault.empty()) return kEnvironmentExitCode;
  if (interrupted || deferred > 0) return 3;
  return failed > 0 || skipped > 0 || already_not_ok > 0 ? 1 : 0;
}

double cost_proxy(const RunSpec& spec) {
  const double steps = static_cast<double>(spec.warmup_steps + spec.measure_steps);
  const double batch = static_cast<double>(spec.batch_size.value_or(256));
  double pixels = 224.0 * 224.0;
  if (spec.data.params.has("image_size")) {
    const double side = spec.data.params.get_float("image_size");
    pixels = side * side;
  }
  double factor = 1.0;  // AMP
  if (spec.precision.plugin == "fp32")
    factor = 4.0;
  else if (spec.precision.plugin == "tf32")
    factor = 1.5;
  return steps * batch * pixels * factor;
}

namespace {

using Key = std::pair<std::string, int>;

struct Slot {
  std::string gpu;
  int consecutive_failures = 0;  ///< device failures in a row
  bool retired = false;
  std::unique_ptr<RunHandle> handle;
  std::unique_ptr<CheckHandle> check;  ///< a health check in flight: no run starts meanwhile
  std::string check_reason;            ///< why it is being checked
  const RunSpec* spec = nullptr;
  std::int64_t id = 0;
  Clock::time_point started, last_heartbeat;
};

std::string slot_label(const std::string& gpu) { return gpu.empty() ? "cpu" : "gpu " + gpu; }

// A document the sweep writes itself, for a run that did not write one.
ResultDocument sweep_document(const RunSpec& spec, RunStatus status, const std::string& error) {
  ResultDocument doc = result_from_json(run_spec_json(spec));
  doc.format = kResultFormat;
  doc.version = kResultVersion;
  doc.status = status;
  doc.error = error;
  return doc;
}

class Loop {
 public:
  Loop(const SweepOptions& o, Launcher& l, Recorder& r, SweepClock& c, std::ostream& out)
      : opt_(o), launcher_(l), recorder_(r), clock_(c), out_(out) {
    for (const auto& g : opt_.gpus) slots_.emplace_back().gpu = g;
  }

  SweepSummary run(const std::vector<RunSpec>& runs, const std::atomic<bool>& stop) {
    start_ = clock_.now();
    summary_.total = static_cast<int>(runs.size());
    if (!write([&] { select_pending(runs); })) return summary_;
    out_ << fmt::format("sweep: {} runs, {} already finished, {} to run on {}\n", runs.size(),
                        summary_.already_done, pending_.size(), slots_description());
    bool interrupting = false;
    for (;;) {
      const bool fault = !summary_.environment_fault.empty();
      if ((stop.load() || fault) && !interrupting) {
        interrupting = true;
        summary_.interrupted = !fault;
        out_ << (fault ? "sweep: stopping (environment fault): interrupting running runs, "
                         "starting no more\n"
                       : "sweep: stopping (signal): interrupting running runs, starting no more\n");
        for (auto& s : slots_) {
          if (s.handle) s.handle->interrupt();
          s.check.reset();  // its verdict no longer matters; the process is killed
        }
      }
      collect_finished();
      if (!interrupting) start_runs();
      if (!interrupting && summary_.environment_fault.empty() && !pending_.empty() &&
          std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.retired; })) {
        skip_remaining();
      }
      const bool busy = std::any_of(slots_.begin(), slots_.end(),
                                    [](const Slot& s) { return s.handle || s.check; });
      if (!busy && (pending_.empty() || interrupting)) break;
      send_heartbeats();
      clock_.sleep_for(opt_.poll_interval);
    }
    // Runs never started (signal, deadline) stay unrecorded: running the command again runs them.
    summary_.time.wall_s = std::chrono::duration<double>(clock_.now() - start_).count();
    summary_.time.slots = static_cast<int>(slots_.size());
    summary_.time.cpu = slots_.size() == 1 && slots_.front().gpu.empty();
    return summary_;
  }

 private:
  void select_pending(const std::vector<RunSpec>& runs) {
    const auto prior = recorder_.prior_runs();
    for (const RunSpec& spec : runs) {
      auto it = prior.find(Key{spec.hash, spec.repeat});
      if (it != prior.end()) {
        const std::optional<RunStatus> st = parse_run_status(it->second.status);
        // A pruned run measured what its rung asked (sweep/halving.h): done, and no failure.
        const bool measured = st == RunStatus::ok || st == RunStatus::pruned;
        if (measured || (st && is_final_failure(*st) && !opt_.retry_failed)) {
          ++summary_.already_done;
          if (!measured) ++summary_.already_not_ok;
          continue;
        }
        if (st == RunStatus::running) {
          if (record_unrecorded(spec)) continue;
          recorder_.mark_stale(spec, "left running by an orch process that is gone");
        }
      }
      pending_.push_back(&spec);
    }
    // In rounds, as asv runs its repeats: every configuration once, then again, so a GPU that
    // warms up or a neighbour that starts halfway lands on every configuration alike instead of
    // on the repeats of one.
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const RunSpec* a, const RunSpec* b) { return a->repeat < b->repeat; });
    if (opt_.fast_first) order_fast_first();
  }

  // A run left `running` whose process did finish, with its complete result on disk (the
  // database could not record it then): recorded now instead of being run again.
  bool record_unrecorded(const RunSpec& spec) {
    std::optional<nlohmann::json> left = launcher_.unrecorded_result(spec);
    if (!left) return false;
    ResultDocument doc = result_from_json(*left);
    if (!doc.failure_class) doc.failure_class = classify_failure(doc);
    // The id is the store's business: the document names its run (sweep, hash, repeat).
    recorder_.finish(0, to_json(doc));
    ++summary_.already_done;
    ++summary_.recovered;
    if (!doc.ok()) ++summary_.already_not_ok;
    out_ << fmt::format("  recorded {} (repeat {}): {}, its result was complete on disk\n",
                        terminal_text(spec.name), spec.repeat,
                        doc.status ? to_string(*doc.status) : "?");
    return true;
  }

  // Measured durations where every pending run has one; otherwise the cost proxy for all
  // (seconds and proxy units must not be mixed in one ordering).
  void order_fast_first() {
    std::map<const RunSpec*, double> key;
    bool all_measured = true;
    for (const RunSpec* s : pending_) {
      auto d = recorder_.measured_duration_s(*s);
      if (!d) all_measured = false;
      key[s] = d.value_or(0);
    }
    if (!all_measured)
      for (const RunSpec* s : pending_) key[s] = cost_proxy(*s);
    // Fastest first within each round.
    std::stable_sort(pending_.begin(), pending_.end(), [&](const RunSpec* a, const RunSpec* b) {
      return std::make_pair(a->repeat, key[a]) < std::make_pair(b->repeat, key[b]);
    });
  }

  std::optional<double> estimate_s(const RunSpec& spec) {
    if (auto d = recorder_.measured_duration_s(spec)) return d;
    if (durations_.empty()) return std::nullopt;
    return std::accumulate(durations_.begin(), durations_.end(), 0.0) /
           static_cast<double>(durations_.size());
  }

  void start_runs() {
    for (auto& slot : slots_) {
      if (slot.handle || slot.check || slot.retired) continue;
      while (!pending_.empty() && summary_.environment_fault.empty()) {
        const RunSpec& spec = *pending_.front();
        pending_.pop_front();
        if (opt_.deadline && !fits_before_deadline(spec)) continue;
        launch(slot, spec);
        break;
      }
    }
  }

  bool fits_before_deadline(const RunSpec& spec) {
    const auto now = clock_.now();
    const auto est = estimate_s(spec);
    const bool fits = est ? now + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(*est)) <=
                                *opt_.deadline
                          : now < *opt_.deadline;
    if (!fits) {
      ++summary_.deferred;
      out_ << fmt::format("  deferred {} (repeat {}): {} before the deadline\n",
                          terminal_text(spec.name), spec.repeat,
                          est ? fmt::format("needs ~{} and would not finish", format_duration(*est))
                              : std::string("no time left"));
    }
    return fits;
  }

  void launch(Slot& slot, const RunSpec& spec) {
    slot.spec = &spec;
    // Not begun: it stays unrecorded, and running the command again runs it.
    if (!write([&] { slot.id = recorder_.begin(spec, slot.gpu); })) return;
    slot.started = slot.last_heartbeat = clock_.now();
    out_ << fmt::format("  start {} (repeat {}) on {}\n", terminal_text(spec.name), spec.repeat,
                        slot_label(slot.gpu))
         << std::flush;
    try {
      slot.handle = launcher_.launch(spec, slot.gpu);
    } catch (const std::exception& e) {
      // The run's files could not be written, or its process not started: the machine's
      // fault, never the configuration's.
      ResultDocument doc = sweep_document(spec, RunStatus::failed,
                                          std::string("could not start the run: ") + e.what());
      doc.failure_class = FailureClass::environment;
      finish(slot, doc);
    }
  }

  void collect_finished() {
    for (auto& slot : slots_) {
      if (slot.check) {
        if (auto verdict = slot.check->poll()) {
          slot.check.reset();
          judge(slot, *verdict);
        }
        continue;
      }
      if (!slot.handle) continue;
      std::optional<nlohmann::json> doc;
      try {
        doc = slot.handle->poll();
      } catch (const EnvironmentFault& e) {  // the next batch probe's files, for one
        slot.handle.reset();
        ResultDocument spoiled = sweep_document(*slot.spec, RunStatus::failed, e.what());
        spoiled.failure_class = FailureClass::environment;
        finish(slot, spoiled);
        continue;
      }
      if (!doc) continue;
      slot.handle.reset();
      finish(slot, result_from_json(*doc));
    }
  }

  // A finished run's share of the invocation's time: its phases when it measured, else the
  // slot time it took.
  void count_time(const ResultDocument& doc, double elapsed) {
    const auto phases = run_phases(doc.metrics);
    if (phases && phases->measure_s > 0) {
      summary_.time.phases += *phases;
      ++summary_.time.runs;
    } else {
      summary_.time.unmeasured_s += elapsed;
    }
  }

  void finish(Slot& slot, ResultDocument doc) {
    const RunSpec& spec = *slot.spec;
    const double elapsed = std::chrono::duration<double>(clock_.now() - slot.started).count();
    if (!doc.duration_s) doc.duration_s = elapsed;
    doc.gpu = slot.gpu;
    if (!doc.failure_class) doc.failure_class = classify_failure(doc);
    if (doc.failure_class == FailureClass::environment) {
      // Spoiled by its surroundings, not finished: recorded `interrupted`, so that a plain
      // resume runs it again once the fault is fixed; and nothing more starts meanwhile.
      environment_fault(doc.error.value_or("an environment fault"), /*database=*/false);
      doc.status = RunStatus::interrupted;
    } else if (doc.status == RunStatus::interrupted && !summary_.environment_fault.empty()) {
      doc.error = "the sweep stopped on an environment fault while this run was in progress (" +
                  summary_.environment_fault + ")";
    }
    const nlohmann::json document = to_json(doc);
    if (!write([&] { recorder_.finish(slot.id, document); }) &&
        doc.status != RunStatus::interrupted) {
      launcher_.keep_unrecorded(spec, document);
      out_ << fmt::format(
          "  {} (repeat {}) finished but could not be recorded: its result is kept in its "
          "folder, and running the same command again records it\n",
          terminal_text(spec.name), spec.repeat);
    }
    const RunStatus status = doc.status.value_or(RunStatus::failed);
    count_time(doc, elapsed);
    if (status == RunStatus::interrupted) {
      out_ << fmt::format("  interrupted {} (repeat {})\n", terminal_text(spec.name), spec.repeat);
      return;
    }
    durations_.push_back(elapsed);
    if (status == RunStatus::ok) {
      ++summary_.ok;
      slot.consecutive_failures = 0;
      const double ips = doc.core_metrics().images_per_s.value_or(0.0);
      if (!best_ || ips > best_->second) best_ = {spec.name, ips};
    } else {
      ++summary_.failed;
      if (status == RunStatus::diverged) ++summary_.diverged;
      // Only the device's failures count; any other outcome shows the device ran it.
      if (doc.failure_class == FailureClass::device)
        ++slot.consecutive_failures;
      else
        slot.consecutive_failures = 0;
    }
    ProgressState p;
    p.done = summary_.already_done + summary_.ok + summary_.failed + summary_.skipped;
    p.total = summary_.total;
    p.failures = summary_.failed;
    p.diverged = summary_.diverged;
    p.elapsed_s = std::chrono::duration<double>(clock_.now() - start_).count();
    p.remaining = static_cast<int>(pending_.size()) + busy_count();
    p.mean_run_s = std::accumulate(durations_.begin(), durations_.end(), 0.0) /
                   static_cast<double>(durations_.size());
    p.parallel = std::max(1, active_slots());
    if (best_) p.best = *best_;
    out_ << format_progress(p, spec.name, spec.repeat, slot_label(slot.gpu), doc) << std::endl;

    if (doc.gpu_lost()) {
      // NVML's own verdict: no process of ours could do better.
      const std::string why = "the GPU was lost (NVML: GPU_IS_LOST)";
      write([&] { recorder_.device_checked(slot.gpu, {false, why}); });
      retire(slot, why);
    } else if (slot.consecutive_failures >= opt_.max_consecutive_failures) {
      check_health(slot, fmt::format("{} consecutive runs failed on it with device errors",
                                     slot.consecutive_failures));
    }
  }

  // Before a slot is retired, a fresh process checks its device; a healthy one stays in use.
  void check_health(Slot& slot, const std::string& why) {
    if (!opt_.device_checker) {
      retire(slot, why);
      return;
    }
    out_ << fmt::format("sweep: {} on {}: checking its health in a fresh process\n", why,
                        slot_label(slot.gpu))
         << std::flush;
    slot.check_reason = why;
    try {
      slot.check = opt_.device_checker->start(slot.gpu);
    } catch (const std::exception& e) {
      environment_fault(std::string("could not start the health check: ") + e.what(), false);
    }
  }

  void judge(Slot& slot, const DeviceVerdict& verdict) {
    write([&] { recorder_.device_checked(slot.gpu, verdict); });
    out_ << fmt::format("sweep: health check of {}: {}{}\n", slot_label(slot.gpu),
                        verdict.healthy ? "healthy" : "unhealthy",
                        verdict.detail.empty() ? "" : ": " + terminal_text(verdict.detail));
    if (verdict.healthy) {
      slot.consecutive_failures = 0;
    } else {
      retire(slot, slot.check_reason + ", and its health check failed" +
                       (verdict.detail.empty() ? "" : " (" + verdict.detail + ")"));
    }
  }

  // Every write to the recorder goes through here: an environment fault stops the sweep
  // instead of failing it, and once the database itself cannot be written, nothing more is
  // tried there (each attempt could wait out the busy timeout again). False: not written.
  template <typename F>
  bool write(F&& f) {
    if (database_unwritable_) return false;
    try {
      f();
      return true;
    } catch (const EnvironmentFault& e) {
      environment_fault(e.what(), e.database());
      return false;
    }
  }

  void environment_fault(const std::string& what, bool database) {
    if (database) database_unwritable_ = true;
    if (!summary_.environment_fault.empty()) return;
    summary_.environment_fault = what;
    out_ << "sweep: environment fault: " << terminal_text(what) << "\n" << std::flush;
  }

  void retire(Slot& slot, const std::string& why) {
    slot.retired = true;
    retire_reasons_.push_back(slot_label(slot.gpu) + ": " + why);
    out_ << fmt::format("sweep: no longer using {}: {}\n", slot_label(slot.gpu), why);
  }

  void skip_remaining() {
    std::string why = "no usable GPU left (";
    for (std::size_t i = 0; i < retire_reasons_.size(); ++i) {
      why += (i ? "; " : "") + retire_reasons_[i];
    }
    why += ")";
    for (const RunSpec* spec : pending_) {
      if (!write([&] {
            const std::int64_t id = recorder_.begin(*spec, "");
            recorder_.finish(id, to_json(sweep_document(*spec, RunStatus::skipped, why)));
          }))
        break;
      ++summary_.skipped;
    }
    out_ << fmt::format("sweep: {} runs recorded as skipped: {}\n", summary_.skipped, why);
    pending_.clear();
  }

  void send_heartbeats() {
    const auto now = clock_.now();
    for (auto& slot : slots_) {
      if (slot.handle && now - slot.last_heartbeat >= opt_.heartbeat_interval) {
        write([&] { recorder_.heartbeat(slot.id); });
        slot.last_heartbeat = now;
      }
    }
  }

  int busy_count() const {
    return static_cast<int>(
        std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return bool(s.handle); }));
  }
  int active_slots() const {
    return static_cast<int>(
        std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.retired; }));
  }
  std::string slots_description() const {
    std::string out;
    for (const auto& s : slots_) out += (out.empty() ? "" : ", ") + slot_label(s.gpu);
    return out;
  }

  const SweepOptions& opt_;
  Launcher& launcher_;
  Recorder& recorder_;
  SweepClock& clock_;
  std::ostream& out_;
  std::vector<Slot> slots_;
  std::deque<const RunSpec*> pending_;
  std::vector<double> durations_;
  std::optional<std::pair<std::string, double>> best_;
  std::vector<std::string> retire_reasons_;
  Clock::time_point start_;
  SweepSummary summary_;
  bool database_unwritable_ = false;
};

}  // namespace

SweepSummary run_sweep(const std::vector<RunSpec>& runs, const SweepOptions& options,
                       Launcher& launcher, Recorder& recorder, SweepClock& clock,
                       std::ostream& progress, const std::atomic<bool>& stop) {
  if (options.gpus.empty()) throw std::invalid_argument("run_sweep: no GPU slot to run on");
  Loop loop(options, launcher, recorder, clock, progress);
  return loop.run(runs, stop);
}

}  // namespace orch::sweep
