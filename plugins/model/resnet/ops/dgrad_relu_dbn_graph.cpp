// DgradReluDbnGraph (dgrad_relu_dbn_graph.h): the data gradient, the ReLU's backward and the
// batch-norm's weight gradient as one cuDNN graph, through cudnn-frontend's v1 graph API (a
// header-only library from the nvidia-cudnn-frontend wheel, scripts/cudnn-frontend.sh), then
// bn_dx_apply for dx. cudnn-frontend, unlike conv_stats_graph.cpp's raw backend descriptors,
// because the BN_BWD_WEIGHTS operation and its five outputs are what its dbn_weight node
// already wires up, and its plan list, support check and per-plan execution are the search
// this needs. The graph (uids in the enum below):
//   dgrad   = ConvolutionBwData(dy, w)                       virtual, fp32
//   g       = dgrad [+ shortcut_grad]                        virtual, fp32 (ADD)
//   r       = y, or ((x - mean) * invstd) * scale + bias [+ residual]   (SUB, MUL, MUL, ADD [,
//   ADD]) dy'     = RELU_BWD(g, r)                                 output, x's dtype dscale, dbias,
//   eq_scale_dy, eq_scale_x, eq_bias = BN_BWD_WEIGHTS(dy', x, mean, invstd, scale)
// Each activation NHWC and fully packed, the per-channel tensors [1, C, 1, 1] fp32. Which
// variants cuDNN takes, on which GPU, orch_gpu_tests "[dgrad_relu_dbn]" and
// orch_bench_dgrad_shapes print.
#include "dgrad_relu_dbn_graph.h"

#include <cstdint>
#include <stdexcept>

#if defined(ORCH_FUSED_BN_CUDA) && defined(ORCH_FUSED_BN_CUDNN) && defined(ORCH_CUDNN_FRONTEND)
#define ORCH_DGRAD_RELU_DBN 1
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cudnn/Handle.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <cudnn_frontend.h>

#include <algorithm>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "bn_dx_apply_kernels.h"
#include "fused_bn_kernels.h"
#endif

namespace orch::resnet {

void check_dgrad_relu_dbn_args(const char* who, const DgradReluDbnArgs& a) {
  const auto require = [who](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string(who) + ": " + what);
  };
  const auto cl = at::MemoryFormat::ChannelsLast;
  require(a.dy.defined() && a.w.defined() && a.x.defined() && a.save_mean.defined() &&
              a.save_invstd.defined() && a.weight.defined(),
          "dy, w, x, save_mean, save_invstd and weight are required");
  require(a.dy.is_cuda(), "dy must be a CUDA tensor");
  const auto dev = a.dy.device();
  const auto dtype = a.dy.scalar_type();
  require(dtype == torch::kHalf || dtype == torch::kBFloat16, "dy must be fp16 or bf16");
  require(a.dy.dim() == 4 && a.w.dim() == 4 && a.x.dim() == 4,
          "dy is NKPQ, w is KCRS, x is NCHW (4-d each)");
  require(a.w.size(0) == a.dy.size(1) && a.w.size(1) == a.x.size(1) && a.x.size(0) == a.dy.size(0),
          "w must be K x C x R x S for dy's K and x's C, and x and dy of the same batch");
  require(a.stride >= 1 && a.padding >= 0, "stride >= 1, padding >= 0");
  // The data gradient has x's size; the convolution of x with these settings must give dy's.
  const auto out = [&](std::int64_t in, std::int64_t k) {
    return (in + 2 * a.padding - k) / a.stride + 1;
  };
  require(out(a.x.size(2), a.w.size(2)) == a.dy.size(2) &&
              out(a.x.size(3), a.w.size(3)) == a.dy.size(3),
          "conv(x, w, stride, padding) must have dy's spatial size");
  for (const torch::Tensor* t : {&a.dy, &a.w, &a.x, &a.shortcut_grad, &a.residual, &a.y}) {
    if (!t->defined()) continue;
    require(t->device() == dev && t->scalar_type() == dtype,
            "every activation and w must be on dy's device, in dy's dtype");
    require(t->is_contiguous(cl), "every activation and w must be channels-last");
    // cuDNN's tensors are declared 16-byte aligned (its vectorised engines' requirement).
    require(reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 == 0,
            "every activation and w must be 16-byte aligned");
  }
  for (const torch::Tensor* t : {&a.shortcut_grad, &a.residual, &a.y})
    require(!t->defined() || t->sizes() == a.x.sizes(),
            "shortcut_grad, residual and y must have x's sizes");
  require(!(a.y.defined() && a.residual.defined()),
          "give the residual (recomputing the ReLU's input) or y (reading it), not both");
  require(a.y.defined() || a.bias.defined(), "recomputing the ReLU's input needs bias");
  const std::int64_t C = a.x.size(1);
  for (const torch::Tensor* t : {&a.save_mean, &a.save_invstd, &a.weight, &a.bias}) {
    if (!t->defined()) continue;
    require(t->device() == dev && t->scalar_type() == torch::kFloat && t->numel() == C &&
                t->is_contiguous() && reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 == 0,
            "save_mean, save_invstd, weight and bias: C contiguous fp32 values on dy's device, "
            "16-byte aligned");
  }
}

