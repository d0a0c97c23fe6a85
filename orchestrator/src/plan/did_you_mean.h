// "did you mean 'X'?": the closest known word to a misspelt one, and list joining for messages.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch {

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbouring characters each cost 1 ("presicion" is one edit from "precision").
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` if it is close enough to be a plausible typo.
std::optional<std::string> closest_word(std::string_view word,
                                        const std::vector<std::string>& candidates);

/// "unknown key 'x'" plus "; did you mean 'y'?" when there is a close candidate.
std::string unknown_with_suggestion(const std::string& what, const std::string& word,
                                    const std::vector<std::string>& candidates);

std::string join(const std::vector<std::string>& words, std::string_view sep = ", ");

}  // namespace orch
