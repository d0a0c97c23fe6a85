// A row to write as (column, value) pairs, and the upsert statement built from it, so the long
// column lists of `runs` are written once, in one place, with every value bound (never pasted
// into SQL text).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "result/json_fields.h"  // the lenient readers the store uses
#include "result/result_document.h"
#include "storage/sqlite.h"

namespace orch::storage {

using SqlValue = std::variant<std::monostate, std::int64_t, double, std::string>;

struct RowValues {
  std::vector<std::pair<std::string, SqlValue>> columns;

  RowValues& set_value(const std::string& column, SqlValue value) {
    columns.emplace_back(column, std::move(value));
    return *this;
  }
  RowValues& set_null(const std::string& column) { return set_value(column, SqlValue()); }
  RowValues& set(const std::string& column, std::int64_t v) { return set_value(column, v); }
  RowValues& set(const std::string& column, double v) { return set_value(column, v); }
  RowValues& set(const std::string& column, const std::string& v) { return set_value(column, v); }
  RowValues& set(const std::string& column, std::optional<double> v) {
    return set_value(column, v ? SqlValue(*v) : SqlValue());
  }
  RowValues& set(const std::string& column, std::optional<std::int64_t> v) {
    return set_value(column, v ? SqlValue(*v) : SqlValue());
  }
  /// Empty text is stored as NULL.
  RowValues& set_text(const std::string& column, const std::string& v) {
    return set_value(column, v.empty() ? SqlValue() : SqlValue(v));
  }
};

/// INSERT INTO `table` (columns) VALUES (...) ON CONFLICT (`conflict`) DO UPDATE SET each
/// column = excluded.column, except those in `update_overrides` ("column = expression"
/// assignments written instead) and the conflict columns themselves.
std::string upsert_sql(const std::string& table, const RowValues& row, const std::string& conflict,
                       const std::vector<std::string>& update_overrides);

/// Binds the row's values to ?1..?n in order.
void bind_row(Statement& st, const RowValues& row);

/// The columns that identify a run and describe its configuration, from a run header or a
/// result document ({experiment, run: {name, hash, repeat}, config}). Throws
/// std::invalid_argument without run.hash.
RowValues run_identity_values(std::int64_t sweep_id, const ResultDocument& doc);

/// Deletes a run's metrics, steps, telemetry samples and profile (before a retry or a
/// re-record).
void delete_run_children(Database& db, std::int64_t run_id);

/// The id of the run (sweep, hash, repeat); throws SqliteError when there is none.
std::int64_t run_id_of(Database& db, std::int64_t sweep_id, const std::string& hash,
                       std::int64_t repeat);

/// ISO 8601 UTC, seconds precision, like the runner's timestamps.
std::string utc_now();

}  // namespace orch::storage
