// Edit distance and suggestions (see did_you_mean.h).
#include "plan/did_you_mean.h"

#include <algorithm>

namespace orch {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::optional<std::string> closest_word(std::string_view word,
                                        const std::vector<std::string>& candidates) {
  // A third of the word's length (at least 1, at most 3) keeps suggestions plausible: "lr" is
  // not suggested for "xy", but "batchsize" gets "batch_size".
  const std::size_t limit = std::clamp<std::size_t>((word.size() + 2) / 3, 1, 3);
  std::optional<std::string> best;
  std::size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string unknown_with_suggestion(const std::string& what, const std::string& word,
                                    const std::vector<std::string>& candidates) {
  std::string msg = "unknown " + what + " '" + word + "'";
  if (auto s = closest_word(word, candidates)) msg += "; did you mean '" + *s + "'?";
  return msg;
}

std::string join(const std::vector<std::string>& words, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i) out += sep;
    out += words[i];
  }
  return out;
}

}  // namespace orch
