// The resnet plugin's parameters, one function each, beside the reasons for its default and
// for leaving it out of the configuration hash at that default.
#include "params.h"

#include <cstdint>
#include <string>

namespace orch::resnet {
namespace {

ParamSpec depth_param() {
  return {
      "depth",
      ParamType::kInt,
      std::int64_t{50},
      {std::int64_t{18}, std::int64_t{34}, std::int64_t{50}, std::int64_t{101}, std::int64_t{152}},
      {},
      {},
      "number of layers"};
}

ParamSpec fused_bn_param() {
  return {"fused_bn",
          ParamType::kBool,
          false,
          {},
          {},
          {},
          "fused channels-last batch-norm + ReLU (+ residual add) kernels for fp16/bf16 "
          "training on CUDA; unfused elsewhere; same parameters either way",
          // Added after resnet results were recorded: off, it leaves their hashes alone.
          /*hashed_at_default=*/false};
}

ParamSpec fused_bn_impl_param() {
  return {"fused_bn_impl",
          ParamType::kString,
          std::string("cudnn"),
          {std::string("orch"), std::string("cudnn")},
          {},
          {},
          "with fused_bn: cuDNN's NHWC batch-norm with fused ReLU and add (cudnn; our kernels "
          "where cuDNN does not take the input) or our CUDA kernels (orch)",
          // Added after fused_bn results were recorded, left out of the hash at its default.
          // cudnn is the default because it measured faster than ours for fp16 (eager and
          // cuda-graph) and no slower for bf16; fused_bn results stored while the default
          // was orch carry no fused_bn_impl and ran orch.
          /*hashed_at_default=*/false};
}

ParamSpec max_pool_impl_param() {
  return {"max_pool_impl",
          ParamType::kString,
          std::string("orch"),
          {std::string("aten"), std::string("orch")},
          {},
          {},
          "the stem's max pooling: our channels-last CUDA kernels (orch; ATen's results bit "
          "for bit, ATen's kernels where ours do not take the input) or ATen's (aten)",
          // Added after resnet results were recorded: at its default, their hashes stay
          // (same results bit for bit, only faster: see max_pool_kernels.h).
          /*hashed_at_default=*/false};
}

ParamSpec fused_residual_grad_param() {
  return {"fused_residual_grad",
          ParamType::kBool,
          true,
          {},
          {},
          {},
          "with fused_bn, in identity bottleneck blocks: conv1's data gradient added onto "
          "the shortcut's in one in-place GEMM instead of autograd's separate add kernel",
          // Added after resnet results were recorded, left out of the hash at its default.
          // On by default because it measured faster for fp16 and bf16 with the same
          // losses; fused_bn results stored while the default was off carry no
          // fused_residual_grad and ran without it.
          /*hashed_at_default=*/false};
}

ParamSpec downsample_bn_cudnn_param() {
  return {"downsample_bn_cudnn",
          ParamType::kBool,
          true,
          {},
          {},
          {},
          "with fused_bn: the downsample branches' batch-norm through cuDNN's NHWC "
          "batch-norm (ATen's own kernels run it for bf16; cuDNN's for fp16)",
          // Added after resnet results were recorded, left out of the hash at its default.
          // On by default because it measured faster for bf16 and the same for fp16 (where
          // ATen already runs cuDNN's batch-norm); fused_bn results stored while the
          // default was off carry no downsample_bn_cudnn and ran without it.
          /*hashed_at_default=*/false};
}

ParamSpec stem_conv_param() {
  return {"stem_conv",
          ParamType::kString,
          std::string("auto"),
          {std::string("auto"), std::string("direct"), std::string("pad4"), std::string("pad8"),
           std::string("space_to_depth")},
          {},
          {},
          "how the 7x7 stride-2 stem convolution runs: as it is (direct), its input and "
          "weight zero-padded to 4 or 8 channels (pad4, pad8), as a 4x4 stride-1 "
          "convolution over 2x2 pixel blocks folded into channels (space_to_depth), or "
          "space_to_depth for bf16 and direct otherwise (auto); the same sums, another "
          "cuDNN kernel",
          // Added after resnet results were recorded, left out of the hash at its default:
          // auto runs direct (what ran before) for everything but bf16, where
          // space_to_depth measured faster (stem_conv.h), so bf16 results stored before
          // the parameter existed ran direct.
          /*hashed_at_default=*/false};
}

ParamSpec conv_bn_stats_param() {
  return {"conv_bn_stats",
          ParamType::kBool,
          false,
          {},
          {},
          {},
          "with fused_bn, fp16: each block convolution that a fused batch-norm follows "
          "computes that batch-norm's statistics in its epilogue (cuDNN's graph API), and "
          "our kernels apply the batch-norm without a statistics pass; the usual fused path "
          "elsewhere (bf16, shapes cuDNN refuses), said once on stderr",
          // Added after resnet results were recorded: off, it leaves their hashes alone.
          /*hashed_at_default=*/false};
}

ParamSpec relu_mask_param() {
  return {"relu_mask",
          ParamType::kBool,
          true,
          {},
          {},
          {},
          "with fused_bn, our kernels (fused_bn_impl: orch, conv_bn_stats): the forward "
          "saves ReLU's mask, one bit per element, and the backward reads it instead of the "
          "output (the same gradients, fewer bytes); false saves the output",
          // Added after fused_bn results were recorded, left out of the hash at its default:
          // the gradients are bit for bit those of the saved output's y > 0.
          /*hashed_at_default=*/false};
}

ParamSpec dgrad_graph_param() {
  return {"dgrad_graph",
          ParamType::kString,
          std::string("off"),
          {std::string("off"), std::string("auto"), std::string("always")},
          {},
          {},
          "with conv_bn_stats (fp16): each fused batch-norm's backward computes the next "
          "convolution's data gradient, the ReLU's backward and its weight gradient in one "
          "cuDNN graph; auto: on the shapes where the first backward does not time it over 5% "
          "slower than "
          "the separate path, always: wherever cuDNN takes it, off: the separate path (cuDNN's "
          "refusals keep the separate path; the counters dgrad_graph.* say which ran)",
          // Added after resnet results were recorded: off, it leaves their hashes alone.
          /*hashed_at_default=*/false};
}

ParamSpec fused_downsample_param() {
  return {"fused_downsample",
          ParamType::kBool,
          false,
          {},
          {},
          {},
          "with conv_bn_stats (fp16): in each downsample block, bn3, the shortcut's "
          "batch-norm (its statistics from the shortcut convolution too), the add and the "
          "ReLU in one pass forward and one reduction + one pass backward (our kernels); the "
          "usual path where they do not apply (the counters fused_downsample.* say which ran)",
          // Added after resnet results were recorded: off, it leaves their hashes alone.
          /*hashed_at_default=*/false};
}

ParamSpec fused_stem_param() {
  return {"fused_stem",
          ParamType::kBool,
          false,
          {},
          {},
          {},
          "with fused_bn: the stem's batch-norm, ReLU and max pooling in one operation (our "
          "kernels: the full-size activation is never written, nor its gradient); the same "
          "outputs bit for bit, gradients within rounding; the usual path where it does not "
          "apply (the counters fused_stem.* say which ran)",
          // Added after resnet results were recorded: off, it leaves their hashes alone.
          /*hashed_at_default=*/false};
}

}  // namespace

std::vector<ParamSpec> resnet_params() {
  return {depth_param(),
          fused_bn_param(),
          fused_bn_impl_param(),
          max_pool_impl_param(),
          fused_residual_grad_param(),
          downsample_bn_cudnn_param(),
          stem_conv_param(),
          conv_bn_stats_param(),
          relu_mask_param(),
          dgrad_graph_param(),
          fused_downsample_param(),
          fused_stem_param()};
}

}  // namespace orch::resnet