#ifndef ORCH_DGRAD_RELU_DBN

namespace {
const char* missing() {
#if !defined(ORCH_FUSED_BN_CUDA)
  return "built without the CUDA kernels (nvcc was not found)";
#elif !defined(ORCH_FUSED_BN_CUDNN)
  return "built without cuDNN's headers (see plugins/model/resnet/ops/CMakeLists.txt)";
#else
  return "built without cudnn-frontend's headers (ORCH_CUDNN_FRONTEND_INCLUDE_DIR; "
         "scripts/cudnn-frontend.sh fetches them)";
#endif
}
}  // namespace

struct DgradReluDbnGraph::Impl {
  std::string engine;
};
DgradReluDbnGraph::DgradReluDbnGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DgradReluDbnGraph::~DgradReluDbnGraph() = default;

std::variant<std::shared_ptr<DgradReluDbnGraph>, std::string> DgradReluDbnGraph::make(
    const DgradReluDbnArgs& a) {
  check_dgrad_relu_dbn_args("DgradReluDbnGraph::make", a);
  return std::string(missing());
}
DgradReluDbn DgradReluDbnGraph::run(const DgradReluDbnArgs&) const {
  throw std::logic_error("DgradReluDbnGraph: no plan in this build");
}
const std::string& DgradReluDbnGraph::engine() const { return impl_->engine; }
int DgradReluDbnGraph::plans_built() const { return 0; }

std::variant<DgradReluDbn, std::string> dgrad_relu_dbn(const DgradReluDbnArgs& a) {
  check_dgrad_relu_dbn_args("dgrad_relu_dbn", a);
  return std::string(missing());
}

bool dgrad_relu_dbn_compiled() { return false; }

#else

namespace fe = cudnn_frontend;

namespace {

/// cuDNN or the frontend declined the graph at one of the build steps.
struct Refusal {
  std::string why;
};

// The tensors' unique ids in the graph and the variant pack.
enum Uid : std::int64_t {
  kDy = 1,
  kW,
  kShortcut,
  kX,
  kMean,
  kInvstd,
  kScale,
  kBias,
  kResidual,
  kY,
  kDyRelu,
  kDscale,
  kDbias,
  kEqDy,
  kEqX,
  kEqBias,
};

/// The problem a graph is built for: what make saw and run must see again.
struct Key {
  std::vector<std::int64_t> dy, w, x;
  std::int64_t stride = 0, padding = 0;
  torch::ScalarType dtype{};
  bool shortcut = false, residual = false, y = false;
  bool operator==(const Key&) const = default;
};

Key key_of(const DgradReluDbnArgs& a) {
  return {a.dy.sizes().vec(), a.w.sizes().vec(),  a.x.sizes().vec(),         a.stride,
          a.padding,          a.dy.scalar_type(), a.shortcut_grad.defined(), a.residual.defined(),
          a.y.defined()};
}

/// Strides of a fully packed NHWC tensor of logical dims [n, c, h, w].
std::vector<std::int64_t> nhwc(const std::vector<std::int64_t>& d) {
  return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
}

std::string describe(fe::error_t e) {
  std::ostringstream o;
  o << e.get_code() << ": " << e.get_message();
  return o.str();
}

void step(fe::error_t e, const char* what) {
  if (e.is_bad()) throw Refusal{std::string(what) + " failed (" + describe(e) + ")"};
}

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("dgrad_relu_dbn: ") + what + ": " + cudaGetErrorName(err) +
                             " (" + cudaGetErrorString(err) + ")");
}

