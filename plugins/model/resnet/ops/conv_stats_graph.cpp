// ConvStatsGraph (conv_stats_graph.h): a convolution + its output's batch statistics through
// cuDNN's graph API. cuDNN's legacy fused-ops API for the same fusion
// (CUDNN_FUSED_SCALE_BIAS_ACTIVATION_CONV_BNSTATS) refused every ResNet50 shape; cuDNN 9's
// documentation ("runtime fusion engine") lists exactly this pattern for the graph API: a
// ConvolutionFwd whose epilogue may hold GEN_STATS nodes, and whose input may go through a
// chain of three pointwise nodes in this order, MUL, ADD, RELU_FWD, with [1, C, 1, 1] operands,
// "added to realize convolution batch norm fusion use cases" (prologue tensors HALF only,
// everything fully packed NHWC). PaddlePaddle's fused_scale_bias_relu_conv_bn kernel builds the
// same graph with cudnn-frontend. Backend descriptors are used directly here (cudnn-frontend is
// not a dependency): tensors, the convolution, the operations, the graph, the heuristics'
// engine configurations (mode A), else every engine cuDNN knows for the graph, the first
// execution plan that finalizes, a variant pack, execute. Which cases cuDNN takes (fp16 and
// bf16, the prologue in fp16 only, where it was tried) orch_gpu_tests "[conv_stats_graph]"
// prints.
#include "conv_stats_graph.h"

#include <stdexcept>

#ifdef ORCH_FUSED_BN_CUDNN
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDAGuard.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

// CUDNN_ATTR_OPERATIONGRAPH_HANDLE and CUDNN_ATTR_EXECUTION_PLAN_HANDLE are deprecated in
// cuDNN 9 (still the documented way to name the handle up to 9.x).
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace orch::resnet {

ConvShape check_conv_stats_args(const char* who, const torch::Tensor& x, const torch::Tensor& w,
                                std::int64_t stride, std::int64_t padding,
                                const std::optional<ScaleBiasRelu>& prologue) {
  const auto require = [who](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string(who) + ": " + what);
  };
  require(x.is_cuda() && w.device() == x.device(), "x and w must be on the same CUDA device");
  require(x.dim() == 4 && w.dim() == 4 && w.size(1) == x.size(1), "x is NCHW, w is KCRS");
  require(x.scalar_type() == w.scalar_type() &&
              (x.scalar_type() == torch::kHalf || x.scalar_type() == torch::kBFloat16),
          "x and w must both be fp16 or both bf16");
  require(x.is_contiguous(at::MemoryFormat::ChannelsLast) &&
              w.is_contiguous(at::MemoryFormat::ChannelsLast),
          "x and w must be channels-last");
  if (prologue) {
    for (const auto* t : {&prologue->scale, &prologue->bias})
      require(t->device() == x.device() && t->scalar_type() == x.scalar_type() &&
                  t->numel() == x.size(1) && t->is_contiguous(),
              "scale and bias: C contiguous values of x's dtype on its device");
  }
  ConvShape sh{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2), w.size(3), 0, 0};
  sh.p = (sh.h + 2 * padding - sh.r) / stride + 1;
  sh.q = (sh.w + 2 * padding - sh.s) / stride + 1;
  return sh;
}

#ifndef ORCH_FUSED_BN_CUDNN

namespace {
const char* const kNoCudnn =
    "built without cuDNN's headers (see plugins/model/resnet/ops/CMakeLists.txt)";
}

struct ConvStatsGraph::Impl {};
ConvStatsGraph::ConvStatsGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConvStatsGraph::~ConvStatsGraph() = default;

std::variant<std::shared_ptr<ConvStatsGraph>, std::string> ConvStatsGraph::make(
    const torch::Tensor&, const torch::Tensor&, std::int64_t, std::int64_t,
    const std::optional<ScaleBiasRelu>&) {
  return std::string(kNoCudnn);
}
ConvStats ConvStatsGraph::run(const torch::Tensor&, const torch::Tensor&,
                              const std::optional<ScaleBiasRelu>&) const {
  throw std::logic_error("ConvStatsGraph: no plan without cuDNN");
}

