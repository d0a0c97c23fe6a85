// Matrix expansion: the cartesian product of the axes, then exclude, then include, with the
// semantics of GitHub Actions' `strategy.matrix`.
//
// Generic over paths and values: a value is canonical JSON compared structurally, so this file
// knows nothing about experiment keys or plugins (the planner normalises values first).
//   exclude  applied first; an entry removes every combination whose values match all of the
//            entry's keys (a partial match). Every key must be an axis, and every entry must
//            remove something, else it is almost certainly a typo.
//   include  for each entry in order: its pairs are added to every original combination in
//            which none of its pairs would overwrite an original axis value (values added by
//            an earlier include may be overwritten); an entry that fits no original
//            combination becomes a new combination of its own.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan_error.h"
#include "plan/yaml_tree.h"

namespace orch {

struct MatrixCell {
  nlohmann::json value;         ///< canonical; compared with ==
  const YNode* node = nullptr;  ///< where it was written (may be null, e.g. in tests)
  std::string key_path;         ///< for messages, e.g. "matrix.precision[1]"
};

/// The value as the user wrote it, for messages: `amp`, `{"plugin":"amp","dtype":"bf16"}`.
std::string written_form(const MatrixCell& cell);

struct MatrixAxis {
  std::string path;
  SourceMark mark;
  std::vector<MatrixCell> values;
  bool pinned = false;  ///< narrowed by an override: excludes on it may match nothing
};

struct MatrixPair {
  std::string path;
  SourceMark key_mark;
  MatrixCell cell;
};

struct MatrixEntry {
  std::vector<MatrixPair> pairs;
  SourceMark mark;
  std::string key_path;  ///< e.g. "matrix.include[2]"
  std::string label;     ///< include only: the name of the configuration it makes; not an axis
  SourceMark label_mark;
};

struct MatrixSpec {
  std::vector<MatrixAxis> axes;
  std::vector<MatrixEntry> include, exclude;
  SourceMark mark;  ///< of the `matrix:` key
};

/// One combination: (path, value) in axis order, then the keys includes added.
struct MatrixCombination {
  std::vector<std::pair<std::string, const MatrixCell*>> values;
  std::vector<const MatrixEntry*> includes;  ///< the include entries that added to or made it
  const MatrixCell* find(const std::string& path) const;
};

struct MatrixExpansion {
  std::vector<MatrixCombination> combinations;  ///< first-axis-slowest order, new includes last
  std::size_t count = 0;                ///< how many there are (even when not all were kept)
  bool over_limit = false;              ///< count > limit: `combinations` is incomplete
  bool counted_before_exclude = false;  ///< the product was too big to enumerate at all
};

/// Expands `spec`, keeping at most `limit` combinations. Throws PlanError for an empty axis,
/// duplicate axis values, empty entries, exclude keys that are not axes, excludes that match
/// nothing, and a matrix that excludes everything. Cells point into `spec`.
MatrixExpansion expand_matrix(const MatrixSpec& spec, std::size_t limit);

}  // namespace orch
