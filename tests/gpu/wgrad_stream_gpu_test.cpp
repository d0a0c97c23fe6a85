// `wgrad_stream` (plugins/model/resnet/ops/wgrad_stream.h) on the GPU: a fused fp16 ResNet50
// (conv_bn_stats) with its convolutions' weight gradients on a second stream gives the gradients
// of the one-stream model, parameter by parameter, within the run-to-run noise of the one-stream
// model itself (cuDNN's statistics epilogue may sum in any order); a second backward without
// zeroing adds onto them; a captured forward + backward replays to the same gradients; the
// counters say every such convolution took the second stream and each backward joined once.
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "conv_bn_from_stats.h"
#include "gpu/gpu_test_support.h"
#include "integration/test_support.h"
#include "resnet.h"
#include "wgrad_stream.h"

using namespace orch;

namespace {

const auto kCl = torch::MemoryFormat::ChannelsLast;

resnet::ResNetOptions options(bool wgrad_stream, resnet::DgradGraphMode dgrad) {
  resnet::ResNetOptions o;
  o.depth = 50;
  o.num_classes = 10;
  o.fused_bn = true;
  o.fused_residual_grad = true;
  o.conv_bn_stats = true;
  o.fused_downsample = true;
  o.dgrad_graph = dgrad;
  o.wgrad_stream = wgrad_stream;
  return o;
}

using Grads = std::map<std::string, torch::Tensor>;

Grads grads_of(resnet::ResNet& net) {
  Grads g;
  for (const auto& p : net->named_parameters()) {
    REQUIRE(p.value().grad().defined());
    g[p.key()] = p.value().grad().to(torch::kFloat).clone();
  }
  return g;
}

void clear_grads(resnet::ResNet& net) {
  for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
}

double rel(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / (b.norm().item<double>() + 1e-12);
}

/// `got` against the one-stream gradients `ref`, with `again` (the one-stream model run once
/// more) as the noise floor. Some parameters' gradients are mostly rounding noise at this size
/// (their run-to-run difference is of their own size), so three checks, each of which a weight
/// gradient lost, counted twice or read before it was written fails: every parameter within
/// three times its own noise plus 1e-3 relative (fc.bias has 10 elements: one sample of its
/// noise can be under half another's); every parameter's norm within twice its noise in
/// norm, plus half its relative noise, plus 5% (a lost gradient has norm 0, a doubled one twice
/// the norm: both are 1 off); and all parameters as one vector within twice the whole noise
/// plus 1e-3. Why half the relative noise: a gradient off by `noise` of its norm in a direction
/// of its own changes its norm by about noise^2/2 plus noise/sqrt(elements), up to 0.15 for a
/// 64-element batch-norm weight whose noise is 0.45, while the one sample of the norm's own
/// noise can be near 0.
void check_within_noise(const Grads& got, const Grads& ref, const Grads& again) {
  std::vector<torch::Tensor> all_got, all_ref, all_again;
  std::string noisiest;
  double worst = 0, worst_noise = 0;
  for (const auto& [name, r] : ref) {
    const auto& g = got.at(name);
    const auto& a = again.at(name);
    const double noise = rel(a, r);
    const double off = rel(g, r);
    const double r_norm = r.norm().item<double>() + 1e-12;
    const double norm_off = std::abs(g.norm().item<double>() / r_norm - 1);
    const double norm_noise = std::abs(a.norm().item<double>() / r_norm - 1);
    INFO(name << ": off " << off << ", noise " << noise << "; norm off " << norm_off
              << ", norm noise " << norm_noise);
    CHECK(off <= 3 * noise + 1e-3);
    CHECK(norm_off <= 2 * norm_noise + noise / 2 + 0.05);
    if (noise > worst_noise) noisiest = name;
    worst = std::max(worst, off);
    worst_noise = std::max(worst_noise, noise);
    all_got.push_back(g.flatten());
    all_ref.push_back(r.flatten());
    all_again.push_back(a.flatten());
  }
  const auto whole_ref = torch::cat(all_ref);
  const double whole = rel(torch::cat(all_got), whole_ref);
  const double whole_noise = rel(torch::cat(all_again), whole_ref);
  std::cout << "worst parameter: off " << worst << ", one-stream noise " << worst_noise << " ("
            << noisiest << "); all parameters: off " << whole << ", noise " << whole_noise << "\n";
  CHECK(whole <= 2 * whole_noise + 1e-3);
}

struct Models {
  resnet::ResNet one, two;
  torch::Tensor images, labels;
};

Models make_models(resnet::DgradGraphMode dgrad) {
  torch::manual_seed(57);
  Models m{resnet::ResNet(options(false, dgrad)), resnet::ResNet(options(true, dgrad)), {}, {}};
  test::copy_state(*m.one, *m.two);
  m.images = torch::randn({16, 3, 64, 64}, torch::kCUDA).contiguous(kCl);
  m.labels = torch::randint(0, 10, {16}, torch::dtype(torch::kLong).device(torch::kCUDA));
  return m;
}

/// The one-stream model's gradients from two backward passes on the same batch, each from
/// none: the reference and its run-to-run noise. The second pass's gradients stay in place.
std::pair<Grads, Grads> one_stream_twice(Models& m) {
  test::forward_backward(m.one, m.images, m.labels);
  Grads ref = grads_of(m.one);
  clear_grads(m.one);
  test::forward_backward(m.one, m.images, m.labels);
  return {std::move(ref), grads_of(m.one)};
}

}  // namespace

