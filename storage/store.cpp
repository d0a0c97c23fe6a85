// The SQLite result store: opening and migrating, sweeps, and the life of a run. Recording a
// finished document is in store_record.cpp, the read queries in store_query.cpp.
#include "storage/store.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "storage/migrate.h"
#include "storage/row_values.h"

namespace orch::storage {

int busy_timeout_ms() {
  if (const char* v = std::getenv("ORCH_BUSY_TIMEOUT_MS"); v && *v) {
    char* end = nullptr;
    const long ms = std::strtol(v, &end, 10);
    if (*end == '\0' && ms >= 0 && ms <= 3600000) return static_cast<int>(ms);
  }
  return 10000;
}

std::string database_fault_text(const SqliteError& e, const std::string& path) {
  const int ms = busy_timeout_ms();
  const std::string waited =
      ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
  switch (e.code() & 0xff) {
    case SQLITE_BUSY:
      return "database is locked by another process: " + path + " (held longer than " + waited +
             "); let that program finish or close it, and run the same command again";
    case SQLITE_FULL:
      return "no space left on " + path + " (SQLITE_FULL: " + e.what() +
             "): free space and run the same command again";
    case SQLITE_READONLY:
      return "cannot write the database " + path + " (" + e.what() +
             "): make it writable and run the same command again";
    default:
      return "I/O error on the database " + path + " (" + e.what() +
             "): check the disk (dmesg) and run the same command again";
  }
}

namespace {

// SQLite reads a file's header only at the first statement, and then says "file is not a
// database" without the path: said here with it, for any file that is not SQLite's (an
// experiment's YAML given as --db, say).
template <class Fn>
auto naming_non_database(const std::string& path, Fn&& fn) {
  try {
    return fn();
  } catch (const SqliteError& e) {
    if ((e.code() & 0xff) != SQLITE_NOTADB) throw;
    throw SqliteError(path +
                          " is not an orch results database (it is not an SQLite database at "
                          "all); pass the database a sweep wrote with --db",
                      e.code());
  }
}

// SQLite opens a database file it may not write read-only, without a word, and a WAL database
// then fails at its first read with "unable to open database file". A Store writes, so it says
// at once which file and why (exit 4, as for a full disk: the surroundings, not the request).
void refuse_read_only(sqlite3* db, const std::string& path) {
  if (sqlite3_db_readonly(db, "main") != 1) return;
  const bool denied = ::access(path.c_str(), W_OK) != 0;
  throw SqliteError(denied ? std::strerror(errno) : "SQLite opened it read-only", SQLITE_READONLY);
}

}  // namespace

Store::Store(const std::string& path) : db_(path) {
  refuse_read_only(db_.get(), path);
  // A reader (sqlite3, pandas) holding a lock briefly must never fail the sweep: wait for it.
  sqlite3_busy_timeout(db_.get(), busy_timeout_ms());
  // Before anything below changes the file (its journal mode, say).
  naming_non_database(path, [&] { refuse_foreign(path); });
  db_.exec("PRAGMA journal_mode=WAL");
  // FULL: a committed run survives power loss, not only a process crash.
  db_.exec("PRAGMA synchronous=FULL");
  db_.exec("PRAGMA foreign_keys=ON");
  auto refuse_newer = [&](int version) {
    if (version > kSchemaVersion) {
      throw SqliteError("database " + path + " has schema version " + std::to_string(version) +
                        ", newer than this orch understands (" + std::to_string(kSchemaVersion) +
                        "); use a newer orch to read it");
    }
  };
  refuse_newer(schema_version());
  if (schema_version() < kSchemaVersion) {
    Transaction tx(db_);
    // Read again under the write lock: another process may have migrated it meanwhile.
    const int version = schema_version();
    refuse_newer(version);
    if (version == 0) create_schema(db_);
    // The v1 step creates the current schema for the copied runs, so it is the last step.
    if (version == 1) migrate_v1_to_v2(db_);
    if (version == 2) migrate_v2_to_v3(db_);
    if (version == 2 || version == 3) migrate_v3_to_v4(db_);
    if (version >= 2 && version <= 4) migrate_v4_to_v5(db_);
    if (version >= 2 && version <= 5) migrate_v5_to_v6(db_);
    if (version >= 2 && version <= 6) migrate_v6_to_v7(db_);
    if (version >= 2 && version <= 7) migrate_v7_to_v8(db_);
    if (version >= 2 && version <= 8) migrate_v8_to_v9(db_);
    if (version >= 2 && version <= 9) migrate_v9_to_v10(db_);
    // Steps N -> N+1 for later versions go here, each inside this one transaction.
    if (version < kSchemaVersion) db_.exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
    tx.commit();
  }
}

namespace {

// The first read makes SQLite open a WAL database's -shm file; where it cannot (read-only
// media), only an immutable open can read the file at all.
Database open_for_reading(const std::string& path) {
  try {
    Database db = Database::open_read_only(path);
    { Statement(db, "SELECT count(*) FROM sqlite_master").step(); }
    return db;
  } catch (const SqliteError&) {
  }
  Database db = Database::open_read_only(path, true);
  { Statement(db, "SELECT count(*) FROM sqlite_master").step(); }
  return db;
}

}  // namespace

Store::Store(const std::string& path, ReadOnly)
    : db_(naming_non_database(path, [&] { return open_for_reading(path); })) {
  sqlite3_busy_timeout(db_.get(), busy_timeout_ms());
  const int version = schema_version();
  if (version > kSchemaVersion) {
    throw SqliteError("database " + path + " has schema version " + std::to_string(version) +
                      ", newer than this orch understands (" + std::to_string(kSchemaVersion) +
                      "); use a newer orch to read it");
  }
  if (version == 0) {
    // Every orch database carries its schema version; anything else was not written by orch,
    // and a read command must not turn it into one.
    throw SqliteError(path +
                      " is not an orch results database (it has no orch schema); pass "
                      "the database a sweep wrote with --db");
  }
}

void Store::refuse_foreign(const std::string& path) const {
  if (schema_version() != 0) return;
  Statement tables(db_, "SELECT count(*) FROM sqlite_master");
  tables.step();
  if (tables.column_int(0) == 0) return;  // a new (or empty) database: orch's to create
  // Tables of its own and no orch schema: another program's database, which a sweep writing
  // its tables into would change under that program.
  throw SqliteError(path +
                    " is not an orch results database (it has tables of its own and no orch "
                    "schema); orch writes only a new database or one a sweep wrote: pass "
                    "another --db");
}

int Store::schema_version() const {
  Statement st(db_, "PRAGMA user_version");
  st.step();
  return static_cast<int>(st.column_int(0));
}

// --- sweeps -------------------------------------------------------------------------------------

std::int64_t Store::open_sweep(const std::string& name, const std::string& experiment,
                               const std::string& experiment_file, const std::string& description) {
  if (name.empty()) throw std::invalid_argument("a sweep needs a name");
  Transaction tx(db_);
  const std::string now = utc_now();
  std::int64_t id = 0;
  {
    Statement find(db_, "SELECT id, experiment FROM sweeps WHERE name = ?1");
    find.bind(1, name);
    if (find.step()) {
      id = find.column_int(0);
      if (find.column_text(1) != experiment) {
        throw std::invalid_argument("sweep '" + name + "' belongs to experiment '" +
                                    find.column_text(1) + "', not '" + experiment +
                                    "'; choose another sweep name");
      }
    }
  }
  if (id == 0) {
    Statement ins(db_, R"(INSERT INTO sweeps (name, experiment, experiment_file, description,
                          created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5))");
    ins.bind(1, name).bind(2, experiment);
    if (experiment_file.empty())
      ins.bind_null(3);
    else
      ins.bind(3, experiment_file);
    if (description.empty())
      ins.bind_null(4);
    else
      ins.bind(4, description);
    ins.bind(5, now);
    ins.step();
    id = db_.last_insert_rowid();
  } else {
    Statement upd(db_, R"(UPDATE sweeps SET updated_at = ?2,
                          experiment_file = COALESCE(?3, experiment_file),
                          description = COALESCE(?4, description) WHERE id = ?1)");
    upd.bind(1, id).bind(2, now);
    if (experiment_file.empty())
      upd.bind_null(3);
    else
      upd.bind(3, experiment_file);
    if (description.empty())
      upd.bind_null(4);
    else
      upd.bind(4, description);
    upd.step();
  }
  tx.commit();
  return id;
}