/// A CUDA event, destroyed with this object.
class Event {
 public:
  Event() { check_cuda(cudaEventCreate(&e_), "cudaEventCreate"); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

/// The outputs of one run, allocated for the arguments' problem.
struct Outputs {
  torch::Tensor dy_relu;
  /// 5 x C fp32 (dscale, dbias, eq_scale_dy, eq_scale_x, eq_bias), each row 16-byte aligned
  /// like every tensor cuDNN is handed.
  torch::Tensor per_channel;
};

Outputs allocate_outputs(const DgradReluDbnArgs& a) {
  const auto C = a.x.size(1), padded = (C + 3) / 4 * 4;
  // Zeroed: cuDNN does not document whether BN_BWD_WEIGHTS's engines overwrite dscale and
  // dbias or add partial sums onto them; a memset of 5 x C floats is cheap insurance.
  return {at::empty(a.x.sizes(), a.x.options().memory_format(at::MemoryFormat::ChannelsLast)),
          at::zeros({5, padded}, a.x.options().dtype(torch::kFloat)).narrow(1, 0, C)};
}

std::unordered_map<std::int64_t, void*> variant_pack(const DgradReluDbnArgs& a, const Outputs& o) {
  std::unordered_map<std::int64_t, void*> pack = {
      {kDy, a.dy.data_ptr()},
      {kW, a.w.data_ptr()},
      {kX, a.x.data_ptr()},
      {kMean, a.save_mean.data_ptr()},
      {kInvstd, a.save_invstd.data_ptr()},
      {kScale, a.weight.data_ptr()},
      {kDyRelu, o.dy_relu.data_ptr()},
      {kDscale, o.per_channel[0].data_ptr()},
      {kDbias, o.per_channel[1].data_ptr()},
      {kEqDy, o.per_channel[2].data_ptr()},
      {kEqX, o.per_channel[3].data_ptr()},
      {kEqBias, o.per_channel[4].data_ptr()},
  };
  if (a.shortcut_grad.defined()) pack[kShortcut] = a.shortcut_grad.data_ptr();
  if (a.y.defined()) {
    pack[kY] = a.y.data_ptr();
  } else {
    pack[kBias] = a.bias.data_ptr();
    if (a.residual.defined()) pack[kResidual] = a.residual.data_ptr();
  }
  return pack;
}

/// A tensor of the graph, input to it, with NHWC strides for its NCHW dimensions.
std::shared_ptr<fe::graph::Tensor_attributes> nhwc_input(fe::graph::Graph& g, const char* name,
                                                         Uid uid,
                                                         const std::vector<std::int64_t>& dim,
                                                         fe::DataType_t type) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(dim)
                      .set_stride(nhwc(dim))
                      .set_data_type(type));
}

