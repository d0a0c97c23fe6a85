// Loading an unknown plugin library in a child process first: a library whose load-time code
// (static constructors, its info()) crashes, calls exit() or hangs would otherwise take the
// whole command down with it, with no message.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace orch {

struct LoadProbeVerdict {
  /// The child loaded the library and returned: it can be loaded in this process. (A library
  /// that the loader refuses on its own, e.g. a bad ABI stamp, is safe in this sense.)
  bool safe = true;
  /// When not safe, why, as the end of a sentence "plugin library PATH refused: <reason>"
  /// (without the path, so that a remembered verdict reads right for any spelling of it).
  std::string reason;
  /// Whether the verdict may be remembered for the file: a signal from outside (SIGINT from
  /// the terminal, SIGKILL from the OOM killer) or a child that could not be started (no
  /// process or descriptor to spare) may not happen again, so those are probed again by the
  /// next command. A timeout is remembered: probing it again would cost every later command the
  /// whole timeout.
  bool cacheable = true;
};

/// In the reason of a library that could not be vetted because no child could be started
/// (fork or pipe failed): the machine's fault, not the library's.
inline constexpr const char* kNotVettedText = "it could not be vetted in a child process";

/// Forks, loads `path` in the child exactly as the host would (load_plugin_library) and waits
/// at most `timeout` for it to say that it got through. The child's stdout goes to /dev/null;
/// the last line of its stderr is quoted in the reason. Where no child can be started (fork or
/// pipe fails), the verdict is not safe: an unvetted library is never loaded.
LoadProbeVerdict probe_load_in_child(const std::filesystem::path& path,
                                     std::chrono::milliseconds timeout);

}  // namespace orch
