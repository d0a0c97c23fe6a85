// The resnet plugin's schema: every parameter in one declaration, its default said only here.
// Each one after depth was added after resnet results were recorded, so at its default it is
// left out of the configuration hash (hash_exempt_since) and those results keep their hashes.
#include "plugin_schemas.h"

namespace orch::plugin_schemas {
namespace {

std::vector<ParamSpec> network_params() {
  return {
      param("depth").integer().one_of({18, 34, 50, 101, 152}).default_(50).doc("number of layers"),
      param("fused_bn")
          .boolean()
          .default_(false)
          .hash_exempt_since("1.0.0")
          .doc("fused channels-last batch-norm + ReLU (+ residual add) kernels for fp16/bf16 "
               "training on CUDA; unfused elsewhere; same parameters either way"),
      // cudnn measured faster than ours for fp16 (eager and cuda-graph), no slower for bf16;
      // fused_bn results stored while the default was orch carry no fused_bn_impl and ran orch.
      param("fused_bn_impl")
          .string()
          .one_of({"orch", "cudnn"})
          .default_("cudnn")
          .hash_exempt_since("1.0.0")
          .doc("with fused_bn: cuDNN's NHWC batch-norm with fused ReLU and add (cudnn; our "
               "kernels where cuDNN does not take the input) or our CUDA kernels (orch)"),
      // Hash-exempt at orch: ATen's results bit for bit, only faster (max_pool_kernels.h).
      param("max_pool_impl")
          .string()
          .one_of({"aten", "orch"})
          .default_("orch")
          .hash_exempt_since("1.0.0")
          .doc("the stem's max pooling: our channels-last CUDA kernels (orch; ATen's results bit "
               "for bit, ATen's kernels where ours do not take the input) or ATen's (aten)"),
      // On: measured faster for fp16 and bf16 with the same losses; fused_bn results stored
      // while the default was off carry no fused_residual_grad and ran without it.
      param("fused_residual_grad")
          .boolean()
          .default_(true)
          .hash_exempt_since("1.0.0")
          .doc("with fused_bn, in identity bottleneck blocks: conv1's data gradient added onto "
               "the shortcut's in one in-place GEMM instead of autograd's separate add kernel"),
      // On: faster for bf16, the same for fp16 (where ATen already runs cuDNN's batch-norm);
      // fused_bn results stored while the default was off carry none and ran without it.
      param("downsample_bn_cudnn")
          .boolean()
          .default_(true)
          .hash_exempt_since("1.0.0")
          .doc("with fused_bn: the downsample branches' batch-norm through cuDNN's NHWC "
               "batch-norm (ATen's own kernels run it for bf16; cuDNN's for fp16)"),
      // auto runs direct (what ran before) for all but bf16, where space_to_depth measured
      // faster (stem_conv.h): bf16 results stored before the parameter existed ran direct.
      param("stem_conv")
          .string()
          .one_of({"auto", "direct", "pad4", "pad8", "space_to_depth"})
          .default_("auto")
          .hash_exempt_since("1.0.0")
          .doc("how the 7x7 stride-2 stem convolution runs: as it is (direct), its input and "
               "weight zero-padded to 4 or 8 channels (pad4, pad8), as a 4x4 stride-1 "
               "convolution over 2x2 pixel blocks folded into channels (space_to_depth), or "
               "space_to_depth for bf16 and direct otherwise (auto); the same sums, another "
               "cuDNN kernel")};
}

// The options that take the fused path further, each with its own measurement
// (docs/benchmarks.md): split from the rest so each list reads as one declaration.
std::vector<ParamSpec> conv_bn_stats_params() {
  return {
      param("conv_bn_stats")
          .boolean()
          .default_(false)
          .hash_exempt_since("1.0.0")
          .doc("with fused_bn, fp16: each block convolution that a fused batch-norm follows "
               "computes that batch-norm's statistics in its epilogue (cuDNN's graph API), and "
               "our kernels apply the batch-norm without a statistics pass; the usual fused "
               "path elsewhere (bf16, shapes cuDNN refuses), said once on stderr"),
      // Hash-exempt at true: the gradients are bit for bit those of the saved output's y > 0.
      param("relu_mask")
          .boolean()
          .default_(true)
          .hash_exempt_since("1.0.0")
          .doc("with fused_bn, our kernels (fused_bn_impl: orch, conv_bn_stats): the forward "
               "saves ReLU's mask, one bit per element, and the backward reads it instead of "
               "the output (the same gradients, fewer bytes); false saves the output"),
      param("dgrad_graph")
          .string()
          .one_of({"off", "auto", "always"})
          .default_("off")
          .hash_exempt_since("1.0.0")
          .doc("with conv_bn_stats (fp16): each fused batch-norm's backward computes the next "
               "convolution's data gradient, the ReLU's backward and its weight gradient in one "
               "cuDNN graph; auto: on the shapes where the first backward does not time it over "
               "5% slower than the separate path, always: wherever cuDNN takes it, off: the "
               "separate path (cuDNN's refusals keep the separate path; the counters "
               "dgrad_graph.* say which ran)"),
      param("fused_downsample")
          .boolean()
          .default_(false)
          .hash_exempt_since("1.0.0")
          .doc("with conv_bn_stats (fp16): in each downsample block, bn3, the shortcut's "
               "batch-norm (its statistics from the shortcut convolution too), the add and the "
               "ReLU in one pass forward and one reduction + one pass backward (our kernels); "
               "the usual path where they do not apply (the counters fused_downsample.* say "
               "which ran)"),
      param("fused_stem")
          .boolean()
          .default_(false)
          .hash_exempt_since("1.0.0")
          .doc("with fused_bn: the stem's batch-norm, ReLU and max pooling in one operation (our "
               "kernels: the full-size activation is never written, nor its gradient); the same "
               "outputs bit for bit, gradients within rounding; the usual path where it does not "
               "apply (the counters fused_stem.* say which ran)"),
      param("wgrad_stream")
          .boolean()
          .default_(false)
          .hash_exempt_since("1.0.0")
          .doc("with conv_bn_stats: those convolutions' weight gradients on a second CUDA "
               "stream, joined when the backward ends, so they can run beside the next "
               "batch-norm backward instead of before it (the same gradients; the counters "
               "wgrad_stream.* say how many)")};
}

std::vector<ParamSpec> resnet_params() {
  std::vector<ParamSpec> all = network_params();
  for (ParamSpec& p : conv_bn_stats_params()) all.push_back(std::move(p));
  return all;
}

}  // namespace

PluginInfo resnet() {
  return {"resnet", PluginKind::kModel, "1.0.0",
          "torchvision's ResNet (v1.5), same architecture and parameter names", resnet_params()};
}

}  // namespace orch::plugin_schemas
