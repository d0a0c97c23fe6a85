# orch_add_plugin(NAME SOURCES... [OUTPUT_DIR dir]) for plugins built outside orch's tree,
# against the installed SDK. It builds what orch's own orch_add_plugin builds: a MODULE library
# lib<NAME>.so, C++20, position-independent, compiled with LibTorch's flags (TORCH_CXX_FLAGS
# carries -D_GLIBCXX_USE_CXX11_ABI) and hidden visibility, so the library exports only the two
# symbols ORCH_PLUGIN marks (orch_plugin_abi, orch_plugin_factory).
#
# The ABI stamp needs no flags of its own: ORCH_PLUGIN fills it in from the headers (SDK
# version from <orch/plugin.h>, compiler, _GLIBCXX_USE_CXX11_ABI, TORCH_VERSION from
# <torch/version.h>). orch compares it with its own when loading and refuses a library whose
# SDK version, C++ ABI, compiler family or LibTorch major.minor differ. The checks below report
# the LibTorch and compiler mismatches here, at configure time, instead.
function(orch_add_plugin name)
  cmake_parse_arguments(P "" "OUTPUT_DIR" "" ${ARGN})
  if(NOT P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "orch_add_plugin(${name}): no source files given")
  endif()
  if(NOT DEFINED TORCH_LIBRARIES OR NOT DEFINED Torch_VERSION)
    message(FATAL_ERROR "orch_add_plugin(${name}): call find_package(Torch REQUIRED) first; "
                        "orch plugins link the LibTorch that orch uses (${orch_TORCH_VERSION})")
  endif()
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _torch_mm "${Torch_VERSION}")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _orch_torch_mm "${orch_TORCH_VERSION}")
  if(NOT _torch_mm STREQUAL _orch_torch_mm)
    message(FATAL_ERROR "orch_add_plugin(${name}): this LibTorch is ${Torch_VERSION}, but orch "
                        "was built against ${orch_TORCH_VERSION}; orch refuses plugins built "
                        "against another LibTorch major.minor. Point CMAKE_PREFIX_PATH at "
                        "the LibTorch orch uses.")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL orch_CXX_COMPILER_ID)
    message(FATAL_ERROR "orch_add_plugin(${name}): the compiler is ${CMAKE_CXX_COMPILER_ID}, but "
                        "orch was built with ${orch_CXX_COMPILER_ID} ${orch_CXX_COMPILER_VERSION}; "
                        "orch refuses plugins from another compiler family")
  endif()

  add_library(${name} MODULE ${P_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_STANDARD 20
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(P_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${P_OUTPUT_DIR}")
  endif()
  separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(${name} PRIVATE ${_torch_flags})
  target_link_libraries(${name} PRIVATE orch::sdk ${TORCH_LIBRARIES})
endfunction()
