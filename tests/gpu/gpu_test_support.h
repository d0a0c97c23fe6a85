// Helpers shared by the GPU test files: an autocast scope, channels-last parameters, a
// batch-norm away from its initial identity, and the 100-step loss-curve comparison.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <vector>

namespace orch::test {

/// An autocast scope for CUDA, restored on exit.
class Autocast {
 public:
  explicit Autocast(torch::ScalarType dtype)
      : was_(at::autocast::is_autocast_enabled(at::kCUDA)),
        old_(at::autocast::get_autocast_dtype(at::kCUDA)) {
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
  }
  ~Autocast() {
    at::autocast::set_autocast_enabled(at::kCUDA, was_);
    at::autocast::set_autocast_dtype(at::kCUDA, old_);
    at::autocast::clear_cache();
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool was_;
  torch::ScalarType old_;
};

/// Makes a module's 4-d parameters (convolution weights) channels-last, as the runner does.
inline void to_channels_last(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

/// Deterministic cuDNN for the scope, the previous setting restored on exit: cuDNN's default
/// backward kernels accumulate with atomics, so without it two runs of the same network on the
/// same inputs differ and "the same computation" is not checkable.
class DeterministicCudnn {
 public:
  DeterministicCudnn() : was_(at::globalContext().deterministicCuDNN()) {
    at::globalContext().setDeterministicCuDNN(true);
  }
  ~DeterministicCudnn() { at::globalContext().setDeterministicCuDNN(was_); }
  DeterministicCudnn(const DeterministicCudnn&) = delete;
  DeterministicCudnn& operator=(const DeterministicCudnn&) = delete;

 private:
  bool was_;
};

/// One training step's forward and backward of a model holder (e.g. resnet::ResNet): moved to
/// the GPU, channels-last, training mode, forward under autocast(dtype), cross-entropy,
/// backward (no optimizer step: the gradients stay for the caller). Returns the logits in fp32.
template <class Net>
torch::Tensor forward_backward(Net& net, const torch::Tensor& images, const torch::Tensor& labels,
                               torch::ScalarType dtype = torch::kHalf) {
  net->to(torch::kCUDA);
  to_channels_last(*net);
  net->train();
  torch::Tensor logits;
  {
    const Autocast autocast(dtype);
    logits = net->forward(images);
  }
  torch::nn::functional::cross_entropy(logits, labels).backward();
  return logits.detach().to(torch::kFloat);
}

/// A CUDA BatchNorm2d whose affine parameters and running statistics are random, away from
/// the identity the module starts at, so a wrong scale, shift or update shows.
inline torch::nn::BatchNorm2d cuda_bn_away_from_identity(std::int64_t C) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  torch::nn::BatchNorm2d bn(C);
  bn->to(torch::kCUDA);
  torch::NoGradGuard no_grad;
  bn->weight.copy_(torch::rand({C}, opts) + 0.5);
  bn->bias.copy_(torch::randn({C}, opts) * 0.1);
  bn->running_mean.copy_(torch::randn({C}, opts) * 0.1);
  bn->running_var.copy_(torch::rand({C}, opts) + 0.5);
  return bn;
}

/// The 100-step tests' data: four fixed batches of 32 random 64x64 images (channels-last, on
/// the GPU) with labels of 10 classes.
struct SmallBatches {
  std::vector<torch::Tensor> images, labels;
};
inline SmallBatches small_batches() {
  SmallBatches b;
  for (int i = 0; i < 4; ++i) {
    b.images.push_back(
        torch::randn({32, 3, 64, 64}, torch::kCUDA).contiguous(torch::MemoryFormat::ChannelsLast));
    b.labels.push_back(
        torch::randint(0, 10, {32}, torch::dtype(torch::kLong).device(torch::kCUDA)));
  }
  return b;
}

/// `steps` SGD steps (lr 0.002, momentum 0.9) of a model holder (e.g. resnet::ResNet) under
/// autocast(dtype), cycling through the batches; returns the losses. (lr 0.002: at 0.02 an
/// unfused ResNet50 alone diverged within 10 steps, its loss from 2.5 to 27.9.)
template <class Net>
std::vector<double> train_steps(Net& net, const SmallBatches& b, torch::ScalarType dtype,
                                int steps) {
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.002).momentum(0.9));
  net->train();
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    torch::Tensor loss;
    {
      const Autocast autocast(dtype);
      loss = torch::nn::functional::cross_entropy(net->forward(b.images[step % 4]),
                                                  b.labels[step % 4]);
    }
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

template <class Net>
std::vector<double> train_100_steps(Net& net, const SmallBatches& b, torch::ScalarType dtype) {
  return train_steps(net, b, dtype, 100);
}

/// Scales every parameter by 1 + 1e-3 N(0, 1), below fp16's and bf16's rounding step: a second
/// run from these weights is as valid as the first, so how far it drifts is the noise a
/// "trains like" comparison allows (check_loss_curve_within_noise).
inline void nudge_parameters(torch::nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& p : net.parameters()) p.mul_(1 + 1e-3 * torch::randn_like(p));
}

/// "Trains like": loss curves (100 steps, or any multiple of 10) of a reference run (`ref`), of the
/// same run from weights nudged below the dtype's rounding step (`nudged`: how far two equally
/// valid runs drift apart) and of the run under test (`test`). In every 10-step window the test run
/// must stay within three times the nudged run's distance from the reference (plus 5% and 0.02 of
/// slack), start where the reference starts, and halve its loss by the end.
/// `other`, when given, is a second equally valid run (e.g. another correct implementation of
/// the same model): each window's noise is the farther of the two runs from the reference.
inline void check_loss_curve_within_noise(const std::vector<double>& ref,
                                          const std::vector<double>& nudged,
                                          const std::vector<double>& test,
                                          const std::vector<double>& other = {}) {
  const int steps = static_cast<int>(ref.size());
  REQUIRE((steps >= 10 && steps % 10 == 0));
  REQUIRE(nudged.size() == ref.size());
  REQUIRE(test.size() == ref.size());
  REQUIRE((other.empty() || other.size() == ref.size()));
  std::ostringstream curve;
  for (int i = 0; i < steps; i += steps / 10) {
    curve << i << ": " << ref[i] << " / " << nudged[i] << " / " << test[i];
    if (!other.empty()) curve << " / " << other[i];
    curve << "\n";
  }
  INFO("loss reference / reference from nudged weights / under test"
       << (other.empty() ? "" : " / other valid run") << ":\n"
       << curve.str());
  CHECK(test[0] == Approx(ref[0]).epsilon(0.02));
  const auto window = [](const std::vector<double>& l, int w) {
    double m = 0;
    for (int i = w; i < w + 10; ++i) m += l[i] / 10;
    return m;
  };
  for (int w = 0; w < steps; w += 10) {
    const double a = window(ref, w), n = window(nudged, w), b = window(test, w);
    double noise = std::abs(a - n);
    if (!other.empty()) noise = std::max(noise, std::abs(a - window(other, w)));
    INFO("steps " << w << "-" << w + 9 << ": " << a << " / " << n << " / " << b
                  << (other.empty() ? "" : " / " + std::to_string(window(other, w))));
    CHECK(std::isfinite(b));
    CHECK(std::abs(a - b) <= 3 * noise + 0.05 * a + 0.02);
  }
  CHECK(window(test, steps - 10) < 0.5 * window(test, 0));
}

}  // namespace orch::test