std::optional<std::int64_t> Store::find_sweep(const std::string& name) const {
  Statement st(db_, "SELECT id FROM sweeps WHERE name = ?1");
  st.bind(1, name);
  if (!st.step()) return std::nullopt;
  return st.column_int(0);
}

namespace {
// last_run_at is the latest start of any of the sweep's runs (runs are unique per sweep_id, so
// the lookup is indexed).
constexpr const char* kSweepColumns =
    "SELECT s.id, s.name, s.experiment, s.experiment_file, s.description, s.created_at, "
    "s.updated_at, (SELECT MAX(r.started_at) FROM runs r WHERE r.sweep_id = s.id) AS last_run "
    "FROM sweeps s";
// The latest sweep first: the one whose run started last. Not updated_at, which open_sweep
// moves on every resume, even one that finds nothing left to run.
constexpr const char* kLatestFirst = " ORDER BY COALESCE(last_run, s.created_at) DESC, s.id DESC";

SweepInfo read_sweep(const Statement& st) {
  SweepInfo s{st.column_int(0),  st.column_text(1), st.column_text(2), st.column_text(3),
              st.column_text(4), st.column_text(5), st.column_text(6), ""};
  if (!st.is_null(7)) s.last_run_at = st.column_text(7);
  return s;
}
}  // namespace

