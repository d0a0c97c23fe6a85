// The `torchscript` model plugin: archives that cannot be used are refused at create time with
// a sentence saying why; a usable one trains through the real runner, and the host's device /
// dtype / memory-format moves, the optimizer's updates and train/eval reach the TorchScript
// module itself. The archives are written by LibTorch here (torchscript_fixture.h), so the
// tests need no Python. tests/gpu/torchscript_gpu_test.cpp does the same on CUDA.
#include <ATen/autocast_mode.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "integration/test_support.h"
#include "integration/torchscript_fixture.h"
#include "plugin_host/plugin_error.h"
#include "runner/runner.h"

using namespace orch;
using Catch::Matchers::Contains;
using test::empty_module;
using test::save;
using test::tiny_net;

namespace {

/// The loader's facts as the runner passes them: 10 classes of 3 x 8 x 8 images.
const ModelContext kContext{10, {3, 8, 8}};

std::shared_ptr<Model> create(const std::string& path, const ModelContext& ctx = kContext) {
  return test::built_plugins().create_model(test::choice("torchscript", {{"path", path}}), ctx);
}

/// The text of the error create() throws (empty when it does not throw).
std::string create_error(const std::string& path, const ModelContext& ctx = kContext) {
  try {
    create(path, ctx);
  } catch (const PluginError& e) {
    return e.what();
  }
  return "";
}

torch::Tensor param(Model& model, const std::string& name) {
  return model.module().named_parameters()[name];
}

}  // namespace

TEST_CASE("torchscript: the plugin is found with its path parameter", "[torchscript]") {
  const PluginInfo* info = test::built_plugins().find(PluginKind::kModel, "torchscript");
  REQUIRE(info != nullptr);
  REQUIRE(info->params.size() == 1);
  CHECK(info->params[0].name == "path");
  CHECK(info->params[0].type == ParamType::kString);
  CHECK(info->params[0].hash_file_content);
}

TEST_CASE("torchscript: an archive exported again to the same path is a new configuration",
          "[torchscript]") {
  test::TempDir tmp;
  const auto archive = tmp.path() / "model.pt";
  const auto yaml = tmp.path() / "ts.yaml";
  std::ofstream(yaml) << "name: ts\nbase:\n  model: {plugin: torchscript, path: '"
                      << archive.string() << "'}\n  device: cpu\n";
  // `orch plan` prints the first 12 digits of each configuration's hash; planning does not
  // load the archive, so any bytes do.
  const auto planned_hash = [&](const std::string& bytes) {
    std::ofstream(archive, std::ios::binary | std::ios::trunc) << bytes;
    const auto r = test::run_orch("plan '" + yaml.string() + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.output, m, std::regex(" ([0-9a-f]{12}) ")));
    return m[1].str();
  };
  const std::string first = planned_hash("first export");
  CHECK(planned_hash("second export") != first);
  CHECK(planned_hash("first export") == first);
}

