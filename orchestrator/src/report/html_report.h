// `orch report`: one self-contained HTML file for a sweep (inline CSS, inline SVG charts, no
// script, nothing fetched): the ranking, a throughput chart with interval whiskers, the step
// time split into data wait and compute, the before/after table between the slowest and the
// fastest configuration, the environment with the doctor's warnings, the failures, and per
// run the GPU utilization, power and memory over time.
#pragma once

#include <string>

#include "report/html_report_data.h"
#include "storage/store.h"

namespace orch {

/// The page for already gathered data. Every string from the database is escaped.
std::string render_html_report(const ReportData& data);

/// gather_report_data + render_html_report.
std::string html_report(storage::Store& store, const storage::SweepInfo& sweep);

}  // namespace orch
