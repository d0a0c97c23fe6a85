// `tinynet`: an example model plugin built outside orch's tree (see CMakeLists.txt beside it).
// A 3x3 convolution of `width` channels, ReLU, global average pooling and a linear classifier:
// small enough to train on a CPU in a test, and the shape of any real model plugin.
#include <orch/model.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace tinynet {
namespace {

namespace nn = torch::nn;

struct TinyNetImpl : nn::Module {
  TinyNetImpl(std::int64_t in_channels, std::int64_t width, std::int64_t classes)
      : conv(register_module("conv",
                             nn::Conv2d(nn::Conv2dOptions(in_channels, width, 3).padding(1)))),
        fc(register_module("fc", nn::Linear(width, classes))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::relu(conv(x));
    return fc(torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1));
  }
  nn::Conv2d conv;
  nn::Linear fc;
};
TORCH_MODULE(TinyNet);

class TinyNetModel final : public orch::Model {
 public:
  TinyNetModel(std::int64_t in_channels, std::int64_t width, std::int64_t classes)
      : net_(in_channels, width, classes) {}
  torch::nn::Module& module() override { return *net_; }
  torch::Tensor forward(const torch::Tensor& images) override { return net_->forward(images); }

 private:
  TinyNet net_;
};

class TinyNetPlugin final : public orch::ModelPlugin {
 public:
  orch::PluginInfo info() const override {
    // Parameters are declared as data: orch validates experiment files against them (type,
    // bounds, allowed values) before anything runs, and hands create() every value resolved.
    // One line per parameter; its default is said here only (Params reads it when absent).
    return {"tinynet",
            orch::PluginKind::kModel,
            "0.1.0",
            "example out-of-tree model: conv3x3, ReLU, average pool, linear",
            {orch::param("width").integer().min(1).max(1024).default_(16).doc(
                "channels of the convolution")}};
  }
  std::unique_ptr<orch::Model> create(const orch::Params& p,
                                      const orch::ModelContext& ctx) const override {
    // The data loader decides the input: its sample shape (C x H x W) and class count.
    const std::int64_t channels = ctx.input_shape.empty() ? 3 : ctx.input_shape[0];
    return std::make_unique<TinyNetModel>(channels, p.get_int("width"), ctx.num_classes);
  }
};

}  // namespace
}  // namespace tinynet

ORCH_PLUGIN(tinynet::TinyNetPlugin)
