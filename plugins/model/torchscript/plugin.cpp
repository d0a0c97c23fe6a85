// The `torchscript` model plugin: bring your own model. Trains a TorchScript archive exported
// from Python (scripts/export_torchscript.py) exactly like the built-in models.
//
// Why no `input_shape` or `num_classes` parameter: the data loader already decides both (the
// ModelContext carries its sample shape and class count), and the module is checked against
// exactly those at create time, before any training step, with an error that names the shape
// tried and the module's own message. A second copy of the shape in the model's settings could
// only disagree with the data. (The SDK has no list-valued parameter type either.)
#include <orch/model.h>

#include <filesystem>
#include <memory>

#include "jit_model.h"
#include "plugin_schemas.h"

namespace orch::torchscript {
namespace {

class TorchScriptModel final : public Model {
 public:
  explicit TorchScriptModel(std::shared_ptr<JitModule> net) : net_(std::move(net)) {}
  torch::nn::Module& module() override { return *net_; }
  torch::Tensor forward(const torch::Tensor& images) override { return net_->forward(images); }

 private:
  std::shared_ptr<JitModule> net_;
};

// A missing archive is found when the experiment is planned (only on the machine that runs
// it); whether it loads, and takes the data's shape, is checked when the run creates the model.
std::vector<PlanProblem> check_plan(const PlanCheckInput& in) {
  const std::string path = in.text("model.path");
  const std::string allowed = "a TorchScript archive (scripts/export_torchscript.py writes one)";
  if (path.empty()) return {{{"model.path", "model"}, "model.path is not set", allowed}};
  if (!in.on_this_machine) return {};
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return {{{"model.path"},
             "no such file: " + path + " (relative paths are taken from the current directory)",
             allowed}};
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    return {{{"model.path"}, path + " is not a file", allowed}};
  }
  return {};
}

class TorchScriptPlugin final : public ModelPlugin {
 public:
  PluginInfo info() const override {
    PluginInfo i = plugin_schemas::torchscript();
    i.check = check_plan;
    return i;
  }
  std::unique_ptr<Model> create(const Params& p, const ModelContext& ctx) const override {
    const std::string& path = p.get_string("path");
    if (path.empty()) {
      throw std::invalid_argument(
          "model.path is not set: give the TorchScript archive, e.g. "
          "model: {plugin: torchscript, path: resnet50.pt} (scripts/export_torchscript.py "
          "writes one)");
    }
    auto net = std::make_shared<JitModule>(load_archive(path), path);
    check_forward(*net, ctx.input_shape, ctx.num_classes);
    return std::make_unique<TorchScriptModel>(std::move(net));
  }
};

}  // namespace
}  // namespace orch::torchscript

ORCH_PLUGIN(orch::torchscript::TorchScriptPlugin)