std::variant<ConvStats, std::string> conv_with_stats(const torch::Tensor&, const torch::Tensor&,
                                                     std::int64_t, std::int64_t,
                                                     const std::optional<ScaleBiasRelu>&) {
  return std::string(kNoCudnn);
}

#else

namespace {

/// cuDNN declined the graph (a NOT_SUPPORTED status, or no engine finalized a plan).
struct Refusal {
  std::string why;
};

std::string last_error() {
  char buf[512] = {0};
  cudnnGetLastErrorString(buf, sizeof buf);
  return buf;
}

/// NOT_SUPPORTED (any of its sub-codes) is cuDNN's "not this graph": a refusal. Anything else
/// that is not success is our misuse or a cuDNN failure.
void check(cudnnStatus_t st, const char* what) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  const std::string detail = std::string(what) + ": " + cudnnGetErrorString(st) +
                             (last_error().empty() ? "" : " (" + last_error() + ")");
  if (CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED) throw Refusal{detail};
  throw std::runtime_error("conv_with_stats: " + detail);
}

/// One backend descriptor, destroyed with this object.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    check(cudnnBackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor");
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }

  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t n,
            const void* values) {
    check(cudnnBackendSetAttribute(d_, name, type, n, values), "cudnnBackendSetAttribute");
    return *this;
  }
  Desc& set(cudnnBackendAttributeName_t name, const Desc& other) {
    const cudnnBackendDescriptor_t d = other.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  }
  Desc& set(cudnnBackendAttributeName_t name, cudnnDataType_t t) {
    return set(name, CUDNN_TYPE_DATA_TYPE, 1, &t);
  }
  Desc& set_int64s(cudnnBackendAttributeName_t name, const std::vector<std::int64_t>& v) {
    return set(name, CUDNN_TYPE_INT64, static_cast<std::int64_t>(v.size()), v.data());
  }
  void finalize(const char* what) { check(cudnnBackendFinalize(d_), what); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

/// A tensor of logical dims [N, C, H, W] laid out NHWC (fully packed), or [1, C, 1, 1].
std::unique_ptr<Desc> nhwc_tensor(std::int64_t uid, cudnnDataType_t t, std::int64_t n,
                                  std::int64_t c, std::int64_t h, std::int64_t w,
                                  bool is_virtual = false) {
  auto d = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::int64_t alignment = 16;
  d->set(CUDNN_ATTR_TENSOR_DATA_TYPE, t)
      .set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, {n, c, h, w})
      .set_int64s(CUDNN_ATTR_TENSOR_STRIDES, {c * h * w, 1, w * c, c})
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  d->finalize("finalizing a tensor descriptor");
  return d;
}

/// A pointwise operation y = mode(x[, b]), computed in float.
std::unique_ptr<Desc> pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b,
                                const Desc& y, std::vector<std::unique_ptr<Desc> >& keep) {
  auto pw = std::make_unique<Desc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  pw->finalize("finalizing a pointwise descriptor");
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op->set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (b) op->set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op->finalize("finalizing a pointwise operation");
  keep.push_back(std::move(pw));
  return op;
}

/// A 2-D cross-correlation with the given stride and padding, accumulating in float.
std::unique_ptr<Desc> convolution(std::int64_t stride, std::int64_t padding) {
  auto conv = std::make_unique<Desc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t spatial = 2;
  conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial)
      .set_int64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, {1, 1})
      .set_int64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {stride, stride})
      .set_int64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {padding, padding})
      .set_int64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {padding, padding});
  conv->finalize("finalizing the convolution descriptor");
  return conv;
}

/// y = conv(x, w).
std::unique_ptr<Desc> conv_forward(const Desc& x, const Desc& w, const Desc& y, const Desc& conv) {
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.f, beta = 0.f;
  op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  op->finalize("finalizing the convolution operation");
  return op;
}

