// json_dump: JSON text that survives text that is not UTF-8; is_utf8 as nlohmann::json sees it;
// the planner's refusal of such text in a configuration.
#include "result/json_dump.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "unit/plan_test_catalog.h"

namespace orch {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("json_dump replaces bytes that are not UTF-8 and keeps UTF-8 as dump() does",
          "[result][utf8]") {
  const nlohmann::json ok = {{"name", "caf\xc3\xa9 \xe2\x80\xae"}, {"n", 1}};
  CHECK(json_dump(ok) == ok.dump());
  CHECK(json_dump(ok, 2) == ok.dump(2));
  const nlohmann::json bad = {{"name", "caf\xe9"}, {"lone", "x\x9b"}};
  std::string text;
  REQUIRE_NOTHROW(text = json_dump(bad, 2));
  const auto back = nlohmann::json::parse(text);
  CHECK(back.at("name") == "caf\xef\xbf\xbd");
  CHECK(back.at("lone") == "x\xef\xbf\xbd");
}

TEST_CASE("lossless_text carries any bytes through JSON text and back", "[result][utf8]") {
  for (const std::string& s :
       {std::string("/tmp/caf\xc3\xa9/r.db"), std::string("/tmp/caf\xe9/r.db"),
        std::string("x\x9b\xff\x00y", 5), std::string()}) {
    const nlohmann::json j = {{"path", lossless_text(s)}};
    const auto back = nlohmann::json::parse(j.dump());  // dump() throws on bytes not UTF-8
    CHECK(lossless_text_from(back.at("path")) == s);
    CHECK(back.at("path").is_string() == is_utf8(s));
  }
  CHECK_THROWS_AS(lossless_text_from(nlohmann::json{{"bytes_hex", "4"}}), std::invalid_argument);
  CHECK_THROWS_AS(lossless_text_from(nlohmann::json{{"bytes_hex", "zz"}}), std::invalid_argument);
  CHECK_THROWS_AS(lossless_text_from(nlohmann::json(3)), std::invalid_argument);
}

TEST_CASE("is_utf8 accepts what nlohmann::json dumps and refuses what it throws on",
          "[result][utf8]") {
  for (const std::string s :
       {"", "plain", "caf\xc3\xa9", "\xe2\x80\xae", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
    CHECK(is_utf8(s));
    CHECK_NOTHROW(nlohmann::json(s).dump());
  }
  for (const std::string s : {"caf\xe9", "\x9b", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                              "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xe2\x80", "\xff"}) {
    INFO(nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
    CHECK_FALSE(is_utf8(s));
    CHECK_THROWS_AS(nlohmann::json(s).dump(), nlohmann::json::type_error);
  }
}

constexpr const char* kLatin1Root =
    "name: l1\n"
    "base:\n"
    "  data: {plugin: imagefolder, root: \"src\xe9\"}\n";

TEST_CASE("plan: text that is not UTF-8 in a configuration is an error at its line",
          "[plan][utf8]") {
  const PlanError e = test::plan_failure(kLatin1Root);
  CHECK_THAT(std::string(e.what()), Contains("test.yaml:3:") && Contains("not UTF-8"));
  PlanOptions opts;
  opts.overrides = {"data.root=src\xe9"};
  const std::string yaml = "name: l1\nbase:\n  data: {plugin: synthetic}\n";
  CHECK_THAT(std::string(test::plan_failure(yaml, opts).what()), Contains("not UTF-8"));
}

TEST_CASE("plan: a description that is not UTF-8 is no configuration's, and plans",
          "[plan][utf8]") {
  CHECK_NOTHROW(test::plan_text("name: d\ndescription: \"d\xe9\"\nbase:\n  batch_size: 4\n"));
}

}  // namespace
}  // namespace orch
