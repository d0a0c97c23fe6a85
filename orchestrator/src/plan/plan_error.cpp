// PlanError construction and its one-line rendering.
#include "plan/plan_error.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace orch {

const std::string& SourceMark::file_name() const {
  static const std::string kEmpty;
  return file ? *file : kEmpty;
}

std::string format_plan_error(const std::string& file, int line, int col,
                              const std::string& key_path, const std::string& message,
                              const std::string& allowed) {
  std::string out;
  if (!file.empty()) out += file;
  if (line > 0) {
    if (!out.empty()) out += ':';
    out += std::to_string(line) + ':' + std::to_string(col);
  }
  if (!key_path.empty()) {
    if (!out.empty()) out += ": ";
    out += key_path;
  }
  if (!message.empty()) {
    if (!out.empty()) out += ": ";
    out += message;
  }
  if (!allowed.empty()) out += " (allowed: " + allowed + ")";
  return out;
}

PlanError::PlanError(std::string file_, int line_, int col_, std::string key_path_,
                     std::string message_, std::string allowed_)
    : std::runtime_error(format_plan_error(file_, line_, col_, key_path_, message_, allowed_)),
      file(std::move(file_)),
      line(line_),
      col(col_),
      key_path(std::move(key_path_)),
      message(std::move(message_)),
      allowed(std::move(allowed_)) {}

PlanError::PlanError(const SourceMark& at, std::string key_path_, std::string message_,
                     std::string allowed_)
    : PlanError(at.file_name(), at.line, at.col, std::move(key_path_), std::move(message_),
                std::move(allowed_)) {}

PlanErrors::PlanErrors(std::vector<PlanError> all) : PlanError(all.at(0)), errors(std::move(all)) {
  for (const PlanError& e : errors) text += (text.empty() ? "" : "\n") + std::string(e.what());
}

void PlanErrorList::throw_if_any() {
  if (errors_.empty()) return;
  std::map<std::string, std::size_t> file_rank;  // by first appearance
  for (const PlanError& e : errors_) file_rank.emplace(e.file, file_rank.size());
  // Overrides are each a one-line "<override>" of their own: they keep the order given.
  auto place = [&](const PlanError& e) {
    const bool real = e.file.empty() || e.file.front() != '<';
    return std::tuple(file_rank.at(e.file), real ? e.line : 0, real ? e.col : 0);
  };
  std::stable_sort(errors_.begin(), errors_.end(),
                   [&](const PlanError& a, const PlanError& b) { return place(a) < place(b); });
  std::set<std::string> seen;
  std::vector<PlanError> unique;
  for (PlanError& e : errors_) {
    if (seen.insert(e.what()).second) unique.push_back(std::move(e));
  }
  errors_.clear();
  throw PlanErrors(std::move(unique));
}

}  // namespace orch
