// The report's "Before and after" section: the baseline configuration (the experiment's
// `baseline:`, else the slowest) against the fastest, what `orch compare` prints for the pair:
// whether the difference is beyond noise, the metrics side by side with the step split that
// says where the time went, and why the two may differ: the settings that differ between the
// two configurations and every recorded environment field that differs between their runs.
#pragma once

#include <string>

#include "report/html_report_data.h"

namespace orch {

/// The section; a one-line note when the sweep has fewer than two ranked configurations.
std::string before_after_section(const ReportData& d);

}  // namespace orch
