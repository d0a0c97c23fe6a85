// The probe curve of `batch_size: auto` in the store: each probe of the document's
// batch_search becomes a row of batch_probes, in order, and recording the document again
// replaces them instead of adding more.
#include <catch2/catch.hpp>

#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using orch::test::result_doc;
using orch::test::TempDb;

namespace {

nlohmann::json searched_doc() {
  auto doc = result_doc("auto", "h1", 0);
  doc["config"]["batch_size"] = "auto";
  doc["batch_size"] = 256;
  doc["batch_auto"] = true;
  doc["batch_search"] = {
      {"mode", "fastest"},
      {"headroom", 0.9},
      {"chosen", 256},
      {"search_s", 41.5},
      {"probes",
       {{{"batch", 64},
         {"fits", true},
         {"outcome", "ok"},
         {"images_per_s", 3100.5},
         {"peak_memory_bytes", 9000000000}},
        {{"batch", 128},
         {"fits", true},
         {"outcome", "ok"},
         {"images_per_s", 4800.0},
         {"peak_memory_bytes", 17000000000}},
        {{"batch", 256},
         {"fits", true},
         {"outcome", "ok"},
         {"images_per_s", 5682.0},
         {"peak_memory_bytes", 33000000000}},
        {{"batch", 512}, {"fits", false}, {"outcome", "oom"}, {"note", "out of memory"}}}}};
  return doc;
}

struct ProbeRow {
  std::int64_t seq, batch;
  std::optional<double> ips;
  std::optional<std::int64_t> peak;
  std::string outcome;
};

std::vector<ProbeRow> probe_rows(Store& store, std::int64_t run_id) {
  Statement st(store.database(),
               "SELECT seq, batch_size, images_per_s, peak_memory_bytes, outcome FROM "
               "batch_probes WHERE run_id = ?1 ORDER BY seq");
  st.bind(1, run_id);
  std::vector<ProbeRow> rows;
  while (st.step()) {
    ProbeRow r{st.column_int(0), st.column_int(1), std::nullopt, std::nullopt, st.column_text(4)};
    if (!st.is_null(2)) r.ips = st.column_double(2);
    if (!st.is_null(3)) r.peak = st.column_int(3);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST_CASE("a searched run's probes are stored in batch_probes, in order", "[store][batch]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  const auto id = store.record(sweep, searched_doc());
  auto rows = probe_rows(store, id);
  REQUIRE(rows.size() == 4);
  for (std::size_t k = 0; k < rows.size(); ++k) CHECK(rows[k].seq == static_cast<std::int64_t>(k));
  CHECK(rows[0].batch == 64);
  CHECK(rows[2].batch == 256);
  CHECK(*rows[2].ips == Approx(5682.0));
  CHECK(rows[1].peak == 17000000000);
  CHECK(rows[3].outcome == "oom");
  CHECK_FALSE(rows[3].ips.has_value());
  CHECK_FALSE(rows[3].peak.has_value());

  SECTION("recording the same document again leaves the same rows") {
    CHECK(store.record(sweep, searched_doc()) == id);
    CHECK(probe_rows(store, id).size() == 4);
  }
  SECTION("deleting the run deletes its probes") {
    Statement del(store.database(), "DELETE FROM runs WHERE id = ?1");
    del.bind(1, id);
    del.step();
    CHECK(probe_rows(store, id).empty());
  }
}

TEST_CASE("probes of documents that only said whether a batch fitted get ok or oom",
          "[store][batch]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  auto doc = result_doc("auto", "h1", 0);
  doc["batch_auto"] = true;
  doc["batch_size"] = 96;
  doc["batch_search"] = {
      {"probes",
       {{{"batch", 64}, {"fits", true}}, {{"batch", 128}, {"fits", false}, {"note", "cuDNN"}}}},
      {"chosen", 96}};
  const auto id = store.record(sweep, doc);
  auto rows = probe_rows(store, id);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].outcome == "ok");
  CHECK(rows[1].outcome == "oom");
}

TEST_CASE("a run with a fixed batch has no probes", "[store][batch]") {
  TempDb db;
  Store store(db.path);
  const auto sweep = store.open_sweep("s", "exp", "");
  const auto id = store.record(sweep, result_doc("fixed", "h2", 0));
  CHECK(probe_rows(store, id).empty());
}
