// The probe cache file: a header naming the host it was written by, then one tab-separated
// line per library:
//   safe     SIZE MTIME_NS DEVICE INODE PATH
//   refused  SIZE MTIME_NS DEVICE INODE PATH REASON
#include "plugin_host/probe_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string_view>
#include <vector>

#include "orch/plugin.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

// A cache holds a line per plugin library: a few hundred bytes each. Anything larger is not one.
constexpr off_t kMaxCacheBytes = 4 << 20;

// How every cache file orch writes begins: a file that does not is someone else's.
constexpr std::string_view kHeaderStart = "# orch plugin load probe verdicts";

// Verdicts written by another orch build are not trusted: what its loader did in the child
// (and so what counted as getting through) may differ.
std::string header() {
  return std::string(kHeaderStart) + "; safe to delete. host: orch " + ORCH_VERSION + ", SDK " +
         std::to_string(ORCH_SDK_VERSION) + ", LibTorch " + ORCH_HOST_TORCH_VERSION;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', begin);
    out.push_back(line.substr(begin, tab - begin));
    if (tab == std::string::npos) return out;
    begin = tab + 1;
  }
}

template <class T>
bool parse(const std::string& s, T& out) {
  std::istringstream in(s);
  in >> out;
  return !in.fail() && in.eof();
}

// Whether the regular file at `file` is a cache orch wrote (it begins with the header): only
// such a file is replaced, so ORCH_PLUGIN_PROBE_CACHE set by mistake to a results database, an
// experiment or any other file of the user's leaves it as it is.
bool written_by_orch(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string start(kHeaderStart.size(), '\0');
  in.read(start.data(), static_cast<std::streamsize>(start.size()));
  return in.gcount() == static_cast<std::streamsize>(start.size()) && start == kHeaderStart;
}

bool storable(const std::string& s) { return s.find_first_of("\t\n\r") == std::string::npos; }

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// The cache file's text, or nullopt (counted as empty) when it is not a regular file of at most
// kMaxCacheBytes: opened without waiting (a FIFO there would block every command) and without
// reading a device (a /dev/zero would be read for ever).
std::optional<std::string> read_cache_file(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxCacheBytes) {
    ::close(fd);
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(done);
  return text;
}

}  // namespace

std::optional<FileIdentity> identify(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) return std::nullopt;
  FileIdentity id;
  id.path = abs.lexically_normal().string();
  id.size = static_cast<std::uintmax_t>(st.st_size);
  id.mtime_ns = std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  return id;
}

ProbeCache::ProbeCache(fs::path file) : file_(std::move(file)) {
  const std::optional<std::string> text = read_cache_file(file_);
  if (!text) return;
  std::istringstream in(*text);
  std::string line;
  if (!std::getline(in, line) || line != header()) return;
  while (std::getline(in, line)) {
    const auto f = split_tabs(line);
    if (f.size() < 6) continue;
    FileIdentity id;
    if (!parse(f[1], id.size) || !parse(f[2], id.mtime_ns) || !parse(f[3], id.device) ||
        !parse(f[4], id.inode)) {
      continue;
    }
    id.path = f[5];
    LoadProbeVerdict v;
    if (f[0] == "safe" && f.size() == 6) {
      v.safe = true;
    } else if (f[0] == "refused" && f.size() == 7) {
      v.safe = false;
      v.reason = f[6];
    } else {
      continue;
    }
    entries_[id.path] = {id, v};
  }
}

std::optional<LoadProbeVerdict> ProbeCache::find(const FileIdentity& id) const {
  const auto it = entries_.find(id.path);
  if (it == entries_.end() || !(it->second.first == id)) return std::nullopt;
  return it->second.second;
}

void ProbeCache::put(const FileIdentity& id, const LoadProbeVerdict& v) {
  if (!v.cacheable || !storable(id.path)) return;
  entries_[id.path] = {id, v};
  save();
}

void ProbeCache::save() const {
  // Only a regular file (or none) is replaced: a device, FIFO, folder or link standing at the
  // cache's path (ORCH_PLUGIN_PROBE_CACHE=/dev/null, say) is left as it is, and said once.
  // Likewise a regular file that orch did not write.
  struct stat st {};
  const bool exists = ::lstat(file_.c_str(), &st) == 0;
  const char* refused = !exists                   ? nullptr
                        : !S_ISREG(st.st_mode)    ? "it is not a regular file"
                        : !written_by_orch(file_) ? "it is not a probe cache orch wrote"
                                                  : nullptr;
  if (refused) {
    static bool said = false;
    if (!said) {
      said = true;
      std::cerr << "orch: not writing the plugin probe cache " << file_.string() << ": " << refused
                << " (each command probes its plugins again)\n";
    }
    return;
  }
  std::error_code ec;
  if (file_.has_parent_path()) fs::create_directories(file_.parent_path(), ec);
  std::random_device rd;
  const fs::path tmp =
      file_.string() + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  {
    std::ofstream out(tmp);
    if (!out) return;  // an unwritable cache only costs the next command its probes
    out << header() << "\n";
    for (const auto& [path, e] : entries_) {
      const auto& [id, v] = e;
      // A library since replaced or removed is forgotten rather than kept forever.
      if (identify(path) != std::optional<FileIdentity>(id)) continue;
      out << (v.safe ? "safe" : "refused") << '\t' << id.size << '\t' << id.mtime_ns << '\t'
          << id.device << '\t' << id.inode << '\t' << path;
      if (!v.safe) out << '\t' << one_line(v.reason);
      out << '\n';
    }
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, file_, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace orch
