// The sweep listing (see sweep_listing.h).
#include "report/sweep_listing.h"

#include <fmt/format.h>

#include <algorithm>

#include "text/terminal_text.h"

namespace orch {

std::string format_sweep_listing(const std::vector<storage::SweepListing>& sweeps) {
  const std::vector<std::string> header = {"sweep",   "experiment", "created", "last run started",
                                           "runs",    "ok",         "not ok",  "running",
                                           "revision"};
  constexpr std::size_t kLeft = 4;  // the text columns; the counts are right-aligned
  std::vector<std::vector<std::string>> rows;
  for (const auto& l : sweeps) {
    rows.push_back({terminal_text(l.sweep.name), terminal_text(l.sweep.experiment),
                    terminal_text(l.sweep.created_at),
                    l.sweep.last_run_at.empty() ? "-" : terminal_text(l.sweep.last_run_at),
                    std::to_string(l.runs), std::to_string(l.ok), std::to_string(l.not_ok()),
                    std::to_string(l.running),
                    l.revision > 0 ? std::to_string(l.revision) : std::string("-")});
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c) out += "  ";
      out += c < kLeft ? fmt::format("{:<{}}", cells[c], width[c])
                       : fmt::format("{:>{}}", cells[c], width[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& r : rows) out += line(r);
  return out;
}

nlohmann::json sweep_listing_json(const std::vector<storage::SweepListing>& sweeps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : sweeps) {
    out.push_back(
        {{"name", l.sweep.name},
         {"experiment", l.sweep.experiment},
         {"experiment_file", l.sweep.experiment_file},
         {"created_at", l.sweep.created_at},
         {"last_run_at", l.sweep.last_run_at.empty() ? nlohmann::json(nullptr)
                                                     : nlohmann::json(l.sweep.last_run_at)},
         {"runs", l.runs},
         {"ok", l.ok},
         {"not_ok", l.not_ok()},
         {"running", l.running},
         {"revision", l.revision > 0 ? nlohmann::json(l.revision) : nlohmann::json(nullptr)}});
  }
  return out;
}

}  // namespace orch
