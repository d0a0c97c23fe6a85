// Successive halving over the scheduler (see halving.h).
#include "sweep/halving.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <ostream>

#include "analysis/statistics.h"
#include "result/run_status.h"
#include "sweep/environment_fault.h"
#include "text/terminal_text.h"

namespace orch::sweep {
namespace {

using Prior = std::map<std::pair<std::string, int>, PriorRun>;

// A configuration of the plan: its first run (repeat 0) and how many repeats it has in full.
struct Config {
  const RunSpec* full = nullptr;
  int repeats = 0;
};

std::vector<Config> configurations(const Plan& plan) {
  std::vector<Config> out;
  std::map<std::string, std::size_t> index;
  for (const RunSpec& run : plan.runs) {
    auto [it, fresh] = index.emplace(run.hash, out.size());
    if (fresh) out.push_back({&run, 0});
    ++out[it->second].repeats;
  }
  return out;
}

// The runs of `config` in rung k: the plan's own runs in the last rung, shorter ones before.
std::vector<RunSpec> runs_in_rung(const Plan& plan, const Config& c, const HalvingSchedule& s,
                                  int k) {
  std::vector<RunSpec> out;
  const Rung& rung = s.rungs[static_cast<std::size_t>(k)];
  if (rung.last) {
    for (const RunSpec& r : plan.runs)
      if (r.hash == c.full->hash) out.push_back(r);
    return out;
  }
  for (int rep = 0; rep < rung.repeats; ++rep) out.push_back(rung_run(*c.full, s, k, rep));
  return out;
}

bool measured(const Prior& prior, const RunSpec& run) {
  const auto it = prior.find({run.hash, run.repeat});
  if (it == prior.end()) return false;
  const auto st = parse_run_status(it->second.status);
  return (st == RunStatus::ok || st == RunStatus::pruned) && it->second.images_per_s;
}

// Every run has an outcome that a resume would keep: measured, or a final failure.
bool finished(const Prior& prior, const std::vector<RunSpec>& runs) {
  return std::all_of(runs.begin(), runs.end(), [&](const RunSpec& r) {
    const auto it = prior.find({r.hash, r.repeat});
    if (it == prior.end()) return false;
    const auto st = parse_run_status(it->second.status);
    return st && (*st == RunStatus::ok || *st == RunStatus::pruned || is_final_failure(*st));
  });
}

RungEntrant entrant(const Config& c, const std::vector<RunSpec>& runs, const Prior& prior) {
  RungEntrant e{c.full->hash, c.full->name, {}, true};
  for (const RunSpec& r : runs) {
    if (!measured(prior, r)) {
      e.measured = false;
      e.images_per_s.clear();
      break;
    }
    e.images_per_s.push_back(*prior.at({r.hash, r.repeat}).images_per_s);
  }
  return e;
}

void add(SweepSummary& total, const SweepSummary& s) {
  total.total += s.total;
  total.already_done += s.already_done;
  total.already_not_ok += s.already_not_ok;
  total.ok += s.ok;
  total.failed += s.failed;
  total.diverged += s.diverged;
  total.skipped += s.skipped;
  total.deferred += s.deferred;
  total.interrupted = total.interrupted || s.interrupted;
  total.recovered += s.recovered;
  if (total.environment_fault.empty()) total.environment_fault = s.environment_fault;
  total.time.wall_s += s.time.wall_s;
  total.time.slots = s.time.slots;
  total.time.cpu = s.time.cpu;
  total.time.phases += s.time.phases;
  total.time.runs += s.time.runs;
  total.time.unmeasured_s += s.time.unmeasured_s;
}

std::string names(const std::vector<std::string>& hashes, const std::vector<Config>& configs) {
  std::string out;
  for (const std::string& h : hashes) {
    for (const Config& c : configs)
      if (c.full->hash == h) out += (out.empty() ? "" : ", ") + terminal_text(c.full->name);
  }
  return out;
}

// The state of one rung for the loop: its entrants' runs, by entrant.
struct RungRuns {
  std::vector<const Config*> entrants;
  std::vector<std::vector<RunSpec>> runs;  // per entrant
  std::vector<RunSpec> all() const {
    std::vector<RunSpec> out;
    for (const auto& r : runs) out.insert(out.end(), r.begin(), r.end());
    return out;
  }
};

// A rung already cut by an earlier invocation: some of its runs pruned, or runs of the next
// rung recorded (not the last rung's: a grid's revision of the sweep may have made those).
// Its survivors are then read back, never decided again, so that failures run again with
// --retry-failed cannot change a cut whose survivors already ran on.
bool already_cut(const RungRuns& rung, const std::vector<Config>& configs, const Plan& plan,
                 const HalvingSchedule& s, int k, const Prior& prior) {
  for (const auto& runs : rung.runs)
    for (const RunSpec& r : runs) {
      const auto it = prior.find({r.hash, r.repeat});
      if (it != prior.end() && it->second.status == "pruned") return true;
    }
  if (k + 2 >= s.count()) return false;
  for (const Config& c : configs)
    for (const RunSpec& r : runs_in_rung(plan, c, s, k + 1))
      if (prior.count({r.hash, r.repeat})) return true;
  return false;
}

// Decides (or reads back) the cut of a finished rung k; records the dropped runs `pruned`.
RungCut cut(const RungRuns& rung, const std::vector<Config>& configs, const Plan& plan,
            const HalvingSchedule& s, int k, Recorder& recorder) {
  const Prior prior = recorder.prior_runs();
  std::vector<RungEntrant> entrants;
  for (std::size_t i = 0; i < rung.entrants.size(); ++i)
    entrants.push_back(entrant(*rung.entrants[i], rung.runs[i], prior));
  if (already_cut(rung, configs, plan, s, k, prior)) {
    RungCut out;
    for (std::size_t i = 0; i < entrants.size(); ++i) {
      const auto& runs = rung.runs[i];
      const bool pruned = std::any_of(runs.begin(), runs.end(), [&](const RunSpec& r) {
        return prior.at({r.hash, r.repeat}).status == "pruned";
      });
      (pruned                 ? out.dropped
       : entrants[i].measured ? out.kept
                              : out.failed)
          .push_back(entrants[i].hash);
    }
    return out;
  }
  RungCut out = cut_rung(entrants, s.rungs[static_cast<std::size_t>(k)].keep);
  for (std::size_t i = 0; i < entrants.size(); ++i) {
    if (std::find(out.dropped.begin(), out.dropped.end(), entrants[i].hash) == out.dropped.end())
      continue;
    for (const RunSpec& r : rung.runs[i]) recorder.mark_pruned(r);
  }
  return out;
}

bool stopped(const SweepSummary& s) {
  return s.interrupted || s.deferred > 0 || !s.environment_fault.empty();
}

std::string rung_header(const HalvingSchedule& s, int k, const RungRuns& rung) {
  const Rung& r = s.rungs[static_cast<std::size_t>(k)];
  std::int64_t lo = 0, hi = 0;
  for (const auto& runs : rung.runs) {
    const std::int64_t steps = runs.front().measure_steps;
    lo = lo == 0 ? steps : std::min(lo, steps);
    hi = std::max(hi, steps);
  }
  return fmt::format(
      "successive halving, rung {} of {}{}: {} configurations x {} measured steps "
      "x {} repeat{}\n",
      k, s.count(), r.last ? " (the full measurement)" : "", rung.entrants.size(),
      lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi), r.repeats,
      r.repeats == 1 ? "" : "s");
}

}  // namespace

