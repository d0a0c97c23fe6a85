// `orch ingest`: result documents written by cluster tasks (one JSON file each, in a shared
// folder) -> the SQLite database, by one process on one machine. Idempotent: a document whose
// run is already recorded with the same status is left alone, and Store::record is an upsert.
// A malformed document is reported (file: what is wrong) and the others are still loaded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "storage/store.h"

namespace orch::cluster {

struct IngestReport {
  std::size_t recorded = 0;            ///< new runs, or runs whose status changed
  std::size_t unchanged = 0;           ///< already in the database with this status
  std::vector<std::string> malformed;  ///< "file: what is wrong"
};

class Ingester {
 public:
  /// `sweep` names the sweep the documents go to; empty: the submission index's sweep, else
  /// each document's experiment name.
  Ingester(storage::Store& store, std::string sweep = {});

  /// Loads every result document under `dir`: a submission folder (its results/), the
  /// results/ folder of one, or any folder (every *.json below it). Files seen before with
  /// the same size and modification time are skipped (for polling while tasks run).
  IngestReport ingest(const std::string& dir);

  /// The sweeps documents were recorded into, by name.
  const std::map<std::string, std::int64_t>& sweeps() const { return sweep_ids_; }

 private:
  std::int64_t sweep_for(const std::string& name, const std::string& experiment);
  void ingest_file(const std::filesystem::path& file, IngestReport& report);

  storage::Store& store_;
  std::string sweep_override_;
  nlohmann::json index_;  ///< of the folder being ingested, or null
  std::map<std::string, std::int64_t> sweep_ids_;
  std::map<std::int64_t, std::map<std::pair<std::string, int>, std::string>> statuses_;
  std::map<std::string, std::pair<std::uintmax_t, std::filesystem::file_time_type>> seen_;
};

}  // namespace orch::cluster
