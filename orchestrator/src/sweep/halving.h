// Successive halving (Jamieson & Talwalkar 2016, "Non-stochastic Best Arm Identification and
// Hyperparameter Optimization"; the rung rule of ASHA, Li et al. 2018, "A System for Massively
// Parallel Hyperparameter Tuning"): the sweep of a plan with `search: halving`. Each rung of
// the schedule (plan/halving_schedule.h) is an ordinary sweep of its runs (run_sweep), so
// GPUs, deadlines, signals, failures and resume work as they do for the grid; between rungs,
// the cut keeps the best configurations by the rung's mean throughput and records the others'
// runs `pruned`.
//
// Unlike ASHA, which promotes asynchronously as soon as a configuration is in the top 1/eta of
// what its rung has seen so far, a rung here is finished before the cut: the runs of one
// night are few enough that waiting for a rung costs little, and a synchronous cut makes the
// survivors a pure function of the recorded results, which is what lets a resumed sweep pick
// up at the rung it reached with the same survivors.
#pragma once

#include <atomic>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "plan/halving_schedule.h"
#include "plan/run_spec.h"
#include "sweep/scheduler.h"

namespace orch::sweep {

/// One configuration's outcome in a finished rung.
struct RungEntrant {
  std::string hash;  ///< the configuration's (its full measurement's) hash
  std::string name;
  std::vector<double> images_per_s;  ///< of its rung runs, when every one measured
  bool measured = false;             ///< every run of the rung ended ok (or pruned)
};

/// What a cut decided, as configuration hashes in the entrants' order.
struct RungCut {
  std::vector<std::string> kept;     ///< go on to the next rung
  std::vector<std::string> dropped;  ///< measured, and slower: their runs become `pruned`
  std::vector<std::string> failed;   ///< a run did not end ok: out, with the status it has
};

/// The cut of a finished rung: the `keep` measured entrants with the highest mean throughput
/// (a tie on the mean goes to the one planned first), and every other measured entrant that
/// ties with the last one kept. Tie is rank's: their 95% intervals overlap, which for single
/// runs means equal means. So a cut never drops a configuration that the numbers cannot tell
/// from one it keeps.
RungCut cut_rung(const std::vector<RungEntrant>& entrants, std::size_t keep);

/// Runs the plan's successive halving, rung after rung, from where the recorded runs leave it.
/// Stops, as run_sweep does, at a signal, an environment fault or a deadline (the summary
/// says which); a rung that did not finish is not cut, and the next invocation goes on with it.
/// The summary adds up the rungs this invocation ran.
SweepSummary run_halving(const Plan& plan, const SweepOptions& options, Launcher& launcher,
                         Recorder& recorder, SweepClock& clock, std::ostream& progress,
                         const std::atomic<bool>& stop);

}  // namespace orch::sweep
