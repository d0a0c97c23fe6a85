// GitHub Actions matrix semantics (see matrix.h).
#include "plan/matrix.h"

#include <algorithm>
#include <limits>

#include "plan/did_you_mean.h"
#include "plan/scalars.h"
#include "result/json_dump.h"

namespace orch {

namespace {

SourceMark mark_of(const MatrixCell& c, const SourceMark& fallback) {
  return c.node ? c.node->mark : fallback;
}

// Enumerating more than this many raw combinations is refused outright, whatever the limit.
constexpr std::size_t kMaxEnumerated = 1000000;
// Up to this many raw combinations, a plan over the limit is still enumerated to report its
// exact size; beyond it, a lower bound over the limit refuses it at once.
constexpr std::size_t kExactCountUpTo = 100000;

// An exclude entry with each key resolved to an axis up front.
struct Exclude {
  std::vector<std::pair<int, const MatrixCell*>> pairs;
  bool lenient = false;  // a key is pinned by an override, so matching nothing is expected
  std::size_t removed = 0;
};

int axis_index(const MatrixSpec& spec, const std::string& path) {
  for (std::size_t i = 0; i < spec.axes.size(); ++i) {
    if (spec.axes[i].path == path) return static_cast<int>(i);
  }
  return -1;
}

// Empty axes and repeated values; returns the axis names, for messages.
std::vector<std::string> check_axes(const MatrixSpec& spec, PlanErrorList& problems) {
  std::vector<std::string> axis_names;
  for (const MatrixAxis& axis : spec.axes) {
    if (axis.values.empty()) {
      problems.add(PlanError(axis.mark, "matrix." + axis.path,
                             "an axis needs at least one value; this list is empty"));
    }
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (axis.values[i].value == axis.values[j].value) {
          problems.add(PlanError(mark_of(axis.values[i], axis.mark), axis.values[i].key_path,
                                 "the same value as " + axis.values[j].key_path +
                                     " (both give the same configuration)"));
          break;
        }
      }
    }
    axis_names.push_back(axis.path);
  }
  return axis_names;
}

std::vector<Exclude> resolve_excludes(const MatrixSpec& spec,
                                      const std::vector<std::string>& axis_names,
                                      PlanErrorList& problems) {
  std::vector<Exclude> excludes;
  for (const MatrixEntry& e : spec.exclude) {
    if (e.pairs.empty()) {
      problems.add(PlanError(e.mark, e.key_path, "an empty exclude entry would remove everything"));
      continue;
    }
    Exclude x;
    for (const MatrixPair& p : e.pairs) {
      int a = axis_index(spec, p.path);
      if (a < 0) {
        problems.add(
            PlanError(p.key_mark, e.key_path + "." + p.path,
                      "'" + p.path + "' is not a matrix axis, so this exclude matches nothing",
                      join(axis_names)));
        continue;
      }
      x.lenient = x.lenient || spec.axes[a].pinned;
      x.pairs.emplace_back(a, &p.cell);
    }
    excludes.push_back(std::move(x));
  }
  return excludes;
}

void check_includes(const MatrixSpec& spec, PlanErrorList& problems) {
  for (const MatrixEntry& e : spec.include) {
    if (e.pairs.empty() && !e.label.empty()) {
      problems.add(PlanError(e.label_mark, e.key_path + ".label",
                             "an include entry needs at least one axis value besides its label"));
    } else if (e.pairs.empty()) {
      problems.add(PlanError(e.mark, e.key_path, "an include entry cannot be empty"));
    }
  }
}

// The size of the cartesian product, saturating rather than overflowing.
std::size_t product_size(const std::vector<MatrixAxis>& axes) {
  std::size_t product = 1;
  for (const MatrixAxis& axis : axes) {
    if (product > std::numeric_limits<std::size_t>::max() / axis.values.size()) {
      return std::numeric_limits<std::size_t>::max();
    }
    product *= axis.values.size();
  }
  return product;
}

// At most how many of the `product` combinations the excludes could remove together.
std::size_t removable_by_excludes(const MatrixSpec& spec, const std::vector<Exclude>& excludes,
                                  std::size_t product) {
  std::size_t removable = 0;
  for (const Exclude& x : excludes) {
    std::size_t matching = product;
    for (const auto& [a, cell] : x.pairs) {
      const auto& values = spec.axes[static_cast<std::size_t>(a)].values;
      const bool present = std::any_of(values.begin(), values.end(),
                                       [&](const MatrixCell& v) { return v.value == cell->value; });
      matching = present ? matching / values.size() : 0;
    }
    removable = std::min(product, removable + matching);
  }
  return removable;
}

// Whether a product this big is over the limit without enumerating it; if so, `out` says so.
bool over_limit_unenumerated(const MatrixSpec& spec, const std::vector<Exclude>& excludes,
                             std::size_t product, std::size_t limit, MatrixExpansion& out) {
  if (product > std::max(kMaxEnumerated, limit)) {
    out.count = product;
    out.over_limit = true;
    out.counted_before_exclude = true;
    return true;
  }
  // At least product - (what every exclude entry could remove) combinations survive, and
  // includes only add: when even that is over the limit, nothing needs enumerating.
  if (product - removable_by_excludes(spec, excludes, product) > limit &&
      product > kExactCountUpTo) {
    out.count = product;
    out.over_limit = true;
    out.counted_before_exclude = !excludes.empty();
    return true;
  }
  return false;
}

