// The ImageNet folder layout (`root/train/<class>/*.JPEG`, `root/val/<class>/*.JPEG`, or
// `root/<class>/*.JPEG`), scanned the way torchvision's ImageFolder does: class folders sorted by
// name give the labels 0..C-1, files sorted by name within each class.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace orch::imagedata {

struct FolderSample {
  std::filesystem::path path;
  std::int32_t label = 0;
};

/// An entry the scan left out under skip_errors, and why.
struct SkippedEntry {
  std::filesystem::path path;
  std::string reason;   ///< a kReason* word (dataset_error.h)
  std::string message;  ///< `path: what is wrong`
};

struct FolderIndex {
  std::filesystem::path dir;          ///< the folder that holds the class folders
  std::vector<std::string> classes;   ///< sorted; index = label
  std::vector<FolderSample> samples;  ///< class by class, files sorted by name
  std::vector<SkippedEntry> skipped;  ///< left out by the scan (skip_errors only)
  /// skipped, counted by reason.
  std::map<std::string, std::int64_t> skipped_by_reason() const;
};

struct ScanOptions {
  /// "train": root/train when it exists, else root (the layout without splits). "val":
  /// root/val, which must exist. "": as "train".
  std::string split;
  /// An entry that cannot be examined (a loop of symbolic links, a folder that cannot be
  /// listed) is left out and listed in FolderIndex::skipped instead of failing the scan.
  bool skip_errors = false;
};

/// True for the extensions read as images: .jpg, .jpeg, .png (any case). The content decides
/// how a file is decoded (image_codec.h), so ImageNet's PNG named .JPEG is read as a PNG.
bool is_image_name(const std::filesystem::path& p);
/// True for .jpg and .jpeg (any case).
bool is_jpeg_name(const std::filesystem::path& p);

/// Scans `root` (see ScanOptions for the split). Throws DatasetError for a missing root, no
/// class folders, a class folder without image files, or (without skip_errors) an entry that
/// cannot be examined, naming the path and the reason.
FolderIndex scan_image_folder(const std::filesystem::path& root, const ScanOptions& options = {});

/// What scan_image_folder would refuse in `root` ("" when nothing), found without listing every
/// file: each class folder is read only up to its first JPEG, so a plan can check a dataset of
/// a million images in a moment.
std::string image_folder_problem(const std::filesystem::path& root);

/// Which part of a folder `orch dataset cache` takes. Every choice is a function of the file and
/// class names alone, so the same folder gives the same subset on every machine.
struct Subset {
  int classes = 0;      ///< the first N classes in sorted order (labels stay 0..N-1); 0: all
  int per_class = 0;    ///< at most M files of each class; 0: all
  double fraction = 0;  ///< round(F * files) of each class, at least 1; 0: all
};

/// Keeps `subset` of `index`. Within a class the files kept are those first in the order of a
/// 64-bit FNV-1a hash of their names (a spread sample rather than the alphabetically first),
/// still listed sorted by name.
void apply_subset(FolderIndex& index, const Subset& subset);

/// The largest file read as one image (read_file): far above any photograph a training set
/// holds, far below what one decoding thread per core could hold at once.
inline constexpr std::uint64_t kMaxImageFileBytes = std::uint64_t{256} << 20;

/// Reads an image file whole (image_file.cpp). Throws DatasetError (`path: reason`) when it
/// cannot be opened or read (unreadable, symlink_loop), is not a regular file (unreadable),
/// does not start as JPEG or PNG data (empty, not_an_image, unsupported: told from its first
/// bytes, the rest never read) or is larger than kMaxImageFileBytes (unsupported).
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

}  // namespace orch::imagedata
