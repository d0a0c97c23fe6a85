// The report's "Batch-size search" section: for each run whose batch was found by
// `batch_size: auto`, the probe curve (images per second against the batch size, the chosen
// batch ringed, batches that did not fit or passed the memory headroom crossed) and its table.
#pragma once

#include <string>

#include "report/html_report_data.h"

namespace orch {

/// Empty when no run of the sweep searched its batch.
std::string batch_search_section(const ReportData& d);

}  // namespace orch
