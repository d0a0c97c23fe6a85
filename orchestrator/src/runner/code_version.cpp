// code_version.h: git's answers, read through `git -C DIR ...` with the user's own git.
#include "runner/code_version.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "plan/content_hash.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// git's standard output for `args` in `dir`, or nullopt when it fails. Its stderr is
/// dropped: "not a git repository" is an answer here, not a message for the run's log.
std::optional<std::string> git(const fs::path& dir, const std::string& args) {
  const std::string command =
      "git -C " + shell_quoted(dir.string()) + " " + args + " 2>/dev/null </dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  std::array<char, 65536> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0;)
    out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

nlohmann::json code_version_of(const std::string& path) {
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec);
  if (ec) return nullptr;
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  const auto top = git(dir, "rev-parse --show-toplevel");
  if (!top) return nullptr;
  // From the top: ls-files lists only what is under the folder it runs in.
  dir = first_line(*top);
  nlohmann::json v = {{"repository", dir.string()}};
  if (const auto head = git(dir, "rev-parse --verify -q HEAD")) v["commit"] = first_line(*head);
  // Untracked files count: a new module the script imports is code the commit does not hold.
  const auto untracked = git(dir, "ls-files --others --exclude-standard -z");
  const auto diff = v.contains("commit") ? git(dir, "diff HEAD --binary") : std::nullopt;
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
