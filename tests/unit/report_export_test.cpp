// `orch export`: CSV parsed back with a small RFC 4180 reader (names with a comma, a quote and
// a line break survive), JSON parsed back with nlohmann, flattened configuration keys.
#include <catch2/catch.hpp>
#include <map>

#include "report/export.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;

namespace {

// RFC 4180: CRLF between records, quoted fields may hold commas, CRLF and doubled quotes.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"' && !field_started) {
      quoted = field_started = true;
    } else if (c == ',') {
      row.push_back(field), field.clear(), field_started = false;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      row.push_back(field), field.clear(), field_started = false;
      rows.push_back(row), row.clear();
      ++i;
    } else {
      REQUIRE(c != '"');  // a bare quote inside an unquoted field is not RFC 4180
      REQUIRE(c != '\n');
      field += c, field_started = true;
    }
  }
  REQUIRE_FALSE(quoted);
  REQUIRE(field.empty());  // the last record ends with CRLF
  return rows;
}

struct Fixture {
  test::TempDb db;
  storage::Store store{db.path};
  std::int64_t sweep = store.open_sweep("s", "exp", "");
  const std::string evil = "amp, \"bf16\"\r\nline two";

  Fixture() {
    store.record(sweep, test::result_doc(evil, "h1", 0, "ok", 1500.25));
    store.record(sweep, test::result_doc("plain", "h2", 0, "failed"));
  }
};

}  // namespace

TEST_CASE("CSV export parses back: one row per run, quoting intact", "[report][export]") {
  Fixture f;
  const auto table = export_table(f.store.runs(f.sweep));
  const auto rows = parse_csv(to_csv(table));
  REQUIRE(rows.size() == 3);
  const auto& header = rows[0];
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* c :
       {"run_id", "name", "status", "config.precision.plugin", "config.precision.dtype",
        "config.batch_size", "metrics.images_per_s", "diagnosis", "gpu"}) {
    INFO(c);
    CHECK(col.count(c) == 1);
  }
  for (const auto& r : rows) CHECK(r.size() == header.size());
  // runs are ordered by name: the evil one ("amp, ...") first
  const auto& evil = rows[1];
  CHECK(evil[col["name"]] == f.evil);
  CHECK(evil[col["status"]] == "ok");
  CHECK(evil[col["config.precision.plugin"]] == "amp");
  CHECK(evil[col["config.precision.dtype"]] == "bf16");
  CHECK(evil[col["config.batch_size"]] == "256");
  CHECK(std::stod(evil[col["metrics.images_per_s"]]) == 1500.25);
  CHECK(evil[col["diagnosis"]] == "compute-bound");
  const auto& failed = rows[2];
  CHECK(failed[col["status"]] == "failed");
  CHECK(failed[col["metrics.images_per_s"]].empty());  // NULL is an empty field
  CHECK(failed[col["error"]] == "boom");
}

TEST_CASE("JSON export parses back as an array of flat objects", "[report][export]") {
  Fixture f;
  const auto table = export_table(f.store.runs(f.sweep));
  const auto j = nlohmann::json::parse(to_json(table));
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 2);
  CHECK(j[0]["name"] == f.evil);
  CHECK(j[0]["config.precision.dtype"] == "bf16");
  CHECK(j[0]["config.batch_size"] == 256);
  CHECK(j[0]["metrics.images_per_s"] == 1500.25);
  CHECK(j[0]["batch_auto"] == false);
  CHECK(j[1]["status"] == "failed");
  CHECK(j[1]["metrics.images_per_s"].is_null());
  CHECK(j[1]["term_signal"] == 11);
  CHECK(j[0].size() == table.columns.size());
}

TEST_CASE("export carries every recorded environment field", "[report][export]") {
  test::TempDb db;
  storage::Store store{db.path};
  const auto sweep = store.open_sweep("s", "exp", "");
  auto doc = test::result_doc("fp32", "h1", 0);
  doc["environment"]["torch_threads"] = 1;
  doc["environment"]["cpu_model"] = "AMD Ryzen 9 7950X";
  doc["environment"]["variables"] = {{"OMP_NUM_THREADS", "1"}};
  doc["environment"]["gpu_memory_cap_bytes"] = 8LL << 30;
  store.record(sweep, doc);
  store.record(sweep, test::result_doc("other", "h2", 0));  // without those fields
  const auto j = nlohmann::json::parse(to_json(export_table(store.runs(sweep))));
  REQUIRE(j.size() == 2);
  CHECK(j[0]["name"] == "fp32");
  CHECK(j[0]["environment.torch_threads"] == 1);
  CHECK(j[0]["environment.cpu_model"] == "AMD Ryzen 9 7950X");
  CHECK(j[0]["environment.variables.OMP_NUM_THREADS"] == "1");
  CHECK(j[0]["environment.gpu_memory_cap_bytes"] == 8LL << 30);
  CHECK(j[0]["environment.pcie.gen_max"] == 5);
  CHECK(j[1]["environment.hostname"] == "node1");
  CHECK(j[1]["environment.torch_threads"].is_null());
  CHECK(j[1]["environment.variables.OMP_NUM_THREADS"].is_null());
}

TEST_CASE("flattening nests with dots and keeps arrays as JSON text", "[report][export]") {
  std::map<std::string, nlohmann::json> out;
  flatten_json({{"a", {{"b", 1}, {"c", {{"d", "x"}}}}},
                {"list", {1, 2}},
                {"precision", {{"plugin", "amp"}, {"params", {{"dtype", "bf16"}}}}}},
               "config", out);
  CHECK(out.at("config.a.b") == 1);
  CHECK(out.at("config.a.c.d") == "x");
  CHECK(out.at("config.list") == "[1,2]");
  CHECK(out.at("config.precision.plugin") == "amp");
  CHECK(out.at("config.precision.dtype") == "bf16");
  CHECK(out.count("config.precision.params.dtype") == 0);
}
