// The `workload` and `args` keys: what a configuration runs (orch's LibTorch trainer, or the
// user's program) and the arguments a program gets. See docs/experiment-file.md.
//
// A script run's resolved configuration keeps only what a program can use (workload, args,
// batch_size, device, steps, seed, telemetry, timeout, repeat): the built-in trainer's keys are
// left out of it, and `args` is left out of a built-in run's, so neither changes the other's
// hash or name. The script's content is part of the configuration (`script_xxh128`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/config_draft.h"
#include "plan/yaml_tree.h"

namespace orch {

/// Splits a command into words as a POSIX shell would (without expansions): whitespace
/// separates words, single quotes keep everything, double quotes keep everything but `\"`,
/// `\\`, `\$` and `` \` ``, a backslash outside quotes keeps the next character. Throws
/// std::invalid_argument for an unterminated quote or a trailing backslash.
std::vector<std::string> split_command(const std::string& command);

/// Where execvp would find a program named without a '/': the first executable regular file
/// `name` in PATH's folders (an empty entry is the current folder; no PATH: /usr/local/bin,
/// /usr/bin, /bin). Empty when there is none. The planner asks it whether a command's first
/// word is a program; `orch exec` resolves it before fork, so the child only execs.
std::string find_on_path(const std::string& name);

/// `--<name> <value>` for each entry of `args` (a JSON object of scalars), in sorted name order:
/// booleans as true/false, numbers as written canonically, strings verbatim.
std::vector<std::string> arg_words(const nlohmann::json& args);

/// Applies the workload's rules to a configuration `resolve_run` has filled (every key at its
/// resolved value), before it is hashed: a built-in run loses `workload` and `args`; a script
/// run loses the built-in trainer's keys and its `workload` gains the script's file (the first
/// word of the command that names an existing file, looked for beside the experiment file,
/// in `experiment_dir`, then in the current directory): `script_word`, `script_path` and
/// `script_xxh128`. Throws PlanError at the place the draft wrote the setting at fault
/// (`where` when it was a default): no command, an unbalanced quote, a script that is missing.
/// The script is read through `digests`, once per plan.
void resolve_workload(const Draft& draft, nlohmann::json& config, const std::string& experiment_dir,
                      const SourceMark& where, FileDigests& digests);

}  // namespace orch
