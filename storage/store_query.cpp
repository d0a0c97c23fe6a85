// The store's read queries: the ranking view, runs with their metrics and profiles, their
// environments and the failures view.
#include <map>

#include "storage/store.h"

namespace orch::storage {
namespace {

std::optional<std::int64_t> opt_int(const Statement& s, int c) {
  return s.is_null(c) ? std::nullopt : std::optional<std::int64_t>(s.column_int(c));
}

std::optional<double> opt_double(const Statement& s, int c) {
  return s.is_null(c) ? std::nullopt : std::optional<double>(s.column_double(c));
}

// Which runs a query reads: `where` over runs r with ?1 = key, and ?2 = status unless empty.
// Every statement of one query_runs binds the same two parameters.
struct RunFilter {
  const std::string& where;
  std::int64_t key;
  const std::string& status;

  std::string sql() const { return where + " AND (?2 = '' OR r.status = ?2)"; }
  void bind(Statement& st) const { st.bind(1, key).bind(2, status); }
};

using RunIndex = std::map<std::int64_t, std::size_t>;  // run id -> its place in the result

// One row of query_runs' SELECT, in its column order.
RunRecord read_run_row(const Statement& st) {
  RunRecord r;
  r.id = st.column_int(0);
  r.sweep_id = st.column_int(1);
  r.sweep = st.column_text(2);
  r.experiment = st.column_text(3);
  r.name = st.column_text(4);
  r.config_hash = st.column_text(5);
  r.status = st.column_text(6);
  r.error = st.column_text(7);
  r.device = st.column_text(8);
  r.gpu = st.column_text(9);
  r.repeat = static_cast<int>(st.column_int(10));
  r.attempts = static_cast<int>(st.column_int(11));
  r.batch_size = opt_int(st, 12);
  r.exit_code = opt_int(st, 13);
  r.term_signal = opt_int(st, 14);
  r.batch_auto = st.column_int(15) != 0;
  if (!st.is_null(16)) r.duration_s = st.column_double(16);
  r.started_at = st.column_text(17);
  r.finished_at = st.column_text(18);
  r.diagnosis = st.column_text(19);
  r.diagnosis_detail = st.column_text(20);
  r.stderr_tail = st.column_text(21);
  r.gpu_name = st.column_text(22);
  r.driver_version = st.column_text(23);
  r.cuda_version = st.column_text(24);
  r.cudnn_version = st.column_text(25);
  r.torch_version = st.column_text(26);
  r.hostname = st.column_text(27);
  r.config = nlohmann::json::parse(st.column_text(28), nullptr, /*allow_exceptions=*/false);
  if (r.config.is_discarded()) r.config = nlohmann::json::object();
  r.environment = nlohmann::json::parse(st.column_text(29), nullptr, /*allow_exceptions=*/false);
  if (!r.environment.is_object()) r.environment = nlohmann::json::object();
  r.failure_class = st.column_text(30);
  if (!st.is_null(31)) r.rung = static_cast<int>(st.column_int(31));
  return r;
}

void add_metrics(const Database& db, const RunFilter& filter, const RunIndex& index,
                 std::vector<RunRecord>& out) {
  Statement met(db, R"(SELECT m.run_id, m.name, m.value FROM run_metrics m
      JOIN runs r ON r.id = m.run_id WHERE )" +
                        filter.sql() + R"(
      AND m.value IS NOT NULL)");
  filter.bind(met);
  while (met.step()) {
    auto it = index.find(met.column_int(0));
    if (it != index.end()) out[it->second].metrics[met.column_text(1)] = met.column_double(2);
  }
}

void add_profiles(const Database& db, const RunFilter& filter, const RunIndex& index,
                  std::vector<RunRecord>& out) {
  Statement prof(db, R"(SELECT p.run_id, p.steps, p.activities, p.trace_path, p.error, p.step_ms,
      p.kernels_per_step, p.gpu_kernel_ms_per_step, p.gpu_busy_share, p.cuda_launches_per_step,
      p.measured_step_ms, p.gpu_busy_share_profiled
      FROM run_profile p JOIN runs r ON r.id = p.run_id WHERE )" +
                         filter.sql());
  filter.bind(prof);
  while (prof.step()) {
    auto it = index.find(prof.column_int(0));
    if (it == index.end()) continue;
    RunProfile p;
    p.steps = prof.column_int(1);
    p.activities = prof.column_text(2);
    p.trace_path = prof.column_text(3);
    p.error = prof.column_text(4);
    p.step_ms = opt_double(prof, 5);
    p.kernels_per_step = opt_double(prof, 6);
    p.gpu_kernel_ms_per_step = opt_double(prof, 7);
    p.gpu_busy_share = opt_double(prof, 8);
    p.cuda_launches_per_step = opt_double(prof, 9);
    p.measured_step_ms = opt_double(prof, 10);
    p.gpu_busy_share_profiled = opt_double(prof, 11);
    out[it->second].profile = std::move(p);
  }
}

