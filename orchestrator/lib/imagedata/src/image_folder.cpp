#include "orch/imagedata/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "orch/imagedata/dataset_error.h"

namespace orch::imagedata {

namespace fs = std::filesystem;

bool is_jpeg_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg";
}

FolderIndex scan_image_folder(const fs::path& root) {
  std::error_code ec;
  if (root.empty()) throw DatasetError("no dataset folder given");
  if (!fs::is_directory(root, ec)) throw DatasetError(root.string() + ": no such folder");
  FolderIndex index;
  index.dir = fs::is_directory(root / "train", ec) ? root / "train" : root;
  for (const auto& entry : fs::directory_iterator(index.dir, ec))
    if (entry.is_directory()) index.classes.push_back(entry.path().filename().string());
  if (ec) throw DatasetError(index.dir.string() + ": cannot list: " + ec.message());
  if (index.classes.empty())
    throw DatasetError(
        index.dir.string() +
        ": no class folders (expected DIR/train/<class>/*.JPEG or DIR/<class>/*.JPEG)");
  std::sort(index.classes.begin(), index.classes.end());
  for (std::size_t c = 0; c < index.classes.size(); ++c) {
    const fs::path dir = index.dir / index.classes[c];
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file() && is_jpeg_name(entry.path())) files.push_back(entry.path());
    if (ec) throw DatasetError(dir.string() + ": cannot list: " + ec.message());
    if (files.empty()) throw DatasetError(dir.string() + ": class folder has no .JPEG/.jpg files");
    std::sort(files.begin(), files.end());
    for (auto& f : files) index.samples.push_back({std::move(f), static_cast<std::int32_t>(c)});
  }
  return index;
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw DatasetError(path.string() + ": cannot open: " + std::strerror(errno));
  std::vector<std::uint8_t> data;
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  if (size > 0) {
    data.resize(static_cast<std::size_t>(size));
    const std::size_t got = std::fread(data.data(), 1, data.size(), f);
    data.resize(got);
  }
  const bool failed = std::ferror(f) != 0 || size < 0;
  std::fclose(f);
  if (failed) throw DatasetError(path.string() + ": read error");
  return data;
}

std::string image_folder_problem(const fs::path& root) {
  std::error_code ec;
  if (root.empty()) return "no dataset folder given";
  if (!fs::is_directory(root, ec)) return root.string() + ": no such folder";
  const fs::path dir = fs::is_directory(root / "train", ec) ? root / "train" : root;
  bool any_class = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    any_class = true;
    bool any_image = false;
    std::error_code class_ec;
    for (fs::directory_iterator f(it->path(), class_ec); !class_ec && f != end;
         f.increment(class_ec)) {
      if (f->is_regular_file(class_ec) && is_jpeg_name(f->path())) {
        any_image = true;
        break;
      }
    }
    if (class_ec) return it->path().string() + ": cannot list: " + class_ec.message();
    if (!any_image) return it->path().string() + ": class folder has no .JPEG/.jpg files";
  }
  if (ec) return dir.string() + ": cannot list: " + ec.message();
  if (!any_class) {
    return dir.string() +
           ": no class folders (expected DIR/train/<class>/*.JPEG or DIR/<class>/*.JPEG)";
  }
  return "";
}

}  // namespace orch::imagedata