/// The per-channel sum and sum of squares of y, in float.
std::unique_ptr<Desc> gen_stats(const Desc& y, const Desc& sum, const Desc& sqsum) {
  auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
  const cudnnGenStatsMode_t stats_mode = CUDNN_GENSTATS_SUM_SQSUM;
  op->set(CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &stats_mode)
      .set(CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_DATA_FLOAT)
      .set(CUDNN_ATTR_OPERATION_GENSTATS_XDESC, y)
      .set(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, sum)
      .set(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, sqsum);
  op->finalize("finalizing the statistics operation");
  return op;
}

std::unique_ptr<Desc> operation_graph(cudnnHandle_t handle,
                                      const std::vector<std::unique_ptr<Desc> >& ops) {
  auto graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  std::vector<cudnnBackendDescriptor_t> op_handles;
  for (const auto& op : ops) op_handles.push_back(op->get());
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
      .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
           static_cast<std::int64_t>(op_handles.size()), op_handles.data());
  graph->finalize("finalizing the operation graph");
  return graph;
}

/// Engine configurations to try, each with a name for messages.
struct EngineConfigs {
  std::vector<std::unique_ptr<Desc> > configs;
  std::vector<std::string> names;
  std::int64_t engines = 0;  // the graph's global engine count
};

/// The heuristics' configurations (mode A), in their order.
void add_heuristics_configs(const Desc& graph, EngineConfigs& out) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
  heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode);
  heur.finalize("finalizing the heuristics query");
  std::int64_t count = 0;
  check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
        "counting the heuristics' results");
  std::vector<std::unique_ptr<Desc> > found;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    found.push_back(std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(found.back()->get());
  }
  std::int64_t got = 0;
  if (count > 0)
    check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
          "reading the heuristics' results");
  for (std::int64_t i = 0; i < got; ++i) {
    out.names.push_back("heuristics result " + std::to_string(i));
    out.configs.push_back(std::move(found[static_cast<std::size_t>(i)]));
  }
}

/// Then one per engine cuDNN has for this graph (global index order), with its default knobs;
/// the engines are kept in `keep` (the configurations refer to them).
void add_engine_configs(const Desc& graph, EngineConfigs& out,
                        std::vector<std::unique_ptr<Desc> >& keep) {
  std::int64_t returned = 0;
  check(cudnnBackendGetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                 CUDNN_TYPE_INT64, 1, &returned, &out.engines),
        "counting the graph's engines");
  for (std::int64_t e = 0; e < out.engines; ++e) {
    auto engine = std::make_unique<Desc>(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    engine->set(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph)
        .set(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &e);
    if (cudnnBackendFinalize(engine->get()) != CUDNN_STATUS_SUCCESS)
      continue;  // not for this graph
    auto config = std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    config->set(CUDNN_ATTR_ENGINECFG_ENGINE, *engine);
    if (cudnnBackendFinalize(config->get()) != CUDNN_STATUS_SUCCESS) continue;
    keep.push_back(std::move(engine));
    out.names.push_back("engine " + std::to_string(e));
    out.configs.push_back(std::move(config));
  }
}

/// The plan of the first configuration that finalizes one, its name and workspace size; a
/// Refusal naming what each configuration said when none does.
struct FinalizedPlan {
  std::unique_ptr<Desc> plan;
  std::string name;
  std::int64_t workspace_bytes = 0;
};

FinalizedPlan first_plan(cudnnHandle_t handle, const EngineConfigs& found) {
  std::string refusals;
  for (std::size_t i = 0; i < found.configs.size(); ++i) {
    auto candidate = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    candidate->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
        .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *found.configs[i]);
    const cudnnStatus_t st = cudnnBackendFinalize(candidate->get());
    if (st == CUDNN_STATUS_SUCCESS) {
      std::int64_t bytes = 0, got = 0;
      check(cudnnBackendGetAttribute(candidate->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &got, &bytes),
            "reading a plan's workspace size");
      return {std::move(candidate), found.names[i], bytes};
    }
    if (refusals.size() < 400) refusals += "; " + found.names[i] + ": " + cudnnGetErrorString(st);
  }
  throw Refusal{"no engine finalized a plan (" + std::to_string(found.configs.size()) +
                " configurations, " + std::to_string(found.engines) + " engines" + refusals + ")"};
}