TEST_CASE("torchscript: unusable archives are refused, saying why", "[torchscript]") {
  test::TempDir dir;
  SECTION("no path given") {
    const std::string why = create_error("");
    CHECK_THAT(why, Contains("model.path is not set"));
    CHECK_THAT(why, Contains("model plugin 'torchscript'"));
  }
  SECTION("missing file") {
    const auto path = (dir.path() / "nope.pt").string();
    const std::string why = create_error(path);
    CHECK_THAT(why, Contains("no such file: " + path));
  }
  SECTION("a directory") {
    CHECK_THAT(create_error(dir.path().string()), Contains("is not a file"));
  }
  SECTION("not a TorchScript archive") {
    const auto path = (dir.path() / "garbage.pt").string();
    std::ofstream(path) << "this is not a zip archive\n";
    const std::string why = create_error(path);
    CHECK_THAT(why, Contains(path + " is not a TorchScript archive"));
    CHECK_THAT(why, Contains("torch.jit.script"));
  }
  SECTION("no parameters") {
    torch::jit::Module m = empty_module("NoParams");
    m.register_buffer("scale", torch::ones({}));
    m.define("def forward(self, x):\n    return torch.flatten(x, 1)[:, :10] * self.scale\n");
    const std::string why = create_error(save(m, dir, "noparams.pt"));
    CHECK_THAT(why, Contains("has no parameters, so there is nothing to train"));
    CHECK_THAT(why, Contains("torch.jit.freeze"));
  }
  SECTION("parameters that are all frozen") {
    torch::jit::Module m = tiny_net(3, 8, 10);
    for (auto p : m.parameters()) p.set_requires_grad(false);
    CHECK_THAT(create_error(save(m, dir, "frozen.pt")), Contains("none requires grad"));
  }
  SECTION("wrong input shape: the shape tried and the module's own error") {
    // Exported for 8x8 images; the data loader gives 16x16 ones.
    const std::string why =
        create_error(save(tiny_net(3, 8, 10), dir, "tiny.pt"), ModelContext{10, {3, 16, 16}});
    CHECK_THAT(why, Contains("forward fails on a dummy batch of shape [2, 3, 16, 16]"));
    CHECK_THAT(why, Contains("data.image_size"));
    // The module's error: the addmm's shapes (2 x 1024 against 256 x 10).
    CHECK_THAT(why, Contains("1024"));
    CHECK_THAT(why, Contains("256"));
  }
  SECTION("wrong channel count") {
    const std::string why =
        create_error(save(tiny_net(3, 8, 10), dir, "tiny.pt"), ModelContext{10, {1, 8, 8}});
    CHECK_THAT(why, Contains("[2, 1, 8, 8]"));
  }
  SECTION("wrong number of classes") {
    const std::string why = create_error(save(tiny_net(3, 8, 5), dir, "five.pt"));
    CHECK_THAT(why, Contains("returned shape [2, 5]"));
    CHECK_THAT(why, Contains("[2, 10]"));
    CHECK_THAT(why, Contains("export the model for 10 classes"));
  }
  SECTION("an output that is not one tensor") {
    torch::jit::Module m = tiny_net(3, 8, 10);
    m.define("def pair(self, x):\n    y = self.forward(x)\n    return (y, y)\n");
    // Re-export with forward returning a tuple, as torchvision's Inception does in training.
    torch::jit::Module t = empty_module("Pair");
    t.register_module("net", m);
    t.define("def forward(self, x):\n    return self.net.pair(x)\n");
    const std::string why = create_error(save(t, dir, "pair.pt"));
    CHECK_THAT(why, Contains("returned a Tuple in training mode"));
  }
}

TEST_CASE("torchscript: the create-time check leaves the module as it was", "[torchscript]") {
  test::TempDir dir;
  auto model = create(save(tiny_net(3, 8, 10), dir, "tiny.pt"));
  // The dummy forward ran in training mode, but its buffer update was rolled back.
  CHECK(model->module().named_buffers()["train_calls"].item<std::int64_t>() == 0);
}

TEST_CASE("torchscript: parameters keep the Python names and are the module's own tensors",
          "[torchscript]") {
  test::TempDir dir;
  torch::jit::Module outer = empty_module("Outer");
  outer.register_module("body", tiny_net(3, 8, 10));
  outer.define("def forward(self, x):\n    return self.body.forward(x)\n");
  auto model = create(save(outer, dir, "outer.pt"));
  auto names = model->module().named_parameters().keys();
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"body.conv_bias", "body.conv_weight", "body.fc_bias",
                                          "body.fc_weight"});
  CHECK(model->module().named_buffers().contains("body.train_calls"));
}

