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

class TorchScriptPlugin final : public ModelPlugin {
 public:
  PluginInfo info() const override {
    return {"torchscript",
            PluginKind::kModel,
            "1.0.0",
            "a TorchScript module exported from Python (torch.jit.script(model).save(path))",
            {{"path",
              ParamType::kString,
              std::string(""),
              {},
              {},
              {},
              "the .pt archive; relative to the current directory (like data.root)"}}};
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