std::optional<SweepInfo> Store::sweep(std::int64_t id) const {
  Statement st(db_, std::string(kSweepColumns) + " WHERE s.id = ?1");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return read_sweep(st);
}

std::vector<SweepInfo> Store::sweeps() const {
  Statement st(db_, std::string(kSweepColumns) + kLatestFirst);
  std::vector<SweepInfo> out;
  while (st.step()) out.push_back(read_sweep(st));
  return out;
}

std::vector<SweepListing> Store::sweep_listing() const {
  // The runs a revision owns are its configurations' (and their rungs') with repeat < their
  // repeats, as runs_of_plan (sweep_plans.h) picks them for rank and compare; a plan that is
  // not valid JSON owns none, as there. A pruned run measured: it counts as ok.
  Statement st(db_, R"(
    WITH latest AS (SELECT sweep_id, MAX(revision) AS revision FROM sweep_plans GROUP BY sweep_id),
    configs AS (
      SELECT p.sweep_id, c.value AS config
      FROM sweep_plans p JOIN latest l ON l.sweep_id = p.sweep_id AND l.revision = p.revision,
           json_each(CASE WHEN json_valid(p.plan_json) THEN p.plan_json ELSE '{}' END,
                     '$.configurations') c),
    planned AS (
      SELECT sweep_id, json_extract(config, '$.hash') AS hash,
             COALESCE(json_extract(config, '$.repeats'), 1) AS repeats FROM configs
      UNION ALL  -- successive halving's shorter runs (sweep_plans.h: PlannedRung)
      SELECT sweep_id, json_extract(g.value, '$.hash'), COALESCE(json_extract(g.value, '$.repeats'), 1)
      FROM configs, json_each(configs.config, '$.rungs') g)
    SELECT s.id, COALESCE(l.revision, 0), COUNT(r.id),
           COALESCE(SUM(r.status IN ('ok', 'pruned')), 0), COALESCE(SUM(r.status = 'running'), 0)
    FROM sweeps s LEFT JOIN latest l ON l.sweep_id = s.id
    LEFT JOIN runs r ON r.sweep_id = s.id AND (l.revision IS NULL OR EXISTS (
      SELECT 1 FROM planned pl
      WHERE pl.sweep_id = r.sweep_id AND pl.hash = r.config_hash AND r.repeat < pl.repeats))
    GROUP BY s.id)");
  std::map<std::int64_t, SweepListing> counts;
  while (st.step()) {
    SweepListing l;
    l.revision = static_cast<int>(st.column_int(1));
    l.runs = st.column_int(2);
    l.ok = st.column_int(3);
    l.running = st.column_int(4);
    counts.emplace(st.column_int(0), l);
  }
  std::vector<SweepListing> out;
  for (SweepInfo& s : sweeps()) {
    SweepListing l = counts[s.id];
    l.sweep = std::move(s);
    out.push_back(std::move(l));
  }
  return out;
}

