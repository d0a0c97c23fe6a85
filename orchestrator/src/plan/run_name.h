// Run names: short, readable, unique per configuration, built only from what differs between
// the configurations of a plan ("amp-bf16/channels_last/b256").
#pragma once

#include <string>
#include <vector>

namespace orch {

enum class NameStyle {
  kValue,   ///< the value alone: plugin choices ("amp-bf16"), groups ("lr=0.01")
  kPrefix,  ///< a fixed prefix and the value: batch size "b256"
  kLeaf,    ///< "leaf=value", or the value alone when it explains itself ("channels_last")
};

struct NameColumn {
  std::string path;  ///< e.g. "model.depth"
  NameStyle style = NameStyle::kLeaf;
  std::string prefix;  ///< kPrefix only
};

/// A string value that says what it is without its key: contains a letter, starts with one,
/// and is not a word like on/off/auto/true that could belong to any key.
bool self_explanatory(const std::string& value);

/// One column's part of a name, with characters that do not belong in a name replaced by '_'.
std::string name_part(const NameColumn& column, const std::string& value);

/// Names for configurations; values[i][j] is column j's rendered value in configuration i.
/// Columns whose value is the same everywhere are left out; if none is left, every
/// configuration is called `fallback`. Clashing names get "~2", "~3", ... in order.
std::vector<std::string> make_run_names(const std::vector<NameColumn>& columns,
                                        const std::vector<std::vector<std::string>>& values,
                                        const std::string& fallback);

}  // namespace orch
