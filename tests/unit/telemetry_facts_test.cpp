// One-off GPU facts through the fake NVML (driver, PCIe link, persistence, processes), and
// the host facts (CPU model, peak RSS).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "telemetry/gpu_facts.h"
#include "telemetry/host_facts.h"
#include "unit/telemetry_fake_nvml.h"

namespace orch {
namespace {

using test::FakeNvml;
using test::kFakeBusId;

TEST_CASE("facts: the PCI bus id is NVML's domain:bus:device.function", "[telemetry]") {
  CHECK(pci_bus_id(0, 0x3b, 0) == "0000:3b:00.0");
  CHECK(pci_bus_id(1, 0xaf, 0x1f) == "0001:af:1f.0");
}

TEST_CASE("facts: driver, link, persistence and UUID from NVML", "[telemetry]") {
  FakeNvml fake("ok");
  const NvmlFacts f = gather_nvml_facts({kFakeBusId, "0000:af:00.0"}, true);
  REQUIRE(f.available);
  CHECK(f.driver_version == "580.65.06-fake");
  REQUIRE(f.gpus.size() == 2);
  const GpuFacts& g = f.gpus[0];
  REQUIRE(g.found);
  CHECK(g.name == "Fake H200");
  CHECK(g.uuid == "GPU-fake-0000");
  CHECK(g.pcie.gen_current == 4u);
  CHECK(g.pcie.width_current == 16u);
  CHECK(g.pcie.gen_max == 5u);
  CHECK(g.pcie.width_max == 16u);
  CHECK(g.persistence_mode == false);
  REQUIRE(g.other_processes);
  CHECK(g.other_processes->empty());
  CHECK(
      pcie_json(g.pcie) ==
      nlohmann::json{{"gen_current", 4}, {"width_current", 16}, {"gen_max", 5}, {"width_max", 16}});
  CHECK_FALSE(f.gpus[1].found);  // no GPU at that bus id
  CHECK(f.gpus[1].reason.find("0000:af:00.0") != std::string::npos);
}

TEST_CASE("facts: other processes on the GPU, with names and memory", "[telemetry]") {
  FakeNvml fake("busy");
  const NvmlFacts f = gather_nvml_facts({kFakeBusId}, true);
  REQUIRE(f.gpus.at(0).other_processes);
  const auto& procs = *f.gpus[0].other_processes;
  REQUIRE(procs.size() == 2);
  CHECK(procs[0].pid == 4242);
  CHECK(procs[0].name == "/usr/bin/fake-trainer-4242");
  CHECK(procs[0].used_memory_bytes == 1000000000);
  CHECK(procs[1].pid == 4243);
}

TEST_CASE("facts: an unsupported link query leaves the link unknown with the reason",
          "[telemetry]") {
  FakeNvml fake("not_supported_pcie");
  const NvmlFacts f = gather_nvml_facts({kFakeBusId}, false);
  const GpuFacts& g = f.gpus.at(0);
  CHECK_FALSE(g.pcie.gen_current);
  CHECK_FALSE(g.pcie.width_max);
  CHECK(g.pcie.reason.find("NVML_ERROR_NOT_SUPPORTED") != std::string::npos);
  CHECK(pcie_json(g.pcie)["gen_current"].is_null());
  CHECK_FALSE(g.other_processes);  // not asked for
}

TEST_CASE("facts: without NVML nothing is known and nothing throws", "[telemetry]") {
  test::ScopedEnv lib(kNvmlLibraryVariable, "/nonexistent/libnvidia-ml.so.1");
  const NvmlFacts f = gather_nvml_facts({kFakeBusId}, true);
  CHECK_FALSE(f.available);
  CHECK(f.reason.find("/nonexistent/libnvidia-ml.so.1") != std::string::npos);
  CHECK(f.gpus.empty());
  CHECK(f.driver_version.empty());
}

TEST_CASE("facts: CPU model from a cpuinfo file; peak RSS of this process", "[telemetry]") {
  const auto path =
      std::filesystem::temp_directory_path() / ("orch-cpuinfo-" + std::to_string(getpid()));
  {
    std::ofstream out(path);
    out << "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9454 48-Core "
           "Processor\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: other\n";
  }
  CHECK(cpu_model_from(path.string()) == "AMD EPYC 9454 48-Core Processor");
  {
    std::ofstream out(path);
    out << "processor\t: 0\nBogoMIPS\t: 50.00\n";
  }
  CHECK(cpu_model_from(path.string()).empty());
  std::filesystem::remove(path);
  CHECK(cpu_model_from("/nonexistent/cpuinfo").empty());

  // This test binary holds megabytes at least.
  CHECK(host_peak_rss_bytes() > 1024 * 1024);
  CHECK(std::string(git_revision()).size() > 0);
}

}  // namespace
}  // namespace orch
