// Helpers for the migration tests: a frozen schema file's text, and a database's schema as the
// comparable list a migrated file and a new one must share.
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "storage/sqlite.h"

namespace orch::test {

/// The whole text of `path` (a file of the source tree); fails the test when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Type, name and SQL of every schema object, sorted: what must be equal between a migrated
/// file and a new one.
inline std::vector<std::string> schema_of(const storage::Database& db) {
  std::vector<std::string> out;
  storage::Statement st(db,
                        "SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM "
                        "sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name");
  while (st.step()) out.push_back(st.column_text(0));
  return out;
}

}  // namespace orch::test
