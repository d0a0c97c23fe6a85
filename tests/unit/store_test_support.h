// Helpers for the store and report tests: a temporary database path and result documents
// built field by field.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace orch::test {

struct TempDb {
  TempDb() {
    std::random_device rd;
    path = (std::filesystem::temp_directory_path() /
            ("orch-store-" + std::to_string(rd()) + std::to_string(rd()) + ".db"))
               .string();
  }
  ~TempDb() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
  TempDb(const TempDb&) = delete;
  std::string path;
};

/// A version-2 result document; `ips` 0 and status "ok" still gets metrics.
inline nlohmann::json result_doc(const std::string& name, const std::string& hash, int repeat,
                                 const std::string& status = "ok", double ips = 1000,
                                 const std::string& experiment = "exp") {
  nlohmann::json d = {
      {"format", "orch.result"},
      {"version", 2},
      {"experiment", experiment},
      {"run", {{"name", name}, {"hash", hash}, {"repeat", repeat}}},
      {"config",
       {{"model", {{"plugin", "resnet"}, {"params", {{"depth", 50}}}}},
        {"data", {{"plugin", "synthetic"}, {"params", {{"image_size", 224}}}}},
        {"precision", {{"plugin", "amp"}, {"params", {{"dtype", "bf16"}}}}},
        {"stream", {{"plugin", "default"}, {"params", nlohmann::json::object()}}},
        {"batch_size", 256},
        {"memory_format", "channels_last"}}},
      {"status", status},
      {"device", "cuda:0"},
      {"gpu", "0"},
      {"started_at", "2025-01-01T00:00:00Z"},
      {"finished_at", "2025-01-01T00:01:00Z"},
      {"duration_s", 60.0},
      {"environment",
       {{"gpu_name", "NVIDIA H200"},
        {"driver_version", "580.65"},
        {"torch_version", "2.11.0"},
        {"hostname", "node1"},
        {"pcie", {{"gen_current", 5}, {"width_current", 16}, {"gen_max", 5}, {"width_max", 16}}}}}};
  if (status == "ok") {
    d["metrics"] = {{"images_per_s", ips},       {"step_ms_mean", 256000.0 / ips},
                    {"data_wait_ms_mean", 0.5},  {"peak_allocated_bytes", 8.0 * 1024 * 1024 * 1024},
                    {"gpu_util_mean_pct", 97.0}, {"power_mean_w", 600.0}};
    d["steps"] = {{{"step", 0}, {"step_ms", 10.0}, {"data_wait_ms", 0.5}, {"loss", 6.9}},
                  {{"step", 1}, {"step_ms", 11.0}, {"data_wait_ms", 0.5}, {"loss", 6.8}}};
    d["telemetry"] = {{"available", true},
                      {"reason", nullptr},
                      {"interval_ms", 100},
                      {"measure_window_s", {0.0, 10.0}},
                      {"samples",
                       {{{"t_s", 1.0},
                         {"gpu_util_pct", 96},
                         {"power_w", 590.5},
                         {"memory_used_bytes", 1000},
                         {"pcie_rx_bytes_per_s", nullptr},
                         {"throttle_reasons", 4}},
                        {{"t_s", 2.0}, {"gpu_util_pct", 98}, {"power_w", 610.0}}}},
                      {"missing", {{"pcie_rx_bytes_per_s", "NOT_SUPPORTED"}}},
                      {"gpu_lost", false}};
  } else {
    d["error"] = "boom";
    d["outcome"] = {{"exit_code", nullptr}, {"signal", 11}, {"stderr_tail", "Segmentation fault"}};
  }
  return d;
}

}  // namespace orch::test
