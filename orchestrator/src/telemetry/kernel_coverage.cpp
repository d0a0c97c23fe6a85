#include "telemetry/kernel_coverage.h"

#include <fmt/format.h>

#include <regex>
#include <stdexcept>

namespace orch {

std::vector<CudaArch> parse_cuda_architectures(const std::string& list) {
  std::vector<CudaArch> out;
  static const std::regex form("([0-9]+)([0-9])([af]?)(-real|-virtual)?");
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find_first_of(";,", start), list.size());
    const std::string entry = list.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) continue;
    std::smatch m;
    if (!std::regex_match(entry, m, form)) {
      throw std::invalid_argument(fmt::format(
          "CUDA architecture '{}' (in '{}') is not of the form NN, NN-real or NN-virtual, "
          "with an optional a or f after the number (90a-real)",
          entry, list));
    }
    CudaArch a;
    a.major = std::stoi(m[1].str());
    a.minor = std::stoi(m[2].str());
    a.variant = m[3].length() ? m[3].str()[0] : 0;
    a.real = m[4].str() != "-virtual";
    a.virtual_ = m[4].str() != "-real";
    out.push_back(a);
  }
  return out;
}

const char* to_string(KernelCoverage c) {
  switch (c) {
    case KernelCoverage::kNative:
      return "native";
    case KernelCoverage::kPtxJit:
      return "ptx_jit";
    case KernelCoverage::kNone:
      return "none";
    case KernelCoverage::kTooOld:
      return "too_old";
    case KernelCoverage::kNotBuilt:
      return "not_built";
  }
  return "?";
}

CoverageDecision kernel_coverage(const std::vector<CudaArch>& built, int major, int minor) {
  CoverageDecision d;
  if (built.empty()) {
    d.coverage = KernelCoverage::kNotBuilt;
    return d;
  }
  if (major * 10 + minor < kKernelMinComputeCapability) {
    d.coverage = KernelCoverage::kTooOld;
    return d;
  }
  const int device = major * 10 + minor;
  for (const CudaArch& a : built) {
    if (!a.real || a.major != major || a.minor > minor) continue;
    if (a.variant == 'a' && a.minor != minor) continue;
    if (!d.used || a.number() > d.used->number()) d.used = a;
  }
  if (d.used) {
    d.coverage = KernelCoverage::kNative;
    return d;
  }
  for (const CudaArch& a : built) {
    if (!a.virtual_ || a.number() > device) continue;
    // PTX of an "a" or "f" target runs only on that architecture (or family) itself.
    if (a.variant == 'a' && a.number() != device) continue;
    if (a.variant == 'f' && a.major != major) continue;
    if (!d.used || a.number() > d.used->number()) d.used = a;
  }
  d.coverage = d.used ? KernelCoverage::kPtxJit : KernelCoverage::kNone;
  return d;
}

std::string describe_architectures(const std::vector<CudaArch>& built) {
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  for (const CudaArch& a : built) {
    const std::string v = a.variant ? std::string(1, a.variant) : "";
    if (a.real) add(fmt::format("sm_{}{}", a.number(), v));
  }
  for (const CudaArch& a : built) {
    const std::string v = a.variant ? std::string(1, a.variant) : "";
    if (a.virtual_) add(fmt::format("PTX compute_{}{}", a.number(), v));
  }
  return out.empty() ? "none" : out;
}

}  // namespace orch
