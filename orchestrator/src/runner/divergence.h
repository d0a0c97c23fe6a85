// Divergence: a run whose loss became NaN or infinite measured its speed on numbers that mean
// nothing, so it is recorded `diverged` instead of `ok` and left out of the ranking.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace orch {

/// Why the run diverged, from what is already on the host after the measured steps (reading a
/// loss during them would add a host synchronisation per step and change what is measured):
/// the first measured step whose loss is not finite, with its value and the last finite loss
/// before it; or, when every loss is finite, a parameter checksum that is not (the last
/// optimizer step broke the weights). nullopt when the run trained on finite numbers.
std::optional<std::string> divergence_error(const std::vector<double>& step_losses,
                                            double param_checksum);

}  // namespace orch
