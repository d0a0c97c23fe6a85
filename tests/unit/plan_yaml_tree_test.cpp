// The located YAML tree: 1-based marks, quoting, and the limits that stop hostile input.
#include <catch2/catch.hpp>

#include "plan/did_you_mean.h"
#include "plan/scalars.h"
#include "plan/yaml_tree.h"

namespace orch {
namespace {

const auto kFile = std::make_shared<const std::string>("t.yaml");

YNode parse(const std::string& text, YamlLimits limits = {}) {
  return parse_yaml(text, kFile, limits);
}

PlanError parse_error(const std::string& text, YamlLimits limits = {}) {
  try {
    parse(text, limits);
  } catch (const PlanError& e) {
    return e;
  }
  FAIL("expected a PlanError");
  throw std::logic_error("unreachable");
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST_CASE("yaml tree: kinds, text and 1-based marks", "[plan][yaml]") {
  YNode root = parse("a: 1\nb:\n  - x\n  - \"y\"\nc: {d: ~}\ne:\n");
  REQUIRE(root.is_mapping());
  CHECK(root.mark.line == 1);
  CHECK(root.mark.col == 1);
  REQUIRE(root.entries.size() == 4);
  CHECK(root.entries[0].key == "a");
  CHECK(root.entries[0].key_mark.line == 1);
  CHECK(root.entries[0].key_mark.col == 1);
  const YNode& a = root.entries[0].value;
  CHECK(a.is_scalar());
  CHECK(a.text == "1");
  CHECK_FALSE(a.quoted);
  CHECK(a.mark.col == 4);
  const YNode& b = *root.find("b");
  REQUIRE(b.is_sequence());
  CHECK(b.items[1].quoted);
  CHECK(b.items[1].text == "y");
  CHECK(b.items[1].mark.line == 4);
  CHECK(b.items[1].mark.col == 5);
  CHECK(root.find("c")->find("d")->is_null());
  // An empty value points at its key, not at the next line.
  const YNode& e = *root.find("e");
  CHECK(e.is_null());
  CHECK(e.mark.line == 6);
  CHECK(e.mark.col == 1);
  CHECK(root.find("zzz") == nullptr);
  CHECK(e.mark.file_name() == "t.yaml");
}

TEST_CASE("yaml tree: empty document and column offset", "[plan][yaml]") {
  YNode empty = parse("# nothing\n");
  CHECK(empty.is_null());
  CHECK(empty.mark.line == 1);
  YNode v = parse_yaml("[a, b]", kFile, {}, 10);
  CHECK(v.mark.col == 11);
  CHECK(v.items[1].mark.col == 15);
}

TEST_CASE("yaml tree: syntax errors carry yaml-cpp's position, 1-based", "[plan][yaml]") {
  PlanError e = parse_error("a: 1\nb: [1, 2\n");
  CHECK(e.file == "t.yaml");
  CHECK(e.line >= 2);
  CHECK_THAT(e.message, Catch::Contains("YAML syntax error"));
  PlanError tab = parse_error("a:\n  b: 1\n c: 2\n");
  CHECK(tab.line == 3);
}

TEST_CASE("yaml tree: duplicate keys are refused", "[plan][yaml]") {
  PlanError e = parse_error("a: 1\nb: 2\na: 3\n");
  CHECK(e.line == 3);
  CHECK(e.col == 1);
  CHECK(e.key_path == "a");
  CHECK_THAT(e.message, Catch::Contains("duplicate key 'a'"));
}

TEST_CASE("yaml tree: non-scalar keys and tags are refused", "[plan][yaml]") {
  CHECK_THAT(parse_error("? [a]\n: 1\n").message, Catch::Contains("mapping keys"));
  CHECK_THAT(parse_error("a: !!float 1\n").message, Catch::Contains("not supported"));
  CHECK(parse("a: !!str 1\n").find("a")->quoted);
}

TEST_CASE("yaml tree: depth limit", "[plan][yaml]") {
  CHECK_NOTHROW(parse("a: " + nested(64)));  // 64 levels below the root mapping
  PlanError e = parse_error("a: " + nested(65));
  CHECK_THAT(e.message, Catch::Contains("deeper than 64"));
  CHECK(e.line == 1);
  CHECK(e.key_path.size() <= 63);  // long paths are shortened
  YamlLimits tight{3, 100000};
  CHECK_NOTHROW(parse("a: [[1]]", tight));
  CHECK_THROWS_AS(parse("a: [[[1]]]", tight), PlanError);
}

TEST_CASE("yaml tree: yaml-cpp's own recursion limit becomes a PlanError", "[plan][yaml]") {
  PlanError e = parse_error("a: " + nested(5000));
  CHECK_THAT(e.message, Catch::Contains("nesting is deeper"));
  CHECK(e.line >= 1);
}

TEST_CASE("yaml tree: alias bombs are stopped by the node limit", "[plan][yaml]") {
  // Nine levels of ten aliases each: 10^9 nodes once expanded, from a few hundred bytes.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) bomb += (j ? ", " : "") + prev;
    bomb += "]\n";
  }
  PlanError e = parse_error(bomb);
  CHECK_THAT(e.message, Catch::Contains("more than 100000 nodes"));
  // Aliases within the limit are expanded, each copy with the anchor's position.
  YNode ok = parse("a: &x {k: 1}\nb: *x\n");
  CHECK(ok.find("b")->find("k")->text == "1");
  CHECK(ok.find("b")->mark.line == 1);
}

TEST_CASE("yaml tree: an alias inside its own anchor is refused", "[plan][yaml]") {
  PlanError e = parse_error("a: &x\n  b: *x\n");
  CHECK_THAT(e.message, Catch::Contains("refers to a node that contains it"));
  CHECK(e.key_path == "a.b");
  PlanError seq = parse_error("a: &s [1, *s]\n");
  CHECK(seq.key_path == "a[1]");
}

TEST_CASE("yaml tree: more than one document is refused", "[plan][yaml]") {
  PlanError e = parse_error("a: 1\n---\nb: 2\n");
  CHECK(e.line == 3);
  CHECK_THAT(e.message, Catch::Contains("found 2"));
}

TEST_CASE("scalars: strict typing", "[plan][yaml]") {
  YNode m = parse(
      "i: 42\nneg: -7\nq: \"42\"\nf: 1.5e-3\nb: on\nB: FALSE\ns: bf16\nbig: "
      "99999999999999999999\ndot: .5\n");
  auto at = [&](const char* k) -> const YNode& { return *m.find(k); };
  CHECK(scalar_int(at("i")) == 42);
  CHECK(scalar_int(at("neg")) == -7);
  CHECK_FALSE(scalar_int(at("q")).has_value());  // quoted: a string
  CHECK_FALSE(scalar_int(at("f")).has_value());
  CHECK_FALSE(scalar_int(at("big")).has_value());  // overflows int64
  CHECK(scalar_float(at("f")) == Approx(0.0015));
  CHECK(scalar_float(at("i")) == 42.0);
  CHECK(scalar_float(at("dot")) == 0.5);
  CHECK_FALSE(scalar_float(at("s")).has_value());
  CHECK(scalar_bool(at("b")) == true);
  CHECK(scalar_bool(at("B")) == false);
  CHECK_FALSE(scalar_bool(at("s")).has_value());
  CHECK(scalar_string(at("q")) == "42");
  CHECK(generic_json(m) ==
        nlohmann::json::parse(R"({"i":42,"neg":-7,"q":"42","f":0.0015,"b":true,"B":false,)"
                              R"("s":"bf16","big":1e20,"dot":0.5})"));
  CHECK(describe(at("s")) == "'bf16'");
  CHECK(describe(m) == "a mapping");
}

TEST_CASE("did you mean: edit distance and suggestions", "[plan][yaml]") {
  CHECK(edit_distance("precision", "precisoin") == 1);  // one swap of neighbours
  CHECK(edit_distance("precision", "presicion") == 2);
  CHECK(edit_distance("batchsize", "batch_size") == 1);
  CHECK(edit_distance("", "abc") == 3);
  const std::vector<std::string> keys = {"batch_size", "precision", "seed", "model"};
  CHECK(closest_word("batchsize", keys) == "batch_size");
  CHECK(closest_word("presicion", keys) == "precision");
  CHECK(closest_word("sed", keys) == "seed");
  CHECK_FALSE(closest_word("xyz", keys).has_value());
  CHECK_FALSE(closest_word("optimizer", keys).has_value());
}

}  // namespace
}  // namespace orch