RungCut cut_rung(const std::vector<RungEntrant>& entrants, std::size_t keep) {
  std::vector<std::size_t> order;
  RungCut out;
  for (std::size_t i = 0; i < entrants.size(); ++i) {
    if (entrants[i].measured && !entrants[i].images_per_s.empty())
      order.push_back(i);
    else
      out.failed.push_back(entrants[i].hash);
  }
  std::vector<analysis::Summary> stats(entrants.size());
  for (std::size_t i : order) stats[i] = analysis::summarize(entrants[i].images_per_s);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return stats[a].mean > stats[b].mean; });
  std::vector<bool> kept(entrants.size(), false);
  const std::size_t n = std::min(std::max<std::size_t>(keep, 1), order.size());
  for (std::size_t j = 0; j < n; ++j) kept[order[j]] = true;
  if (n > 0) {
    const analysis::Summary& last = stats[order[n - 1]];
    for (std::size_t j = n; j < order.size(); ++j) {
      const analysis::Summary& x = stats[order[j]];
      if (x.lower() <= last.upper() && last.lower() <= x.upper()) kept[order[j]] = true;
    }
  }
  for (std::size_t i : order) (kept[i] ? out.kept : out.dropped).push_back(entrants[i].hash);
  // In plan order, as the entrants came.
  auto by_plan = [&](std::vector<std::string>& v) {
    std::vector<std::string> sorted;
    for (const auto& e : entrants)
      if (std::find(v.begin(), v.end(), e.hash) != v.end()) sorted.push_back(e.hash);
    v = std::move(sorted);
  };
  by_plan(out.kept);
  by_plan(out.dropped);
  return out;
}

