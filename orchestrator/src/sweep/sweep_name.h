// Sweep name templates: `--sweep 'nightly-{date}'` makes each night a new sweep, while a night
// that crashed and is started again the same day resumes its own sweep.
#pragma once

#include <ctime>
#include <string>

namespace orch::sweep {

/// Replaces `{date}` (YYYY-MM-DD) and `{time}` (HHMM) with `local`'s fields. Any other `{...}`
/// throws std::invalid_argument naming the placeholders there are, so a typo such as `{data}`
/// does not become part of a sweep name that never changes.
std::string expand_sweep_name(const std::string& name, const std::tm& local);

/// expand_sweep_name with the local time now.
std::string expand_sweep_name_now(const std::string& name);

}  // namespace orch::sweep
