// Strict scalar interpretation (see scalars.h).
#include "plan/scalars.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <regex>

namespace orch {

namespace {

bool plain(const YNode& n) { return n.is_scalar() && !n.quoted; }

}  // namespace

std::optional<std::int64_t> scalar_int(const YNode& n) {
  if (!plain(n)) return std::nullopt;
  std::string_view s = n.text;
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> scalar_float(const YNode& n) {
  if (!plain(n)) return std::nullopt;
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (!std::regex_match(n.text, kFloat)) return std::nullopt;
  double v = std::strtod(n.text.c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> scalar_bool(const YNode& n) {
  if (!plain(n)) return std::nullopt;
  static const char* const kTrue[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
  static const char* const kFalse[] = {"false", "False", "FALSE", "no", "No",
                                       "NO",    "off",   "Off",   "OFF"};
  for (const char* t : kTrue) {
    if (n.text == t) return true;
  }
  for (const char* f : kFalse) {
    if (n.text == f) return false;
  }
  return std::nullopt;
}

std::optional<std::string> scalar_string(const YNode& n) {
  if (!n.is_scalar()) return std::nullopt;
  return n.text;
}

nlohmann::json generic_json(const YNode& n) {
  switch (n.kind) {
    case YNode::Kind::kNull:
      return nullptr;
    case YNode::Kind::kScalar:
      if (auto b = scalar_bool(n)) return *b;
      if (auto i = scalar_int(n)) return *i;
      if (auto f = scalar_float(n)) return *f;
      return n.text;
    case YNode::Kind::kSequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const YNode& item : n.items) out.push_back(generic_json(item));
      return out;
    }
    case YNode::Kind::kMapping: {
      nlohmann::json out = nlohmann::json::object();
      for (const YEntry& e : n.entries) out[e.key] = generic_json(e.value);
      return out;
    }
  }
  return nullptr;
}

std::string number_text(double v) {
  std::string s = fmt::format("{}", v);  // shortest round trip (fmt's default for doubles)
  if (std::isfinite(v) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string value_text(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return number_text(*d);
  return to_string(v);
}

std::string describe(const YNode& n) {
  switch (n.kind) {
    case YNode::Kind::kNull:
      return "nothing";
    case YNode::Kind::kScalar:
      return "'" + n.text + "'";
    case YNode::Kind::kSequence:
      return "a list";
    case YNode::Kind::kMapping:
      return "a mapping";
  }
  return "?";
}

}  // namespace orch
