// The line `orch sweep` ends with: how much of this invocation's wall time was measured steps,
// and where the rest went (result/run_phases.h), so a night's worth is read, not guessed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sweep/scheduler.h"

namespace orch::sweep {

/// The shares of wall_s x slots, largest named first after `measured`: (label, share 0..1).
/// `between runs` is what no run took (the scheduler, recording, device checks, idle slots);
/// it absorbs rounding and is never negative.
std::vector<std::pair<std::string, double>> time_shares(const SweepTime& t);

/// "measured 41% of the sweep's wall time (3:58 on 1 GPU); warm-up 22%, start-up 9%, ...":
/// shares under 0.5% left out. Empty when the invocation ran no run.
std::string time_shares_line(const SweepTime& t);

}  // namespace orch::sweep
