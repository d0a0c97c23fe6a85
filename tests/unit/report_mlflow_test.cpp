// `orch export --to mlflow` without a server: what a run becomes (params, tags, metrics and
// series), the log-batch requests within MLflow's limits, and the push against a small
// in-memory stand-in for the REST API that can fail on any request (idempotence, a push that
// stops half-way, the kinds of failure). tests/mlflow runs it against a real `mlflow server`.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "report/input_error.h"
#include "report/mlflow_export.h"
#include "storage/store.h"
#include "unit/store_test_support.h"

using namespace orch;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// Enough of MLflow's tracking REST API for the exporter, checking MLflow's batch limits.
class FakeMlflow : public HttpClient {
 public:
  struct Run {
    std::string experiment_id;
    std::map<std::string, std::string> tags, params;
    std::vector<json> metrics;
    std::string status = "RUNNING";
    bool deleted = false;
  };
  std::map<std::string, std::string> experiments;  // name -> id
  std::map<std::string, Run> runs;                 // run_id -> run
  int requests = 0;
  int fail_at = -1;      // the request (1-based) that fails
  long fail_status = 0;  // 0: a transport error
  std::vector<std::string> log;

  HttpResponse request(const std::string& method, const std::string& url,
                       const std::string& body) override {
    ++requests;
    const std::string path = url.substr(url.find("/api/2.0/mlflow/") + 16);
    log.push_back(method + " " + path.substr(0, path.find('?')));
    if (requests == fail_at) {
      if (fail_status == 0) throw HttpTransportError("Couldn't connect to server");
      return {fail_status, R"({"error_code": "INTERNAL_ERROR", "message": "it broke"})"};
    }
    const json in = body.empty() ? json::object() : json::parse(body);
    if (path.rfind("experiments/get-by-name?experiment_name=", 0) == 0) {
      const std::string name = path.substr(path.find('=') + 1);
      auto it = experiments.find(name);  // the tests' names need no decoding
      if (it == experiments.end())
        return {404, R"({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "none"})"};
      return ok({{"experiment",
                  {{"experiment_id", it->second}, {"name", name}, {"lifecycle_stage", "active"}}}});
    }
    if (path == "experiments/create") {
      const std::string id = std::to_string(experiments.size() + 1);
      experiments[in["name"].get<std::string>()] = id;
      return ok({{"experiment_id", id}});
    }
    if (path == "runs/create") {
      const std::string id = "run" + std::to_string(runs.size() + 1);
      Run& r = runs[id];
      r.experiment_id = in["experiment_id"].get<std::string>();
      for (const auto& t : in["tags"])
        r.tags[t["key"].get<std::string>()] = t["value"].get<std::string>();
      r.tags["mlflow.runName"] = in["run_name"].get<std::string>();
      return ok({{"run", {{"info", {{"run_id", id}}}}}});
    }
    if (path == "runs/log-batch") {
      const std::size_t m = in["metrics"].size(), p = in["params"].size(), t = in["tags"].size();
      if (m > 1000 || p > 100 || t > 100 || m + p + t > 1000 || body.size() > 1000000) {
        return {400, R"({"error_code": "INVALID_PARAMETER_VALUE", "message": "too many"})"};
      }
      Run& r = runs.at(in["run_id"].get<std::string>());
      for (const auto& x : in["params"]) {
        if (r.params.count(x["key"].get<std::string>()))
          return {400, R"({"error_code": "INVALID_PARAMETER_VALUE", "message": "param twice"})"};
        r.params[x["key"].get<std::string>()] = x["value"].get<std::string>();
      }
      for (const auto& x : in["tags"])
        r.tags[x["key"].get<std::string>()] = x["value"].get<std::string>();
      for (const auto& x : in["metrics"]) r.metrics.push_back(x);
      return ok(json::object());
    }
    if (path == "runs/update") {
      runs.at(in["run_id"].get<std::string>()).status = in["status"].get<std::string>();
      return ok(json::object());
    }
    if (path == "runs/set-tag") {
      runs.at(in["run_id"].get<std::string>()).tags[in["key"].get<std::string>()] =
          in["value"].get<std::string>();
      return ok(json::object());
    }
    if (path == "runs/delete") {
      runs.at(in["run_id"].get<std::string>()).deleted = true;
      return ok(json::object());
    }
    if (path == "runs/search") {
      const std::string filter = in["filter"].get<std::string>();  // tags.`orch.sweep_key` = '...'
      const std::string want = filter.substr(filter.find('\'') + 1, 32);
      json found = json::array();
      for (const auto& [id, r] : runs) {
        if (r.deleted || r.experiment_id != in["experiment_ids"][0]) continue;
        auto it = r.tags.find("orch.sweep_key");
        if (it == r.tags.end() || it->second != want) continue;
        json tags = json::array();
        for (const auto& [k, v] : r.tags) tags.push_back({{"key", k}, {"value", v}});
        found.push_back({{"info", {{"run_id", id}}}, {"data", {{"tags", tags}}}});
      }
      return ok({{"runs", found}});
    }
    return {404, "<html>not found</html>"};
  }

