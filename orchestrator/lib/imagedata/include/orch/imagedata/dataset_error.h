// DatasetError: the one exception orch::imagedata throws. Its message always names what is wrong
// and, where there is one, the file (`path: what is wrong`), so a loader can pass it on as is.
// Its reason is a short, stable word for the kind of problem (kReason*), so `on_error: skip` can
// count skipped files by reason (the run's `data.skipped.<reason>` counters).
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace orch::imagedata {

// The reasons a file is not an image orch can use. Stable: they are metric names.
inline constexpr const char* kReasonUnreadable = "unreadable";  ///< cannot open or read it
inline constexpr const char* kReasonEmpty = "empty";            ///< a file of 0 bytes
inline constexpr const char* kReasonTruncated = "truncated";    ///< the data ends too early
inline constexpr const char* kReasonCorrupt = "corrupt";        ///< damaged JPEG or PNG data
/// A format orch does not decode (GIF, WebP, ...; 12-bit JPEG).
inline constexpr const char* kReasonUnsupported = "unsupported";
inline constexpr const char* kReasonNotAnImage = "not_an_image";   ///< no image format at all
inline constexpr const char* kReasonSymlinkLoop = "symlink_loop";  ///< a cycle of symbolic links
inline constexpr const char* kReasonOther = "other";
/// Not a file's fault: the storage written to is full, over quota, read-only or failing (the
/// command exits 4, an environment fault, rather than 2).
inline constexpr const char* kReasonStorage = "storage";

struct DatasetError : std::runtime_error {
  explicit DatasetError(const std::string& what) : std::runtime_error(what) {}
  DatasetError(std::string reason, const std::string& what)
      : std::runtime_error(what), reason_(std::move(reason)) {}
  /// One of the kReason* words.
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_ = kReasonOther;
};

/// "path: what: <strerror(err)>" for a write that failed, its reason kReasonStorage when `err`
/// is the storage's fault (ENOSPC, EDQUOT, EROFS, EIO).
inline DatasetError write_error(const std::string& path, const std::string& what, int err) {
  const bool storage = err == ENOSPC || err == EDQUOT || err == EROFS || err == EIO;
  return DatasetError(storage ? kReasonStorage : kReasonOther,
                      path + ": " + what + ": " + std::strerror(err));
}

/// `e` with `path: ` in front of its message unless it already starts with the path; the reason
/// is kept.
inline DatasetError with_path(const std::string& path, const DatasetError& e) {
  const std::string what = e.what();
  if (what.rfind(path, 0) == 0) return e;
  return DatasetError(e.reason(), path + ": " + what);
}

}  // namespace orch::imagedata
