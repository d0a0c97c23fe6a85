// A plan's configuration names (see plan_names.h).
#include "plan/plan_names.h"

#include <algorithm>
#include <optional>

#include "plan/readable_name.h"
#include "plan/scalars.h"
#include "result/json_dump.h"

namespace orch {
namespace {

using nlohmann::json;

std::optional<std::string> text_of(const json& j) {
  if (j.is_null()) return std::nullopt;
  if (j.is_string()) return j.get<std::string>();
  if (j.is_boolean()) return std::string(j.get<bool>() ? "true" : "false");
  if (j.is_number_integer()) return std::to_string(j.get<std::int64_t>());
  if (j.is_number_float()) return number_text(j.get<double>());
  return json_dump(j);
}

const ParamSpec* find_param(const PluginInfo& info, const std::string& name) {
  for (const ParamSpec& p : info.params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// One axis' pieces, each appended to `pieces` with its value in each row of `values`.
struct AxisPieces {
  std::size_t part;
  const KeySpec& key;
  const std::vector<Draft>& drafts;
  const std::vector<json>& configs;
  std::vector<NamePiece>& pieces;
  std::vector<std::vector<std::optional<std::string>>>& values;

  // `value_of(resolved, i)`: the piece's value, from configuration i's value of the key.
  template <typename ValueOf>
  void add(NamePiece piece, ValueOf value_of) {
    piece.part = part;
    pieces.push_back(std::move(piece));
    for (std::size_t i = 0; i < configs.size(); ++i) {
      // A key the run's workload has no use for (workload_config.h) has no value; a built-in
      // run's workload is the default one.
      const json& config = configs[i];
      if (config.contains(key.name))
        values[i].push_back(value_of(config.at(key.name), i));
      else if (key.name == "workload")
        values[i].push_back(value_of(key.field_defaults(), i));
      else
        values[i].push_back(std::nullopt);
    }
  }

  PieceStyle param_style(const std::string& name) const {
    for (const Draft& d : drafts) {
      auto it = d.choices.find(key.name);
      if (it == d.choices.end() || !it->second.info) continue;
      if (const ParamSpec* p = find_param(*it->second.info, name)) {
        return p->type == ParamType::kBool ? PieceStyle::kFlag : PieceStyle::kSetting;
      }
    }
    return PieceStyle::kSetting;
  }
};

auto param_of(const std::string& name) {
  return [name](const json& resolved, std::size_t) -> std::optional<std::string> {
    const json& params = resolved.at("params");
    if (!params.contains(name)) return std::nullopt;
    return text_of(params.at(name));
  };
}

// Every parameter of the plugin role some configuration sets, in the order its plugin declares
// them.
std::vector<std::string> explicit_param_names(const KeySpec& key,
                                              const std::vector<Draft>& drafts) {
  std::vector<std::string> names;
  for (const Draft& d : drafts) {
    auto it = d.choices.find(key.name);
    if (it == d.choices.end() || !it->second.info) continue;
    for (const ParamSpec& p : it->second.info->params) {
      if (it->second.explicit_params.count(p.name) &&
          std::find(names.begin(), names.end(), p.name) == names.end()) {
        names.push_back(p.name);
      }
    }
  }
  return names;
}

void add_plugin_pieces(AxisPieces& axis, const SettingPath& path) {
  if (!path.sub.empty()) {
    axis.add({path.sub, axis.param_style(path.sub), "", 0, '-', -1}, param_of(path.sub));
    return;
  }
  const int parent = static_cast<int>(axis.pieces.size());
  axis.add({axis.key.name, PieceStyle::kValue, "", 0, '-', -1},
           [](const json& resolved, std::size_t) { return text_of(resolved.at("plugin")); });
  for (const std::string& name : explicit_param_names(axis.key, axis.drafts)) {
    axis.add({name, axis.param_style(name), "", 0, '-', parent}, param_of(name));
  }
}

void add_scalar_piece(AxisPieces& axis, const SettingPath& path) {
  if (axis.key.name == "batch_size") {
    axis.add({axis.key.name, PieceStyle::kPrefix, "b", 0, '-', -1},
             [](const json& v, std::size_t) { return text_of(v.is_null() ? json("auto") : v); });
  } else {
    axis.add({axis.key.name, PieceStyle::kLeaf, "", 0, '-', -1},
             [&](const json&, std::size_t i) -> std::optional<std::string> {
               return render_setting(axis.drafts[i], axis.configs[i], path);
             });
  }
}

// The fields a group axis shows: the one it names, else all of them.
std::vector<std::string> group_fields(const KeySpec& key, const SettingPath& path,
                                      const std::vector<json>& configs) {
  std::vector<std::string> fields;
  if (!path.sub.empty()) {
    fields.push_back(path.sub);
  } else if (key.open_fields) {  // `args` as a whole: every name some configuration has
    for (const json& config : configs) {
      if (!config.contains(key.name)) continue;
      for (const auto& [name, v] : config.at(key.name).items()) {
        if (std::find(fields.begin(), fields.end(), name) == fields.end()) fields.push_back(name);
      }
    }
  } else {
    fields = key.field_names();
  }
  return fields;
}

void add_group_pieces(AxisPieces& axis, const SettingPath& path) {
  for (const std::string& field : group_fields(axis.key, path, axis.configs)) {
    axis.add({field, PieceStyle::kSetting, "", 0, ',', -1},
             [field](const json& g, std::size_t) -> std::optional<std::string> {
               if (!g.contains(field)) return std::nullopt;
               return text_of(g.at(field));
             });
  }
}

// Pieces and their values for one axis, appended to `pieces` and each row of `values`.
void add_axis(std::size_t part, const SettingPath& path, const std::vector<Draft>& drafts,
              const std::vector<json>& configs, std::vector<NamePiece>& pieces,
              std::vector<std::vector<std::optional<std::string>>>& values) {
  AxisPieces axis{part, *path.key, drafts, configs, pieces, values};
  switch (path.key->kind) {
    case KeyKind::kPlugin:
      add_plugin_pieces(axis, path);
      return;
    case KeyKind::kScalar:
      add_scalar_piece(axis, path);
      return;
    case KeyKind::kGroup:
      add_group_pieces(axis, path);
      return;
  }
}

}  // namespace

std::vector<std::string> plan_run_names(const std::vector<std::string>& axes,
                                        const std::map<std::string, SettingPath>& paths,
                                        const std::vector<Draft>& drafts,
                                        const std::vector<json>& configs,
                                        const std::vector<std::set<std::string>>& unset,
                                        const std::string& fallback) {
  std::vector<NamePiece> pieces;
  std::vector<std::vector<std::optional<std::string>>> values(configs.size());
  for (std::size_t a = 0; a < axes.size(); ++a) {
    const std::size_t first = pieces.size();
    add_axis(a, paths.at(axes[a]), drafts, configs, pieces, values);
    for (std::size_t i = 0; i < unset.size() && i < configs.size(); ++i) {
      if (!unset[i].count(axes[a])) continue;
      for (std::size_t j = first; j < pieces.size(); ++j) values[i][j].reset();
    }
  }
  return make_readable_names(pieces, values, fallback);
}

void apply_labels(const std::vector<const MatrixCombination*>& combinations,
                  std::vector<std::string>& names) {
  std::map<const MatrixEntry*, std::size_t> labelled;  // entry -> the configuration it names
  for (std::size_t i = 0; i < combinations.size(); ++i) {
    const MatrixEntry* mine = nullptr;
    for (const MatrixEntry* e : combinations[i]->includes) {
      if (e->label.empty()) continue;
      if (auto [it, fresh] = labelled.emplace(e, i); !fresh) {
        throw PlanError(e->label_mark, e->key_path + ".label",
                        "the label '" + e->label +
                            "' would name more than one configuration: this entry adds its "
                            "values to every combination it fits; give it an axis value that "
                            "picks one, or move the label to an entry that does");
      }
      if (mine) {
        throw PlanError(e->label_mark, e->key_path + ".label",
                        "the labels '" + mine->label + "' (" + mine->key_path + ") and '" +
                            e->label + "' fall on the same configuration; keep one");
      }
      mine = e;
    }
    if (mine) names[i] = mine->label;
  }
  // A label must not take another configuration's name, generated or labelled; the later of
  // the two in plan order is blamed, so the message is the same on every run.
  std::vector<const MatrixEntry*> label_of(names.size(), nullptr);
  for (const auto& [entry, i] : labelled) label_of[i] = entry;
  std::map<std::string, std::size_t> first;
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto [it, fresh] = first.emplace(names[i], i);
    if (fresh) continue;
    const std::size_t k = it->second;
    const MatrixEntry* blamed = label_of[i] ? label_of[i] : label_of[k];
    const MatrixEntry* other = label_of[i] ? label_of[k] : nullptr;
    if (!blamed) continue;  // two generated names: made unique by make_readable_names
    throw PlanError(blamed->label_mark, blamed->key_path + ".label",
                    "the label '" + blamed->label + "' is already the name of another " +
                        (other ? "configuration (" + other->key_path + ".label)"
                               : std::string("configuration")) +
                        "; labels must be unique within the plan");
  }
}

}  // namespace orch
