#include "docgen/cli_markdown.h"

#include <algorithm>

#include "docgen/markdown.h"

namespace orch::docgen {
namespace {

bool listed(const CLI::App& app) { return !app.get_group().empty(); }

// "TEXT:{csv,json}" -> "TEXT" and {"{csv,json}"}: CLI11 appends each validator's description
// to the type name after a ':', and offers no other const way to read the validators.
std::vector<std::string> type_parts(const CLI::Option& opt) {
  std::vector<std::string> parts;
  const std::string full = opt.get_type_name();
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = full.find(':', start);
    parts.push_back(full.substr(start, colon - start));
    if (colon == std::string::npos) return parts;
    start = colon + 1;
  }
}

// A validator's description in words: CLI11's are terse ("POSITIVE", "INT in [1 - 100]").
std::string allowed_words(const std::string& desc) {
  if (desc.size() > 1 && desc.front() == '{' && desc.back() == '}') {
    std::string out;
    std::size_t start = 1;
    while (start < desc.size()) {
      std::size_t comma = desc.find(',', start);
      if (comma == std::string::npos) comma = desc.size() - 1;
      out += (out.empty() ? "" : ", ") + code(desc.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }
  if (desc == "POSITIVE") return "&gt; 0";
  if (desc == "NONNEGATIVE") return "&gt;= 0";
  if (desc == "FILE") return "an existing file";
  if (desc == "DIR") return "an existing folder";
  const std::size_t in = desc.find(" in [");
  const std::size_t dash = desc.find(" - ", in);
  if (in != std::string::npos && dash != std::string::npos && desc.back() == ']')
    return desc.substr(in + 5, dash - in - 5) + " to " +
           desc.substr(dash + 3, desc.size() - dash - 4);
  return cell(desc);
}

std::string option_names(const CLI::Option& opt) {
  std::string out;
  if (!opt.nonpositional()) out = code(opt.get_name(true));
  for (const auto& s : opt.get_snames()) out += (out.empty() ? "" : ", ") + code("-" + s);
  for (const auto& l : opt.get_lnames()) out += (out.empty() ? "" : ", ") + code("--" + l);
  return opt.get_required() ? out + " (required)" : out;
}

std::string type_of(const CLI::Option& opt, const std::string& base) {
  if (opt.get_items_expected_max() == 0) return "flag";
  const int most = opt.get_items_expected_max();
  if (most >= CLI::detail::expected_max_vector_size) return base + " ...";
  return most > 1 ? std::to_string(most) + " x " + base : base;
}

std::vector<std::string> sorted_names(const std::set<CLI::Option*>& options) {
  std::vector<std::string> names;
  for (const CLI::Option* o : options) names.push_back(o->get_name());
  std::sort(names.begin(), names.end());  // a set of pointers has no stable order
  return names;
}

void add_sentence(std::string& text, const std::string& sentence) {
  if (!text.empty()) text += text.back() == '.' ? " " : ". ";
  text += sentence;
}

// What the table cannot say in its own columns: which options this one needs or excludes.
std::string meaning(const CLI::Option& opt) {
  std::string out = cell(opt.get_description());
  for (const auto& e : sorted_names(opt.get_excludes()))
    add_sentence(out, "Not with " + code(e) + ".");
  for (const auto& n : sorted_names(opt.get_needs())) add_sentence(out, "Needs " + code(n) + ".");
  return out;
}

std::vector<std::string> option_row(const CLI::Option& opt) {
  const std::vector<std::string> parts = type_parts(opt);
  std::string allowed;
  for (std::size_t i = 1; i < parts.size(); ++i)
    allowed += (allowed.empty() ? "" : "; ") + allowed_words(parts[i]);
  const std::string def = opt.get_default_str();
  return {option_names(opt), cell(type_of(opt, parts.front())), def.empty() ? "" : code(def),
          allowed, meaning(opt)};
}

}  // namespace

std::vector<const CLI::App*> listed_commands(const CLI::App& root) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* sub : root.get_subcommands([](const CLI::App* a) { return listed(*a); })) {
    out.push_back(sub);
    for (const CLI::App* nested : listed_commands(*sub)) out.push_back(nested);
  }
  return out;
}

const CLI::App* find_command(const CLI::App& root, const std::vector<std::string>& path) {
  const CLI::App* at = &root;
  for (const auto& name : path) {
    const auto subs = at->get_subcommands(
        [&name](const CLI::App* a) { return listed(*a) && a->get_name() == name; });
    if (subs.empty()) return nullptr;
    at = subs.front();
  }
  return at;
}

std::string command_path(const CLI::App& command) {
  // The root's own name is argv[0] once parsed (build/orch, a full path): docs say `orch`.
  if (command.get_parent() == nullptr) return "orch";
  return command_path(*command.get_parent()) + " " + command.get_name();
}

std::string command_markdown(const CLI::App& command) {
  std::vector<std::vector<std::string>> rows;
  for (const CLI::Option* opt : command.get_options()) {
    if (opt == command.get_help_ptr() || opt == command.get_help_all_ptr()) continue;
    if (opt->get_group().empty()) continue;  // hidden
    rows.push_back(option_row(*opt));
  }
  std::string out = rows.empty() ? "No options.\n"
                                 : table({"option", "type", "default", "allowed", "meaning"}, rows);
  std::string subs;
  for (const CLI::App* sub : command.get_subcommands([](const CLI::App* a) { return listed(*a); }))
    subs += (subs.empty() ? "" : ", ") + code(command_path(*sub));
  if (!subs.empty()) out += "\nCommands: " + subs + ".\n";
  return out;
}

std::string cli_markdown(const CLI::App& root) {
  std::vector<const CLI::App*> commands{&root};
  for (const CLI::App* c : listed_commands(root)) commands.push_back(c);
  std::string out;
  for (const CLI::App* c : commands) {
    out += (out.empty() ? "" : "\n") + std::string("### ") + code(command_path(*c)) + "\n\n";
    if (!c->get_description().empty()) out += cell(c->get_description()) + "\n\n";
    out += command_markdown(*c);
  }
  return out;
}

}  // namespace orch::docgen
