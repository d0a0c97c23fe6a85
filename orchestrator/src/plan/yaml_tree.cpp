// yaml-cpp -> YNode conversion with depth, size and cycle limits.
#include "plan/yaml_tree.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "result/json_dump.h"

namespace orch {

const YNode* YNode::find(std::string_view key) const {
  for (const YEntry& e : entries) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

namespace {

class Converter {
 public:
  Converter(std::shared_ptr<const std::string> file, const YamlLimits& limits, int col_offset)
      : file_(std::move(file)), limits_(limits), col_offset_(col_offset) {}

  SourceMark mark_of(const YAML::Mark& m) const {
    // yaml-cpp marks are 0-based; a null mark (-1) means yaml-cpp did not know.
    if (m.line < 0) return SourceMark{file_, 0, 0};
    int col = m.column + 1 + (m.line == 0 ? col_offset_ : 0);
    return SourceMark{file_, m.line + 1, col};
  }

  YNode convert(const YAML::Node& n, const std::string& path, int depth) {
    SourceMark at = mark_of(n.Mark());
    if (++count_ > limits_.max_nodes) {
      throw PlanError(at, shorten(path),
                      "the document expands to more than " + std::to_string(limits_.max_nodes) +
                          " nodes (aliases are expanded where they are used)");
    }
    if (depth > limits_.max_depth) {
      throw PlanError(at, shorten(path),
                      "nesting is deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    YNode out;
    out.mark = at;
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out.kind = YNode::Kind::kNull;
        return out;
      case YAML::NodeType::Scalar:
        out.kind = YNode::Kind::kScalar;
        out.text = n.Scalar();
        out.quoted = scalar_is_string(n, at, path);
        return out;
      case YAML::NodeType::Sequence:
      case YAML::NodeType::Map:
        break;
    }
    check_tag(n, at, path);
    // An alias that points at one of its own ancestors makes an infinite tree.
    for (const YAML::Node& a : ancestors_) {
      if (a.is(n)) throw PlanError(at, path, "an alias refers to a node that contains it");
    }
    ancestors_.push_back(n);
    if (n.IsSequence()) {
      out.kind = YNode::Kind::kSequence;
      std::size_t i = 0;
      for (const YAML::Node& item : n) {
        out.items.push_back(convert(item, path + "[" + std::to_string(i++) + "]", depth + 1));
      }
    } else {
      out.kind = YNode::Kind::kMapping;
      std::set<std::string> seen;
      for (auto it = n.begin(); it != n.end(); ++it) {
        // A copy (a Node is a handle): yaml-cpp's `it->` returns a temporary proxy holding the
        // pair, so a reference to its `first` would dangle after this statement.
        const YAML::Node k = it->first;
        SourceMark key_at = mark_of(k.Mark());
        if (!k.IsScalar()) {
          throw PlanError(key_at, path, "mapping keys must be plain words, not lists or mappings");
        }
        std::string key = k.Scalar();
        std::string key_path = path.empty() ? key : path + "." + key;
        if (!seen.insert(key).second) {
          throw PlanError(key_at, key_path, "duplicate key '" + key + "'");
        }
        YNode value = convert(it->second, key_path, depth + 1);
        // An empty value (`key:`) gets yaml-cpp's next-token mark; point at the key instead.
        if (value.is_null() && (value.mark.line != key_at.line || value.mark.line == 0)) {
          value.mark = key_at;
        }
        out.entries.push_back(YEntry{std::move(key), key_at, std::move(value)});
      }
    }
    ancestors_.pop_back();
    return out;
  }

 private:
  // Paths into hostile documents can be thousands of "[0]" long; the start says enough.
  static std::string shorten(const std::string& path) {
    return path.size() <= 60 ? path : path.substr(0, 60) + "...";
  }

  // yaml-cpp tags plain scalars "?", quoted ones "!"; "!!str" also forces a string.
  bool scalar_is_string(const YAML::Node& n, const SourceMark& at, const std::string& path) {
    const std::string& tag = n.Tag();
    if (tag == "?" || tag.empty()) return false;
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return true;
    throw PlanError(at, path, "YAML tag '" + tag + "' is not supported", "!!str");
  }
  void check_tag(const YAML::Node& n, const SourceMark& at, const std::string& path) {
    const std::string& tag = n.Tag();
    if (tag.empty() || tag == "?" || tag == "!" || tag == "tag:yaml.org,2002:seq" ||
        tag == "tag:yaml.org,2002:map") {
      return;
    }
    throw PlanError(at, path, "YAML tag '" + tag + "' is not supported");
  }

  std::shared_ptr<const std::string> file_;
  YamlLimits limits_;
  int col_offset_;
  std::size_t count_ = 0;
  std::vector<YAML::Node> ancestors_;
};

}  // namespace

void require_utf8(const YNode& node, const std::string& path) {
  static const char* kWhy = "is not UTF-8 text (orch keeps configurations as JSON, which is UTF-8)";
  if (node.is_scalar() && !is_utf8(node.text)) throw PlanError(node.mark, path, kWhy);
  std::size_t i = 0;
  for (const YNode& item : node.items) require_utf8(item, path + "[" + std::to_string(i++) + "]");
  for (const YEntry& e : node.entries) {
    const std::string key_path = path.empty() ? e.key : path + "." + e.key;
    if (!is_utf8(e.key)) throw PlanError(e.key_mark, key_path, kWhy);
    require_utf8(e.value, key_path);
  }
}

YNode parse_yaml(const std::string& text, std::shared_ptr<const std::string> file,
                 const YamlLimits& limits, int col_offset, const std::string& root_path) {
  Converter conv(file, limits, col_offset);
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp stops at 2000 levels itself and reports no useful position.
    throw PlanError(conv.mark_of(e.mark), root_path,
                    "nesting is deeper than " + std::to_string(limits.max_depth) + " levels");
  } catch (const YAML::Exception& e) {
    throw PlanError(conv.mark_of(e.mark), root_path, "YAML syntax error: " + e.msg);
  }
  if (docs.empty()) {
    YNode empty;
    empty.mark = SourceMark{file, 1, 1 + col_offset};
    return empty;
  }
  if (docs.size() > 1) {
    throw PlanError(conv.mark_of(docs[1].Mark()), "",
                    "expected one YAML document, found " + std::to_string(docs.size()));
  }
  YNode root = conv.convert(docs[0], root_path, 0);
  if (root.mark.line == 0) root.mark = SourceMark{file, 1, 1 + col_offset};
  return root;
}

}  // namespace orch
