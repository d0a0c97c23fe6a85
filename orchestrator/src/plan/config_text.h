// A run's resolved configuration, held as its canonical JSON text and shared between copies.
//
// A plan holds one RunSpec per run, and each held its configuration as a JSON tree: about sixty
// nodes, several KiB, the largest part of a run, so a million-run plan ran out of memory. As
// compact text a configuration takes a fraction of that, and the repeats of a configuration
// (and every later copy of a run: a sweep's queue, a rung of successive halving) share one
// string. The tree is parsed where a configuration is read whole: a run's specification file,
// its result document, a check of the plan against the one a sweep recorded.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace orch {

class ConfigText {
 public:
  /// No configuration: text() is "null", json() is null (a RunSpec made by hand).
  ConfigText() = default;
  /// The text of `config` (compact, keys sorted as nlohmann::json keeps them). Implicit, so
  /// that `spec.config = tree;` reads as it did when the member was the tree.
  ConfigText(const nlohmann::json& config);  // NOLINT(google-explicit-constructor)

  /// The canonical JSON text: parse(text()).dump() == text().
  const std::string& text() const;
  /// The configuration as a tree, parsed anew on each call: take it once where many keys are
  /// read.
  nlohmann::json json() const;
  bool is_null() const { return !text_; }

  friend bool operator==(const ConfigText& a, const ConfigText& b) { return a.text() == b.text(); }
  friend bool operator!=(const ConfigText& a, const ConfigText& b) { return !(a == b); }

 private:
  std::shared_ptr<const std::string> text_;  ///< null: no configuration
};

}  // namespace orch
