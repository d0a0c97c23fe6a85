// The TorchScript wrapper: loading with clear errors, mirroring the parameters, the create-time
// forward check (see jit_model.h).
#include "jit_model.h"

#include <c10/util/Exception.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace orch::torchscript {
namespace {

namespace fs = std::filesystem;

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream s;
  s << shape;
  return s.str();
}

// The module's own error, without LibTorch's C++ backtrace (the TorchScript traceback, which
// points into the user's Python code, is kept). The interpreter throws c10::Error for failing
// ops and torch::jit::JITException (a std::runtime_error) for a `raise` in the module's code.
std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

// Registers `jit`'s direct parameters and buffers on `into`, then mirrors each child module.
// nn::Module names may not contain dots, so the tree is rebuilt rather than flattened: the
// names then read exactly as in Python (layer1.0.conv1.weight).
void mirror(const torch::jit::Module& jit, torch::nn::Module& into) {
  for (const auto& p : jit.named_parameters(/*recurse=*/false)) {
    into.register_parameter(p.name, p.value, p.value.requires_grad());
  }
  for (const auto& b : jit.named_buffers(/*recurse=*/false)) into.register_buffer(b.name, b.value);
  for (const auto& child : jit.named_children()) {
    auto holder = std::make_shared<torch::nn::Module>(child.name);
    mirror(child.value, *holder);
    into.register_module(child.name, holder);
  }
}

std::string describe_output(const c10::IValue& out) {
  if (out.isTensor()) return "a tensor of shape " + shape_text(out.toTensor().sizes());
  return "a " + out.tagKind();
}

}  // namespace

JitModule::JitModule(torch::jit::Module module, std::string label)
    : torch::nn::Module("TorchScript"), jit_(std::move(module)), label_(std::move(label)) {
  mirror(jit_, *this);
  // The host puts the model in training mode itself, but the archive may have been saved in
  // eval mode; start from the same state on both sides.
  train(jit_.is_training());
}

void JitModule::train(bool on) {
  torch::nn::Module::train(on);
  jit_.train(on);
}

torch::Tensor JitModule::forward(const torch::Tensor& images) {
  c10::IValue out;
  const auto context = [&] {
    return "TorchScript model " + label_ + ": forward failed on input " +
           shape_text(images.sizes()) + " (" + std::string(c10::toString(images.scalar_type())) +
           ", " + images.device().str() + ")";
  };
  try {
    out = jit_.forward({images});
  } catch (c10::Error& e) {
    // Rethrown as the same type with the model named: the runner tells out-of-memory (a
    // c10::OutOfMemoryError, or the CPU allocator's plain c10::Error) from a failure by it.
    e.add_context(context());
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(context() + ": " + e.what());
  }
  if (!out.isTensor()) {
    throw std::runtime_error("TorchScript model " + label_ + ": forward returned " +
                             describe_output(out) +
                             "; orch needs one tensor of logits, N x num_classes");
  }
  return out.toTensor();
}

torch::jit::Module load_archive(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw std::invalid_argument("model.path: no such file: " + path.string() +
                                " (relative paths are taken from the current directory, " +
                                fs::current_path(ec).string() + ")");
  }
  if (!fs::is_regular_file(path, ec)) {
    throw std::invalid_argument("model.path: " + path.string() + " is not a file");
  }
  torch::jit::Module module;
  try {
    module = torch::jit::load(path.string(), torch::kCPU);
  } catch (const std::exception& e) {
    throw std::invalid_argument(
        "model.path: " + path.string() +
        " is not a TorchScript archive (write one with torch.jit.script(model).save(path), "
        "e.g. scripts/export_torchscript.py; a torch.save() checkpoint or state_dict is not "
        "one): " +
        message_of(e));
  }
  std::int64_t params = 0, trainable = 0;
  for (const auto& p : module.parameters()) {
    ++params;
    if (p.requires_grad()) ++trainable;
  }
  if (params == 0) {
    throw std::invalid_argument(
        "TorchScript model " + path.string() +
        " has no parameters, so there is nothing to train (a module frozen with "
        "torch.jit.freeze, or optimized for inference, keeps its weights as constants; export "
        "the module with torch.jit.script and without freezing)");
  }
  if (trainable == 0) {
    throw std::invalid_argument("TorchScript model " + path.string() + " has " +
                                std::to_string(params) +
                                " parameters but none requires grad, so there is nothing to "
                                "train");
  }
  return module;
}

void check_forward(JitModule& model, const std::vector<std::int64_t>& input_shape,
                   std::int64_t num_classes) {
  if (input_shape.empty()) {
    throw std::invalid_argument("TorchScript model " + model.label() +
                                ": the data loader gave no sample shape to check it with");
  }
  std::vector<std::int64_t> shape{2};
  shape.insert(shape.end(), input_shape.begin(), input_shape.end());
  const std::string tried = shape_text(shape);
  const std::string where = "TorchScript model " + model.label() + ": ";

  // The check must leave no trace: BatchNorm's running statistics move in training mode, and
  // the graph executor would otherwise profile (and specialise for) this CPU call.
  torch::NoGradGuard no_grad;
  torch::jit::GraphOptimizerEnabledGuard no_optimize(false);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> saved;
  for (auto& b : model.buffers()) saved.emplace_back(b, b.clone());
  const bool was_training = model.is_training();
  model.train(true);
  c10::IValue out;
  try {
    out = model.jit().get_method("forward")({torch::zeros(shape)});
  } catch (const std::exception& e) {
    throw std::invalid_argument(
        where + "forward fails on a dummy batch of shape " + tried +
        " (2 x the data loader's sample shape C x H x W; the loader decides it: data.channels, "
        "data.image_size); was the model exported for another input shape? The module says: " +
        message_of(e));
  }
  for (auto& [live, copy] : saved) live.copy_(copy);
  model.train(was_training);

  const std::string want = shape_text({2, num_classes});
  if (!out.isTensor()) {
    throw std::invalid_argument(where + "forward on " + tried + " returned " +
                                describe_output(out) +
                                " in training mode; orch needs one tensor "
                                "of logits, " +
                                want);
  }
  const auto sizes = out.toTensor().sizes();
  if (sizes.size() != 2 || sizes[0] != 2 || sizes[1] != num_classes) {
    throw std::invalid_argument(
        where + "forward on " + tried + " returned shape " + shape_text(sizes) +
        "; orch needs N x num_classes logits, " + want +
        ". The class count comes from the data "
        "loader (data.classes for synthetic data, the folder count for imagefolder); export the "
        "model for " +
        std::to_string(num_classes) + " classes, or change the data's classes");
  }
}

}  // namespace orch::torchscript
