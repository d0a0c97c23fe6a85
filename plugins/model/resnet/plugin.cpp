// The `resnet` model plugin: exposes orch::resnet::ResNet through the model SDK.
#include <orch/model.h>

#include <map>
#include <string>

#include "conv_bn_from_stats.h"
#include "dgrad_link.h"
#include "kernel_availability.h"
#include "plugin_schemas.h"
#include "resnet.h"
#include "stem_pool.h"
#include "wgrad_stream.h"

namespace orch::resnet {
namespace {

/// Which paths the fused options took, counted in this library: process-wide call counts, so
/// a model reports what happened since it was made (runs in one process follow each other).
/// Calls of the C++ code: a CUDA-graph replay makes none, so these count the warm-up and
/// capture steps there, every step elsewhere; what matters is which path the calls took.
std::map<std::string, double> path_counts() {
  const auto f = fused_bn_counters();
  const auto c = conv_bn_from_stats_counters();
  const auto p = max_pool_counters();
  const auto r = residual_grad_counters();
  const auto d = dgrad_graph_counters();
  const auto s = stem_pool_counters();
  const auto w = wgrad_stream_counters();
  return {{"fused_bn.orch", static_cast<double>(f.orch)},
          {"fused_bn.cudnn", static_cast<double>(f.cudnn)},
          {"fused_bn.cudnn_fallback", static_cast<double>(f.cudnn_fallback)},
          {"fused_bn.unfused", static_cast<double>(f.unfused)},
          {"fused_bn.from_sums", static_cast<double>(f.from_sums)},
          {"fused_bn.relu_mask", static_cast<double>(f.relu_mask)},
          {"downsample_bn.cudnn", static_cast<double>(f.plain_cudnn)},
          {"downsample_bn.module", static_cast<double>(f.plain_module)},
          {"conv_bn_stats.taken", static_cast<double>(c.taken)},
          {"conv_bn_stats.fallback", static_cast<double>(c.fallback)},
          {"fused_downsample.dual", static_cast<double>(c.dual)},
          {"fused_downsample.fallback", static_cast<double>(c.dual_fallback)},
          {"max_pool.orch", static_cast<double>(p.orch)},
          {"max_pool.aten", static_cast<double>(p.aten)},
          {"residual_grad.accumulated", static_cast<double>(r.accumulated)},
          {"residual_grad.plain", static_cast<double>(r.plain)},
          {"dgrad_graph.offered", static_cast<double>(d.offered)},
          {"dgrad_graph.claimed", static_cast<double>(d.claimed)},
          {"dgrad_graph.graph", static_cast<double>(d.graph)},
          {"dgrad_graph.slower", static_cast<double>(d.slower)},
          {"dgrad_graph.refused", static_cast<double>(d.refused)},
          {"dgrad_graph.capture", static_cast<double>(d.capture)},
          {"fused_stem.fused", static_cast<double>(s.fused)},
          {"fused_stem.unfused", static_cast<double>(s.unfused)},
          {"wgrad_stream.launched", static_cast<double>(w.launched)},
          {"wgrad_stream.joined", static_cast<double>(w.joined)}};
}

/// path_counts and the calls that wanted our kernels on a GPU that cannot run them, by reason.
std::map<std::string, double> all_counts() {
  std::map<std::string, double> out = path_counts();
  out.merge(kernel_unavailable_counts());
  return out;
}

class ResNetModel final : public Model {
 public:
  explicit ResNetModel(const ResNetOptions& o) : net_(o), at_start_(all_counts()) {}
  torch::nn::Module& module() override { return *net_; }
  torch::Tensor forward(const torch::Tensor& images) override { return net_->forward(images); }
  /// The calls since this model was made, of the paths its options involve (zeros left out).
  std::map<std::string, double> counters() const override {
    std::map<std::string, double> out;
    for (const auto& [name, now] : all_counts()) {
      const double calls = now - at_start_.at(name);
      if (calls != 0) out[name] = calls;
    }
    return out;
  }

 private:
  ResNet net_;
  std::map<std::string, double> at_start_;
};

class ResNetPlugin final : public ModelPlugin {
 public:
  PluginInfo info() const override { return plugin_schemas::resnet(); }
  // Every option from the parameters: an absent one reads as the schema's default (Params::at).
  std::unique_ptr<Model> create(const Params& p, const ModelContext& ctx) const override {
    ResNetOptions o;
    o.depth = p.get_int("depth");
    o.fused_bn = p.get_bool("fused_bn");
    o.fused_bn_impl = fused_bn_impl_from_string(p.get_string("fused_bn_impl"));
    o.max_pool_impl = max_pool_impl_from_string(p.get_string("max_pool_impl"));
    o.fused_residual_grad = p.get_bool("fused_residual_grad");
    o.downsample_bn_cudnn = p.get_bool("downsample_bn_cudnn");
    o.stem_conv = stem_conv_from_string(p.get_string("stem_conv"));
    o.conv_bn_stats = p.get_bool("conv_bn_stats");
    o.relu_mask = p.get_bool("relu_mask");
    o.dgrad_graph = dgrad_graph_mode_from_string(p.get_string("dgrad_graph"));
    o.fused_downsample = p.get_bool("fused_downsample");
    o.fused_stem = p.get_bool("fused_stem");
    o.wgrad_stream = p.get_bool("wgrad_stream");
    o.num_classes = ctx.num_classes;
    if (!ctx.input_shape.empty()) o.in_channels = ctx.input_shape[0];
    return std::make_unique<ResNetModel>(o);
  }
};

}  // namespace
}  // namespace orch::resnet

ORCH_PLUGIN(orch::resnet::ResNetPlugin)
