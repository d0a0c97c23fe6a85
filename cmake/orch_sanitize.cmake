# ORCH_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer on every target defined after
# this file is included. Meant for the LibTorch-free build (ORCH_WITH_TORCH=OFF, `make
# sanitize`): LibTorch and CUDA are not built with the sanitizers, so their allocations and
# static constructors would drown the report in noise, while the torch-free libraries (plan,
# store, telemetry, report, sweep, cluster, dataset) and their unit tests are all ours.
# Undefined behaviour aborts the test (-fno-sanitize-recover) instead of printing and going on.
# GCC's manual warns that the sanitizers raise false positives of other warnings, most notably
# -Wmaybe-uninitialized (GCC 12 reports them inside <regex> and <functional>), and advises
# against -Werror with them: `make sanitize` never passes ORCH_WERROR (the main build checks
# the warnings), and that one warning is off here.
option(ORCH_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(ORCH_SANITIZE)
  if(ORCH_WITH_TORCH)
    message(FATAL_ERROR "ORCH_SANITIZE=ON needs ORCH_WITH_TORCH=OFF (see cmake/orch_sanitize.cmake)")
  endif()
  set(ORCH_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
  # -O1 -g1 after the build type's flags: the optimisation AddressSanitizer's documentation
  # recommends, and line tables enough for its reports. It compiles the Catch2 test files
  # about three times faster than -O2 -g, which is what keeps this build inside CI's time.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${ORCH_SANITIZE_FLAGS}>"
                      "$<$<COMPILE_LANGUAGE:C,CXX>:-Wno-maybe-uninitialized>"
                      "$<$<COMPILE_LANGUAGE:C,CXX>:-O1>" "$<$<COMPILE_LANGUAGE:C,CXX>:-g1>")
  add_link_options(-fsanitize=address,undefined)
endif()

# ORCH_TSAN=ON: ThreadSanitizer instead, for the torch-free build's threads (`make tsan`): the
# NVML and host samplers, the device and sweep locks' waiters, the child-process launcher, the
# store read while written, the dataset tools' worker pool. A separate build folder (build-tsan):
# ThreadSanitizer cannot be combined with AddressSanitizer. LibTorch's threads stay out of it
# for the same reason as above (not instrumented: every access through it would be reported).
option(ORCH_TSAN "Build with ThreadSanitizer (torch-free builds only)" OFF)
if(ORCH_TSAN)
  if(ORCH_WITH_TORCH OR ORCH_SANITIZE)
    message(FATAL_ERROR "ORCH_TSAN=ON needs ORCH_WITH_TORCH=OFF and ORCH_SANITIZE=OFF")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=thread>"
                      "$<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>"
                      "$<$<COMPILE_LANGUAGE:C,CXX>:-Wno-maybe-uninitialized>"
                      "$<$<COMPILE_LANGUAGE:C,CXX>:-O1>" "$<$<COMPILE_LANGUAGE:C,CXX>:-g1>")
  add_link_options(-fsanitize=thread)
endif()
