// Plugin schemas for the planner's tests: one catalogue identical to the real plugins' schemas
// (so files planned here plan the same with the real registry), and one with extra fake plugins
// to exercise every parameter type.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "plan/fixed_catalog.h"
#include "plan/plan_error.h"
#include "plan/planner.h"

namespace orch::test {

inline ParamSpec int_param(std::string name, std::int64_t def, std::vector<Value> allowed = {},
                           std::optional<double> min = {}, std::optional<double> max = {}) {
  return ParamSpec{std::move(name), ParamType::kInt, def, std::move(allowed), min, max, ""};
}

inline PluginInfo plugin(std::string name, PluginKind kind, std::vector<ParamSpec> params = {}) {
  return PluginInfo{std::move(name), kind, "1.0.0", "", std::move(params)};
}

/// The schemas of the plugins that ship with orch.
inline std::vector<PluginInfo> real_plugins() {
  using V = std::vector<Value>;
  return {
      plugin("resnet", PluginKind::kModel,
             {int_param("depth", 50,
                        V{std::int64_t{18}, std::int64_t{34}, std::int64_t{50}, std::int64_t{101},
                          std::int64_t{152}}),
              ParamSpec{"fused_bn",
                        ParamType::kBool,
                        false,
                        {},
                        std::nullopt,
                        std::nullopt,
                        "",
                        /*hashed_at_default=*/false},
              ParamSpec{"fused_bn_impl", ParamType::kString, std::string("cudnn"),
                        V{std::string("orch"), std::string("cudnn")}, std::nullopt, std::nullopt,
                        "", /*hashed_at_default=*/false},
              ParamSpec{"max_pool_impl", ParamType::kString, std::string("orch"),
                        V{std::string("aten"), std::string("orch")}, std::nullopt, std::nullopt, "",
                        /*hashed_at_default=*/false},
              ParamSpec{"fused_residual_grad",
                        ParamType::kBool,
                        true,
                        {},
                        std::nullopt,
                        std::nullopt,
                        "",
                        /*hashed_at_default=*/false}}),
      plugin("synthetic", PluginKind::kDataLoader,
             {int_param("image_size", 224, {}, 8, 1024), int_param("channels", 3, {}, 1, 16),
              int_param("classes", 1000, {}, 1, std::nullopt), int_param("batches", 4, {}, 1, 1024),
              ParamSpec{"location", ParamType::kString, std::string("device"),
                        V{std::string("device"), std::string("pinned"), std::string("pageable")},
                        std::nullopt, std::nullopt, ""}}),
      plugin("fp32", PluginKind::kPrecision),
      plugin("tf32", PluginKind::kPrecision),
      plugin(
          "amp", PluginKind::kPrecision,
          {ParamSpec{"dtype", ParamType::kString, std::string("bf16"),
                     V{std::string("bf16"), std::string("fp16")}, std::nullopt, std::nullopt, ""},
           ParamSpec{"init_scale", ParamType::kFloat, 65536.0, {}, 1.0, 16777216.0, ""},
           int_param("growth_interval", 2000, {}, 1, 1000000)}),
      plugin("default", PluginKind::kStreamStrategy),
  };
}

inline const FixedCatalog& real_catalog() {
  static const FixedCatalog kCatalog(real_plugins());
  return kCatalog;
}

/// The real schemas plus fake plugins covering bool, float and string parameters.
inline const FixedCatalog& test_catalog() {
  static const FixedCatalog kCatalog = [] {
    std::vector<PluginInfo> all = real_plugins();
    all.push_back(
        plugin("toy", PluginKind::kModel,
               {int_param("width", 8, {}, 1, 64),
                ParamSpec{"act",
                          ParamType::kString,
                          std::string("relu"),
                          {std::string("relu"), std::string("gelu")},
                          std::nullopt,
                          std::nullopt,
                          ""},
                ParamSpec{"scale", ParamType::kFloat, 1.0, {}, 0.0, std::nullopt, ""},
                ParamSpec{"fused", ParamType::kBool, false, {}, std::nullopt, std::nullopt, ""}}));
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
