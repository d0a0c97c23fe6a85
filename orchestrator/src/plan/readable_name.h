// Readable run names: each configuration named by the few settings that tell it apart from the
// other configurations of its plan ("amp-bf16/fused_bn/b256"), never by a whole optimizer, a
// whole plugin choice or a full path.
//
// A name is built from pieces. Every axis of the plan contributes one piece per thing it can
// change (a plugin's name, each of its parameters, each field of a group, a scalar's value);
// only pieces whose value differs between configurations are shown. Pieces of one axis are
// joined by '-' (a plugin and its parameters) or ',' (the fields of a group), axes by '/'.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace orch {

/// Names longer than this are kept whole (a cut name could stop telling configurations apart),
/// and `orch plan` suggests an include `label:` for them.
constexpr std::size_t kNameAim = 60;

enum class PieceStyle {
  kValue,    ///< the value alone: a plugin's name ("amp")
  kPrefix,   ///< a fixed prefix and the value: batch size "b256"
  kLeaf,     ///< the value alone when it explains itself ("channels_last"), else "key=value"
  kSetting,  ///< always "key=value": a group field ("impl=fused", "lr=0.01")
  kFlag,     ///< a boolean: "key" when true ("fused_bn"), nothing when false
};

struct NamePiece {
  std::string key;  ///< the leaf name shown in "key=value", e.g. "workers"
  PieceStyle style = PieceStyle::kLeaf;
  std::string prefix;    ///< kPrefix only
  std::size_t part = 0;  ///< pieces of one part (one axis) are joined together
  char joiner = '-';     ///< between this piece and the previous one of its part
  /// The piece (index) naming the plugin this parameter belongs to, or -1. A parameter that only
  /// some configurations' plugins have is not shown just for being absent when the plugin's own
  /// name already tells the configurations apart.
  int parent = -1;
};

/// Names for configurations; values[i][j] is piece j's value in configuration i (none: the
/// configuration does not have it). A string value holding '/' is a path and shows as its
/// shortest tail of components that still tells the piece's values apart ("photos" for
/// /tmp/photos). A configuration with nothing to show is named by the flags it has off
/// ("no-fused_bn"), else `fallback`. Clashing names get "~2", "~3", ... in order.
std::vector<std::string> make_readable_names(
    const std::vector<NamePiece>& pieces,
    const std::vector<std::vector<std::optional<std::string>>>& values,
    const std::string& fallback);

/// A string value that says what it is without its key: contains a letter, starts with one,
/// and is not a word like on/off/auto/true that could belong to any key.
bool self_explanatory(const std::string& value);

/// `text` with every character that does not belong in a name replaced by '_': a name is a
/// file name (the run's folder) and a shell word, and '/' separates its parts.
std::string name_safe(std::string text);

/// The shortest tail of '/'-separated components of each path that keeps distinct paths
/// distinct ("/data/a/train", "/data/b/train" -> "a/train", "b/train").
std::vector<std::string> distinguishing_tails(const std::vector<std::string>& paths);

}  // namespace orch
