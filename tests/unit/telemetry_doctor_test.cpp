// `orch doctor`'s checks on faked machines: each check fires when its condition holds, names
// what it found, carries advice, and stays quiet on a healthy machine.
#include <algorithm>
#include <catch2/catch.hpp>

#include "telemetry/doctor.h"

namespace orch {
namespace {

/// A machine with nothing to complain about: one GPU at full link, persistence on, alone.
DoctorFacts healthy() {
  DoctorFacts f;
  f.cuda_available = true;
  f.nvml_available = true;
  DoctorGpu g;
  g.cuda_index = 0;
  g.name = "NVIDIA H200";
  g.pci_bus_id = "0000:3b:00.0";
  g.nvml.pci_bus_id = g.pci_bus_id;
  g.nvml.found = true;
  g.nvml.pcie.gen_current = 5;
  g.nvml.pcie.gen_max = 5;
  g.nvml.pcie.width_current = 16;
  g.nvml.pcie.width_max = 16;
  g.nvml.persistence_mode = true;
  g.nvml.other_processes = std::vector<GpuProcess>{};
  g.pcie_read_under_load = true;
  f.gpus.push_back(g);
  f.driver_version = "580.65.06";
  f.cuda_runtime_version = "13.0";
  f.cuda_driver_api_version = "13.0";
  f.cudnn_version = "9.19.0";
  f.torch_version = "2.11.0";
  f.orch_version = "0.1.0";
  f.git_revision = "abc1234";
  return f;
}

std::vector<Finding> with(const std::vector<Finding>& all, const std::string& check) {
  std::vector<Finding> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const Finding& f) { return f.check == check; });
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int count(const std::vector<Finding>& all, Severity s) {
  return static_cast<int>(
      std::count_if(all.begin(), all.end(), [&](const Finding& f) { return f.severity == s; }));
}

TEST_CASE("doctor: a healthy machine gets only ok findings", "[telemetry][doctor]") {
  const auto findings = doctor_checks(healthy());
  INFO(format_findings(findings));
  CHECK(count(findings, Severity::kWarning) == 0);
  CHECK(count(findings, Severity::kError) == 0);
  CHECK_FALSE(has_error(findings));
  for (const char* check :
       {"launch_blocking", "gpu", "nvml", "pcie", "persistence", "processes", "versions"}) {
    CHECK(with(findings, check).size() == 1);
  }
  CHECK(doctor_json(healthy(), findings)["ok"] == true);
}

TEST_CASE("doctor: CUDA_LAUNCH_BLOCKING=1 is an error with the article's advice",
          "[telemetry][doctor]") {
  DoctorFacts f = healthy();
  f.variables["CUDA_LAUNCH_BLOCKING"] = "1";
  const auto findings = doctor_checks(f);
  const auto lb = with(findings, "launch_blocking");
  REQUIRE(lb.size() == 1);
  CHECK(lb[0].severity == Severity::kError);
  CHECK(contains(lb[0].message, "CUDA_LAUNCH_BLOCKING=1"));
  CHECK(contains(lb[0].advice, "5-10x"));
  CHECK(has_error(findings));
  CHECK(doctor_json(f, findings)["ok"] == false);

  f.variables["CUDA_LAUNCH_BLOCKING"] = "0";
  CHECK(with(doctor_checks(f), "launch_blocking")[0].severity == Severity::kOk);
}

TEST_CASE("doctor: a PCIe link below its maximum is a warning", "[telemetry][doctor]") {
  SECTION("fewer lanes") {
    DoctorFacts f = healthy();
    f.gpus[0].nvml.pcie.width_current = 8;
    const auto p = with(doctor_checks(f), "pcie");
    REQUIRE(p.size() == 1);
    CHECK(p[0].severity == Severity::kWarning);
    CHECK(contains(p[0].message, "gen5 x8 (maximum gen5 x16)"));
    CHECK(contains(p[0].advice, "lspci"));
  }
  SECTION("a lower generation under load") {
    DoctorFacts f = healthy();
    f.gpus[0].nvml.pcie.gen_current = 3;
    const auto p = with(doctor_checks(f), "pcie");
    REQUIRE(p.size() == 1);
    CHECK(p[0].severity == Severity::kWarning);
    CHECK(contains(p[0].message, "gen3 x16"));
    CHECK(contains(p[0].message, "under load"));
    CHECK_FALSE(contains(p[0].advice, "Idle GPUs"));
  }
  SECTION("a lower generation read while idle says it may be power saving") {
    DoctorFacts f = healthy();
    f.gpus[0].nvml.pcie.gen_current = 1;
    f.gpus[0].pcie_read_under_load = false;
    const auto p = with(doctor_checks(f), "pcie");
    REQUIRE(p.size() == 1);
    CHECK(contains(p[0].message, "while idle"));
    CHECK(contains(p[0].advice, "Idle GPUs"));
  }
  SECTION("a link NVML does not report is not a warning") {
    DoctorFacts f = healthy();
    f.gpus[0].nvml.pcie = PcieLink{};
    f.gpus[0].nvml.pcie.reason = "NVML_ERROR_NOT_SUPPORTED";
    const auto p = with(doctor_checks(f), "pcie");
    REQUIRE(p.size() == 1);
    CHECK(p[0].severity == Severity::kOk);
    CHECK(contains(p[0].message, "NOT_SUPPORTED"));
  }
}

TEST_CASE("doctor: other processes on the GPU are an error naming them", "[telemetry][doctor]") {
  DoctorFacts f = healthy();
  f.gpus[0].nvml.other_processes =
      std::vector<GpuProcess>{{4242, "python3", 2LL << 30}, {4243, "", -1}};
  const auto findings = doctor_checks(f);
  const auto p = with(findings, "processes");
  REQUIRE(p.size() == 1);
  CHECK(p[0].severity == Severity::kError);
  CHECK(contains(p[0].message, "2 other process(es)"));
  CHECK(contains(p[0].message, "pid 4242 python3 (2.0 GiB)"));
  CHECK(contains(p[0].message, "pid 4243 (name unknown)"));
  CHECK(contains(p[0].advice, "corrupted"));
  CHECK(has_error(findings));

  SECTION("a list NVML refuses is a warning, not silence") {
    f.gpus[0].nvml.other_processes.reset();
    f.gpus[0].nvml.processes_reason = "NVML_ERROR_NO_PERMISSION";
    const auto q = with(doctor_checks(f), "processes");
    REQUIRE(q.size() == 1);
    CHECK(q[0].severity == Severity::kWarning);
    CHECK(contains(q[0].message, "NO_PERMISSION"));
  }
}

TEST_CASE("doctor: persistence mode off is a warning", "[telemetry][doctor]") {
  DoctorFacts f = healthy();
  f.gpus[0].nvml.persistence_mode = false;
  const auto p = with(doctor_checks(f), "persistence");
  REQUIRE(p.size() == 1);
  CHECK(p[0].severity == Severity::kWarning);
  CHECK(contains(p[0].advice, "nvidia-smi -pm 1"));
  CHECK_FALSE(has_error(doctor_checks(f)));
}

TEST_CASE("doctor: no GPU says runs use the CPU and telemetry is unavailable",
          "[telemetry][doctor]") {
  DoctorFacts f = healthy();
  f.cuda_available = false;
  f.gpus.clear();
  f.nvml_available = false;
  f.nvml_reason = "NVML library libnvidia-ml.so.1 could not be loaded";
  f.variables["CUDA_VISIBLE_DEVICES"] = "";
  const auto findings = doctor_checks(f);
  INFO(format_findings(findings));
  const auto g = with(findings, "gpu");
  REQUIRE(g.size() == 1);
  CHECK(g[0].severity == Severity::kWarning);
  CHECK(contains(g[0].message, "no GPU visible: runs will use the CPU / telemetry unavailable"));
  CHECK(contains(g[0].message, "could not be loaded"));
  CHECK(contains(g[0].message, "CUDA_VISIBLE_DEVICES=''"));
  CHECK(with(findings, "pcie").empty());  // nothing to check without a GPU
  CHECK(with(findings, "nvml").empty());  // said once, by the gpu finding
  CHECK_FALSE(has_error(findings));       // a CPU machine may still run experiments
  CHECK(with(findings, "versions").size() == 1);
}

TEST_CASE("doctor: a GPU without NVML warns that telemetry is unavailable", "[telemetry][doctor]") {
  DoctorFacts f = healthy();
  f.nvml_available = false;
  f.nvml_reason = "nvmlInit failed: NVML_ERROR_DRIVER_NOT_LOADED";
  const auto n = with(doctor_checks(f), "nvml");
  REQUIRE(n.size() == 1);
  CHECK(n[0].severity == Severity::kWarning);
  CHECK(contains(n[0].message, "telemetry unavailable"));
  CHECK(contains(n[0].message, "DRIVER_NOT_LOADED"));

  SECTION("and one NVML does not know") {
    DoctorFacts g = healthy();
    g.gpus[0].nvml.found = false;
    g.gpus[0].nvml.reason = "no NVML device at PCI bus id 0000:3b:00.0";
    const auto m = with(doctor_checks(g), "nvml");
    REQUIRE(m.size() == 2);
    CHECK(m[1].severity == Severity::kWarning);
    CHECK(contains(m[1].message, "unknown to NVML"));
  }
}

TEST_CASE("doctor: versions are listed, unknown ones as such", "[telemetry][doctor]") {
  DoctorFacts f = healthy();
  f.cudnn_version.clear();
  const auto v = with(doctor_checks(f), "versions");
  REQUIRE(v.size() == 1);
  CHECK(contains(v[0].message, "driver 580.65.06"));
  CHECK(contains(v[0].message, "CUDA runtime 13.0"));
  CHECK(contains(v[0].message, "cuDNN unknown"));
  CHECK(contains(v[0].message, "LibTorch 2.11.0"));
  CHECK(contains(v[0].message, "orch 0.1.0 (abc1234)"));
}

TEST_CASE("doctor: the text output has one line per finding and advice for problems",
          "[telemetry][doctor]") {
  DoctorFacts f = healthy();
  f.gpus[0].nvml.persistence_mode = false;
  const auto findings = doctor_checks(f);
  const std::string text = format_findings(findings);
  CHECK(contains(text, "warning  persistence"));
  CHECK(contains(text, "-> Without it"));
  CHECK(contains(text, "ok       launch_blocking"));
  const auto j = doctor_json(f, findings);
  CHECK(j["findings"].size() == findings.size());
  CHECK(j["facts"]["gpus"][0]["persistence_mode"] == false);
  CHECK(j["facts"]["gpus"][0]["pcie"]["width_max"] == 16);
}

}  // namespace
}  // namespace orch