TEST_CASE("wgrad_stream: a ResNet50's gradients are the one-stream model's, within its noise",
          "[gpu][wgrad_stream]") {
  const test::DeterministicCudnn deterministic;
  for (const auto dgrad : {resnet::DgradGraphMode::kOff, resnet::DgradGraphMode::kAlways}) {
    INFO("dgrad_graph " << resnet::to_string(dgrad));
    Models m = make_models(dgrad);
    auto step = [&](resnet::ResNet& net) { test::forward_backward(net, m.images, m.labels); };
    const auto [ref, again] = one_stream_twice(m);

    const auto stats_before = resnet::conv_bn_from_stats_counters();
    const auto before = resnet::wgrad_stream_counters();
    step(m.two);
    const auto after = resnet::wgrad_stream_counters();
    const auto stats_after = resnet::conv_bn_from_stats_counters();
    // Every convolution with statistics put its gradient there: one per call taken (`taken`
    // counts a downsample block's pair once, `dual` adds its shortcut's), none fell back.
    const auto convs =
        (stats_after.taken - stats_before.taken) + (stats_after.dual - stats_before.dual);
    CHECK(stats_after.fallback == stats_before.fallback);
    CHECK(stats_after.dual - stats_before.dual == 4);
    CHECK(after.launched - before.launched == convs);
    CHECK(after.joined - before.joined == 1);
    check_within_noise(grads_of(m.two), ref, again);

    // Without zeroing, a second backward adds onto the first (AccumulateGrad's rule).
    step(m.one);
    step(m.two);
    Grads twice_ref = grads_of(m.one), twice_again;
    for (const auto& [name, g] : again) twice_again[name] = g + ref.at(name);
    check_within_noise(grads_of(m.two), twice_ref, twice_again);
  }
}

TEST_CASE("wgrad_stream: a captured forward and backward replays to the eager gradients",
          "[gpu][wgrad_stream]") {
  const test::DeterministicCudnn deterministic;
  Models m = make_models(resnet::DgradGraphMode::kAuto);
  auto step = [&](resnet::ResNet& net) { test::forward_backward(net, m.images, m.labels); };
  const auto [ref, again] = one_stream_twice(m);

  auto side = c10::cuda::getStreamFromPool();
  c10::cuda::getCurrentCUDAStream().synchronize();
  at::cuda::CUDAGraph graph;
  {
    const c10::cuda::CUDAStreamGuard guard(side);
    // Eager steps first: cuDNN's plans and dgrad_graph's choices are made outside the capture.
    for (int i = 0; i < 2; ++i) {
      clear_grads(m.two);
      step(m.two);
    }
    clear_grads(m.two);
    // PyTorch requires autocast's cast cache off while capturing (the cuda-graph plugin too).
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    const auto before = resnet::wgrad_stream_counters();
    graph.capture_begin();
    step(m.two);
    graph.capture_end();
    at::autocast::set_autocast_cache_enabled(cache);
    CHECK(resnet::wgrad_stream_counters().joined - before.joined == 1);
    // Zero what the capture left (it ran nothing), then replay: the graph writes the gradients.
    {
      torch::NoGradGuard no_grad;
      for (auto& p : m.two->parameters()) p.grad().zero_();
    }
    graph.replay();
    side.synchronize();
  }
  check_within_noise(grads_of(m.two), ref, again);
}
