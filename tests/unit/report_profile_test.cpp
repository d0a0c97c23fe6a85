// The profile's columns in `orch rank`'s table and in the HTML report: kernels per step and the
// trace's GPU busy share appear only when a configuration of the sweep was profiled, so the
// output for every other sweep is what it always was.
#include <catch2/catch.hpp>

#include "report/html_report.h"
#include "report/rank_table.h"
#include "storage/store.h"
#include "unit/profile_test_support.h"
#include "unit/store_test_support.h"

using namespace orch::storage;
using Catch::Matchers::Contains;
using orch::test::cpu_profile;
using orch::test::gpu_profile;
using orch::test::result_doc;
using orch::test::TempDb;

TEST_CASE("orch rank shows kernels per step and the trace's busy share only for profiled sweeps",
          "[store][profile][report]") {
  TempDb db;
  Store store(db.path);
  const auto plain = store.open_sweep("plain", "exp", "");
  store.record(plain, result_doc("a", "cccc0001", 0, "ok", 1000));
  store.record(plain, result_doc("b", "cccc0002", 0, "ok", 1200));
  const std::string before = orch::format_sweep_ranking(store, plain);
  CHECK_THAT(before, !Contains("kernels/step"));
  CHECK_THAT(before, !Contains("busy (trace)"));

  const auto prof = store.open_sweep("prof", "exp", "");
  auto a = result_doc("launchy", "cccc0003", 0, "ok", 1000);
  a["profile"] = gpu_profile(0.45, 820);
  store.record(prof, a);
  store.record(prof, result_doc("unprofiled", "cccc0004", 0, "ok", 900));
  auto c = result_doc("cpu", "cccc0005", 0, "ok", 10);
  c["profile"] = cpu_profile();
  store.record(prof, c);
  const std::string table = orch::format_sweep_ranking(store, prof);
  INFO(table);
  CHECK_THAT(table, Contains("power W  kernels/step  busy (trace)  diagnosis"));
  // 820 kernels and 45% busy; the unprofiled configuration shows dashes; the CPU run 0 kernels.
  CHECK(table.find("820           45%  compute-bound") != std::string::npos);
  CHECK(table.find("-             -  compute-bound") != std::string::npos);
  CHECK(table.find("0             -  compute-bound") != std::string::npos);
  CHECK_THAT(table, Contains("0 kernels: a CPU run"));

  const std::string html = orch::html_report(store, *store.sweep(prof));
  CHECK_THAT(html, Contains("<section id=\"profiles\">"));
  CHECK_THAT(html, Contains("href=\"#profiles\""));
  CHECK_THAT(html, Contains("<th class=\"num\">kernels/step</th>"));
  CHECK_THAT(html, Contains("sm90_xmma_gemm_bf16"));
  CHECK_THAT(html, Contains("aten::mkldnn_convolution"));
  CHECK_THAT(html, Contains("0 (CPU run)"));
  CHECK_THAT(html, Contains("<td class=\"num\">45% (2"));  // measured step (profiled steps)
  CHECK_THAT(html, Contains("/results/q.db.runs/q/0123456789ab-r0/trace.json"));
  const std::string plain_html = orch::html_report(store, *store.sweep(plain));
  CHECK_THAT(plain_html, !Contains("profiles"));
  CHECK_THAT(plain_html, !Contains("kernels/step"));
}