/// The graph of the file's comment for these arguments, not yet lowered to cuDNN.
std::shared_ptr<fe::graph::Graph> describe_graph(const DgradReluDbnArgs& a) {
  using fe::graph::Pointwise_attributes;
  using fe::graph::Tensor_attributes;
  const auto io =
      a.dy.scalar_type() == torch::kHalf ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16;
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const std::vector<std::int64_t> dy_dim = a.dy.sizes().vec(), w_dim = a.w.sizes().vec(),
                                  x_dim = a.x.sizes().vec();
  const std::int64_t C = a.x.size(1);
  const std::vector<std::int64_t> ch_dim = {1, C, 1, 1}, ch_stride = {C, 1, C, C};
  const auto activation = [&](const char* name, Uid uid) {
    return nhwc_input(*g, name, uid, x_dim, io);
  };
  const auto per_channel = [&](const char* name, Uid uid) {
    return g->tensor(Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim(ch_dim)
                         .set_stride(ch_stride)
                         .set_data_type(fe::DataType_t::FLOAT));
  };
  const auto pointwise = [&](auto in0, auto in1, fe::PointwiseMode_t mode, const char* name) {
    auto out = g->pointwise(in0, in1, Pointwise_attributes().set_name(name).set_mode(mode));
    out->set_dim(x_dim).set_stride(nhwc(x_dim));
    return out;
  };

  auto dy = nhwc_input(*g, "dy", kDy, dy_dim, io);
  auto w = nhwc_input(*g, "w", kW, w_dim, io);
  auto grad = g->conv_dgrad(dy, w,
                            fe::graph::Conv_dgrad_attributes()
                                .set_name("dgrad")
                                .set_padding({a.padding, a.padding})
                                .set_stride({a.stride, a.stride})
                                .set_dilation({1, 1}));
  grad->set_dim(x_dim).set_stride(nhwc(x_dim));
  if (a.shortcut_grad.defined())
    grad = pointwise(grad, activation("shortcut_grad", kShortcut), fe::PointwiseMode_t::ADD,
                     "add_shortcut_grad");

  auto x = activation("x", kX);
  auto mean = per_channel("save_mean", kMean);
  auto invstd = per_channel("save_invstd", kInvstd);
  auto scale = per_channel("scale", kScale);
  std::shared_ptr<Tensor_attributes> relu_in;
  if (a.y.defined()) {
    relu_in = activation("y", kY);
  } else {
    auto centered = pointwise(x, mean, fe::PointwiseMode_t::SUB, "sub_mean");
    auto normalized = pointwise(centered, invstd, fe::PointwiseMode_t::MUL, "mul_invstd");
    auto scaled = pointwise(normalized, scale, fe::PointwiseMode_t::MUL, "mul_scale");
    relu_in = pointwise(scaled, per_channel("bias", kBias), fe::PointwiseMode_t::ADD, "add_bias");
    if (a.residual.defined())
      relu_in = pointwise(relu_in, activation("residual", kResidual), fe::PointwiseMode_t::ADD,
                          "add_residual");
  }
  auto dy_relu = pointwise(grad, relu_in, fe::PointwiseMode_t::RELU_BWD, "relu_bwd");
  dy_relu->set_output(true).set_uid(kDyRelu).set_data_type(io);

  auto [dscale, dbias, eq_dy, eq_x, eq_bias] = g->dbn_weight(
      dy_relu, x, mean, invstd, scale, fe::graph::DBN_weight_attributes().set_name("dbn_weight"));
  const std::pair<std::shared_ptr<Tensor_attributes>, Uid> outs[] = {
      {dscale, kDscale}, {dbias, kDbias}, {eq_dy, kEqDy}, {eq_x, kEqX}, {eq_bias, kEqBias}};
  for (const auto& [t, uid] : outs)
    t->set_output(true).set_uid(uid).set_dim(ch_dim).set_stride(ch_stride).set_data_type(
        fe::DataType_t::FLOAT);
  return g;
}

}  // namespace

struct DgradReluDbnGraph::Impl {
  Key key;
  std::shared_ptr<fe::graph::Graph> graph;
  std::int64_t plan = 0;  // the index of the plan that runs
  std::int64_t workspace_bytes = 0;
  int plans_built = 0;
  std::string engine;
};

DgradReluDbnGraph::DgradReluDbnGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DgradReluDbnGraph::~DgradReluDbnGraph() = default;

std::variant<std::shared_ptr<DgradReluDbnGraph>, std::string> DgradReluDbnGraph::make(
    const DgradReluDbnArgs& a) {
  check_dgrad_relu_dbn_args("DgradReluDbnGraph::make", a);
  const c10::cuda::CUDAGuard guard(a.dy.device());
  auto impl = std::make_unique<Impl>();
  impl->key = key_of(a);
  try {
    const cudnnHandle_t handle = at::native::getCudnnHandle();
    auto g = describe_graph(a);
    step(g->validate(), "validate");
    step(g->build_operation_graph(handle), "build_operation_graph");
    step(g->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}),
         "create_execution_plans");
    step(g->check_support(), "check_support");
    step(g->build_plans(fe::BuildPlanPolicy_t::ALL), "build_plans");

    // The plans that built, each timed on these arguments (a warm-up, then the best of five
    // runs): the heuristics' order is a guess, and a plan runs many times once chosen.
    const std::int64_t count = g->get_execution_plan_count();
    const Outputs scratch = allocate_outputs(a);
    auto pack = variant_pack(a, scratch);
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    if (cudnnSetStream(handle, stream) != CUDNN_STATUS_SUCCESS)
      throw std::runtime_error("dgrad_relu_dbn: cudnnSetStream failed");
    const Event start, stop;
    float best_ms = std::numeric_limits<float>::infinity();
    std::string failures;
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t bytes = 0;
      if (g->get_workspace_size_plan_at_index(i, bytes).is_bad()) continue;  // did not build
      const at::Tensor ws =
          at::empty({std::max<std::int64_t>(bytes, 1)}, a.dy.options().dtype(torch::kByte));
      if (auto e = g->execute_plan_at_index(handle, pack, ws.data_ptr(), i); e.is_bad()) {
        if (failures.size() < 300) failures += "; plan " + std::to_string(i) + ": " + describe(e);
        continue;
      }
      ++impl->plans_built;
      float ms = std::numeric_limits<float>::infinity();
      for (int rep = 0; rep < 5; ++rep) {
        check_cuda(cudaEventRecord(start.get(), stream), "cudaEventRecord");
        (void)g->execute_plan_at_index(handle, pack, ws.data_ptr(), i);
        check_cuda(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
        check_cuda(cudaEventSynchronize(stop.get()), "cudaEventSynchronize");
        float t = 0;
        check_cuda(cudaEventElapsedTime(&t, start.get(), stop.get()), "cudaEventElapsedTime");
        ms = std::min(ms, t);
      }
      if (ms < best_ms) {
        best_ms = ms;
        impl->plan = i;
        impl->workspace_bytes = bytes;
      }
    }
    if (impl->plans_built == 0)
      throw Refusal{"no plan of " + std::to_string(count) + " executed" + failures};
    if (g->get_plan_name_at_index(impl->plan, impl->engine).is_bad()) impl->engine.clear();
    impl->engine += " (fastest of " + std::to_string(impl->plans_built) + " plans)";
    impl->graph = std::move(g);
    return std::shared_ptr<DgradReluDbnGraph>(new DgradReluDbnGraph(std::move(impl)));
  } catch (const Refusal& r) {
    return "cuDNN does not take it: " + r.why;
  }
}