void Store::touch_sweep(std::int64_t sweep_id) {
  Statement st(db_, "UPDATE sweeps SET updated_at = ?2 WHERE id = ?1");
  st.bind(1, sweep_id).bind(2, utc_now());
  st.step();
}

// --- the life of a run --------------------------------------------------------------------------

std::map<std::pair<std::string, int>, RunState> Store::run_states(std::int64_t sweep_id) const {
  Statement st(db_, R"(SELECT id, name, status, owner_host, heartbeat_at, owner_pid, attempts,
                       duration_s, batch_size, config_hash, repeat, images_per_s
                       FROM runs WHERE sweep_id = ?1)");
  st.bind(1, sweep_id);
  std::map<std::pair<std::string, int>, RunState> out;
  while (st.step()) {
    RunState s{st.column_int(0),
               st.column_text(1),
               st.column_text(2),
               st.column_text(3),
               st.column_text(4),
               st.column_int(5),
               static_cast<int>(st.column_int(6)),
               std::nullopt,
               std::nullopt,
               std::nullopt};
    if (!st.is_null(7)) s.duration_s = st.column_double(7);
    if (!st.is_null(8)) s.batch_size = st.column_int(8);
    if (!st.is_null(11)) s.images_per_s = st.column_double(11);
    out.emplace(std::make_pair(st.column_text(9), static_cast<int>(st.column_int(10))),
                std::move(s));
  }
  return out;
}

std::int64_t Store::begin_run(std::int64_t sweep_id, const nlohmann::json& header,
                              const std::string& owner_host, std::int64_t owner_pid,
                              const std::string& gpu) {
  const ResultDocument head = result_from_json(header);
  RowValues row = run_identity_values(sweep_id, head);
  const std::string now = utc_now();
  row.set("status", to_string(RunStatus::running))
      .set_text("gpu", gpu)
      .set_text("owner_host", owner_host)
      .set("owner_pid", owner_pid)
      .set("heartbeat_at", now)
      .set("attempts", std::int64_t{1})
      .set("started_at", now)
      .set("batch_auto", std::int64_t{0});
  // A retry starts from a clean row: whatever the previous attempt recorded is cleared.
  for (const char* column : {"error",
                             "failure_class",
                             "device",
                             "finished_at",
                             "duration_s",
                             "exit_code",
                             "term_signal",
                             "stderr_tail",
                             "images_per_s",
                             "step_ms_mean",
                             "diagnosis",
                             "diagnosis_detail",
                             "gpu_name",
                             "driver_version",
                             "cuda_version",
                             "cudnn_version",
                             "torch_version",
                             "hostname",
                             "telemetry_available",
                             "telemetry_reason",
                             "gpu_lost",
                             "environment_json",
                             "document_json"}) {
    row.set_null(column);
  }
  Transaction tx(db_);
  Statement up(db_, upsert_sql("runs", row, "sweep_id, config_hash, repeat",
                               {"attempts = runs.attempts + 1"}));
  bind_row(up, row);
  up.step();
  const std::int64_t id = run_id_of(db_, sweep_id, head.run->hash, head.run->repeat);
  delete_run_children(db_, id);
  touch_sweep(sweep_id);
  tx.commit();
  return id;
}

