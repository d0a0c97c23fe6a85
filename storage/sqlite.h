// Small RAII owners for SQLite handles (SQLiteCpp's shape): a database, a prepared statement
// and a transaction that rolls back unless committed. Errors become SqliteError with the
// database's message; destructors never throw.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace orch::storage {

class SqliteError : public std::runtime_error {
 public:
  explicit SqliteError(const std::string& what, int code = SQLITE_ERROR)
      : std::runtime_error(what), code_(code) {}
  /// SQLite's extended result code (SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR_WRITE, ...).
  int code() const { return code_; }
  /// The surroundings failed, not the request: the file system is full or read-only, I/O
  /// failed, or another process held the lock longer than the busy timeout. Running the same
  /// command again once that is fixed succeeds.
  bool environment() const;

 private:
  int code_;
};

class Database {
 public:
  /// Opens (creating if needed) the database file.
  explicit Database(const std::string& path);
  /// Opens an existing database file without ever writing to it: SQLite's `mode=ro`, or with
  /// `immutable` its `immutable=1` (for read-only media, where not even a WAL database's -shm
  /// file can be made; changes by another process are not seen then).
  static Database open_read_only(const std::string& path, bool immutable = false);
  ~Database();
  Database(Database&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  Database& operator=(Database&&) = delete;
  Database(const Database&) = delete;

  void exec(const std::string& sql);
  sqlite3* get() const { return db_; }
  std::int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

 private:
  Database() = default;
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(const Database& db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  /// Binds by 1-based index. Strings are copied (SQLITE_TRANSIENT); nullopt binds NULL.
  Statement& bind(int i, const std::string& v);
  Statement& bind(int i, std::int64_t v);
  Statement& bind(int i, double v);
  Statement& bind(int i, std::optional<double> v);
  Statement& bind_null(int i);
  /// Steps once: true while a row is available, false when done.
  bool step();
  void reset();

  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::int64_t column_int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double column_double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string column_text(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

/// When a transaction takes its locks (SQLiteCpp's TransactionBehavior).
enum class TransactionBehavior {
  /// BEGIN DEFERRED: no lock until the first statement; the first read starts a snapshot (in
  /// WAL mode, the last commit before it) that every later read of the transaction sees.
  deferred,
  /// BEGIN IMMEDIATE: the write lock at once, so a write transaction waits (busy timeout) at
  /// its start instead of failing with SQLITE_BUSY when it upgrades from reading to writing.
  immediate,
};

/// BEGIN on construction; ROLLBACK on destruction unless commit() was called.
class Transaction {
 public:
  /// A write transaction (BEGIN IMMEDIATE unless told otherwise).
  explicit Transaction(Database& db, TransactionBehavior behavior = TransactionBehavior::immediate);
  /// A read snapshot: BEGIN DEFERRED. It changes no data, so a const database will do (as a
  /// Statement's reads do); statements run inside it see one state of the database while
  /// other connections commit. Ending it without commit() only releases that state.
  static Transaction read_snapshot(const Database& db) {
    return Transaction(db.get(), TransactionBehavior::deferred);
  }
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Transaction(sqlite3* db, TransactionBehavior behavior);
  sqlite3* db_;
  bool done_ = false;
};

}  // namespace orch::storage