  std::vector<const Run*> active() const {
    std::vector<const Run*> out;
    for (const auto& [id, r] : runs) {
      if (!r.deleted) out.push_back(&r);
    }
    return out;
  }

 private:
  static HttpResponse ok(const json& j) { return {200, j.dump()}; }
};

struct Fixture {
  test::TempDb db;
  storage::Store store{db.path};
  std::int64_t sweep_id = store.open_sweep("night", "exp", "");
  storage::SweepInfo sweep;
  std::vector<storage::RunRecord> runs;

  Fixture() {
    store.record(sweep_id, test::result_doc("fast", "h1", 0, "ok", 1500.25));
    store.record(sweep_id, test::result_doc("broken", "h2", 0, "failed"));
    sweep = *store.sweep(sweep_id);
    runs = store.runs(sweep_id);
  }
  void push(FakeMlflow& server, MlflowPushResult& result) {
    push_to_mlflow(server, "http://mlflow:5000", "exp", store, sweep, runs, result);
  }
};

const storage::RunRecord& named(const std::vector<storage::RunRecord>& runs,
                                const std::string& name) {
  for (const auto& r : runs) {
    if (r.name == name) return r;
  }
  FAIL("no run " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("mlflow: the tracking URI must be an http(s) server", "[report][mlflow]") {
  CHECK(mlflow_base_url("http://localhost:5000") == "http://localhost:5000");
  CHECK(mlflow_base_url("https://mlflow.example.org/prefix/") ==
        "https://mlflow.example.org/prefix");
  CHECK_THROWS_AS(mlflow_base_url("file:///tmp/mlruns"), InputError);
  CHECK_THROWS_AS(mlflow_base_url("databricks"), InputError);
  CHECK_THROWS_AS(mlflow_base_url("localhost:5000"), InputError);
  CHECK_THROWS_AS(mlflow_base_url("http://"), InputError);
  CHECK_THROWS_AS(mlflow_base_url("http://host:5000/?x=1"), InputError);
  CHECK_THROWS_WITH(mlflow_base_url("sqlite:///m.db"),
                    Contains("is not an http:// or https:// URI"));
}

TEST_CASE("mlflow: keys keep MLflow's characters, the others become _", "[report][mlflow]") {
  CHECK(mlflow_key("precision.dtype") == "precision.dtype");
  CHECK(mlflow_key("loader.counters:decoded") == "loader.counters_decoded");
  CHECK(mlflow_key("a b/c-d_e") == "a b/c-d_e");
  CHECK(mlflow_key(std::string(300, 'k')).size() == 250);
}

TEST_CASE("mlflow: a run's params, tags, metrics and series", "[report][mlflow]") {
  Fixture f;
  const auto d = mlflow_run_data(f.store, f.sweep, named(f.runs, "fast"));
  const std::map<std::string, std::string> params(d.params.begin(), d.params.end());
  const std::map<std::string, std::string> tags(d.tags.begin(), d.tags.end());
  CHECK(params.at("model.plugin") == "resnet");
  CHECK(params.at("model.depth") == "50");
  CHECK(params.at("precision.dtype") == "bf16");
  CHECK(params.at("batch_size") == "256");
  CHECK(tags.at("orch.sweep") == "night");
  CHECK(tags.at("orch.config_hash") == "h1");
  CHECK(tags.at("orch.status") == "ok");
  CHECK(tags.at("orch.key") == d.key);
  CHECK(tags.at("env.gpu_name") == "NVIDIA H200");
  CHECK(tags.at("env.pcie.gen_current") == "5");
  CHECK(d.status == "FINISHED");
  CHECK(d.run_name == "fast");
  CHECK(d.start_ms == 1735689600000);  // the record's started_at, in ms since the Unix epoch
  CHECK(d.end_ms == 1735689660000);
  std::map<std::string, std::vector<MlflowMetric>> by_key;
  for (const auto& m : d.metrics) by_key[m.key].push_back(m);
  CHECK(by_key.at("images_per_s").at(0).value == 1500.25);
  CHECK(by_key.at("images_per_s").at(0).timestamp_ms == d.end_ms);
  CHECK(by_key.at("step/step_ms").size() == 2);
  CHECK(by_key.at("step/step_ms").at(1).step == 1);
  CHECK(by_key.at("step/step_ms").at(1).value == 11.0);
  REQUIRE(by_key.at("gpu/power_w").size() == 2);
  CHECK(by_key.at("gpu/power_w").at(1).value == 610.0);
  CHECK(by_key.at("gpu/power_w").at(1).timestamp_ms == d.start_ms + 2000);
  CHECK(by_key.count("gpu/pcie_rx_bytes_per_s") == 0);  // NULL samples are left out

  const auto failed = mlflow_run_data(f.store, f.sweep, named(f.runs, "broken"));
  CHECK(failed.status == "FAILED");
  CHECK(failed.key != d.key);
  CHECK(failed.sweep_key == d.sweep_key);
}

TEST_CASE("mlflow: log-batch requests stay within MLflow's limits", "[report][mlflow]") {
  MlflowRunData d;
  for (int i = 0; i < 150; ++i) d.params.push_back({"p" + std::to_string(i), "v"});
  for (int i = 0; i < 120; ++i) d.tags.push_back({"t" + std::to_string(i), "v"});
  for (int i = 0; i < 2500; ++i) d.metrics.push_back({"m", double(i), 1, i});
  d.metrics.push_back({"inf", std::numeric_limits<double>::infinity(), 1, 0});
  // 100 params of 6000 characters and 100 tags of 5000 would pass 1 MB in one request.
  for (int i = 0; i < 100; ++i)
    d.params.push_back({"big" + std::to_string(i), std::string(6000, 'x')});
  for (int i = 0; i < 100; ++i)
    d.tags.push_back({"big" + std::to_string(i), std::string(5000, 'y')});
  const auto batches = mlflow_log_batches(d, "r1");
  std::size_t params = 0, tags = 0, metrics = 0;
  for (const auto& b : batches) {
    CHECK(b["run_id"] == "r1");
    CHECK(b["params"].size() <= 100);
    CHECK(b["tags"].size() <= 100);
    CHECK(b["metrics"].size() <= 1000);
    CHECK(b["params"].size() + b["tags"].size() + b["metrics"].size() <= 1000);
    CHECK(b.dump().size() < 1000000);
    params += b["params"].size(), tags += b["tags"].size(), metrics += b["metrics"].size();
  }
  CHECK(params == 250);
  CHECK(tags == 220);
  CHECK(metrics == 2501);
  CHECK(batches.back()["metrics"].back()["value"] == "Infinity");
}

TEST_CASE("mlflow: pushing twice creates nothing twice", "[report][mlflow]") {
  Fixture f;
  FakeMlflow server;
  MlflowPushResult first;
  f.push(server, first);
  CHECK(first.created == 2);
  CHECK(first.already == 0);
  CHECK(first.experiment_created);
  REQUIRE(server.active().size() == 2);
  for (const auto* r : server.active()) {
    CHECK(r->tags.at("orch.push") == "complete");
    CHECK(r->tags.at("orch.sweep") == "night");
  }
  MlflowPushResult second;
  f.push(server, second);
  CHECK(second.created == 0);
  CHECK(second.already == 2);
  CHECK_FALSE(second.experiment_created);
  CHECK(second.experiment_id == first.experiment_id);
  CHECK(server.active().size() == 2);
}

TEST_CASE("mlflow: a push that stopped half-way is finished by the next, once",
          "[report][mlflow]") {
  Fixture f;
  // Requests: get-by-name, create experiment, search, then per run create, log-batch, update,
  // set-tag. The 9th is the second run's log-batch: that run exists, incomplete.
  for (long status : {0L, 500L, 400L}) {
    FakeMlflow server;
    server.fail_at = 9;
    server.fail_status = status;
    MlflowPushResult result;
    try {
      f.push(server, result);
      FAIL("the push did not fail");
    } catch (const MlflowError& e) {
      CHECK(e.kind() == (status == 0     ? MlflowError::Kind::kUnreachable
                         : status == 500 ? MlflowError::Kind::kServerError
                                         : MlflowError::Kind::kRejected));
      CHECK_THAT(e.what(), Contains("http://mlflow:5000"));
      if (status == 0) {
        CHECK_THAT(e.what(), Contains("cannot reach") && Contains("Couldn't connect"));
      } else {
        CHECK_THAT(e.what(), Contains("answered HTTP " + std::to_string(status) +
                                      " to POST /api/2.0/mlflow/runs/log-batch") &&
                                 Contains("it broke"));
      }
    }
    CHECK(result.created == 1);
    CHECK(server.active().size() == 2);
    server.fail_at = -1;
    MlflowPushResult again;
    f.push(server, again);
    CHECK(again.created == 0);
    CHECK(again.already == 1);
    CHECK(again.replaced == 1);
    REQUIRE(server.active().size() == 2);
    for (const auto* r : server.active()) CHECK(r->tags.at("orch.push") == "complete");
  }
}

TEST_CASE("mlflow: a run retried since the last push replaces its MLflow run", "[report][mlflow]") {
  Fixture f;
  FakeMlflow server;
  MlflowPushResult first;
  f.push(server, first);
  auto retried = test::result_doc("broken", "h2", 0, "ok", 900);
  retried["finished_at"] = "2025-01-02T00:00:00Z";
  f.store.record(f.sweep_id, retried);
  f.runs = f.store.runs(f.sweep_id);
  MlflowPushResult second;
  f.push(server, second);
  CHECK(second.already == 1);
  CHECK(second.replaced == 1);
  REQUIRE(server.active().size() == 2);
  int finished = 0;
  for (const auto* r : server.active()) finished += r->status == "FINISHED";
  CHECK(finished == 2);
}

TEST_CASE("mlflow: a server that is not MLflow is named", "[report][mlflow]") {
  Fixture f;
  struct NotMlflow : HttpClient {
    HttpResponse request(const std::string&, const std::string&, const std::string&) override {
      return {404, "<html>Not Found</html>"};
    }
  } server;
  MlflowPushResult result;
  CHECK_THROWS_WITH(
      push_to_mlflow(server, "http://web:80", "exp", f.store, f.sweep, f.runs, result),
      Contains("http://web:80 answered HTTP 404 to GET /api/2.0/mlflow/experiments/get-by-name") &&
          Contains("<html>Not Found</html>"));
}
