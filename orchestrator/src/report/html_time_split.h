// The report's "where the time went" section: the share of the sweep's slot time (wall time x
// GPUs) that was measured steps, and what took the rest (start-up, warm-up, set-up, ...), as
// `orch sweep`'s closing line and the sweep_efficiency view say, added up over every
// invocation of the sweep. A night is worth its measured steps; this is where a user sees
// whether warm workers (`isolation: worker`) or an adaptive warm-up would buy more of them.
#pragma once

#include <string>

#include "report/html_report_data.h"

namespace orch {

/// The section; a one-line note when the sweep recorded no invocation.
std::string time_split_section(const ReportData& d);

}  // namespace orch
