// Plugin schemas for the planner's tests: one catalogue of the real plugins' schemas, linked from
// their declarations (so files planned here plan the same with the real registry), and one with
// extra fake plugins to exercise every parameter type.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "plan/fixed_catalog.h"
#include "plan/plan_error.h"
#include "plan/planner.h"
#include "plugin_schemas.h"

namespace orch::test {

inline ParamSpec int_param(std::string name, std::int64_t def, std::vector<Value> allowed = {},
                           std::optional<double> min = {}, std::optional<double> max = {}) {
  return ParamSpec{std::move(name), ParamType::kInt, def, std::move(allowed), min, max, ""};
}

inline PluginInfo plugin(std::string name, PluginKind kind, std::vector<ParamSpec> params = {}) {
  return PluginInfo{std::move(name), kind, "1.0.0", "", std::move(params)};
}

/// The schemas of the plugins that ship with orch: their own declarations (plugin_schemas.h).
inline std::vector<PluginInfo> real_plugins() { return plugin_schemas::all(); }

inline const FixedCatalog& real_catalog() {
  static const FixedCatalog kCatalog(real_plugins());
  return kCatalog;
}

/// The real schemas plus fake plugins covering bool, float and string parameters.
inline const FixedCatalog& test_catalog() {
  static const FixedCatalog kCatalog = [] {
    std::vector<PluginInfo> all = real_plugins();
    all.push_back(plugin("toy", PluginKind::kModel,
                         {int_param("width", 8, {}, 1, 64),
                          param("act").string().one_of({"relu", "gelu"}).default_("relu"),
                          param("scale").number().min(0).default_(1), param("fused").boolean()}));
    all.push_back(
        plugin("multi", PluginKind::kStreamStrategy, {int_param("streams", 2, {}, 1, 8)}));
    return FixedCatalog(std::move(all));
  }();
  return kCatalog;
}

/// Plans YAML text as "test.yaml" against test_catalog().
inline Plan plan_text(const std::string& yaml, const PlanOptions& opts = {},
                      const SchemaCatalog& catalog = test_catalog()) {
  return make_plan_from_string(yaml, "test.yaml", catalog, opts);
}

/// The PlanError that planning `yaml` throws; fails the test if it plans.
inline PlanError plan_failure(const std::string& yaml, const PlanOptions& opts = {},
                              const SchemaCatalog& catalog = test_catalog()) {
  try {
    plan_text(yaml, opts, catalog);
  } catch (const PlanError& e) {
    return e;
  }
  FAIL("expected a PlanError for:\n" << yaml);
  throw std::logic_error("unreachable");
}

}  // namespace orch::test
