// The ImageNet folder layout (`root/train/<class>/*.JPEG`, or `root/<class>/*.JPEG`), scanned the
// way torchvision's ImageFolder does: class folders sorted by name give the labels 0..C-1, files
// sorted by name within each class.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace orch::imagedata {

struct FolderSample {
  std::filesystem::path path;
  std::int32_t label = 0;
};

struct FolderIndex {
  std::filesystem::path dir;          ///< the folder that holds the class folders
  std::vector<std::string> classes;   ///< sorted; index = label
  std::vector<FolderSample> samples;  ///< class by class, files sorted by name
};

/// True for the extensions read as JPEG: .jpg, .jpeg (any case).
bool is_jpeg_name(const std::filesystem::path& p);

/// Scans `root`: its `train/` subfolder when there is one, else `root` itself. Throws
/// DatasetError for a missing root, no class folders, or a class folder without JPEG files.
FolderIndex scan_image_folder(const std::filesystem::path& root);

/// What scan_image_folder would refuse in `root` ("" when nothing), found without listing every
/// file: each class folder is read only up to its first JPEG, so a plan can check a dataset of
/// a million images in a moment.
std::string image_folder_problem(const std::filesystem::path& root);

/// Reads a whole file; throws DatasetError (`path: reason`) when it cannot.
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

}  // namespace orch::imagedata