SweepSummary run_halving(const Plan& plan, const SweepOptions& options, Launcher& launcher,
                         Recorder& recorder, SweepClock& clock, std::ostream& progress,
                         const std::atomic<bool>& stop) {
  const HalvingSchedule s = halving_schedule(plan);
  const std::vector<Config> configs = configurations(plan);
  std::vector<const Config*> entrants;
  for (const Config& c : configs) entrants.push_back(&c);
  SweepSummary total;
  for (int k = 0; k < s.count() && !entrants.empty(); ++k) {
    RungRuns rung;
    for (const Config* c : entrants) {
      rung.entrants.push_back(c);
      rung.runs.push_back(runs_in_rung(plan, *c, s, k));
    }
    progress << "\n" << rung_header(s, k, rung) << std::flush;
    const std::vector<RunSpec> runs = rung.all();
    SweepOptions o = options;
    RungCut c;
    try {
      // A cut rung's failures stay as they are: its survivors have run on (see already_cut).
      o.retry_failed =
          options.retry_failed && (s.rungs[static_cast<std::size_t>(k)].last ||
                                   !already_cut(rung, configs, plan, s, k, recorder.prior_runs()));
      add(total, run_sweep(runs, o, launcher, recorder, clock, progress, stop));
      if (stopped(total) || s.rungs[static_cast<std::size_t>(k)].last) break;
      if (!finished(recorder.prior_runs(), runs)) {
        progress << fmt::format("successive halving: rung {} did not finish; no cut\n", k);
        break;
      }
      c = cut(rung, configs, plan, s, k, recorder);
    } catch (const EnvironmentFault& e) {  // the database, between two rungs
      total.environment_fault = e.what();
      progress << "sweep: environment fault: " << terminal_text(e.what()) << "\n";
      break;
    }
    progress << fmt::format("successive halving: rung {} kept {} of {}: {}\n", k, c.kept.size(),
                            rung.entrants.size(), names(c.kept, configs));
    if (!c.dropped.empty()) progress << fmt::format("  pruned: {}\n", names(c.dropped, configs));
    if (!c.failed.empty())
      progress << fmt::format("  out, their runs did not succeed: {}\n", names(c.failed, configs));
    entrants.clear();
    for (const Config& cfg : configs)
      if (std::find(c.kept.begin(), c.kept.end(), cfg.full->hash) != c.kept.end())
        entrants.push_back(&cfg);
  }
  return total;
}

}  // namespace orch::sweep
