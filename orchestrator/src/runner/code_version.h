// The version of the user's own code a script run measured: the git commit of the repository
// its script lives in, whether the working tree differed from it, and a hash of that
// difference. A script that imports a module edited since the last commit measured different
// code under the same commit; the diff's hash makes such an edit visible in `orch compare`
// (two runs with different hashes ran different code), without storing the diff itself.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace orch {

/// Git's facts about the repository holding `path` (a file or a folder):
///   {"repository": top-level folder, "commit": HEAD's full hash (absent before the first
///    commit), "dirty": whether tracked files differ from HEAD or untracked files exist,
///    "diff_hash": content hash of `git diff HEAD` and of the untracked files' names, sizes and
///    modification times (absent when clean)}.
/// null when `path` is in no repository or git cannot be run; never throws.
nlohmann::json code_version_of(const std::string& path);

}  // namespace orch
