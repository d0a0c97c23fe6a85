#include "cluster/ingest.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "cluster/submission.h"
#include "plan/bounded_file.h"
#include "result/result_document.h"

namespace orch::cluster {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// What Store::record would refuse, said per file before anything is written: which key of the
// file is missing or of the wrong type, where the typed document would only leave it unset.
std::string what_is_wrong(const json& doc, const ResultDocument& typed) {
  if (!doc.is_object()) return "not a JSON object";
  if (typed.format != kResultFormat)
    return "not an orch result document (format is not \"orch.result\")";
  if (!doc.contains("status") || !doc["status"].is_string()) return "no status";
  const auto run = doc.find("run");
  if (run == doc.end() || !run->is_object()) return "no run {name, hash, repeat}";
  if (!run->contains("hash") || !(*run)["hash"].is_string() ||
      (*run)["hash"].get<std::string>().empty()) {
    return "no run.hash";
  }
  if (!run->contains("repeat") || !(*run)["repeat"].is_number_integer())
    return "no integer run.repeat";
  if (!typed.run) return "run is not {name, hash, repeat}";
  if (!typed.experiment) return "no experiment name";
  return {};
}

}  // namespace

Ingester::Ingester(storage::Store& store, std::string sweep)
    : store_(store), sweep_override_(std::move(sweep)) {}

std::int64_t Ingester::sweep_for(const std::string& name, const std::string& experiment) {
  if (auto it = sweep_ids_.find(name); it != sweep_ids_.end()) return it->second;
  std::string file, description;
  if (index_.is_object() && index_.value("sweep", "") == name) {
    file = index_.value("experiment_file", "");
    description = index_.value("description", "");
  }
  const std::int64_t id = store_.open_sweep(name, experiment, file, description);
  sweep_ids_[name] = id;
  auto& st = statuses_[id];
  for (const auto& [key, state] : store_.run_states(id)) st[key] = state.status;
  return id;
}

void Ingester::ingest_file(const fs::path& file, IngestReport& report) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (!ec && !fs::is_regular_file(st)) {
    // A FIFO, a device (a link to /dev/zero) or a socket named *.json: never opened for a
    // document, but named, once, as a malformed document is.
    const auto not_regular = std::make_pair(std::uintmax_t{0}, fs::file_time_type::min());
    if (auto [it, fresh] = seen_.emplace(file.string(), not_regular);
        fresh || it->second != not_regular) {
      it->second = not_regular;
      struct stat mode {};
      if (::stat(file.c_str(), &mode) != 0) mode.st_mode = 0;
      report.malformed.push_back(file.string() + ": it is " + describe_file_type(mode.st_mode) +
                                 ", not a regular file; a result document is a regular file");
    }
    return;
  }
  const auto size = fs::file_size(file, ec);
  const auto mtime = fs::last_write_time(file, ec);
  if (ec) return;  // vanished (a task's rename) between listing and reading
  const auto stamp = std::make_pair(size, mtime);
  if (auto it = seen_.find(file.string()); it != seen_.end() && it->second == stamp) return;
  seen_[file.string()] = stamp;

  json doc;
  try {
    doc =
        json::parse(read_bounded_file(file.string(), kMaxResultDocumentBytes, "a result document"));
  } catch (const BoundedReadError& e) {
    report.malformed.push_back(e.what());
    return;
  } catch (const json::exception& e) {
    report.malformed.push_back(file.string() + ": not valid JSON: " + e.what());
    return;
  }
  const ResultDocument typed = result_from_json(doc);
  if (auto why = what_is_wrong(doc, typed); !why.empty()) {
    report.malformed.push_back(file.string() + ": " + why);
    return;
  }
  const std::string experiment = *typed.experiment;
  std::string name = sweep_override_;
  if (name.empty() && index_.is_object()) name = index_.value("sweep", "");
  if (name.empty()) name = experiment;
  if (index_.is_object() && !index_.value("experiment", "").empty() &&
      index_.value("experiment", "") != experiment) {
    report.malformed.push_back(file.string() + ": a run of experiment '" + experiment +
                               "' in the submission of experiment '" +
                               index_.value("experiment", "") + "'");
    return;
  }
  try {
    const std::int64_t id = sweep_for(name, experiment);
    const std::pair<std::string, int> key{typed.run->hash, static_cast<int>(typed.run->repeat)};
    // An unknown status is left to Store::record, which refuses it with its text.
    const std::string status = typed.status ? to_string(*typed.status) : std::string();
    auto& known = statuses_[id];
    if (auto it = known.find(key); it != known.end() && typed.status && it->second == status &&
                                   *typed.status != RunStatus::running) {
      ++report.unchanged;
      return;
    }
    store_.record(id, doc);
    known[key] = status;
    ++report.recorded;
  } catch (const std::exception& e) {
    report.malformed.push_back(file.string() + ": " + e.what());
  }
}

IngestReport Ingester::ingest(const std::string& dir_arg) {
  IngestReport report;
  fs::path dir(dir_arg);
  index_ = json();
  if (auto idx = read_index(dir.string())) {
    index_ = *idx;
    dir /= "results";
  } else if (auto parent =
                 read_index(fs::absolute(dir).lexically_normal().parent_path().string())) {
    index_ = *parent;
  }
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    report.malformed.push_back(dir.string() + ": not a folder");
    return report;
  }
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // Every *.json but a folder: one that is not a regular file is named, not passed over.
    if (it->path().extension() == ".json" && !it->is_directory(ec)) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) ingest_file(f, report);
  return report;
}

}  // namespace orch::cluster
