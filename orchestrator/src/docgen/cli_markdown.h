// `orch help --markdown`: the option tables of docs/cli.md, read from the CLI11 definitions the
// commands parse with, so a new option, a changed default or an allowed value cannot be left
// out of the reference.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace orch::docgen {

/// The commands under `root` that --help lists (hidden ones, such as `health-check`, left
/// out), depth first in definition order, nested ones after their parent (`dataset make`).
std::vector<const CLI::App*> listed_commands(const CLI::App& root);

/// The command a path of names leads to from `root` ({"dataset", "make"}); nullptr when there
/// is none or it is hidden. An empty path is `root` itself.
const CLI::App* find_command(const CLI::App& root, const std::vector<std::string>& path);

/// `orch dataset make`: "orch" for the root, then the names down to `command`.
std::string command_path(const CLI::App& command);

/// One command's options and positional arguments as a table (option, type, default, allowed
/// values, meaning), in definition order, --help left out; its subcommands listed under it.
std::string command_markdown(const CLI::App& command);

/// Every listed command, `root` first: a heading with its path, its description, its table.
std::string cli_markdown(const CLI::App& root);

}  // namespace orch::docgen
