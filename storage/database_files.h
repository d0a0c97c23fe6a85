// The files an SQLite database is made of on disk, for the code that must never write over,
// through or beside them: the database file and the companions SQLite keeps next to it.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace orch::storage {

/// What SQLite appends to a database's path for its rollback journal, its write-ahead log and
/// the log's shared-memory index.
inline constexpr std::array<const char*, 3> kCompanionSuffixes = {"-journal", "-wal", "-shm"};

/// The spellings SQLite names those companions by: the path as given and, links resolved, its
/// real path where that differs.
std::vector<std::string> database_spellings(const std::string& path);

}  // namespace orch::storage
