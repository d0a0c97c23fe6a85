// How the planner reads YAML scalars: ints, floats, booleans and strings, strictly.
//
// yaml-cpp gives every scalar as text; the schema decides what type it must be. Quoted scalars
// are always strings ("50" is not an int). Booleans follow YAML 1.1 as yaml-cpp does (yes/no,
// on/off, true/false), because users write `cudnn_benchmark: on` and mean the word or the bool.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "orch/params.h"
#include "plan/yaml_tree.h"

namespace orch {

/// A plain scalar that is a decimal integer that fits in 64 bits.
std::optional<std::int64_t> scalar_int(const YNode& n);
/// A plain scalar that is an int or a finite decimal float (1, 1.5, 1e-4, .5).
std::optional<double> scalar_float(const YNode& n);
/// A plain scalar that is a YAML 1.1 boolean word.
std::optional<bool> scalar_bool(const YNode& n);
/// Any scalar's text (numbers and booleans included); nullopt for null, lists and mappings.
std::optional<std::string> scalar_string(const YNode& n);

/// The node as JSON without a schema: plain scalars become null/bool/int/float where they look
/// like one, everything else a string. Used to compare values whose type is not known yet.
nlohmann::json generic_json(const YNode& n);

/// A float as names, tables and messages show it: the shortest text that reads back as the
/// same double (`1e+30`, `0.1`, `1e-07`), with ".0" after a whole number (`2.0`), so that a
/// float still looks like one. Not std::to_string's fixed six decimals, which write 1e30 with
/// 31 digits and 1e-7 as 0.
std::string number_text(double v);
/// A parameter value as number_text writes floats; other values as to_string.
std::string value_text(const Value& v);

/// "'abc'", "a list", "a mapping", "nothing": for "expected X, got Y" messages.
std::string describe(const YNode& n);

}  // namespace orch