// The tensors' unique ids in the graph and the variant pack.
enum Uid : std::int64_t { kX = 1, kW, kY, kSum, kSqsum, kScale, kBias, kScaled, kBiased, kRelu };

}  // namespace

// Everything the plan refers to lives here, so the plan stays valid while the object does.
struct ConvStatsGraph::Impl {
  ConvShape shape{};
  torch::ScalarType dtype{};
  std::int64_t stride = 1, padding = 0;
  bool prologue = false;
  // The building thread's handle (PyTorch keeps one per thread); the plan names it.
  cudnnHandle_t handle = nullptr;
  std::vector<std::unique_ptr<Desc> > keep;  // tensors, operations, graph, engines, configurations
  std::unique_ptr<Desc> plan;
  std::string name;  // the engine configuration that finalized the plan
  std::int64_t workspace_bytes = 0;
};

ConvStatsGraph::ConvStatsGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConvStatsGraph::~ConvStatsGraph() = default;

std::variant<std::shared_ptr<ConvStatsGraph>, std::string> ConvStatsGraph::make(
    const torch::Tensor& x, const torch::Tensor& w, std::int64_t stride, std::int64_t padding,
    const std::optional<ScaleBiasRelu>& prologue) {
  const ConvShape sh = check_conv_stats_args("conv_with_stats", x, w, stride, padding, prologue);
  const auto n = sh.n, c = sh.c, h = sh.h, wd = sh.w, k = sh.k, r = sh.r, s = sh.s, p = sh.p,
             q = sh.q;
  c10::cuda::CUDAGuard guard(x.device());
  const cudnnDataType_t dtype =
      x.scalar_type() == torch::kHalf ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  auto impl = std::make_unique<Impl>();
  impl->shape = sh;
  impl->dtype = x.scalar_type();
  impl->stride = stride;
  impl->padding = padding;
  impl->prologue = prologue.has_value();

  try {
    const cudnnHandle_t handle = at::native::getCudnnHandle();
    impl->handle = handle;
    std::vector<std::unique_ptr<Desc> >& keep = impl->keep;  // descriptors the operations refer to

    auto x_desc = nhwc_tensor(kX, dtype, n, c, h, wd);
    auto w_desc = nhwc_tensor(kW, dtype, k, c, r, s);
    auto y_desc = nhwc_tensor(kY, dtype, n, k, p, q);
    auto sum_desc = nhwc_tensor(kSum, CUDNN_DATA_FLOAT, 1, k, 1, 1);
    auto sqsum_desc = nhwc_tensor(kSqsum, CUDNN_DATA_FLOAT, 1, k, 1, 1);

    std::vector<std::unique_ptr<Desc> > ops;
    const Desc* conv_input = x_desc.get();
    if (prologue) {
      // relu(x * scale + bias), the intermediates virtual and in float (as Paddle's).
      auto scale_desc = nhwc_tensor(kScale, dtype, 1, c, 1, 1);
      auto bias_desc = nhwc_tensor(kBias, dtype, 1, c, 1, 1);
      auto scaled = nhwc_tensor(kScaled, CUDNN_DATA_FLOAT, n, c, h, wd, true);
      auto biased = nhwc_tensor(kBiased, CUDNN_DATA_FLOAT, n, c, h, wd, true);
      auto relu = nhwc_tensor(kRelu, CUDNN_DATA_FLOAT, n, c, h, wd, true);
      ops.push_back(pointwise(CUDNN_POINTWISE_MUL, *x_desc, scale_desc.get(), *scaled, keep));
      ops.push_back(pointwise(CUDNN_POINTWISE_ADD, *scaled, bias_desc.get(), *biased, keep));
      ops.push_back(pointwise(CUDNN_POINTWISE_RELU_FWD, *biased, nullptr, *relu, keep));
      conv_input = relu.get();
      for (auto* d : {&scale_desc, &bias_desc, &scaled, &biased, &relu})
        keep.push_back(std::move(*d));
    }

    auto conv = convolution(stride, padding);
    ops.push_back(conv_forward(*conv_input, *w_desc, *y_desc, *conv));
    ops.push_back(gen_stats(*y_desc, *sum_desc, *sqsum_desc));
    auto graph = operation_graph(handle, ops);

    EngineConfigs found;
    add_heuristics_configs(*graph, found);
    add_engine_configs(*graph, found, keep);
    FinalizedPlan chosen = first_plan(handle, found);
    impl->plan = std::move(chosen.plan);
    impl->name = chosen.name;
    impl->workspace_bytes = chosen.workspace_bytes;

    for (auto& cfg : found.configs) keep.push_back(std::move(cfg));
    for (auto& op : ops) keep.push_back(std::move(op));
    keep.push_back(std::move(graph));
    keep.push_back(std::move(conv));
    for (auto* d : {&x_desc, &w_desc, &y_desc, &sum_desc, &sqsum_desc})
      keep.push_back(std::move(*d));
    return std::shared_ptr<ConvStatsGraph>(new ConvStatsGraph(std::move(impl)));
  } catch (const Refusal& r) {
    return "cuDNN does not take it: " + r.why;
  }
}

