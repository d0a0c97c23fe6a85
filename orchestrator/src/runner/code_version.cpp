// code_version.h: git's answers, read through `git -C DIR ...` with the user's own git, started
// as a child process (no shell: a folder name is an argument, never a command line).
#include "runner/code_version.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "plan/content_hash.h"
#include "process/child.h"
#include "process/pipe_reader.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

// A git that takes longer (a repository on a hung network mount, a huge untracked tree) gives
// no answer rather than holding the run back.
constexpr std::chrono::seconds kGitTimeout{30};

/// git's standard output for `args` in `dir`, or nullopt when it fails. Its stderr is
/// dropped: "not a git repository" is an answer here, not a message for the run's log.
std::optional<std::string> git(const fs::path& dir, const std::vector<std::string>& args) {
  process::ChildOptions o;
  o.argv = {"git", "-C", dir.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.search_path = true;
  o.out = process::Stdio::pipe();
  std::optional<process::Child> child;
  try {
    child.emplace(o);
  } catch (const process::SpawnError&) {
    return std::nullopt;  // no git on PATH, or no process to spare: no answer
  }
  std::string out;
  process::PipeReader reader;
  reader.add(child->stdout_fd(), [&out](std::string_view text) { out.append(text); });
  const bool read_all = reader.read_until(process::PipeReader::Clock::now() + kGitTimeout);
  const auto status = read_all ? child->wait_for(std::chrono::seconds(5)) : std::nullopt;
  if (!status) {
    (void)child->stop(std::chrono::seconds(1));
    return std::nullopt;
  }
  if (!status->success()) return std::nullopt;
  return out;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

nlohmann::json code_version_of(const std::string& path) {
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec);
  if (ec) return nullptr;
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  const auto top = git(dir, {"rev-parse", "--show-toplevel"});
  if (!top) return nullptr;
  // From the top: ls-files lists only what is under the folder it runs in.
  dir = first_line(*top);
  nlohmann::json v = {{"repository", dir.string()}};
  if (const auto head = git(dir, {"rev-parse", "--verify", "-q", "HEAD"}))
    v["commit"] = first_line(*head);
  // Untracked files count: a new module the script imports is code the commit does not hold.
  const auto untracked = git(dir, {"ls-files", "--others", "--exclude-standard", "-z"});
  const auto diff = v.contains("commit") ? git(dir, {"diff", "HEAD", "--binary"}) : std::nullopt;
  std::string changed = diff.value_or("");
  if (untracked) {
    const fs::path& root = dir;
    std::size_t start = 0;
    for (std::size_t end; (end = untracked->find('\0', start)) != std::string::npos;
         start = end + 1) {
      const std::string name = untracked->substr(start, end - start);
      // Name, size and modification time, not the bytes: an untracked dataset in the tree
      // must not make every run read gigabytes; an edited module still changes its entry.
      std::error_code e;
      const auto size = fs::file_size(root / name, e);
      const auto mtime = fs::last_write_time(root / name, e).time_since_epoch().count();
      changed += "\nuntracked " + name + " " + std::to_string(e ? 0 : size) + " " +
                 std::to_string(e ? 0 : mtime);
    }
  }
  v["dirty"] = !changed.empty();
  if (!changed.empty()) v["diff_hash"] = content_hash_hex(changed);
  return v;
}

}  // namespace orch
