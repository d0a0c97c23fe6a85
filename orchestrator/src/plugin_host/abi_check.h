// Compares a plugin library's ABI stamp with the host's own, before any C++ object from the
// library is touched.
#pragma once

#include <string>

#include "orch/plugin.h"

namespace orch {

/// The stamp the host itself was built with.
const orch_abi_stamp& host_abi_stamp();

/// Empty when `plugin` can be used by this host; otherwise one sentence naming what differs,
/// with the plugin's value and the host's value side by side.
std::string abi_mismatch(const orch_abi_stamp& plugin, const orch_abi_stamp& host);

}  // namespace orch
