// The backward half of the fused ResNet path (issue 36, step 2): a convolution's data gradient,
// optionally plus the shortcut's gradient, through the ReLU's backward into the batch-norm's
// weight gradient, as one cuDNN graph built with cudnn-frontend's v1 graph API, then the
// batch-norm's dx in one element-wise pass (bn_dx_apply_kernels.h). Where a block runs
// conv_{i+1}(relu(bn_i(x) [+ residual])), the separate backward runs conv_{i+1}'s data gradient
// (writing it), then our batch-norm backward (reading it, the ReLU mask and x twice); the graph
// computes the data gradient, masks it and reduces it against x in the convolution's epilogue,
// so the separate reduction pass over the gradient and x goes away.
//
// The pattern is cuDNN's "DgradDreluBNBwdWeight" (cudnn-frontend's sample
// samples/cpp/convolution/dgrads.cpp, cuDNN >= 9.8 on Ampere and Hopper): ConvolutionBwData ->
// pointwise RELU_BWD -> BN_BWD_WEIGHTS, whose outputs are dscale, dbias and three per-channel
// coefficients with dx = eq_scale_dy * dy' + eq_scale_x * x + eq_bias. RELU_BWD needs the ReLU's
// forward input; the documented pattern recomputes it from the batch-norm's input x inside the
// graph, (x - mean) * invstd * scale + bias, so nothing but x (saved anyway for the backward) is
// read. The shortcut's gradient (an ADD between the data gradient and RELU_BWD), the forward's
// residual in the recomputation (another ADD) and the saved output as the ReLU's input instead
// of the recomputation are not in the documented pattern: built all the same, they are what
// cuDNN takes or refuses (the refusal comes back, and the caller runs the separate path). cuDNN
// 9.19 on the H200 takes both ADDs and refuses the saved output (no engine).
//
// The ReLU's mask at its zero boundary: the recomputing graph passes the gradient where its
// fp32 recomputation of the input is > 0, while the forward stored the output rounded to the
// dtype, which is 0 for inputs below half the dtype's smallest step; on those few elements
// (about one in 5e7) the graph takes the derivative of the unrounded function instead of the
// stored one. Both are valid choices that close to the kink; the tests allow for them.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <variant>

namespace orch::resnet {

/// The inputs of one fused backward: conv(relu(bn(x) [+ residual])) with conv's output gradient
/// dy. All activations channels-last, fp16 or bf16 (one dtype), on one CUDA device; the
/// batch-norm's vectors fp32 with C values.
struct DgradReluDbnArgs {
  torch::Tensor dy;  ///< the convolution's output gradient, N x K x P x Q
  torch::Tensor w;   ///< the convolution's filter, K x C x R x S
  std::int64_t stride = 1, padding = 0;
  /// Optional: the gradient the block's output receives through the next block's shortcut,
  /// N x C x H x W, added to the data gradient before the ReLU's backward.
  torch::Tensor shortcut_grad;
  torch::Tensor x;  ///< the batch-norm's input, N x C x H x W (H, W: the data gradient's size)
  torch::Tensor save_mean, save_invstd;  ///< the forward's batch mean and 1/sqrt(var + eps)
  torch::Tensor weight;                  ///< the batch-norm's scale
  /// The batch-norm's shift: read where the ReLU's input is recomputed (y undefined).
  torch::Tensor bias;
  /// Optional, with y undefined: the forward's residual, added in the recomputation of the
  /// ReLU's input (relu(bn(x) + residual)).
  torch::Tensor residual;
  /// Optional: the forward's output relu(bn(x) [+ residual]); when given, RELU_BWD reads it
  /// (y > 0 exactly where its input was) instead of recomputing the input from x.
  torch::Tensor y;
};

struct DgradReluDbn {
  torch::Tensor dx;  ///< the batch-norm's input gradient, x's sizes, dtype and layout
  /// The ReLU-masked gradient dy' = (data gradient [+ shortcut_grad]) where the ReLU passed:
  /// what the batch-norm's weight gradient reduces, and the residual's gradient when the
  /// forward had one.
  torch::Tensor dy_relu;
  torch::Tensor grad_weight, grad_bias;  ///< fp32, C each
  /// fp32, 3 x C: dx = coef[0] * dy' + coef[1] * x + coef[2], per channel (cuDNN's
  /// eq_scale_dy, eq_scale_x, eq_bias), what the apply pass read.
  torch::Tensor coef;
  std::string engine;  ///< which cuDNN execution plan ran the graph
};

/// The argument checks DgradReluDbnGraph makes, throwing std::invalid_argument that starts with
/// `who` on misuse (devices, dtypes, layouts, sizes that do not fit together).
void check_dgrad_relu_dbn_args(const char* who, const DgradReluDbnArgs& a);

/// The graph and an execution plan for one problem (sizes, dtype, stride and padding, which
/// optional inputs are given). Built once and run many times, as a model needs it: building
/// asks cuDNN's heuristics (mode A, then the fallback list), builds every plan they offer and
/// keeps the fastest on the arguments given to make (each run a few times with CUDA events):
/// milliseconds to seconds, more where a runtime-fusion engine compiles kernels.
class DgradReluDbnGraph {
 public:
  /// Builds the graph for these arguments' problem. Returns cuDNN's reason where it does not
  /// take it (frontend validation, no engine, no plan that builds), or where this build has no
  /// cuDNN or cudnn-frontend headers; throws on misuse and on CUDA errors.
  static std::variant<std::shared_ptr<DgradReluDbnGraph>, std::string> make(
      const DgradReluDbnArgs& a);
  ~DgradReluDbnGraph();
  DgradReluDbnGraph(const DgradReluDbnGraph&) = delete;
  DgradReluDbnGraph& operator=(const DgradReluDbnGraph&) = delete;

  /// Runs the plan and the dx pass on the current stream into new output tensors. The
  /// arguments must describe the problem the graph was built for (checked;
  /// std::invalid_argument); a failure of cuDNN or CUDA throws std::runtime_error.
  DgradReluDbn run(const DgradReluDbnArgs& a) const;

  /// The execution plan that runs (cuDNN's name for it) and how many plans were built.
  const std::string& engine() const;
  int plans_built() const;

 private:
  struct Impl;
  explicit DgradReluDbnGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// DgradReluDbnGraph::make and run for one call: the results, or cuDNN's reason for not taking
/// the problem (then run the separate path: the data gradient, then our batch-norm backward).
std::variant<DgradReluDbn, std::string> dgrad_relu_dbn(const DgradReluDbnArgs& a);

/// Whether this build carries the graph (cuDNN's and cudnn-frontend's headers and our CUDA
/// kernels were found at build time); where false, make returns a refusal saying which is missing.
bool dgrad_relu_dbn_compiled();

}  // namespace orch::resnet
