// Keeps every area library non-empty while its folder is still being filled (CMake refuses a
// static library without sources). Holds nothing.
namespace orch::detail {
void area_library_anchor() {}
}  // namespace orch::detail
