#include "runner/divergence.h"

#include <fmt/format.h>

#include <cmath>

namespace orch {
namespace {

// "nan", "inf" or "-inf": a NaN's sign bit (x86 makes -nan of inf - inf) means nothing.
std::string spell(double v) { return std::isnan(v) ? "nan" : fmt::format("{}", v); }

}  // namespace

std::optional<std::string> divergence_error(const std::vector<double>& step_losses,
                                            double param_checksum) {
  for (std::size_t i = 0; i < step_losses.size(); ++i) {
    if (std::isfinite(step_losses[i])) continue;
    std::string text = fmt::format("the loss became {} at measured step {} of {}",
                                   spell(step_losses[i]), i, step_losses.size());
    if (i > 0)
      text += fmt::format(" (step {}: {:g})", i - 1, step_losses[i - 1]);
    else
      text += ", the first";
    return text + "; lower the learning rate or use a more stable precision";
  }
  if (!std::isfinite(param_checksum)) {
    return fmt::format(
        "the weights became {} after the last measured step (every loss was finite); lower the "
        "learning rate or use a more stable precision",
        spell(param_checksum));
  }
  return std::nullopt;
}

}  // namespace orch
