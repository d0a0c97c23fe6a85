// A reader on another connection (like sqlite3 or pandas during a night's sweep) reads while
// many runs are recorded: neither side sees SQLITE_BUSY, and the reader only ever sees whole
// runs (each recorded in one transaction).
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::result_doc;
using orch::test::TempDb;

TEST_CASE("a concurrent reader never fails and sees consistent counts", "[store][concurrency]") {
  TempDb db;
  Store writer(db.path);
  const auto sweep = writer.open_sweep("s", "exp", "");
  constexpr int kRuns = 150;

  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::string reader_error;
  std::atomic<bool> reader_failed{false};
  std::int64_t last_seen = 0;
  bool monotonic = true, consistent = true;
  std::thread reader([&] {
    try {
      Store store(db.path);  // its own connection
      while (!done.load()) {
        // Runs with a partial set of steps, metrics or samples would mean a torn write.
        Statement st(store.database(), R"(SELECT COUNT(*),
            SUM((SELECT COUNT(*) FROM run_steps s WHERE s.run_id = r.id) != 2),
            SUM((SELECT COUNT(*) FROM run_metrics m WHERE m.run_id = r.id) != 6),
            SUM((SELECT COUNT(*) FROM telemetry_samples t WHERE t.run_id = r.id) != 2)
            FROM runs r)");
        st.step();
        const auto n = st.column_int(0);
        if (n < last_seen) monotonic = false;
        last_seen = n;
        if (n > 0 && (st.column_int(1) != 0 || st.column_int(2) != 0 || st.column_int(3) != 0)) {
          consistent = false;
        }
        // The commands' own read path as well.
        const auto runs = store.runs(sweep);
        for (const auto& r : runs) {
          if (r.metrics.size() != 6) consistent = false;
        }
        ++reads;
      }
    } catch (const std::exception& e) {
      reader_error = e.what();
      reader_failed = true;
    }
  });
  std::string writer_error;
  try {
    for (int i = 0; i < kRuns; ++i) {
      writer.record(sweep, result_doc("c" + std::to_string(i % 10), "h" + std::to_string(i % 10),
                                      i / 10, "ok", 1000 + i));
    }
  } catch (const std::exception& e) {
    writer_error = e.what();
  }
  // Let the reader see the final state at least once.
  const int reads_at_end = reads.load();
  while (reads.load() < reads_at_end + 2 && !reader_failed.load()) std::this_thread::yield();
  done = true;
  reader.join();
  CHECK(writer_error.empty());
  CHECK(reader_error.empty());
  CHECK(monotonic);
  CHECK(consistent);
  CHECK(reads.load() > 2);
  CHECK(last_seen == kRuns);
}
