#include "plan/memory_size.h"

#include <cctype>
#include <cmath>
#include <stdexcept>

namespace orch {

std::int64_t parse_memory_size(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return std::invalid_argument("'" + text + "' is not a memory size (" + why +
                                 "); write a positive number with an optional unit: B, KB, "
                                 "MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of "
                                 "1024), e.g. 24GiB");
  };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad("no number");
  }
  if (!std::isfinite(value) || value <= 0) throw bad("not above zero");
  std::string unit;
  for (std::size_t i = used; i < text.size(); ++i) {
    if (!std::isspace(static_cast<unsigned char>(text[i])))
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  }
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  const char* decimal[] = {"kb", "mb", "gb", "tb"};
  const char* binary[] = {"kib", "mib", "gib", "tib"};
  for (int i = 0; i < 4; ++i) {
    if (unit == decimal[i]) scale = std::pow(1000.0, i + 1);
    if (unit == binary[i]) scale = std::pow(1024.0, i + 1);
  }
  if (scale == 0) throw bad("unknown unit '" + unit + "'");
  const double bytes = std::round(value * scale);
  if (bytes < 1) throw bad("less than a byte");
  if (bytes > 9.0e18) throw bad("too large");
  return static_cast<std::int64_t>(bytes);
}

}  // namespace orch
