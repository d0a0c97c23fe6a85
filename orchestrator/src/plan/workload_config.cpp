// The workload's resolution (see workload_config.h).
#include "plan/workload_config.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "orch/params.h"
#include "plan/content_hash.h"
#include "plan/experiment_schema.h"
#include "plan/plan_error.h"
#include "plan/scalars.h"
#include "result/json_dump.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool regular_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

WrittenAt blamed(const Draft& draft, const std::vector<std::string>& settings,
                 const SourceMark& where) {
  for (const std::string& s : settings) {
    if (auto it = draft.written.find(s); it != draft.written.end()) return it->second;
  }
  return WrittenAt{where, "base"};
}

}  // namespace

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (regular_file(candidate) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
    start = end + 1;
  }
  return "";
}

std::vector<std::string> split_command(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const std::size_t end = command.find('\'', i + 1);
      if (end == std::string::npos) throw std::invalid_argument("an unterminated ' quote");
      word += command.substr(i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (c == '"') {
      in_word = true;
      for (++i;; ++i) {
        if (i >= command.size()) throw std::invalid_argument("an unterminated \" quote");
        if (command[i] == '"') break;
        if (command[i] == '\\' && i + 1 < command.size() &&
            std::string("\"\\$`").find(command[i + 1]) != std::string::npos) {
          ++i;
        }
        word += command[i];
      }
    } else if (c == '\\') {
      if (i + 1 >= command.size()) throw std::invalid_argument("a backslash at the end");
      word += command[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::vector<std::string> arg_words(const json& args) {
  std::vector<std::string> out;
  if (!args.is_object()) return out;
  for (const auto& [name, v] : args.items()) {  // nlohmann's objects are sorted by key
    out.push_back("--" + name);
    if (v.is_boolean())
      out.push_back(v.get<bool>() ? "true" : "false");
    else if (v.is_number_integer())
      out.push_back(std::to_string(v.get<std::int64_t>()));
    else if (v.is_number_float())
      out.push_back(number_text(v.get<double>()));  // round-trips: 1e-07 reaches the program
    else if (v.is_string())
      out.push_back(v.get<std::string>());
    else
      out.push_back(json_dump(v));
  }
  return out;
}

void resolve_workload(const Draft& draft, json& config, const std::string& experiment_dir,
                      const SourceMark& where, FileDigests& digests) {
  const json& w = config.at("workload");
  if (w.at("kind") != "script") {
    // Today's configurations, exactly as they were before the keys existed.
    config.erase("workload");
    config.erase("args");
    return;
  }
  const std::string command = w.at("command").get<std::string>();
  std::vector<std::string> words;
  try {
    words = split_command(command);
  } catch (const std::invalid_argument& e) {
    const WrittenAt at = blamed(draft, {"workload.command", "workload"}, where);
    throw PlanError(at.mark, at.key_path, std::string("the command has ") + e.what(),
                    "words separated by spaces, quoted with ' or \" where they hold spaces");
  }
  if (words.empty()) {
    const WrittenAt at = blamed(draft, {"workload.command", "workload.kind", "workload"}, where);
    throw PlanError(at.mark, at.key_path,
                    "a script workload needs a command (workload.command: the program and its "
                    "fixed arguments)",
                    "e.g. workload: {kind: script, command: \"train.py --data synthetic\"}");
  }
  const fs::path here = fs::current_path();
  const fs::path beside = experiment_dir.empty() ? here : fs::absolute(experiment_dir);
  json out = {{"kind", "script"}, {"command", command}, {"python", w.at("python")}};
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.empty() || word[0] == '-') continue;
    std::optional<fs::path> found;
    const fs::path p(word);
    if (p.is_absolute()) {
      if (regular_file(p)) found = p;
    } else if (regular_file(beside / p)) {
      found = beside / p;
    } else if (regular_file(here / p)) {
      found = here / p;
    }
    if (found) {
      const fs::path abs = fs::weakly_canonical(*found);
      const auto digest = digests.of(abs.string());
      if (!digest) {
        const WrittenAt at = blamed(draft, {"workload.command", "workload"}, where);
        throw PlanError(at.mark, at.key_path, "cannot read the script " + abs.string(),
                        "a readable file");
      }
      out["script_word"] = i;
      out["script_path"] = abs.string();
      out["script_xxh128"] = *digest;
      break;
    }
    // The program itself may be on PATH (python3, torchrun); a script it runs comes later.
    // Later words are often folders or data (--data /datasets/x): only a `.py` one must exist.
    const bool names_a_file =
        (i == 0 && word.find('/') != std::string::npos) || ends_with(word, ".py");
    if (i == 0 && !names_a_file && !find_on_path(word).empty()) continue;
    if (i > 0 && !names_a_file) continue;
    const WrittenAt at = blamed(draft, {"workload.command", "workload"}, where);
    std::string msg;
    if (p.is_absolute()) {
      msg = "the script " + word + " does not exist";
    } else {
      msg = "the " + std::string(i == 0 && !names_a_file ? "program" : "script") + " '" + word +
            "' is in neither " + beside.string() + " (the experiment file's folder) nor " +
            here.string() + " (the current directory)" +
            (i == 0 && !names_a_file ? " nor PATH" : "");
    }
    throw PlanError(at.mark, at.key_path, msg, "an existing file, relative to either folder");
  }
  config["workload"] = out;
  for (auto it = config.begin(); it != config.end();) {
    if (builtin_only_key(it.key()))
      it = config.erase(it);
    else
      ++it;
  }
  if (!config.contains("args")) config["args"] = json::object();
}

}  // namespace orch
