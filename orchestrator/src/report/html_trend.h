// The report's "Across sweeps" section: each ranked configuration that earlier sweeps of the
// same database also measured (paired by configuration hash, so a renamed sweep or a different
// experiment file still pairs), its mean throughput per sweep in creation order with the 95%
// interval where the sweep repeated it. What a nightly sweep's reader looks for: did last
// night's driver or cuDNN change the numbers.
#pragma once

#include <string>

#include "report/html_report_data.h"

namespace orch {

/// Empty when no configuration of the sweep appears in another sweep.
std::string trend_section(const ReportData& d);

}  // namespace orch
