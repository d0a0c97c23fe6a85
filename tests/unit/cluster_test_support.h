// Helpers for the cluster (Slurm) unit tests: a temporary folder and hand-made RunSpecs.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "plan/run_spec.h"

namespace orch::test {

struct TempFolder {
  TempFolder() {
    std::random_device rd;
    // A space in the name: every path the cluster code writes must survive one.
    path = std::filesystem::temp_directory_path() /
           ("orch cluster " + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempFolder() { std::filesystem::remove_all(path); }
  TempFolder(const TempFolder&) = delete;
  std::filesystem::path path;
};

inline RunSpec cluster_spec(const std::string& name, const std::string& hash, int repeat,
                            const std::string& experiment = "exp") {
  RunSpec s;
  s.name = name;
  s.hash = hash;
  s.repeat = repeat;
  s.experiment = experiment;
  s.batch_size = 4;
  s.device = "cpu";
  s.config = nlohmann::json{{"model", {{"plugin", "fault"}}}, {"batch_size", 4}, {"device", "cpu"}};
  return s;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace orch::test
