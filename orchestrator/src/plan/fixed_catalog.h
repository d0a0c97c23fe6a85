// A SchemaCatalog over a fixed list of plugin descriptions, for planning without loading any
// plugin library (tests, and tools that only check experiment files against known schemas).
#pragma once

#include <string>
#include <vector>

#include "plan/run_spec.h"

namespace orch {

class FixedCatalog final : public SchemaCatalog {
 public:
  FixedCatalog() = default;
  explicit FixedCatalog(std::vector<PluginInfo> plugins) : plugins_(std::move(plugins)) {}

  void add(PluginInfo info) { plugins_.push_back(std::move(info)); }

  const PluginInfo* find(PluginKind kind, const std::string& name) const override {
    for (const PluginInfo& p : plugins_) {
      if (p.kind == kind && p.name == name) return &p;
    }
    return nullptr;
  }
  std::vector<std::string> names(PluginKind kind) const override {
    std::vector<std::string> out;
    for (const PluginInfo& p : plugins_) {
      if (p.kind == kind) out.push_back(p.name);
    }
    return out;
  }

 private:
  std::vector<PluginInfo> plugins_;
};

}  // namespace orch
