// SQLite RAII wrappers.
#include "storage/sqlite.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "storage/database_files.h"

namespace orch::storage {
namespace {

// SQLite's "unable to open database file" (SQLITE_CANTOPEN) hides why: a read-only file system,
// a folder it may not write DB-wal or DB-shm into, a full disk. The system's errno says it, and
// decides whether the surroundings failed (exit 4) or the request did.
struct OsCause {
  std::string text;  ///< ": <strerror>", or empty where SQLite kept no errno
  int code;          ///< the result code to report: the errno's class where it has one
};

OsCause os_cause(sqlite3* db, int code) {
  if (!db || (code & 0xff) != SQLITE_CANTOPEN) return {"", code};
  const int err = sqlite3_system_errno(db);
  if (err == 0) return {"", code};
  const std::string text = std::string(" (") + std::strerror(err) + ")";
  switch (err) {
    case EROFS:
    case EACCES:
    case EPERM:
      return {text, SQLITE_READONLY};
    case ENOSPC:
    case EDQUOT:
      return {text, SQLITE_FULL};
    case EIO:
      return {text, SQLITE_IOERR};
    default:
      return {text, code};
  }
}

[[noreturn]] void fail(sqlite3* db, const std::string& what) {
  if (!db) throw SqliteError(what + ": out of memory", SQLITE_NOMEM);
  const OsCause cause = os_cause(db, sqlite3_extended_errcode(db));
  throw SqliteError(what + ": " + sqlite3_errmsg(db) + cause.text, cause.code);
}

// Runs SQL without results (Database::exec, and a transaction's BEGIN, COMMIT).
void exec_sql(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw SqliteError("SQL failed: " + msg, sqlite3_extended_errcode(db));
  }
}

// A database is a regular file (or, through a link, one) or not there yet: a FIFO would hang
// SQLite's first read, and a device (/dev/null) would get a journal file created beside it.
void refuse_special_file(const std::string& path) {
  struct stat st {};
  if (path.empty() || path == ":memory:" || ::stat(path.c_str(), &st) != 0) return;
  if (S_ISREG(st.st_mode)) return;
  const char* what = S_ISDIR(st.st_mode)    ? "a folder"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw SqliteError("cannot open database " + path + ": it is " + what +
                    ", not a regular file; pass the path of a database file");
}

// SQLite opens DB-journal, DB-wal and DB-shm beside the database file (the real one, links
// resolved). A link planted at one of those names would aim SQLite's writes at its target;
// SQLite refuses it, saying only "unable to open database file", so it is said here by name.
void refuse_planted_companions(const std::string& path) {
  if (path.empty() || path == ":memory:") return;
  for (const std::string& base : database_spellings(path)) {
    for (const char* suffix : kCompanionSuffixes) {
      const std::string companion = base + suffix;
      struct stat st {};
      if (::lstat(companion.c_str(), &st) != 0) continue;
      // A hard link too: SQLite writes DB-shm in place, into the file's other name as well (and
      // its documentation counts several names for one journal among the ways to corrupt one).
      if (S_ISREG(st.st_mode) && st.st_nlink <= 1) continue;
      throw SqliteError("cannot open database " + path + ": " + companion +
                        (S_ISLNK(st.st_mode)   ? " is a symbolic link, and orch does not open the "
                                                 "database's journal through links"
                         : S_ISREG(st.st_mode) ? " has another name (a hard link)"
                                               : " is not a regular file (a folder, FIFO, device "
                                                 "or socket)") +
                        "; SQLite keeps its journal there: remove it");
    }
  }
}

}  // namespace

bool SqliteError::environment() const {
  switch (code_ & 0xff) {
    case SQLITE_FULL:
    case SQLITE_BUSY:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
      return true;
    default:
      return false;
  }
}

Database::Database(const std::string& path) {
  refuse_special_file(path);
  refuse_planted_companions(path);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = "cannot open database " + path;
    if (db_) msg += std::string(": ") + sqlite3_errmsg(db_);
    const OsCause cause = os_cause(db_, db_ ? sqlite3_extended_errcode(db_) : SQLITE_NOMEM);
    msg += cause.text;
    const int code = cause.code;
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError(msg, code);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Database Database::open_read_only(const std::string& path, bool immutable) {
  // A URI, so the options ride with the name; '%', '?' and '#' in the path are escaped.
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static const char* hex = "0123456789ABCDEF";
      uri += '%';
      uri += hex[(static_cast<unsigned char>(c) >> 4) & 0xF];
      uri += hex[static_cast<unsigned char>(c) & 0xF];
    } else {
      uri += c;
    }
  }
  uri += immutable ? "?mode=ro&immutable=1" : "?mode=ro";
  refuse_special_file(path);
  refuse_planted_companions(path);
  Database d;
  if (sqlite3_open_v2(uri.c_str(), &d.db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) !=
      SQLITE_OK) {
    std::string msg = "cannot open database " + path;
    if (d.db_) msg += std::string(": ") + sqlite3_errmsg(d.db_);
    throw SqliteError(msg);  // ~Database closes the handle
  }
  sqlite3_extended_result_codes(d.db_, 1);
  return d;
}

Database::~Database() {
  if (db_ && sqlite3_close(db_) != SQLITE_OK) {
    std::cerr << "orch: warning: closing the database: " << sqlite3_errmsg(db_) << "\n";
  }
}

void Database::exec(const std::string& sql) { exec_sql(db_, sql.c_str()); }

Statement::Statement(const Database& db, const std::string& sql) : db_(db.get()) {
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
    fail(db_, "cannot prepare statement");
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int i, const std::string& v) {
  if (sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT) !=
      SQLITE_OK)
    fail(db_, "bind");
  return *this;
}
Statement& Statement::bind(int i, std::int64_t v) {
  if (sqlite3_bind_int64(stmt_, i, v) != SQLITE_OK) fail(db_, "bind");
  return *this;
}
Statement& Statement::bind(int i, double v) {
  if (sqlite3_bind_double(stmt_, i, v) != SQLITE_OK) fail(db_, "bind");
  return *this;
}
Statement& Statement::bind(int i, std::optional<double> v) {
  return v ? bind(i, *v) : bind_null(i);
}
Statement& Statement::bind_null(int i) {
  if (sqlite3_bind_null(stmt_, i) != SQLITE_OK) fail(db_, "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, "statement failed");
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::column_text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
}

Transaction::Transaction(Database& db, TransactionBehavior behavior)
    : Transaction(db.get(), behavior) {}

Transaction::Transaction(sqlite3* db, TransactionBehavior behavior) : db_(db) {
  exec_sql(db_, behavior == TransactionBehavior::immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

Transaction::~Transaction() {
  if (done_) return;
  // After SQLITE_FULL or an I/O error SQLite may have rolled back already; a second ROLLBACK
  // would only fail and warn about nothing.
  if (sqlite3_get_autocommit(db_)) return;
  char* err = nullptr;
  if (sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, &err) != SQLITE_OK) {
    std::cerr << "orch: warning: rollback failed: " << (err ? err : "?") << "\n";
    sqlite3_free(err);
  }
}

void Transaction::commit() {
  exec_sql(db_, "COMMIT");
  done_ = true;
}

}  // namespace orch::storage