ConvStats ConvStatsGraph::run(const torch::Tensor& x, const torch::Tensor& w,
                              const std::optional<ScaleBiasRelu>& prologue) const {
  const Impl& im = *impl_;
  const ConvShape sh =
      check_conv_stats_args("ConvStatsGraph::run", x, w, im.stride, im.padding, prologue);
  if (sh.n != im.shape.n || sh.c != im.shape.c || sh.h != im.shape.h || sh.w != im.shape.w ||
      sh.k != im.shape.k || sh.r != im.shape.r || sh.s != im.shape.s ||
      x.scalar_type() != im.dtype || prologue.has_value() != im.prologue)
    throw std::invalid_argument(
        "ConvStatsGraph::run: inputs of other sizes, dtype or prologue than the graph was built "
        "for");
  c10::cuda::CUDAGuard guard(x.device());
  check(cudnnSetStream(im.handle, at::cuda::getCurrentCUDAStream()), "cudnnSetStream");
  ConvStats out;
  out.y = at::empty({sh.n, sh.k, sh.p, sh.q},
                    x.options().memory_format(at::MemoryFormat::ChannelsLast));
  // Zeroed, as cuDNN's own conv + genstats sample hands them over: its documentation does not
  // say whether an engine overwrites or adds onto them, and a memset is cheap insurance (the
  // [conv_stats_graph] test runs it in reused memory holding 1e4s).
  const at::Tensor sums = at::zeros({2, sh.k}, x.options().dtype(torch::kFloat32));
  out.sum = sums[0];
  out.sqsum = sums[1];
  out.engine = im.name;
  at::Tensor workspace =
      at::empty({std::max<std::int64_t>(im.workspace_bytes, 1)}, x.options().dtype(torch::kByte));
  std::vector<std::int64_t> uids = {kX, kW, kY, kSum, kSqsum};
  std::vector<void*> ptrs = {x.data_ptr(), w.data_ptr(), out.y.data_ptr(), out.sum.data_ptr(),
                             out.sqsum.data_ptr()};
  if (prologue) {
    uids.insert(uids.end(), {kScale, kBias});
    ptrs.insert(ptrs.end(), {prologue->scale.data_ptr(), prologue->bias.data_ptr()});
  }
  void* workspace_ptr = workspace.data_ptr();
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
           static_cast<std::int64_t>(uids.size()), uids.data())
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
           static_cast<std::int64_t>(ptrs.size()), ptrs.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace_ptr);
  pack.finalize("finalizing the variant pack");
  check(cudnnBackendExecute(im.handle, im.plan->get(), pack.get()), "cudnnBackendExecute");
  return out;
}

std::variant<ConvStats, std::string> conv_with_stats(const torch::Tensor& x, const torch::Tensor& w,
                                                     std::int64_t stride, std::int64_t padding,
                                                     const std::optional<ScaleBiasRelu>& prologue) {
  auto made = ConvStatsGraph::make(x, w, stride, padding, prologue);
  if (auto* why = std::get_if<std::string>(&made)) return *why;
  return std::get<std::shared_ptr<ConvStatsGraph> >(made)->run(x, w, prologue);
}

#endif

}  // namespace orch::resnet
