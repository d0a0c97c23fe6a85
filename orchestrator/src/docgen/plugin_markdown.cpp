#include "docgen/plugin_markdown.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "docgen/markdown.h"

namespace orch::docgen {
namespace {

// A bound as written in an experiment file: 8, not 8.000000; 0.05, not 0.050000.
std::string bound(double v) {
  if (std::abs(v) < 1e15 && v == std::floor(v)) return std::to_string(static_cast<long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string allowed(const ParamSpec& p) {
  std::string out;
  for (const auto& v : p.allowed) out += (out.empty() ? "" : ", ") + code(to_string(v));
  if (p.min || p.max) {
    const std::string range =
        (p.min ? bound(*p.min) : std::string()) + ".." + (p.max ? bound(*p.max) : std::string());
    out += (out.empty() ? "" : "; ") + range;
  }
  return out;
}

void add_sentence(std::string& text, const std::string& sentence) {
  if (!text.empty()) text += text.back() == '.' ? " " : ". ";
  text += sentence;
}

// The hashing rules a reader of a recorded sweep needs (plugins.md explains both).
std::string meaning(const ParamSpec& p) {
  std::string out = cell(p.doc);
  if (p.hash_exempt_at_default()) add_sentence(out, "Unhashed at default.");
  if (p.hash_file_content) add_sentence(out, "The file's content is hashed too.");
  return out;
}

// An empty string is a value an experiment file can write (`root: ""`); an empty code span
// is not Markdown.
std::string default_of(const ParamSpec& p) {
  const std::string text = to_string(p.default_value);
  return text.empty() ? code("\"\"") : code(text);
}

int kind_order(PluginKind k) {
  switch (k) {
    case PluginKind::kModel:
      return 0;
    case PluginKind::kDataLoader:
      return 1;
    case PluginKind::kPrecision:
      return 2;
    case PluginKind::kStreamStrategy:
      return 3;
  }
  return 4;
}

}  // namespace

std::string plugin_markdown(const PluginInfo& plugin) {
  std::string out = cell(std::string(to_string(plugin.kind)) + " plugin, version " +
                         plugin.version + ": " + plugin.description) +
                    "\n\n";
  if (plugin.params.empty()) return out + "No parameters.\n";
  std::vector<std::vector<std::string>> rows;
  for (const ParamSpec& p : plugin.params) {
    rows.push_back({code(p.name), to_string(p.type), default_of(p), allowed(p), meaning(p)});
  }
  return out + table({"parameter", "type", "default", "allowed", "meaning"}, rows);
}

std::string plugins_markdown(std::vector<PluginInfo> plugins) {
  std::stable_sort(plugins.begin(), plugins.end(), [](const PluginInfo& a, const PluginInfo& b) {
    if (kind_order(a.kind) != kind_order(b.kind)) return kind_order(a.kind) < kind_order(b.kind);
    return a.name < b.name;
  });
  std::string out;
  for (const PluginInfo& p : plugins) {
    out += (out.empty() ? "" : "\n") + std::string("### ") + code(p.name) + " (" +
           to_string(p.kind) + ")\n\n" + plugin_markdown(p);
  }
  return out;
}

}  // namespace orch::docgen
