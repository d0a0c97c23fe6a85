// The one translation unit that instantiates Catch2's runner (Catch2 v2 single header).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
