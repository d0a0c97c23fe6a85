#include "cli/number_checks.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <functional>

#include "text/terminal_text.h"

namespace orch::cli {
namespace {

// A validator for a finite number accepted by `allowed`; `what` says what is allowed ("a
// number 0 or more") in every refusal, with the value as given (escaped: it is the user's text).
CLI::Validator finite_number(std::function<bool(double)> allowed, const std::string& what,
                             const std::string& description) {
  return CLI::Validator(
      [allowed = std::move(allowed), what](std::string& input) -> std::string {
        const std::string shown = "'" + terminal_text(input) + "'";
        const char* begin = input.c_str();
        char* end = nullptr;
        const double v = std::strtod(begin, &end);
        if (input.empty() || end == begin || *end != '\0') {
          return shown + " is not a number: give " + what;
        }
        if (std::isnan(v) || std::isinf(v)) {
          return shown + " is not a finite number: give " + what;
        }
        if (!allowed(v)) return shown + " is out of range: give " + what;
        return {};
      },
      description);
}

}  // namespace

CLI::Validator non_negative_number() {
  return finite_number([](double v) { return v >= 0; }, "a number 0 or more", "NONNEGATIVE")
      .name("NONNEGATIVE");
}

CLI::Validator positive_number() {
  return finite_number([](double v) { return v > 0; }, "a number greater than 0", "POSITIVE")
      .name("POSITIVE");
}

CLI::Validator number_between(double low, double high, const std::string& type) {
  return finite_number([low, high](double v) { return v >= low && v <= high; },
                       fmt::format("a number from {} to {}", low, high),
                       fmt::format("{} in [{} - {}]", type, low, high));
}

}  // namespace orch::cli
