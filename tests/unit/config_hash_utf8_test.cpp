// The configuration hash of text that is not UTF-8 (a Latin-1 name read back from a result
// document): no exception, the same hash each time, and distinct from every other string's.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "plan/config_hash.h"

namespace orch {
namespace {

nlohmann::json config_with(const std::string& root) {
  return {{"data", {{"plugin", "imagefolder"}, {"params", {{"root", root}}}}}, {"batch_size", 4}};
}

TEST_CASE("hash: text that is not UTF-8 hashes deterministically and distinctly",
          "[plan][hash][utf8]") {
  const std::string latin1_e = "src\xe9", latin1_e_grave = "src\xe8";
  std::string h;
  REQUIRE_NOTHROW(h = config_hash(config_with(latin1_e)));
  CHECK(h.size() == 32);
  CHECK(config_hash(config_with(latin1_e)) == h);
  // Replacing the bad bytes by U+FFFD before hashing would make these three equal.
  CHECK(config_hash(config_with(latin1_e_grave)) != h);
  CHECK(config_hash(config_with("src\xef\xbf\xbd")) != h);
  CHECK(config_hash(config_with("src")) != h);
  // In a key as well as in a value.
  nlohmann::json keyed = config_with("src");
  keyed["data"]["params"]["x\xe9"] = 1;
  nlohmann::json keyed2 = config_with("src");
  keyed2["data"]["params"]["x\xe8"] = 1;
  CHECK(config_hash(keyed) != config_hash(keyed2));
}

TEST_CASE("hash: a UTF-8 configuration hashes its plain JSON text", "[plan][hash][utf8]") {
  // What every hash already recorded was made of: the cases of plan_hash_test.cpp pin them.
  const nlohmann::json c = config_with("caf\xc3\xa9");
  CHECK(config_hash(c) == config_hash(nlohmann::json::parse(c.dump())));
  CHECK(config_hash(c) != config_hash(config_with("cafe")));
}

}  // namespace
}  // namespace orch
