// The metrics a ranking can be sorted by: name (as in the result document's `metrics`), unit,
// and which direction is better, so `orch rank --by step_ms_p90` sorts ascending.
#pragma once

#include <string>
#include <vector>

namespace orch {

enum class Better { kHigher, kLower };

struct MetricInfo {
  std::string name;
  std::string unit;  ///< img/s, ms, s, bytes, %, W, C, MHz, or "" for a plain number
  Better better;
  std::string description;
};

/// Every rankable metric, throughput first.
const std::vector<MetricInfo>& metric_catalog();

/// The metric called `name`; throws InputError naming the allowed ones otherwise.
const MetricInfo& require_metric(const std::string& name);

/// `value` in the metric's unit for a table: bytes as GiB, times with 2 decimals, ...
std::string format_metric_value(double value, const std::string& unit);

/// The unit as shown in a column header ("GiB" for bytes).
std::string display_unit(const std::string& unit);

}  // namespace orch
