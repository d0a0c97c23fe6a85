// `orch ingest`: result documents of a folder into the store; idempotent; malformed documents
// are reported and do not stop the others.
#include <catch2/catch.hpp>

#include "cluster/ingest.h"
#include "cluster/submission.h"
#include "unit/cluster_test_support.h"
#include "unit/store_test_support.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

void write_json(const fs::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(1); }

TEST_CASE("cluster: ingest loads good documents, reports malformed ones, and is idempotent",
          "[cluster]") {
  test::TempFolder tmp;
  test::TempDb db;
  const fs::path dir = tmp.path / "results";
  fs::create_directories(dir / "nested");
  write_json(dir / "aaaa-r0.json", test::result_doc("a", "aaaa", 0, "ok", 1000));
  write_json(dir / "aaaa-r1.json", test::result_doc("a", "aaaa", 1, "ok", 1100));
  write_json(dir / "nested" / "bbbb-r0.json", test::result_doc("b", "bbbb", 0, "failed"));
  // The same run twice (a copy): recorded once.
  write_json(dir / "copy-of-aaaa-r0.json", test::result_doc("a", "aaaa", 0, "ok", 1000));
  std::ofstream(dir / "truncated.json") << "{\"format\": \"orch.result\", \"sta";
  write_json(dir / "not-ours.json", nlohmann::json{{"hello", 1}});
  auto bad_status = test::result_doc("c", "cccc", 0);
  bad_status["status"] = "exploded";
  write_json(dir / "bad-status.json", bad_status);
  auto no_hash = test::result_doc("d", "dddd", 0);
  no_hash["run"].erase("hash");
  write_json(dir / "no-hash.json", no_hash);
  std::ofstream(dir / "notes.txt") << "not a document";

  storage::Store store(db.path);
  cluster::IngestReport first;
  {
    cluster::Ingester ingester(store);
    first = ingester.ingest(dir.string());
  }
  CHECK(first.recorded == 3);
  CHECK(first.unchanged == 1);  // the copy
  REQUIRE(first.malformed.size() == 4);
  std::string all;
  for (const auto& m : first.malformed) all += m + "\n";
  INFO(all);
  CHECK(all.find("truncated.json: not valid JSON") != std::string::npos);
  CHECK(all.find("not-ours.json: not an orch result document") != std::string::npos);
  CHECK(all.find("bad-status.json: result document has an unknown status 'exploded'") !=
        std::string::npos);
  CHECK(all.find("no-hash.json: no run.hash") != std::string::npos);

  // No index and no --sweep: the documents' experiment name is the sweep.
  auto sweep = store.find_sweep("exp");
  REQUIRE(sweep.has_value());
  auto runs = store.runs(*sweep);
  REQUIRE(runs.size() == 3);
  CHECK(store.runs(*sweep, "ok").size() == 2);

  // A second ingest (a new process: nothing remembered) adds nothing.
  cluster::Ingester again(store);
  auto second = again.ingest(dir.string());
  CHECK(second.recorded == 0);
  CHECK(second.unchanged == 4);
  CHECK(second.malformed.size() == 4);
  CHECK(store.runs(*sweep).size() == 3);

  SECTION("a run whose status changed (interrupted, then ok after a requeue) is recorded again") {
    write_json(dir / "aaaa-r1.json", test::result_doc("a", "aaaa", 1, "interrupted"));
    auto third = again.ingest(dir.string());
    CHECK(third.recorded == 1);
    CHECK(third.malformed.empty());  // files seen unchanged are not read again by this ingester
    CHECK(store.runs(*sweep, "interrupted").size() == 1);
    CHECK(store.runs(*sweep).size() == 3);
  }
}

TEST_CASE("cluster: ingest of a submission folder uses its index's sweep", "[cluster]") {
  test::TempFolder tmp;
  test::TempDb db;
  const auto run = test::cluster_spec("a", "aaaa", 0);
  cluster::SlurmScriptInput in;
  in.sweep = "night";
  in.orch_binary = "/bin/orch";
  in.dir = (tmp.path / "sub").string();
  cluster::write_submission({"night", "exp", "/e.yaml", "desc"}, {&run}, 1, in);
  write_json(tmp.path / "sub" / "results" / "aaaa-r0.json", test::result_doc("a", "aaaa", 0));
  auto other = test::result_doc("z", "zzzz", 0, "ok", 5, "another-experiment");
  write_json(tmp.path / "sub" / "results" / "zzzz-r0.json", other);

  storage::Store store(db.path);
  auto check_night = [&] {
    auto id = store.find_sweep("night");
    REQUIRE(id.has_value());
    CHECK(store.sweep(*id)->experiment_file == "/e.yaml");
    CHECK(store.runs(*id).size() == 1);
    CHECK_FALSE(store.find_sweep("exp").has_value());
  };
  SECTION("the folder itself") {
    cluster::Ingester ingester(store);
    auto r = ingester.ingest((tmp.path / "sub").string());
    CHECK(r.recorded == 1);
    REQUIRE(r.malformed.size() == 1);
    CHECK(r.malformed[0].find("experiment 'another-experiment'") != std::string::npos);
    check_night();
  }
  SECTION("its results/ folder") {
    cluster::Ingester ingester(store);
    CHECK(ingester.ingest((tmp.path / "sub" / "results").string()).recorded == 1);
    check_night();
  }
  SECTION("--sweep overrides the index") {
    cluster::Ingester ingester(store, "other-name");
    CHECK(ingester.ingest((tmp.path / "sub").string()).recorded == 1);
    CHECK(store.find_sweep("other-name").has_value());
    CHECK_FALSE(store.find_sweep("night").has_value());
  }
}

}  // namespace
}  // namespace orch
