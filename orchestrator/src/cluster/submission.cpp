#include "cluster/submission.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "plan/bounded_file.h"
#include "plan/run_spec_json.h"
#include "result/json_dump.h"
#include "result/run_status.h"
#include "sweep/environment_fault.h"

namespace orch::cluster {
namespace {

namespace fs = std::filesystem;

// The checked writer (a temporary name of this process's, created exclusively, renamed over a
// regular file only): a fixed "PATH.tmp" opened with an ofstream followed a link planted there.
void write_file(const fs::path& path, const std::string& text) {
  sweep::write_file_atomically(path.string(), text);
}

}  // namespace

bool is_finished(const std::string& status, bool retry_failed) {
  const std::optional<RunStatus> s = parse_run_status(status);
  return s == RunStatus::ok || (!retry_failed && s && is_final_failure(*s));
}

std::string result_name(const RunSpec& spec) {
  return fmt::format("{}-r{}", spec.hash, spec.repeat);
}

std::vector<const RunSpec*> pending_runs(
    const std::vector<RunSpec>& runs,
    const std::map<std::pair<std::string, int>, std::string>& done, bool retry_failed) {
  std::vector<const RunSpec*> out;
  for (const RunSpec& r : runs) {
    auto it = done.find({r.hash, r.repeat});
    if (it != done.end() && is_finished(it->second, retry_failed)) continue;
    out.push_back(&r);
  }
  return out;
}

Submission write_submission(const SweepIdentity& sweep, const std::vector<const RunSpec*>& pending,
                            std::size_t total, SlurmScriptInput script_input) {
  Submission sub;
  sub.dir = fs::absolute(script_input.dir).lexically_normal().string();
  sub.already_done = total - pending.size();
  sub.script_path = (fs::path(sub.dir) / kScriptFile).string();
  if (pending.empty()) return sub;

  const fs::path dir(sub.dir);
  const fs::path specs = dir / "specs";
  // orch's own folders: a link planted at one would aim the removal of the old specs below, and
  // the tasks' logs and results, at its target.
  for (const fs::path& own : {specs, dir / "results", dir / "logs"}) {
    sweep::check_own_folder(own.string());
    fs::create_directories(own);
  }
  for (const auto& entry : fs::directory_iterator(specs)) {
    if (entry.path().extension() == ".json") fs::remove(entry.path());
  }
  nlohmann::json tasks = nlohmann::json::array();
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const RunSpec& spec = *pending[i];
    write_file(specs / fmt::format("{}.json", i), json_dump(run_spec_json(spec), 2) + "\n");
    sub.result_names.push_back(result_name(spec));
    tasks.push_back({{"task", i},
                     {"name", spec.name},
                     {"hash", spec.hash},
                     {"repeat", spec.repeat},
                     {"spec", fmt::format("specs/{}.json", i)},
                     {"result", "results/" + result_name(spec) + ".json"}});
  }
  script_input.dir = sub.dir;
  script_input.result_names = sub.result_names;
  sub.script = slurm_script(script_input);
  const nlohmann::json index = {{"format", kIndexFormat},
                                {"version", 1},
                                {"sweep", sweep.name},
                                {"experiment", sweep.experiment},
                                {"experiment_file", sweep.experiment_file},
                                {"description", sweep.description},
                                {"runs_in_plan", total},
                                {"script", kScriptFile},
                                {"tasks", tasks}};
  write_file(dir / kIndexFile, json_dump(index, 2) + "\n");
  write_file(sub.script_path, sub.script);
  fs::permissions(sub.script_path, fs::perms::owner_exec | fs::perms::group_exec,
                  fs::perm_options::add);
  return sub;
}

std::optional<nlohmann::json> read_index(const std::string& dir) {
  // Bounded and never blocking, as the results it indexes are read: the folder is the user's.
  std::string text;
  try {
    text = read_bounded_file((fs::path(dir) / kIndexFile).string(), kMaxResultDocumentBytes,
                             "a submission index");
  } catch (const BoundedReadError&) {
    return std::nullopt;
  }
  try {
    auto j = nlohmann::json::parse(text);
    if (j.is_object() && j.value("format", "") == kIndexFormat) return j;
  } catch (const nlohmann::json::exception&) {
  }
  return std::nullopt;
}

}  // namespace orch::cluster
