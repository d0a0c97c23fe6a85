// The `matrix:` key of an experiment file, read into a MatrixSpec (matrix.h): each axis and
// include or exclude key validated as a setting path, each value made canonical for its key,
// so values that give the same configuration compare equal.
#pragma once

#include <map>
#include <string>

#include "plan/config_draft.h"
#include "plan/experiment_schema.h"
#include "plan/matrix.h"
#include "plan/plan_error.h"
#include "plan/yaml_tree.h"

namespace orch {

/// The matrix as written, plus each path's validated SettingPath.
struct ParsedMatrix {
  bool present = false;
  MatrixSpec spec;
  std::map<std::string, SettingPath> paths;
};

/// `value`, written at `key_path`, as a value of `path`. Throws PlanError for a bad value.
MatrixCell matrix_cell(const SettingPath& path, const YNode& value, std::string key_path,
                       const SchemaCatalog& catalog);

/// Reads the `matrix:` entry `m` into `matrix`. Throws PlanError for a matrix that is empty or
/// not a mapping; the problems of its axes and entries are added to `errors`, so that all of
/// them are reported together.
void read_matrix(const YEntry& m, const SchemaCatalog& catalog, PlanErrorList& errors,
                 ParsedMatrix& matrix);

}  // namespace orch
