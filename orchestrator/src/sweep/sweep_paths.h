// How a sweep's name and its database's path become file names: the lock file and the folder
// of run files. Both must be one to one: two sweeps never share a lock or a folder, and one
// database file has one lock whatever spelling of its path a command was given.
#pragma once

#include <cstddef>
#include <string>

namespace orch::sweep {

/// The sweep's name as one file-name component, reversibly: letters, digits, '_', '-' and '.'
/// stay (except a leading '.'), every other byte becomes %XX. So "a/b" -> "a%2Fb" is not
/// "a_b", and ".." -> "%2E." stays inside the folder it is put in. An encoding longer than
/// kMaxSweepComponentBytes (a long non-ASCII name: three bytes per byte) is cut to a prefix and
/// a hash of the whole name, so the lock's file name (the database's, the name, ".lock") stays
/// under the file system's 255 bytes for any database name of up to about 120 bytes.
std::string sweep_file_component(const std::string& sweep);
inline constexpr std::size_t kMaxSweepComponentBytes = 120;

/// The database's path with symbolic links, "." and ".." resolved (for a file that does not
/// exist yet, its folder's), so a symlink or another spelling of one file meets one lock.
std::string real_db_path(const std::string& db);

/// Creates the folder a database is to be written in, with its parents, if missing: a command
/// that writes `--db results/night.db` in a fresh checkout makes `results/` as `mkdir -p` would.
/// Throws EnvironmentFault (naming the folder and the error) where it cannot, and, creating
/// nothing, for a path that ends in '/' (a folder's).
void create_database_folder(const std::string& db);

/// Whether anything is at `path` (a dangling symbolic link counts).
bool path_exists(const std::string& path);

/// Removes the database file at `db` that this process created and could not finish (a full
/// disk: nothing, or part of the schema, written), with its -wal, -journal and -shm files.
/// Anything that is not a regular file of one name, or is larger than a schema, stays.
void remove_new_database(const std::string& db);

}  // namespace orch::sweep
