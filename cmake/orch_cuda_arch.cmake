# The GPU architectures orch's own CUDA kernels (fused batch-norm, max pooling, the nvjpeg
# crop) are compiled for: CMAKE_CUDA_ARCHITECTURES, CMake's usual setting.
#
# orch_cuda_arch_default() runs before find_package(Torch) (which enables CUDA). Unless the user
# gave a list, it picks every architecture of a discrete or data-centre card from 8.0 up that
# this nvcc can build, each as a machine-code image, plus PTX of the newest, which the driver
# compiles for any newer card. The kernels need 8.0 (bf16 arithmetic, cp.async); 8.7, 8.8, 10.3
# and 12.1 run the image of their family's lower minor version (8.6, 10.0, 12.0), so only the
# embedded 11.0 (Jetson Thor) is left without an image or PTX.
#
# orch_cuda_arch_apply() runs after find_package(Torch): Caffe2's CMake adds -gencode flags for
# TORCH_CUDA_ARCH_LIST to CMAKE_CUDA_FLAGS and hides CMAKE_CUDA_ARCHITECTURES behind a normal
# variable set to OFF; both are undone, so the targets made after it get this list.
set(ORCH_CUDA_ARCH_CANDIDATES 80 86 89 90 100 120)

function(orch_cuda_arch_default)
  get_property(help CACHE CMAKE_CUDA_ARCHITECTURES PROPERTY HELPSTRING)
  # Ours to (re)compute: unset; the value this function chose last time; or the compiler's
  # default that CMake itself cached when it enabled CUDA in a build folder made before this
  # file existed (CMake's help string, and no choice of ours recorded).
  if(DEFINED CMAKE_CUDA_ARCHITECTURES AND
     NOT (DEFINED ORCH_CUDA_ARCH_CHOSEN AND
          "${CMAKE_CUDA_ARCHITECTURES}" STREQUAL "${ORCH_CUDA_ARCH_CHOSEN}") AND
     NOT (NOT DEFINED ORCH_CUDA_ARCH_CHOSEN AND help STREQUAL "CUDA architectures"))
    unset(ORCH_CUDA_ARCH_CHOSEN CACHE)  # the user's list from now on, until they remove it
    return()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    return()  # no nvcc: no kernels (the plugins say so)
  endif()
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --list-gpu-arch OUTPUT_VARIABLE listed
                  RESULT_VARIABLE rc ERROR_QUIET)
  set(chosen "")
  foreach(arch IN LISTS ORCH_CUDA_ARCH_CANDIDATES)
    if(rc EQUAL 0 AND listed MATCHES "compute_${arch}[\r\n]")
      list(APPEND chosen ${arch}-real)
    endif()
  endforeach()
  if(NOT chosen)
    message(FATAL_ERROR "${CMAKE_CUDA_COMPILER} --list-gpu-arch names none of compute_80, 86, "
                        "89, 90, 100, 120 (exit ${rc}); orch's kernels need an nvcc from CUDA "
                        "11.8 or newer, or set -DCMAKE_CUDA_ARCHITECTURES yourself")
  endif()
  # The newest as machine code and PTX ("120" = 120-real + 120-virtual).
  list(POP_BACK chosen newest)
  string(REPLACE "-real" "" newest "${newest}")
  list(APPEND chosen ${newest})
  set(CMAKE_CUDA_ARCHITECTURES "${chosen}" CACHE STRING
      "GPU architectures for orch's CUDA kernels (default: every one nvcc builds from 8.0 up, PTX of the newest)"
      FORCE)
  set(ORCH_CUDA_ARCH_CHOSEN "${chosen}" CACHE INTERNAL "the CMAKE_CUDA_ARCHITECTURES orch chose")
endfunction()

function(orch_cuda_arch_apply)
  if(NOT CMAKE_CUDA_COMPILER)
    return()
  endif()
  string(REGEX REPLACE " *-gencode +arch=[^ ]+" "" flags "${CMAKE_CUDA_FLAGS}")
  set(CMAKE_CUDA_FLAGS "${flags}" PARENT_SCOPE)
  unset(CMAKE_CUDA_ARCHITECTURES PARENT_SCOPE)  # the normal variable: the cache entry shows again
  # Only forms whose meaning `orch doctor` can state (telemetry/kernel_coverage.h): a number
  # with an optional a/f suffix and -real or -virtual.
  set(archs "$CACHE{CMAKE_CUDA_ARCHITECTURES}")
  foreach(arch IN LISTS archs)
    if(NOT arch MATCHES "^([0-9]+)[af]?(-real|-virtual)?$" OR CMAKE_MATCH_1 LESS 80)
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES='${archs}': '${arch}' is not allowed; give "
                          "architectures 80 or newer as NN, NN-real (machine code only) or "
                          "NN-virtual (PTX only), e.g. 80-real;86-real;90 (orch's kernels need "
                          "compute capability 8.0)")
    endif()
  endforeach()
  # What the build holds, for `orch doctor` and the GPU tests.
  set(ORCH_CUDA_ARCHITECTURES "${archs}" PARENT_SCOPE)
  message(STATUS "orch's CUDA kernels: CMAKE_CUDA_ARCHITECTURES=${archs}")
endfunction()
