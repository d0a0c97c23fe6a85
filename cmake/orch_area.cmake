# Helpers for the host's areas (orchestrator/src/<area>/, storage/): each area is one library
# target that exposes its own headers and nothing else.

# orch_expose_headers(target dir prefix): `#include "<prefix>/x.h"` finds <dir>/x.h for
# <target> and every target that links it, and for no other. The include root is a folder in
# the build tree holding one symbolic link, <prefix> -> <dir>; exposing orchestrator/src itself
# would let any target include any area's headers without a link edge saying so.
function(orch_expose_headers target dir prefix)
  set(root ${CMAKE_BINARY_DIR}/include-roots/${target})
  file(MAKE_DIRECTORY ${root})
  if(NOT EXISTS ${root}/${prefix})
    file(CREATE_LINK ${dir} ${root}/${prefix} SYMBOLIC)
  endif()
  target_include_directories(${target} PUBLIC ${root})
endfunction()

# orch_area(target [TORCH] LINK deps...): a static library of every .cpp in the calling
# folder, its headers exposed under the folder's name.
function(orch_area target)
  cmake_parse_arguments(A "TORCH" "" "LINK" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/main\\.cpp$")
  add_library(${target} STATIC ${sources})
  get_filename_component(prefix ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  orch_expose_headers(${target} ${CMAKE_CURRENT_SOURCE_DIR} ${prefix})
  target_link_libraries(${target} PUBLIC ${A_LINK})
  if(A_TORCH)
    orch_use_torch(${target})
    # Host code that includes LibTorch links it publicly so tests and the executable get it too.
    target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  endif()
endfunction()
