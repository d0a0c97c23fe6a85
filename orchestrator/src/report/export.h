// `orch export`: one row per run with its configuration (flattened: config.precision.plugin,
// config.precision.dtype, config.batch_size, ...) and metrics (metrics.images_per_s, ...), as RFC
// 4180 CSV or as a JSON array of flat objects with the same keys, for pandas, spreadsheets and
// scripts.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "result/config_flatten.h"  // flatten_json, which export_table uses for its columns
#include "storage/store.h"

namespace orch {

struct ExportTable {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;  ///< cells: null, number, bool or string
};

/// The run fields first (run_id, sweep, name, status, ...), then the sorted union of the
/// flattened configuration keys (config.*), of the flattened environment fields
/// (environment.*: environment.torch_threads, environment.variables.OMP_NUM_THREADS, ...), then
/// of the metric names (metrics.*).
ExportTable export_table(const std::vector<storage::RunRecord>& runs);

/// RFC 4180: a header line, CRLF line ends, fields with a comma, quote, CR or LF quoted and
/// quotes doubled; null is an empty field; numbers in their shortest round-trip form. A text
/// cell starting with `=`, `+`, `-`, `@`, tab or CR that is not a plain number is written as
/// `"'..."` (OWASP's advice against CSV injection), so a spreadsheet shows it as text.
std::string to_csv(const ExportTable& table);

/// A JSON array with one object per row (null cells kept as null), pretty-printed.
std::string to_json(const ExportTable& table);

}  // namespace orch
