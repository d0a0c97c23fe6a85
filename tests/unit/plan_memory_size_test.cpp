// Memory sizes as people write them (ORCH_GPU_MEMORY_CAP): units, spaces, case, and what is
// refused.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "plan/memory_size.h"

namespace orch {
namespace {

TEST_CASE("memory sizes: binary and decimal units, bare bytes", "[plan][memory_size]") {
  CHECK(parse_memory_size("24GiB") == 24LL * 1024 * 1024 * 1024);
  CHECK(parse_memory_size("24 GB") == 24000000000LL);
  CHECK(parse_memory_size("24gib") == 24LL << 30);
  CHECK(parse_memory_size("512MiB") == 512LL << 20);
  CHECK(parse_memory_size("1.5TiB") == 3LL << 39);
  CHECK(parse_memory_size("2KB") == 2000);
  CHECK(parse_memory_size("25769803776") == 24LL << 30);
  CHECK(parse_memory_size("100B") == 100);
}

TEST_CASE("memory sizes: anything else is refused, saying what is allowed", "[plan][memory_size]") {
  for (const char* bad : {"", "GiB", "24 parsecs", "-1GiB", "0", "24GiBs", "nan", "inf GB"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_memory_size(bad),
                      Catch::Contains("is not a memory size") && Catch::Contains("KiB, MiB, GiB"));
  }
  CHECK_THROWS_AS(parse_memory_size("99999999TiB"), std::invalid_argument);
}

}  // namespace
}  // namespace orch
