# Warnings for orch's own C and C++ code: -Wall -Wextra on every target defined after this file
# is included (directory-level, so plugins and tests under add_subdirectory get them too), and
# -Werror with ORCH_WERROR=ON, which CI sets (the Makefile passes it when CI=true) so a warning
# fails the build there instead of scrolling past.
# Third-party headers stay quiet: LibTorch, yaml-cpp, Catch2 and the rest come in through
# imported targets, whose include folders CMake passes as -isystem. nvcc-compiled sources keep
# their own flags (the generator expression leaves the CUDA language out).
option(ORCH_WERROR "Treat compiler warnings in orch's own code as errors" OFF)

set(ORCH_WARNING_FLAGS -Wall -Wextra)
# GCC 12 (Debian's, CI's) at -O2/-O3 reports -Wrestrict inside libstdc++'s std::string when a
# literal is concatenated with a string (GCC bugs 105329, 105651): no code of ours is at fault,
# and the warning moves to another line with every inlining decision.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND ORCH_WARNING_FLAGS -Wno-restrict)
endif()
# GCC 13's -Wdangling-reference flags every `const T& x = f(obj, std::string(...))` whose f
# returns a reference into obj (nlohmann's lookups, our field readers), a documented source of
# false positives; the rest of -Wall stays.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 13)
  list(APPEND ORCH_WARNING_FLAGS -Wno-dangling-reference)
endif()
if(ORCH_WERROR)
  list(APPEND ORCH_WARNING_FLAGS -Werror)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${ORCH_WARNING_FLAGS}>")
