// NVTX ranges for Nsight Systems timelines ("data", "forward", "backward", ...). Header-only
// NVTX v3: without a profiler attached a range costs a couple of branches, so ranges stay on in
// every build (the article's advice: mark the phases of a step so a timeline is readable).
#pragma once

#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define ORCH_HAVE_NVTX 1
#endif

namespace orch {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) {
#ifdef ORCH_HAVE_NVTX
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#ifdef ORCH_HAVE_NVTX
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace orch