// Whether the combination at `idx` is excluded; every matching exclude counts it.
bool count_excluded(const MatrixSpec& spec, const std::vector<std::size_t>& idx,
                    std::vector<Exclude>& excludes) {
  bool excluded = false;
  for (Exclude& x : excludes) {
    bool all = std::all_of(x.pairs.begin(), x.pairs.end(), [&](const auto& p) {
      return spec.axes[p.first].values[idx[p.first]].value == p.second->value;
    });
    if (all) {
      ++x.removed;
      excluded = true;  // keep checking so every exclude's use is counted
    }
  }
  return excluded;
}

// The original combinations: the cartesian product, first axis slowest, minus excludes.
void enumerate_originals(const MatrixSpec& spec, std::vector<Exclude>& excludes,
                         std::size_t product, std::size_t limit, MatrixExpansion& out) {
  std::vector<std::size_t> idx(spec.axes.size(), 0);
  for (std::size_t n = 0; n < product; ++n) {
    if (!count_excluded(spec, idx, excludes) && ++out.count <= limit) {
      MatrixCombination c;
      for (std::size_t a = 0; a < spec.axes.size(); ++a) {
        c.values.emplace_back(spec.axes[a].path, &spec.axes[a].values[idx[a]]);
      }
      out.combinations.push_back(std::move(c));
    }
    for (std::size_t a = spec.axes.size(); a-- > 0;) {
      if (++idx[a] < spec.axes[a].values.size()) break;
      idx[a] = 0;
    }
  }
}

void check_excludes_used(const MatrixSpec& spec, const std::vector<Exclude>& excludes,
                         PlanErrorList& problems) {
  for (std::size_t i = 0; i < excludes.size(); ++i) {
    if (excludes[i].removed == 0 && !excludes[i].lenient) {
      const MatrixEntry& e = spec.exclude[i];
      std::string what;
      for (const MatrixPair& p : e.pairs) {
        what += (what.empty() ? "" : ", ") + p.path + ": " + written_form(p.cell);
      }
      problems.add(PlanError(e.mark, e.key_path,
                             "this exclude entry (" + what + ") matches nothing in the matrix"));
    }
  }
}

// Adds the include entry's non-axis pairs to `c`.
void add_include(const MatrixSpec& spec, const MatrixEntry& e, MatrixCombination& c) {
  c.includes.push_back(&e);
  for (const MatrixPair& p : e.pairs) {
    if (axis_index(spec, p.path) >= 0) continue;
    auto it = std::find_if(c.values.begin(), c.values.end(),
                           [&](const auto& v) { return v.first == p.path; });
    if (it != c.values.end()) {
      it->second = &p.cell;  // an earlier include's value: may be overwritten
    } else {
      c.values.emplace_back(p.path, &p.cell);
    }
  }
}

// Joins the include entry to every original combination it fits, else adds it as a new one.
void apply_include(const MatrixSpec& spec, const MatrixEntry& e, std::size_t originals,
                   std::size_t limit, MatrixExpansion& out) {
  bool added = false;
  for (std::size_t i = 0; i < originals; ++i) {
    MatrixCombination& c = out.combinations[i];
    bool fits = std::all_of(e.pairs.begin(), e.pairs.end(), [&](const MatrixPair& p) {
      int a = axis_index(spec, p.path);
      return a < 0 || c.values[a].second->value == p.cell.value;
    });
    if (!fits) continue;
    added = true;
    add_include(spec, e, c);
  }
  if (!added) {
    MatrixCombination c;
    for (const MatrixPair& p : e.pairs) c.values.emplace_back(p.path, &p.cell);
    c.includes.push_back(&e);
    if (++out.count <= limit) out.combinations.push_back(std::move(c));
  }
}

}  // namespace

std::string written_form(const MatrixCell& cell) {
  if (cell.node && cell.node->is_scalar()) return cell.node->text;
  const nlohmann::json j = cell.node ? generic_json(*cell.node) : cell.value;
  return j.is_string() ? j.get<std::string>() : json_dump(j);
}

const MatrixCell* MatrixCombination::find(const std::string& path) const {
  for (const auto& [p, c] : values) {
    if (p == path) return c;
  }
  return nullptr;
}

MatrixExpansion expand_matrix(const MatrixSpec& spec, std::size_t limit) {
  PlanErrorList problems;  // the matrix's mistakes, all of them in one report
  const std::vector<std::string> axis_names = check_axes(spec, problems);
  std::vector<Exclude> excludes = resolve_excludes(spec, axis_names, problems);
  check_includes(spec, problems);
  problems.throw_if_any();

  MatrixExpansion out;
  if (!spec.axes.empty()) {
    const std::size_t product = product_size(spec.axes);
    if (over_limit_unenumerated(spec, excludes, product, limit, out)) return out;
    enumerate_originals(spec, excludes, product, limit, out);
  }
  check_excludes_used(spec, excludes, problems);
  problems.throw_if_any();
  if (out.count > limit) {
    // Includes only ever add, so the plan is too big whatever they do.
    out.over_limit = true;
    return out;
  }
  if (!spec.axes.empty() && out.count == 0 && spec.include.empty()) {
    throw PlanError(spec.mark, "matrix", "exclude removes every combination");
  }

  const std::size_t originals = out.combinations.size();
  for (const MatrixEntry& e : spec.include) apply_include(spec, e, originals, limit, out);
  out.over_limit = out.count > limit;
  return out;
}

}  // namespace orch
