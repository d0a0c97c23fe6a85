# `cmake --install <build> --prefix <prefix>` installs the plugin SDK, so plugins can be built
# outside this tree (docs/plugins.md, examples/out-of-tree-plugin/):
#   <prefix>/include/orch/*.h               the SDK headers (the interfaces every plugin implements)
#   <prefix>/include/orch/imagedata/*.h, <prefix>/lib/liborch_imagedata.a
#                                           image folders, JPEG decode, crops, cache, sampling
#   <prefix>/include/orch/loaderkit/*.h     the CPU loaders' batch pipeline (header-only)
#   <prefix>/lib/cmake/orch/orchConfig.cmake  find_package(orch): orch::sdk, orch::imagedata,
#                                           orch::loaderkit, orch_add_plugin
#   <prefix>/lib/cmake/orch/orchConfigVersion.cmake, orchPlugin.cmake
# The two libraries install their own files (orchestrator/lib/<name>/CMakeLists.txt, component
# sdk); this file writes the package that describes them. orch itself and its plugins are not
# installed: they run from the build folder.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The SDK's ABI version, read from the header that defines it, for the config's checks.
file(STRINGS ${CMAKE_SOURCE_DIR}/orchestrator/include/orch/plugin.h _orch_sdk_line
     REGEX "^#define ORCH_SDK_VERSION [0-9]+")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" ORCH_SDK_ABI_VERSION "${_orch_sdk_line}")

file(GLOB ORCH_SDK_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/orchestrator/include/orch/*.h)
install(FILES ${ORCH_SDK_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/orch COMPONENT sdk)

set(ORCH_SDK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/orch)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/orchConfig.cmake.in
  ${CMAKE_BINARY_DIR}/sdk/orchConfig.cmake INSTALL_DESTINATION ${ORCH_SDK_CMAKE_DIR})
# 0.x: a new minor version may change the SDK (ORCH_SDK_VERSION is the real ABI contract).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/sdk/orchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/sdk/orchConfig.cmake ${CMAKE_BINARY_DIR}/sdk/orchConfigVersion.cmake
              ${CMAKE_SOURCE_DIR}/cmake/orchPlugin.cmake
        DESTINATION ${ORCH_SDK_CMAKE_DIR} COMPONENT sdk)