TEST_CASE("torchscript: device, dtype and layout moves and optimizer steps reach the module",
          "[torchscript]") {
  test::TempDir dir;
  auto model = create(save(tiny_net(3, 8, 10), dir, "tiny.pt"));
  auto& net = model->module();
  const auto x = torch::randn({4, 3, 8, 8});
  const auto y = torch::randint(0, 10, {4});

  SECTION("an optimizer step on parameters() changes what forward computes") {
    net.train();
    const auto before = model->forward(x).detach().clone();
    const auto weight_before = param(*model, "fc_weight").detach().clone();
    torch::optim::SGD sgd(net.parameters(), torch::optim::SGDOptions(0.5));
    sgd.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    // Gradients flowed through the TorchScript graph to the wrapper's parameters.
    REQUIRE(param(*model, "fc_weight").grad().defined());
    CHECK(param(*model, "conv_weight").grad().abs().sum().item<double>() > 0);
    sgd.step();
    CHECK_FALSE(torch::equal(param(*model, "fc_weight"), weight_before));
    const auto after = model->forward(x).detach();
    CHECK_FALSE(torch::allclose(after, before));
    // ... and the step lowered the loss on that batch, as a real step must.
    CHECK(torch::nn::functional::cross_entropy(after, y).item<double>() < loss.item<double>());
  }
  // The same Tensor::set_data that nn::Module::to uses for a device (tests/gpu moves it to CUDA;
  // the meta device cannot stand in here, as set_data refuses CPU -> meta).
  SECTION("to(double) converts the tensors the TorchScript module runs with") {
    net.to(torch::kDouble);
    CHECK(param(*model, "conv_weight").scalar_type() == torch::kDouble);
    // A float64 batch only works if the module's own weights are float64 too.
    CHECK(model->forward(x.to(torch::kDouble)).scalar_type() == torch::kDouble);
    CHECK_THROWS_WITH(model->forward(x), Contains("forward failed on input [4, 3, 8, 8] (Float"));
  }
  SECTION("channels-last conversion by set_data, as the runner does it") {
    torch::NoGradGuard no_grad;
    net.eval();
    const auto before = model->forward(x);
    for (auto& p : net.parameters()) {
      if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
    }
    CHECK(param(*model, "conv_weight").is_contiguous(at::MemoryFormat::ChannelsLast));
    CHECK_FALSE(param(*model, "conv_weight").is_contiguous());
    // The layout changed, not the weights: a channels-last batch gives the same logits.
    const auto after = model->forward(x.contiguous(at::MemoryFormat::ChannelsLast));
    CHECK(torch::allclose(after, before, 1e-5, 1e-6));
  }
}

TEST_CASE("torchscript: train() and eval() reach the module's self.training", "[torchscript]") {
  test::TempDir dir;
  auto model = create(save(tiny_net(3, 8, 10), dir, "tiny.pt"));
  auto calls = [&] { return model->module().named_buffers()["train_calls"].item<std::int64_t>(); };
  const auto x = torch::zeros({2, 3, 8, 8});
  model->module().train();
  model->forward(x);
  CHECK(calls() == 1);
  model->module().eval();
  model->forward(x);
  CHECK(calls() == 1);
  model->module().train(true);
  model->forward(x);
  CHECK(calls() == 2);
}

TEST_CASE("torchscript: eager autocast reaches the ops inside the module", "[torchscript]") {
  test::TempDir dir;
  auto model = create(save(tiny_net(3, 8, 10), dir, "tiny.pt"));
  const auto x = torch::randn({2, 3, 8, 8});
  CHECK(model->forward(x).scalar_type() == torch::kFloat);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  const auto dtype = model->forward(x).scalar_type();
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  CHECK(dtype == torch::kBFloat16);
}

TEST_CASE("torchscript: a TorchScript model trains through the runner like a built-in one",
          "[torchscript][runner]") {
  test::TempDir dir;
  const std::string path = save(tiny_net(3, 8, 10), dir, "tiny.pt");
  RunSpec spec = test::tiny_net_spec(path);

  SECTION("fp32, contiguous") {
    const auto doc = run_one(spec, test::built_plugins());
    INFO(doc.dump(2));
    REQUIRE(doc["status"] == "ok");
    const auto& m = doc["metrics"];
    CHECK(m["loss_last"].get<double>() < 0.5 * m["loss_first"].get<double>());
    // The checksum is of the wrapper's parameters after training; they moved from the start.
    double start = 0;
    for (const auto& p : tiny_net(3, 8, 10).parameters()) start += p.sum().item<double>();
    CHECK(m["param_checksum"].get<double>() != Approx(start).epsilon(1e-6));
  }
  SECTION("amp bf16, channels-last") {
    spec.precision = test::choice("amp", {{"dtype", std::string("bf16")}});
    spec.memory_format = "channels_last";
    const auto doc = run_one(spec, test::built_plugins());
    INFO(doc.dump(2));
    REQUIRE(doc["status"] == "ok");
    CHECK(doc["metrics"]["loss_last"].get<double>() <
          0.7 * doc["metrics"]["loss_first"].get<double>());
  }
  SECTION("an unusable archive fails the run with the reason, before any step") {
    spec.model = test::choice("torchscript", {{"path", (dir.path() / "missing.pt").string()}});
    const auto doc = run_one(spec, test::built_plugins());
    CHECK(doc["status"] == "failed");
    CHECK_THAT(doc["error"].get<std::string>(), Contains("no such file"));
    CHECK_FALSE(doc.contains("steps"));
  }
}
