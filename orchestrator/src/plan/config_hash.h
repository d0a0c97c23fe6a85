// The configuration hash: what identifies "the same configuration" across runs, files and
// machines, so results can be compared and re-runs found in the store.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace orch {

/// RunSpec::config minus what does not change what is measured (`repeat`, `timeout`), minus
/// `telemetry` and `profile` when they have their default values (see config_hash.cpp), and
/// minus the plugin parameters at `unhashed` (JSON pointers such as "/model/params/fused_bn":
/// parameters declared hash_exempt_since a version that have their default value).
nlohmann::json hash_input(const nlohmann::json& config,
                          const std::vector<nlohmann::json::json_pointer>& unhashed = {});

/// 32 lowercase hex digits of XXH3-128 over hash_input(config).dump() (for text that is not
/// UTF-8, see config_hash.cpp: still deterministic and distinct). nlohmann::json keeps
/// object keys sorted, and the config is fully resolved (defaults filled, values normalised),
/// so key order, formatting and omitted-vs-explicit defaults in the YAML cannot change it.
std::string config_hash(const nlohmann::json& config,
                        const std::vector<nlohmann::json::json_pointer>& unhashed = {});

}  // namespace orch
