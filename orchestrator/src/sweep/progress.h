// The sweep's progress line, printed after every finished run: what finished, how far along
// the sweep is, failures, elapsed time, an ETA and the best configuration so far.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "result/result_document.h"

namespace orch::sweep {

struct ProgressState {
  int done = 0, total = 0, failures = 0;
  int diverged = 0;       ///< of the failures, runs whose loss became NaN or infinite
  int remaining = 0;      ///< runs pending or running
  double elapsed_s = 0;   ///< since this invocation started
  double mean_run_s = 0;  ///< mean duration of the runs finished in this invocation
  int parallel = 1;       ///< usable GPU slots
  std::optional<std::pair<std::string, double>> best;  ///< name, img/s
};

/// "1:02:03" (hours unbounded), "4:05" under an hour.
std::string format_duration(double seconds);

/// "[5/12] amp-bf16/b256 (repeat 0) on gpu 0: ok, 4706.7 img/s | failures 1 | elapsed 5:12,
///  ETA 14:00 | best amp-fp16/b256 5861.2 img/s"; "failures 3 (1 diverged)" when some diverged.
std::string format_progress(const ProgressState& p, const std::string& name, int repeat,
                            const std::string& where, const ResultDocument& document);

}  // namespace orch::sweep
