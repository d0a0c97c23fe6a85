// The planner's own YAML tree: every node keeps the line and column it was written at.
//
// yaml-cpp nodes are converted once, up front, with safety limits, so that the rest of the
// planner never touches yaml-cpp and every later error can point at a line. The conversion is
// where hostile input is stopped: nesting deeper than a limit, alias "bombs" (yaml-cpp shares
// an aliased node, so a naive walk visits it once per reference and explodes) and aliases that
// refer to their own ancestors (an infinite tree).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan_error.h"

namespace orch {

struct YEntry;

struct YNode {
  enum class Kind { kNull, kScalar, kSequence, kMapping };

  Kind kind = Kind::kNull;
  std::string text;     ///< the scalar as written (kScalar only)
  bool quoted = false;  ///< quoted or tagged !!str: always a string, never a number or bool
  SourceMark mark;
  std::vector<YNode> items;     ///< kSequence
  std::vector<YEntry> entries;  ///< kMapping, in file order (keys are unique)

  bool is_null() const { return kind == Kind::kNull; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_mapping() const { return kind == Kind::kMapping; }
  /// The value of `key` in a mapping, or nullptr.
  const YNode* find(std::string_view key) const;
};

struct YEntry {
  std::string key;
  SourceMark key_mark;
  YNode value;
};

struct YamlLimits {
  int max_depth = 64;              ///< nesting levels below the document root
  std::size_t max_nodes = 100000;  ///< nodes after alias expansion
};

/// Parses one YAML document. An empty document gives a kNull node at 1:1. `col_offset` is added
/// to the columns of the first line, so a value cut out of a longer line (an override's
/// `key=value`) reports columns of the whole line; `root_path` prefixes the key paths in
/// messages. Throws PlanError.
YNode parse_yaml(const std::string& text, std::shared_ptr<const std::string> file,
                 const YamlLimits& limits = {}, int col_offset = 0,
                 const std::string& root_path = "");

/// Throws PlanError at the first scalar or key under `node` (`path` names it in the message)
/// whose text is not UTF-8. A configuration is kept and passed on as JSON (the run's
/// specification, its result document, the store), and JSON text is UTF-8: a Latin-1 byte in a
/// dataset root or a command could only reach the run replaced, naming another file.
void require_utf8(const YNode& node, const std::string& path);

}  // namespace orch
