#include "orch/imagedata/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "orch/imagedata/dataset_error.h"

namespace orch::imagedata {

namespace fs = std::filesystem;

namespace {

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

// Why an entry could not be examined, as a DatasetError naming it. A loop of symbolic links is
// its own reason; std::filesystem would otherwise surface it as a raw `filesystem error`.
DatasetError entry_error(const fs::path& path, const std::error_code& ec, const char* doing) {
  if (ec.value() == ELOOP)
    return DatasetError(kReasonSymlinkLoop,
                        path.string() + ": a loop of symbolic links (" + ec.message() + ")");
  return DatasetError(kReasonUnreadable, path.string() + ": " + doing + ": " + ec.message());
}

// Skips (and records) the entry under skip_errors, else throws.
void skip_or_throw(FolderIndex& index, const ScanOptions& o, const fs::path& path,
                   const DatasetError& e) {
  if (!o.skip_errors) throw e;
  index.skipped.push_back({path, e.reason(), e.what()});
}

}  // namespace

bool is_jpeg_name(const fs::path& p) {
  const std::string ext = lower_extension(p);
  return ext == ".jpg" || ext == ".jpeg";
}

bool is_image_name(const fs::path& p) { return is_jpeg_name(p) || lower_extension(p) == ".png"; }

std::map<std::string, std::int64_t> FolderIndex::skipped_by_reason() const {
  std::map<std::string, std::int64_t> out;
  for (const auto& s : skipped) ++out[s.reason];
  return out;
}

FolderIndex scan_image_folder(const fs::path& root, const ScanOptions& o) {
  std::error_code ec;
  if (root.empty()) throw DatasetError("no dataset folder given");
  if (!fs::is_directory(root, ec)) {
    if (ec && ec.value() != ENOENT) throw entry_error(root, ec, "cannot open");
    throw DatasetError(root.string() + ": no such folder");
  }
  if (!o.split.empty() && o.split != "train" && o.split != "val")
    throw DatasetError("split must be train or val, not '" + o.split + "'");
  FolderIndex index;
  if (o.split == "val") {
    index.dir = root / "val";
    if (!fs::is_directory(index.dir, ec))
      throw DatasetError(index.dir.string() +
                         ": no such folder (split: val reads DIR/val/<class>/*.JPEG)");
  } else {
    index.dir = fs::is_directory(root / "train", ec) ? root / "train" : root;
  }
  std::size_t loose_images = 0;
  for (const auto& entry : fs::directory_iterator(index.dir, ec)) {
    std::error_code e;
    const bool dir = entry.is_directory(e);
    if (e) {
      skip_or_throw(index, o, entry.path(), entry_error(entry.path(), e, "cannot examine"));
      continue;
    }
    if (dir)
      index.classes.push_back(entry.path().filename().string());
    else if (is_image_name(entry.path()))
      ++loose_images;
  }
  if (ec) throw entry_error(index.dir, ec, "cannot list");
  if (index.classes.empty()) {
    if (o.split == "val" && loose_images > 0)
      throw DatasetError(index.dir.string() + ": " + std::to_string(loose_images) +
                         " images but no class folders: split: val needs them sorted into "
                         "DIR/val/<class>/ as in DIR/train/ (ImageNet's validation labels say "
                         "which class each file belongs to)");
    throw DatasetError(index.dir.string() +
                       ": no class folders (expected DIR/train/<class>/*.JPEG or "
                       "DIR/<class>/*.JPEG)");
  }
  std::sort(index.classes.begin(), index.classes.end());
  for (std::size_t c = 0; c < index.classes.size(); ++c) {
    const fs::path dir = index.dir / index.classes[c];
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!is_image_name(entry.path())) continue;
      std::error_code e;
      const bool regular = entry.is_regular_file(e);
      if (e) {
        skip_or_throw(index, o, entry.path(), entry_error(entry.path(), e, "cannot examine"));
        continue;
      }
      if (regular) {
        files.push_back(entry.path());
      } else if (!entry.is_directory(e)) {
        // A FIFO, device or socket named like an image (or a link to one, or to nothing) is
        // said, as an unreadable image is, not left out without a word.
        skip_or_throw(index, o, entry.path(),
                      DatasetError(kReasonUnreadable,
                                   entry.path().string() +
                                       ": not a regular file (a FIFO, device or socket, or a "
                                       "link to one or to nothing)"));
      }
    }
    if (ec) throw entry_error(dir, ec, "cannot list");
    if (files.empty())
      throw DatasetError(dir.string() + ": class folder has no .JPEG/.jpg/.png files");
    std::sort(files.begin(), files.end());
    for (auto& f : files) index.samples.push_back({std::move(f), static_cast<std::int32_t>(c)});
  }
  return index;
}

namespace {

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

void apply_subset(FolderIndex& index, const Subset& subset) {
  if (subset.classes < 0 || subset.per_class < 0 || subset.fraction < 0 || subset.fraction > 1)
    throw DatasetError("a subset needs classes >= 0, per_class >= 0 and 0 <= fraction <= 1");
  const std::size_t classes =
      subset.classes > 0 ? std::min(index.classes.size(), static_cast<std::size_t>(subset.classes))
                         : index.classes.size();
  std::vector<FolderSample> kept;
  std::size_t at = 0;
  for (std::size_t c = 0; c < classes; ++c) {
    std::vector<FolderSample> files;
    while (at < index.samples.size() && index.samples[at].label == static_cast<std::int32_t>(c))
      files.push_back(std::move(index.samples[at++]));
    std::size_t keep = files.size();
    if (subset.per_class > 0) keep = std::min(keep, static_cast<std::size_t>(subset.per_class));
    if (subset.fraction > 0)
      keep = std::max<std::size_t>(
          1, static_cast<std::size_t>(std::llround(subset.fraction * static_cast<double>(keep))));
    if (keep < files.size()) {
      std::stable_sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
        return fnv1a(a.path.filename().string()) < fnv1a(b.path.filename().string());
      });
      files.resize(keep);
      std::sort(files.begin(), files.end(),
                [](const auto& a, const auto& b) { return a.path < b.path; });
    }
    for (auto& f : files) kept.push_back(std::move(f));
  }
  index.classes.resize(classes);
  index.samples = std::move(kept);
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
