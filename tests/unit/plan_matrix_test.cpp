// Matrix expansion on generic paths and values, checked against GitHub Actions' documented
// `strategy.matrix` examples (include/exclude semantics) and the planner's own limits.
#include <catch2/catch.hpp>

#include "plan/matrix.h"

namespace orch {
namespace {

using nlohmann::json;

MatrixAxis axis(std::string path, std::vector<json> values, bool pinned = false) {
  MatrixAxis a;
  a.path = path;
  for (std::size_t i = 0; i < values.size(); ++i) {
    a.values.push_back(MatrixCell{values[i], nullptr, path + "[" + std::to_string(i) + "]"});
  }
  a.pinned = pinned;
  return a;
}

MatrixEntry entry(std::vector<std::pair<std::string, json>> pairs) {
  MatrixEntry e;
  e.key_path = "entry";
  for (auto& [k, v] : pairs) e.pairs.push_back(MatrixPair{k, {}, MatrixCell{v, nullptr, k}});
  return e;
}

// Each combination as a sorted JSON object, e.g. {"animal":"cat","fruit":"apple"}.
std::vector<std::string> combos(const MatrixExpansion& ex) {
  std::vector<std::string> out;
  for (const MatrixCombination& c : ex.combinations) {
    json j = json::object();
    for (const auto& [path, cell] : c.values) j[path] = cell->value;
    out.push_back(j.dump());
  }
  return out;
}

TEST_CASE("matrix: cartesian product sizes", "[plan][matrix]") {
  struct Case {
    std::vector<std::size_t> sizes;
    std::size_t expected;
  };
  auto c = GENERATE(Case{{1}, 1}, Case{{3}, 3}, Case{{2, 2}, 4}, Case{{2, 3, 4}, 24},
                    Case{{1, 1, 1, 5}, 5}, Case{{10, 10, 10}, 1000});
  MatrixSpec spec;
  for (std::size_t a = 0; a < c.sizes.size(); ++a) {
    std::vector<json> values;
    for (std::size_t v = 0; v < c.sizes[a]; ++v) values.push_back(v);
    spec.axes.push_back(axis("axis" + std::to_string(a), values));
  }
  MatrixExpansion ex = expand_matrix(spec, 100000);
  CHECK(ex.count == c.expected);
  CHECK(ex.combinations.size() == c.expected);
  CHECK_FALSE(ex.over_limit);
  // Every combination is distinct.
  std::vector<std::string> all = combos(ex);
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
}

TEST_CASE("matrix: first axis varies slowest", "[plan][matrix]") {
  MatrixSpec spec;
  spec.axes = {axis("os", {"linux", "mac"}), axis("v", {1, 2, 3})};
  CHECK(combos(expand_matrix(spec, 100)) ==
        std::vector<std::string>{R"({"os":"linux","v":1})", R"({"os":"linux","v":2})",
                                 R"({"os":"linux","v":3})", R"({"os":"mac","v":1})",
                                 R"({"os":"mac","v":2})", R"({"os":"mac","v":3})"});
}

TEST_CASE("matrix: GitHub's include example (fruit/animal) gives its six documented jobs",
          "[plan][matrix][github]") {
  MatrixSpec spec;
  spec.axes = {axis("fruit", {"apple", "pear"}), axis("animal", {"cat", "dog"})};
  spec.include = {entry({{"color", "green"}}), entry({{"color", "pink"}, {"animal", "cat"}}),
                  entry({{"fruit", "apple"}, {"shape", "circle"}}), entry({{"fruit", "banana"}}),
                  entry({{"fruit", "banana"}, {"animal", "cat"}})};
  CHECK(combos(expand_matrix(spec, 100)) ==
        std::vector<std::string>{
            R"({"animal":"cat","color":"pink","fruit":"apple","shape":"circle"})",
            R"({"animal":"dog","color":"green","fruit":"apple","shape":"circle"})",
            R"({"animal":"cat","color":"pink","fruit":"pear"})",
            R"({"animal":"dog","color":"green","fruit":"pear"})",
            R"({"fruit":"banana"})",
            R"({"animal":"cat","fruit":"banana"})",
        });
}

TEST_CASE("matrix: GitHub's exclude example removes partial matches", "[plan][matrix][github]") {
  MatrixSpec spec;
  spec.axes = {axis("os", {"macos-latest", "windows-latest"}), axis("version", {12, 14, 16}),
               axis("environment", {"staging", "production"})};
  spec.exclude = {entry({{"os", "macos-latest"}, {"version", 12}, {"environment", "production"}}),
                  entry({{"os", "windows-latest"}, {"version", 16}})};
  MatrixExpansion ex = expand_matrix(spec, 100);
  CHECK(ex.count == 9);
  std::vector<std::string> all = combos(ex);
  for (const std::string& c : all) {
    CHECK(c != R"({"environment":"production","os":"macos-latest","version":12})");
    CHECK(c.find(R"("os":"windows-latest","version":16)") == std::string::npos);
  }
  CHECK(std::count(all.begin(), all.end(),
                   R"({"environment":"staging","os":"macos-latest","version":12})") == 1);
}

TEST_CASE("matrix: GitHub's 'expanding configurations' example", "[plan][matrix][github]") {
  MatrixSpec spec;
  spec.axes = {axis("os", {"windows-latest", "ubuntu-latest"}), axis("node", {14, 16})};
  spec.include = {entry({{"os", "windows-latest"}, {"node", 16}, {"npm", 6}})};
  CHECK(combos(expand_matrix(spec, 100)) == std::vector<std::string>{
                                                R"({"node":14,"os":"windows-latest"})",
                                                R"({"node":16,"npm":6,"os":"windows-latest"})",
                                                R"({"node":14,"os":"ubuntu-latest"})",
                                                R"({"node":16,"os":"ubuntu-latest"})",
                                            });
}

TEST_CASE("matrix: GitHub's 'adding configurations' example", "[plan][matrix][github]") {
  MatrixSpec spec;
  spec.axes = {axis("os", {"windows-latest", "ubuntu-latest"}), axis("node", {14, 16})};
  spec.include = {entry({{"os", "windows-latest"}, {"node", 17}})};
  MatrixExpansion ex = expand_matrix(spec, 100);
  REQUIRE(ex.count == 5);
  CHECK(combos(ex).back() == R"({"node":17,"os":"windows-latest"})");
}

TEST_CASE("matrix: include-only matrix makes one combination per entry", "[plan][matrix][github]") {
  MatrixSpec spec;
  spec.include = {entry({{"site", "production"}, {"datacenter", "site-a"}}),
                  entry({{"site", "staging"}, {"datacenter", "site-b"}})};
  CHECK(combos(expand_matrix(spec, 100)) ==
        std::vector<std::string>{R"({"datacenter":"site-a","site":"production"})",
                                 R"({"datacenter":"site-b","site":"staging"})"});
}

TEST_CASE("matrix: exclude runs before include, so include can add a combination back",
          "[plan][matrix][github]") {
  MatrixSpec spec;
  spec.axes = {axis("a", {1, 2}), axis("b", {"x", "y"})};
  spec.exclude = {entry({{"a", 1}, {"b", "x"}})};
  spec.include = {entry({{"a", 1}, {"b", "x"}, {"extra", true}})};
  CHECK(combos(expand_matrix(spec, 100)) ==
        std::vector<std::string>{R"({"a":1,"b":"y"})", R"({"a":2,"b":"x"})", R"({"a":2,"b":"y"})",
                                 R"({"a":1,"b":"x","extra":true})"});
}

TEST_CASE("matrix: include never overwrites an original value, but may overwrite an added one",
          "[plan][matrix]") {
  MatrixSpec spec;
  spec.axes = {axis("a", {1, 2})};
  spec.include = {entry({{"tag", "first"}}), entry({{"a", 2}, {"tag", "second"}}),
                  entry({{"a", 3}, {"tag", "third"}})};
  CHECK(combos(expand_matrix(spec, 100)) == std::vector<std::string>{R"({"a":1,"tag":"first"})",
                                                                     R"({"a":2,"tag":"second"})",
                                                                     R"({"a":3,"tag":"third"})"});
}

TEST_CASE("matrix: values compare structurally", "[plan][matrix]") {
  MatrixSpec spec;
  json m1 = json::object({{"plugin", "amp"}, {"dtype", "bf16"}});
  json m2 = json::parse(R"({"dtype":"bf16","plugin":"amp"})");
  spec.axes = {axis("p", {"fp32", m1}), axis("lr", {1, 2})};
  spec.exclude = {entry({{"p", m2}, {"lr", 1.0}})};  // 1.0 == 1, key order irrelevant
  MatrixExpansion ex = expand_matrix(spec, 100);
  CHECK(ex.count == 3);
  CHECK(combos(ex) == std::vector<std::string>{R"({"lr":1,"p":"fp32"})", R"({"lr":2,"p":"fp32"})",
                                               R"({"lr":2,"p":{"dtype":"bf16","plugin":"amp"}})"});
}

TEST_CASE("matrix: bad specs throw PlanError", "[plan][matrix]") {
  MatrixSpec spec;
  spec.axes = {axis("a", {1, 2}), axis("b", {"x"})};
  SECTION("exclude key that is not an axis") {
    spec.exclude = {entry({{"c", 1}})};
    CHECK_THROWS_WITH(expand_matrix(spec, 100), Catch::Contains("'c' is not a matrix axis"));
  }
  SECTION("exclude that matches nothing") {
    spec.exclude = {entry({{"a", 3}})};
    CHECK_THROWS_WITH(expand_matrix(spec, 100), Catch::Contains("matches nothing"));
  }
  SECTION("exclude on a pinned axis may match nothing") {
    spec.axes[0] = axis("a", {2}, /*pinned=*/true);
    spec.exclude = {entry({{"a", 1}})};
    CHECK(expand_matrix(spec, 100).count == 1);
  }
  SECTION("empty include entry") {
    spec.include = {entry({})};
    CHECK_THROWS_WITH(expand_matrix(spec, 100), Catch::Contains("cannot be empty"));
  }
  SECTION("empty exclude entry") {
    spec.exclude = {entry({})};
    CHECK_THROWS_WITH(expand_matrix(spec, 100), Catch::Contains("empty exclude"));
  }
  SECTION("empty axis") {
    spec.axes.push_back(axis("c", {}));
    CHECK_THROWS_WITH(expand_matrix(spec, 100), Catch::Contains("at least one value"));
  }
  SECTION("duplicate axis value") {
    spec.axes[0] = axis("a", {1, 2, 1.0});
    CHECK_THROWS_WITH(expand_matrix(spec, 100), Catch::Contains("a[2]: the same value as a[0]"));
  }
  SECTION("exclude everything") {
    spec.exclude = {entry({{"b", "x"}})};
    CHECK_THROWS_WITH(expand_matrix(spec, 100), Catch::Contains("removes every combination"));
  }
}

TEST_CASE("matrix: the limit counts but does not keep extra combinations", "[plan][matrix]") {
  MatrixSpec spec;
  spec.axes = {axis("a", {1, 2, 3}), axis("b", {1, 2, 3})};
  spec.exclude = {entry({{"a", 1}})};
  MatrixExpansion ex = expand_matrix(spec, 5);
  CHECK(ex.over_limit);
  CHECK(ex.count == 6);
  CHECK(ex.combinations.size() == 5);
  CHECK_FALSE(ex.counted_before_exclude);

  SECTION("includes that add combinations count too") {
    spec.include = {entry({{"a", 9}})};
    MatrixExpansion ex7 = expand_matrix(spec, 6);
    CHECK(ex7.over_limit);
    CHECK(ex7.count == 7);
  }
}

TEST_CASE("matrix: an enormous product is refused without enumerating it", "[plan][matrix]") {
  MatrixSpec spec;
  std::vector<json> hundred;
  for (int i = 0; i < 100; ++i) hundred.push_back(i);
  for (int a = 0; a < 5; ++a) spec.axes.push_back(axis("a" + std::to_string(a), hundred));
  MatrixExpansion ex = expand_matrix(spec, 10000);
  CHECK(ex.over_limit);
  CHECK(ex.counted_before_exclude);
  CHECK(ex.count == 10000000000ull);
  CHECK(ex.combinations.empty());
}

}  // namespace
}  // namespace orch
