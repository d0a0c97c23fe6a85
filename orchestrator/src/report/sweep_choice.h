// Which sweep a read-only command shows: the one named, else the latest of an experiment,
// else the latest of all. The latest is the one whose run started last (Store::sweeps), so a
// resume that finds nothing to run leaves it where it was. Each unknown name is an InputError
// listing the choices.
#pragma once

#include <memory>
#include <string>

#include "storage/store.h"

namespace orch {

/// Opens the database for a read-only command; a missing file is an InputError, so reading
/// never creates a database, and the database is opened read-only (Store::ReadOnly): a file
/// that is not an orch database is refused, never given orch's schema. Only an older orch
/// database is opened for writing, to be migrated.
std::unique_ptr<storage::Store> open_existing_store(const std::string& path);

storage::SweepInfo choose_sweep(const storage::Store& store, const std::string& sweep_name,
                                const std::string& experiment = {});

/// "sweep NAME (experiment E, FILE), last run started T" (or "created T, no run yet") for the
/// first line of a command's output.
std::string describe_sweep(const storage::SweepInfo& sweep);

}  // namespace orch
