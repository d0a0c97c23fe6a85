// The `matrix:` key, read (see matrix_reader.h).
#include "plan/matrix_reader.h"

#include <regex>
#include <vector>

#include "plan/scalars.h"

namespace orch {
namespace {

// A label names the configuration its include entry makes; it is not an axis, so it is not
// part of the configuration or its hash.
void read_label(const YEntry& p, const std::string& key_path, MatrixEntry& entry) {
  static const std::regex kLabel(R"([A-Za-z0-9_.,:=+()/ -]{1,80})");
  const YNode& v = p.value;
  if (!v.is_scalar() || !std::regex_match(v.text, kLabel) || v.text.front() == ' ' ||
      v.text.back() == ' ') {
    throw PlanError(v.mark, key_path,
                    "expected a label of at most 80 letters, digits, spaces and _.,:=+()/- "
                    "(not starting or ending with a space), got " +
                        describe(v),
                    "e.g. label: baseline");
  }
  entry.label = v.text;
  entry.label_mark = v.mark;
}

class MatrixReader {
 public:
  MatrixReader(const SchemaCatalog& catalog, PlanErrorList& errors, ParsedMatrix& matrix)
      : catalog_(catalog), errors_(errors), matrix_(matrix) {}

  void read(const YEntry& m) {
    matrix_.present = true;
    const YNode& node = m.value;
    // Whole-matrix problems (too many runs, everything excluded) point at `matrix:` itself.
    matrix_.spec.mark = m.key_mark;
    if (node.is_null() || (node.is_mapping() && node.entries.empty())) {
      throw PlanError(node.mark, "matrix",
                      "the matrix is empty; add an axis (e.g. batch_size: [64, 128]) or remove "
                      "'matrix:'");
    }
    if (!node.is_mapping()) {
      throw PlanError(node.mark, "matrix", "expected a mapping of axes, got " + describe(node));
    }
    for (const YEntry& e : node.entries) {
      if (e.key == "include" || e.key == "exclude") {
        read_entries(e, e.key == "include" ? matrix_.spec.include : matrix_.spec.exclude);
        continue;
      }
      errors_.attempt([&] { read_axis(e); });
    }
  }

 private:
  void read_axis(const YEntry& e) {
    const std::string key_path = "matrix." + e.key;
    SettingPath path = parse_setting_path(e.key, e.key_mark, key_path, true);
    if (!e.value.is_sequence()) {
      throw PlanError(e.value.mark, key_path,
                      "expected a list of values for this axis, got " + describe(e.value),
                      "[value, value, ...]");
    }
    MatrixAxis axis{e.key, e.value.mark, {}, false};
    for (std::size_t i = 0; i < e.value.items.size(); ++i) {
      errors_.attempt([&] {
        axis.values.push_back(matrix_cell(path, e.value.items[i],
                                          key_path + "[" + std::to_string(i) + "]", catalog_));
      });
    }
    matrix_.paths.emplace(e.key, std::move(path));
    matrix_.spec.axes.push_back(std::move(axis));
  }

  void read_entries(const YEntry& e, std::vector<MatrixEntry>& out) {
    const std::string key_path = "matrix." + e.key;
    if (!e.value.is_sequence()) {
      errors_.add(PlanError(e.value.mark, key_path,
                            "expected a list of mappings, got " + describe(e.value)));
      return;
    }
    for (std::size_t i = 0; i < e.value.items.size(); ++i) {
      const YNode& item = e.value.items[i];
      const std::string item_path = key_path + "[" + std::to_string(i) + "]";
      if (!item.is_mapping() && !item.is_null()) {
        errors_.add(PlanError(item.mark, item_path,
                              "expected a mapping of axis: value, got " + describe(item)));
        continue;
      }
      MatrixEntry entry{{}, item.mark, item_path, {}, {}};
      for (const YEntry& p : item.entries) {
        errors_.attempt([&] { read_pair(p, item_path + "." + p.key, e.key == "include", entry); });
      }
      out.push_back(std::move(entry));
    }
  }

  void read_pair(const YEntry& p, const std::string& pair_path, bool include, MatrixEntry& entry) {
    if (p.key == "label" && include) {
      read_label(p, pair_path, entry);
      return;
    }
    SettingPath path = parse_setting_path(p.key, p.key_mark, pair_path, true);
    entry.pairs.push_back(
        MatrixPair{p.key, p.key_mark, matrix_cell(path, p.value, pair_path, catalog_)});
    matrix_.paths.emplace(p.key, std::move(path));
  }

  const SchemaCatalog& catalog_;
  PlanErrorList& errors_;
  ParsedMatrix& matrix_;
};

}  // namespace

MatrixCell matrix_cell(const SettingPath& path, const YNode& value, std::string key_path,
                       const SchemaCatalog& catalog) {
  return MatrixCell{canonical_setting(path, value, key_path, catalog), &value, key_path};
}

void read_matrix(const YEntry& m, const SchemaCatalog& catalog, PlanErrorList& errors,
                 ParsedMatrix& matrix) {
  MatrixReader(catalog, errors, matrix).read(m);
}

}  // namespace orch
