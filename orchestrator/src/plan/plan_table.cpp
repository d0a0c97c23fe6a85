// Plan table rendering (see plan_table.h).
#include "plan/plan_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "plan/readable_name.h"
#include "text/terminal_text.h"

namespace orch {

namespace {

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

std::string format_plan_table(const Plan& plan) {
  std::vector<std::string> header = {"#", "name", "hash"};
  for (const std::string& axis : plan.axes) header.push_back(axis);
  header.push_back("repeat");

  std::vector<std::vector<std::string>> rows;
  std::set<std::string> configs;
  int repeats = 0;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const RunSpec& run = plan.runs[i];
    std::vector<std::string> row = {std::to_string(i), terminal_text(run.name),
                                    run.hash.substr(0, 12)};
    for (const std::string& axis : plan.axes) {
      auto it = run.swept.find(axis);
      row.push_back(it == run.swept.end() ? "" : terminal_text(it->second));
    }
    row.push_back(std::to_string(run.repeat));
    rows.push_back(std::move(row));
    configs.insert(run.hash);
    repeats = std::max(repeats, run.repeat + 1);
  }

  std::vector<std::size_t> width(header.size());
  for (std::size_t j = 0; j < header.size(); ++j) {
    width[j] = header[j].size();
    for (const auto& row : rows) width[j] = std::max(width[j], row[j].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t j = 0; j < cells.size(); ++j) {
      // The index is right-aligned, like numbers; the rest left-aligned.
      out += j == 0 ? fmt::format("{:>{}}", cells[j], width[j])
                    : fmt::format("  {:<{}}", cells[j], width[j]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  out += plural(plan.runs.size(), "run") + " (" + plural(configs.size(), "configuration") + " x " +
         plural(static_cast<std::size_t>(repeats), "repeat") + ")\n";
  for (const std::string& note : plan.notes) out += "note: " + terminal_text(note) + "\n";
  std::set<std::string> long_names;
  for (const RunSpec& run : plan.runs) {
    if (run.name.size() > kNameAim) long_names.insert(run.name);
  }
  if (!long_names.empty()) {
    out += fmt::format(
        "note: {} longer than {} characters, kept whole so they stay distinct (e.g. {}); "
        "an include entry's `label:` gives its configuration a name of your choosing\n",
        plural(long_names.size(), "configuration name") + (long_names.size() == 1 ? " is" : " are"),
        kNameAim, *long_names.begin());
  }
  return out;
}

}  // namespace orch
