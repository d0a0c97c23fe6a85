// The report's successive-halving section (`search: halving`): each rung, and every
// configuration a cut dropped, with the rung that dropped it and its shorter measurement.
#pragma once

#include <string>

#include "report/html_report_data.h"

namespace orch {

/// The section; empty for a grid sweep.
std::string halving_section(const ReportData& d);

}  // namespace orch
