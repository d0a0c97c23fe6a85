// Parsing `search:` (see search_spec.h).
#include "plan/search_spec.h"

#include <charconv>
#include <string>
#include <vector>

#include "plan/did_you_mean.h"
#include "plan/scalars.h"

namespace orch {
namespace {

const std::vector<std::string> kSearchKeys = {"method", "eta", "rungs", "min_steps", "rung_repeat"};
const std::vector<std::string> kMethods = {"grid", "halving"};

// A whole number of at least `least`, written as a plain YAML integer.
std::int64_t whole_number(const YNode& v, const std::string& key_path, std::int64_t least,
                          const std::string& allowed) {
  std::int64_t n = 0;
  const std::string& t = v.text;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  const bool parsed =
      v.is_scalar() && !v.quoted && !t.empty() && ec == std::errc() && end == t.data() + t.size();
  if (!parsed) {
    throw PlanError(v.mark, key_path, "expected a whole number, got " + describe(v), allowed);
  }
  if (n < least || n > 1000000) {
    throw PlanError(v.mark, key_path,
                    "expected a whole number of at least " + std::to_string(least) + ", got " + t,
                    allowed);
  }
  return n;
}

void read_entry(const YEntry& e, SearchSpec& out) {
  const std::string key_path = "search." + e.key;
  if (e.key == "method") {
    if (!e.value.is_scalar() || (e.value.text != "grid" && e.value.text != "halving")) {
      throw PlanError(e.value.mark, key_path,
                      e.value.is_scalar()
                          ? unknown_with_suggestion("search method", e.value.text, kMethods)
                          : "expected a search method, got " + describe(e.value),
                      join(kMethods));
    }
    out.method = e.value.text == "halving" ? SearchSpec::Method::halving : SearchSpec::Method::grid;
  } else if (e.key == "eta") {
    out.eta =
        static_cast<int>(whole_number(e.value, key_path, 2, "2, 3, 4, ... (3: keep a third)"));
  } else if (e.key == "rungs") {
    out.rungs = static_cast<int>(whole_number(e.value, key_path, 1, "1, 2, 3, ..."));
  } else if (e.key == "min_steps") {
    out.min_steps = whole_number(e.value, key_path, 1, "measured steps of rung 0: 1, 2, ...");
  } else if (e.key == "rung_repeat") {
    out.rung_repeat = static_cast<int>(whole_number(e.value, key_path, 1, "1, 2, 3, ..."));
  } else {
    throw PlanError(e.key_mark, key_path, unknown_with_suggestion("key", e.key, kSearchKeys),
                    join(kSearchKeys));
  }
}

}  // namespace

SearchSpec parse_search(const YNode& node) {
  SearchSpec out;
  out.mark = node.mark;
  if (!node.is_mapping()) {
    throw PlanError(node.mark, "search",
                    "expected a mapping such as {method: halving, eta: 3}, got " + describe(node),
                    join(kSearchKeys));
  }
  PlanErrorList problems;
  for (const YEntry& e : node.entries) problems.attempt([&] { read_entry(e, out); });
  problems.throw_if_any();
  if (!out.halving()) {
    // The keys of halving under grid would be ignored without a word: refused instead.
    for (const YEntry& e : node.entries) {
      if (e.key == "method") continue;
      problems.add(PlanError(e.key_mark, "search." + e.key,
                             "'" + e.key +
                                 "' is a setting of successive halving; with method "
                                 "grid every configuration is measured in full",
                             "method: halving"));
    }
    problems.throw_if_any();
  }
  return out;
}

}  // namespace orch
