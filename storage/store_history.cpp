// Reads across every sweep of the database: what earlier runs of a configuration measured,
// and how long successful runs took.
#include "storage/store.h"

namespace orch::storage {

std::vector<ConfigRun> Store::config_history(const std::string& config_hash,
                                             const SweepInfo& sweep) const {
  Statement s(db_, R"(
      SELECT s.id, s.name, s.created_at, r.images_per_s, r.driver_version, r.cudnn_version
      FROM runs r JOIN sweeps s ON s.id = r.sweep_id
      WHERE r.config_hash = ?1 AND r.status = 'ok' AND r.images_per_s IS NOT NULL
        AND (s.created_at < ?2 OR (s.created_at = ?2 AND s.id <= ?3))
      ORDER BY s.created_at, s.id, r.repeat)");
  s.bind(1, config_hash).bind(2, sweep.created_at).bind(3, sweep.id);
  std::vector<ConfigRun> out;
  while (s.step()) {
    ConfigRun r;
    r.sweep_id = s.column_int(0);
    r.sweep = s.column_text(1);
    r.sweep_created_at = s.column_text(2);
    r.images_per_s = s.column_double(3);
    r.driver_version = s.column_text(4);  // NULL reads as ""
    r.cudnn_version = s.column_text(5);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<RunDuration> Store::successful_run_durations() const {
  Statement st(db_,
               "SELECT config_hash, duration_s, config_json FROM runs "
               "WHERE status = 'ok' AND duration_s IS NOT NULL AND duration_s > 0");
  std::vector<RunDuration> out;
  while (st.step()) {
    out.push_back({st.column_text(0), st.column_double(1),
                   nlohmann::json::parse(st.column_text(2), nullptr, /*allow_exceptions=*/false)});
  }
  return out;
}

}  // namespace orch::storage
