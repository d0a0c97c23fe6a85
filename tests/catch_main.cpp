// The one translation unit that instantiates Catch2's runner (Catch2 v2 single header).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "private_lock_dir.h"

int main(int argc, char* argv[]) {
  orch::test::use_private_lock_dir();
  return Catch::Session().run(argc, argv);
}