void add_profile_ops(const Database& db, const RunFilter& filter, const RunIndex& index,
                     std::vector<RunRecord>& out) {
  Statement ops(db, R"(SELECT o.run_id, o.kind, o.name, o.calls, o.total_ms, o.self_ms, o.share
      FROM run_profile_ops o JOIN runs r ON r.id = o.run_id WHERE )" +
                        filter.sql() + " ORDER BY o.run_id, o.kind, o.position");
  filter.bind(ops);
  while (ops.step()) {
    auto it = index.find(ops.column_int(0));
    if (it == index.end() || !out[it->second].profile) continue;
    ProfileOp op{ops.column_text(2), ops.column_int(3), ops.column_double(4), ops.column_double(5),
                 ops.column_double(6)};
    RunProfile& p = *out[it->second].profile;
    (ops.column_text(1) == "kernel" ? p.top_kernels : p.top_cpu_ops).push_back(std::move(op));
  }
}

}  // namespace

std::vector<RankRow> Store::ranking(const std::string& experiment) const {
  Statement st(db_, R"(SELECT experiment, name, config_hash, runs, images_per_s,
      images_per_s_min, images_per_s_max, step_ms_mean, precision, batch_size, memory_format,
      device FROM ranking WHERE (?1 = '' OR experiment = ?1)
      ORDER BY images_per_s DESC)");
  st.bind(1, experiment);
  std::vector<RankRow> rows;
  while (st.step()) {
    RankRow r;
    r.experiment = st.column_text(0);
    r.name = st.column_text(1);
    r.config_hash = st.column_text(2);
    r.runs = st.column_int(3);
    r.images_per_s = st.column_double(4);
    r.images_per_s_min = st.column_double(5);
    r.images_per_s_max = st.column_double(6);
    r.step_ms_mean = st.column_double(7);
    r.precision = st.column_text(8);
    r.batch_size = st.column_int(9);
    r.memory_format = st.column_text(10);
    r.device = st.column_text(11);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<RunRecord> Store::runs(std::int64_t sweep_id, const std::string& status) const {
  return query_runs("r.sweep_id = ?1", sweep_id, status);
}

std::optional<RunRecord> Store::run(std::int64_t run_id) const {
  auto rows = query_runs("r.id = ?1", run_id, {});
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::vector<RunRecord> Store::query_runs(const std::string& where, std::int64_t key,
                                         const std::string& status) const {
  // Read in one snapshot so the runs and their metrics are one state, even while a sweep is
  // recording (WAL readers see the last commit before their first read).
  const Transaction snapshot = Transaction::read_snapshot(db_);

  const RunFilter filter{where, key, status};
  Statement st(db_, R"(SELECT r.id, r.sweep_id, s.name, r.experiment, r.name, r.config_hash,
      r.status, r.error, r.device, r.gpu, r.repeat, r.attempts, r.batch_size, r.exit_code,
      r.term_signal, r.batch_auto, r.duration_s, r.started_at, r.finished_at, r.diagnosis,
      r.diagnosis_detail, r.stderr_tail, r.gpu_name, r.driver_version, r.cuda_version,
      r.cudnn_version, r.torch_version, r.hostname, r.config_json, r.environment_json, )" +
                        // A read-only open leaves an older schema as it is: no failure_class.
                        std::string(schema_version() >= 5 ? "r.failure_class" : "NULL") + ", " +
                        std::string(schema_version() >= 8 ? "r.rung" : "NULL") + R"(
      FROM runs r JOIN sweeps s ON s.id = r.sweep_id
      WHERE )" + filter.sql() +
                        R"(
      ORDER BY r.name, r.config_hash, r.repeat)");
  filter.bind(st);
  std::vector<RunRecord> out;
  RunIndex index;
  while (st.step()) {
    index[st.column_int(0)] = out.size();
    out.push_back(read_run_row(st));
  }
  if (out.empty()) return out;
  add_metrics(db_, filter, index, out);
  add_profiles(db_, filter, index, out);
  add_profile_ops(db_, filter, index, out);
  return out;
}

std::vector<nlohmann::json> Store::run_environments(std::int64_t sweep_id) const {
  Statement env(db_, "SELECT environment_json FROM runs WHERE sweep_id = ? ORDER BY id");
  env.bind(1, sweep_id);
  std::vector<nlohmann::json> out;
  while (env.step()) {
    nlohmann::json e;
    if (!env.is_null(0)) e = nlohmann::json::parse(env.column_text(0), nullptr, false);
    out.push_back(e.is_discarded() ? nlohmann::json() : e);
  }
  return out;
}

std::vector<FailureRecord> Store::failures(const std::string& sweep_name) const {
  Statement f(db_,
              "SELECT run_id, name, repeat, status, attempts, error, exit_code, term_signal, "
              "stderr_tail FROM failures WHERE sweep = ? ORDER BY name, repeat");
  f.bind(1, sweep_name);
  std::vector<FailureRecord> out;
  while (f.step()) {
    FailureRecord row;
    row.run_id = f.column_int(0);
    row.name = f.column_text(1);
    row.repeat = static_cast<int>(f.column_int(2));
    row.status = f.column_text(3);
    row.attempts = static_cast<int>(f.column_int(4));
    row.error = f.column_text(5);
    row.exit_code = opt_int(f, 6);
    row.term_signal = opt_int(f, 7);
    row.stderr_tail = f.column_text(8);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace orch::storage
