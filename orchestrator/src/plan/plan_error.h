// PlanError: the one exception the planner throws, pointing at the line and column of the input
// that is wrong, the key path that leads there, what is wrong and what would be accepted.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace orch {

/// Where a YAML node was written. Lines and columns are 1-based; line 0 means "unknown".
/// The file name is shared by every node of one document, so copying marks is cheap.
struct SourceMark {
  std::shared_ptr<const std::string> file;
  int line = 0;
  int col = 0;

  const std::string& file_name() const;
};

/// what() is "file:line:col: key.path: message (allowed: ...)", leaving out empty parts.
struct PlanError : std::runtime_error {
  PlanError(std::string file, int line, int col, std::string key_path, std::string message,
            std::string allowed = {});
  PlanError(const SourceMark& at, std::string key_path, std::string message,
            std::string allowed = {});

  std::string file;
  int line = 0, col = 0;
  std::string key_path, message, allowed;
};

/// Several problems found together (the plan-time checks of every configuration), so a user
/// fixes them all in one go. It is the first of them (its fields), and what() lists them all,
/// one per line.
struct PlanErrors : PlanError {
  explicit PlanErrors(std::vector<PlanError> all);
  const char* what() const noexcept override { return text.c_str(); }

  std::vector<PlanError> errors;  ///< at least one
  std::string text;
};

/// Problems found by checks that do not depend on each other (each key of a file, each value of
/// an axis, each parameter of a plugin), gathered so that one `orch plan` reports them all.
class PlanErrorList {
 public:
  /// Runs `check`; a PlanError (or each of a PlanErrors) it throws is kept, not thrown. Returns
  /// whether it succeeded.
  template <class Check>
  bool attempt(Check&& check) {
    try {
      check();
      return true;
    } catch (const PlanErrors& e) {
      errors_.insert(errors_.end(), e.errors.begin(), e.errors.end());
    } catch (const PlanError& e) {
      errors_.push_back(e);
    }
    return false;
  }
  void add(PlanError e) { errors_.push_back(std::move(e)); }
  bool empty() const { return errors_.empty(); }
  /// Throws what was kept as one PlanErrors, in the order of the files they were found in
  /// (the experiment file, then overrides) and by line and column within each, a problem
  /// found twice (the same text) once.
  void throw_if_any();

 private:
  std::vector<PlanError> errors_;
};

/// Builds the what() text of a PlanError from its parts.
std::string format_plan_error(const std::string& file, int line, int col,
                              const std::string& key_path, const std::string& message,
                              const std::string& allowed);

}  // namespace orch