DgradReluDbn DgradReluDbnGraph::run(const DgradReluDbnArgs& a) const {
  const Impl& im = *impl_;
  check_dgrad_relu_dbn_args("DgradReluDbnGraph::run", a);
  if (!(key_of(a) == im.key))
    throw std::invalid_argument(
        "DgradReluDbnGraph::run: arguments of other sizes, dtype, stride, padding or optional "
        "inputs than the graph was built for");
  const c10::cuda::CUDAGuard guard(a.dy.device());
  const cudnnHandle_t handle = at::native::getCudnnHandle();
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (cudnnSetStream(handle, stream) != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error("dgrad_relu_dbn: cudnnSetStream failed");
  const Outputs o = allocate_outputs(a);
  auto pack = variant_pack(a, o);
  const at::Tensor ws = at::empty({std::max<std::int64_t>(im.workspace_bytes, 1)},
                                  a.dy.options().dtype(torch::kByte));
  if (auto e = im.graph->execute_plan_at_index(handle, pack, ws.data_ptr(), im.plan); e.is_bad())
    throw std::runtime_error("dgrad_relu_dbn: executing the plan failed (" + describe(e) + ")");

  DgradReluDbn r;
  r.dy_relu = o.dy_relu;
  r.grad_weight = o.per_channel[0];
  r.grad_bias = o.per_channel[1];
  r.coef = o.per_channel.slice(0, 2, 5);
  r.engine = im.engine;
  r.dx = at::empty(a.x.sizes(), a.x.options().memory_format(at::MemoryFormat::ChannelsLast));
  const std::int64_t C = a.x.size(1), rows = a.x.numel() / C;
  bool vec8 = true;
  for (const torch::Tensor* t : {&a.x, static_cast<const torch::Tensor*>(&r.dy_relu),
                                 static_cast<const torch::Tensor*>(&r.dx)})
    vec8 = vec8 && reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16 == 0;
  const auto t = kernels::make_tiling(
      rows, C, at::cuda::getCurrentDeviceProperties()->multiProcessorCount, vec8);
  const auto dtype =
      a.x.scalar_type() == torch::kHalf ? kernels::Dtype::kHalf : kernels::Dtype::kBFloat16;
  check_cuda(
      kernels::bn_dx_apply(dtype, t, r.dy_relu.data_ptr(), a.x.data_ptr(),
                           o.per_channel[2].data_ptr<float>(), o.per_channel[3].data_ptr<float>(),
                           o.per_channel[4].data_ptr<float>(), r.dx.data_ptr(), rows, C, stream),
      "bn_dx_apply launch");
  return r;
}

const std::string& DgradReluDbnGraph::engine() const { return impl_->engine; }
int DgradReluDbnGraph::plans_built() const { return impl_->plans_built; }

std::variant<DgradReluDbn, std::string> dgrad_relu_dbn(const DgradReluDbnArgs& a) {
  auto made = DgradReluDbnGraph::make(a);
  if (auto* why = std::get_if<std::string>(&made)) return *why;
  return std::get<std::shared_ptr<DgradReluDbnGraph> >(made)->run(a);
}

bool dgrad_relu_dbn_compiled() { return true; }

#endif

}  // namespace orch::resnet