void Store::heartbeat(std::int64_t run_id) {
  Statement st(db_, "UPDATE runs SET heartbeat_at = ?2 WHERE id = ?1");
  st.bind(1, run_id).bind(2, utc_now());
  st.step();
}

void Store::mark_interrupted(std::int64_t run_id, const std::string& reason) {
  Transaction tx(db_);
  Statement st(db_, R"(UPDATE runs SET status = 'interrupted', error = ?2,
                       finished_at = COALESCE(finished_at, ?3) WHERE id = ?1 AND status = 'running')");
  st.bind(1, run_id).bind(2, reason).bind(3, utc_now());
  st.step();
  tx.commit();
}

void Store::mark_pruned(std::int64_t sweep_id, const std::string& hash, int repeat) {
  Transaction tx(db_);
  Statement st(db_, R"(UPDATE runs SET status = 'pruned' WHERE sweep_id = ?1 AND config_hash = ?2
                       AND repeat = ?3 AND status = 'ok')");
  st.bind(1, sweep_id).bind(2, hash).bind(3, std::int64_t{repeat});
  st.step();
  touch_sweep(sweep_id);
  tx.commit();
}

void Store::record_device_check(std::int64_t sweep_id, const std::string& gpu, bool healthy,
                                const std::string& detail) {
  Statement st(db_, R"(INSERT INTO device_checks (sweep_id, gpu, checked_at, healthy, detail)
                       VALUES (?1, ?2, ?3, ?4, ?5))");
  st.bind(1, sweep_id).bind(2, gpu).bind(3, utc_now()).bind(4, std::int64_t{healthy ? 1 : 0});
  if (detail.empty())
    st.bind_null(5);
  else
    st.bind(5, detail);
  st.step();
}

void Store::record_invocation(std::int64_t sweep_id, const InvocationTime& t) {
  Statement st(db_, R"(INSERT INTO sweep_invocations (sweep_id, started_at, finished_at, wall_s,
                         slots, runs, measure_s, warmup_s, startup_s, setup_s, after_s, teardown_s,
                         batch_search_s, unmeasured_s)
                       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14))");
  st.bind(1, sweep_id).bind(2, t.started_at).bind(3, t.finished_at).bind(4, t.wall_s);
  const RunPhases& p = t.phases;
  st.bind(5, std::int64_t{t.slots}).bind(6, std::int64_t{t.runs}).bind(7, p.measure_s);
  st.bind(8, p.warmup_s).bind(9, p.startup_s).bind(10, p.setup_s).bind(11, p.after_s);
  st.bind(12, p.teardown_s).bind(13, p.batch_search_s).bind(14, t.unmeasured_s);
  st.step();
}

std::optional<SweepTimeTotal> Store::sweep_time(std::int64_t sweep_id) const {
  if (schema_version() < 6) return std::nullopt;  // a read-only open of an older database
  Statement st(db_, R"(SELECT invocations, runs, wall_s, slot_s, measure_s, warmup_s, startup_s,
                         setup_s, after_s, teardown_s, batch_search_s, unmeasured_s
                       FROM sweep_efficiency WHERE sweep_id = ?1)");
  st.bind(1, sweep_id);
  if (!st.step()) return std::nullopt;
  SweepTimeTotal t;
  t.invocations = static_cast<int>(st.column_int(0));
  t.runs = static_cast<int>(st.column_int(1));
  t.wall_s = st.column_double(2);
  t.slot_s = st.column_double(3);
  RunPhases& p = t.phases;
  p.measure_s = st.column_double(4);
  p.warmup_s = st.column_double(5);
  p.startup_s = st.column_double(6);
  p.setup_s = st.column_double(7);
  p.after_s = st.column_double(8);
  p.teardown_s = st.column_double(9);
  p.batch_search_s = st.column_double(10);
  t.unmeasured_s = st.column_double(11);
  return t;
}

std::string Store::path() const {
  const char* p = sqlite3_db_filename(db_.get(), "main");
  return p ? p : "";
}

}  // namespace orch::storage
