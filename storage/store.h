// The result store: owns the SQLite schema and its version, records result documents (one
// transaction each) and answers the ranking query.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "storage/sqlite.h"

namespace orch::storage {

/// The schema version this build writes. Older databases are migrated on open; newer ones
/// are refused (a newer orch wrote them, and this one would misread them).
constexpr int kSchemaVersion = 1;

/// One configuration in the ranking, aggregated over its successful runs.
struct RankRow {
  std::string experiment, name, config_hash, precision, memory_format, device;
  std::int64_t runs = 0;
  std::int64_t batch_size = 0;
  double images_per_s = 0, images_per_s_min = 0, images_per_s_max = 0, step_ms_mean = 0;
};

class Store {
 public:
  /// Opens or creates the database at `path`, sets WAL mode and a busy timeout, and brings the
  /// schema to kSchemaVersion. Throws SqliteError for a newer schema.
  explicit Store(const std::string& path);

  /// Records one result document in one durable transaction; returns the new run id.
  std::int64_t record(const nlohmann::json& document);

  /// Configurations ranked by mean throughput; all experiments when `experiment` is empty.
  std::vector<RankRow> ranking(const std::string& experiment = {}) const;

  int schema_version() const;
  Database& database() { return db_; }

 private:
  Database db_;
};

}  // namespace orch::storage
