// Transaction's behaviours (storage/sqlite.h): a read snapshot sees one state of the database
// while another connection commits between its reads; a write transaction holds the write
// lock from its start.
#include <catch2/catch.hpp>

#include "storage/sqlite.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::result_doc;
using orch::test::TempDb;

namespace {

std::int64_t count_runs(const Database& db) {
  Statement st(db, "SELECT COUNT(*) FROM runs");
  st.step();
  return st.column_int(0);
}

}  // namespace

TEST_CASE("a read snapshot sees one state while another connection commits",
          "[store][transaction]") {
  TempDb db;
  Store writer(db.path);  // WAL mode, so a reader and a writer do not block each other
  const auto sweep = writer.open_sweep("s", "exp", "");
  writer.record(sweep, result_doc("a", "h1", 0));
  const Store reader(db.path);  // its own connection, read through const

  {
    const Transaction snapshot = Transaction::read_snapshot(reader.database());
    CHECK(count_runs(reader.database()) == 1);
    writer.record(sweep, result_doc("b", "h2", 0));  // commits between the snapshot's reads
    CHECK(count_runs(writer.database()) == 2);
    CHECK(count_runs(reader.database()) == 1);
  }
  CHECK(count_runs(reader.database()) == 2);  // the snapshot ended: the newest state
  CHECK(reader.runs(sweep).size() == 2);
}

TEST_CASE("a write transaction rolls back unless committed", "[store][transaction]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  {
    Transaction tx(store.database());
    store.database().exec("DELETE FROM sweeps");
  }
  CHECK(store.sweeps().size() == 1);
  {
    Transaction tx(store.database(), TransactionBehavior::deferred);
    store.database().exec("DELETE FROM runs");
    tx.commit();
  }
  CHECK(store.runs(sweep).empty());
}
