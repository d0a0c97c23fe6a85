// The result document: its statuses, and its JSON form read and written again unchanged.
#include "result/result_document.h"

#include <catch2/catch.hpp>

#include "store_test_support.h"

namespace orch {
namespace {

using json = nlohmann::json;

TEST_CASE("result: every status reads back from its spelling", "[result]") {
  for (RunStatus s : {RunStatus::running, RunStatus::ok, RunStatus::failed, RunStatus::oom,
                      RunStatus::timeout, RunStatus::interrupted, RunStatus::skipped}) {
    CHECK(parse_run_status(to_string(s)) == s);
  }
  CHECK(to_string(RunStatus::oom) == "oom");
  CHECK_FALSE(parse_run_status("OK"));
  CHECK_FALSE(parse_run_status(""));
  CHECK(is_final_failure(RunStatus::skipped));
  CHECK_FALSE(is_final_failure(RunStatus::interrupted));
  CHECK_FALSE(is_final_failure(RunStatus::ok));
}

TEST_CASE("result: a document reads into typed members and writes back byte for byte", "[result]") {
  json doc = test::result_doc("a", "aaaa", 1, "ok", 1234.5);
  doc["outcome"] = {{"exit_code", nullptr}, {"signal", 11}, {"stderr_tail", "Segmentation fault"}};
  doc["batch_auto"] = true;
  doc["batch_size"] = 128;
  doc["something_new"] = {{"x", 1}};
  const ResultDocument d = result_from_json(doc);
  CHECK(d.status == RunStatus::ok);
  CHECK(d.ok());
  REQUIRE(d.run);
  CHECK(d.run->hash == "aaaa");
  CHECK(d.run->repeat == 1);
  CHECK(d.version == 2);
  CHECK(d.metric("images_per_s") == 1234.5);
  REQUIRE(d.outcome);
  CHECK_FALSE(d.outcome->exit_code);
  CHECK(d.outcome->signal == 11);
  CHECK(d.batch_auto == true);
  CHECK(d.extra.contains("something_new"));
  CHECK(to_json(d).dump(1) == doc.dump(1));
  CHECK(to_json(result_from_json(json::parse(doc.dump()))).dump() == doc.dump());
}

TEST_CASE("result: ill-typed and unknown values are kept as they were", "[result]") {
  const json doc = {{"format", "orch.result"},
                    {"version", "two"},
                    {"status", "weird"},
                    {"run", {{"hash", "h"}}},
                    {"outcome", "crashed"},
                    {"metrics", nullptr},
                    {"device", 3}};
  const ResultDocument d = result_from_json(doc);
  CHECK_FALSE(d.status);
  CHECK_FALSE(d.version);
  CHECK_FALSE(d.run);
  CHECK_FALSE(d.outcome);
  CHECK_FALSE(d.device);
  CHECK(to_json(d) == doc);
  CHECK(result_from_json(json::array()).extra == json::object());
}

TEST_CASE("result: a version 1 document reads like a version 2 one", "[result]") {
  json doc = test::result_doc("a", "aaaa", 0, "failed");
  doc["version"] = 1;
  doc.erase("telemetry");
  const ResultDocument d = result_from_json(doc);
  CHECK(d.version == kOldestResultVersion);
  CHECK(d.status == RunStatus::failed);
  CHECK(d.telemetry.is_null());
  CHECK(to_json(d) == doc);
}

}  // namespace
}  // namespace orch
