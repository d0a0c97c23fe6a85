#include "report/output_target.h"

#include <sys/stat.h>

#include <fstream>

#include "report/input_error.h"

namespace orch {
namespace {

std::string kind_name(OutputKind kind) {
  switch (kind) {
    case OutputKind::kCsv:
      return "CSV export";
    case OutputKind::kJson:
      return "JSON export";
    case OutputKind::kHtml:
      return "HTML report";
  }
  return "output";
}

std::string skip_space(const std::string& s, std::size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// What an earlier output of this kind starts with (see to_csv, to_json, render_html_report).
bool looks_like(const std::string& head, OutputKind kind) {
  switch (kind) {
    case OutputKind::kCsv:
      return head.rfind("run_id,sweep,", 0) == 0;
    case OutputKind::kJson: {
      std::size_t i = 0;
      skip_space(head, i);
      if (i >= head.size() || head[i] != '[') return false;
      ++i;
      const std::string rest = skip_space(head, i);
      if (rest.rfind("]", 0) == 0) return true;
      if (rest.rfind("{", 0) != 0) return false;
      ++i;
      return skip_space(head, i).rfind("\"run_id\"", 0) == 0;
    }
    case OutputKind::kHtml:
      return head.rfind("<!DOCTYPE html>", 0) == 0 &&
             head.find("<title>orch report:") != std::string::npos;
  }
  return false;
}

}  // namespace

void check_output_target(const std::string& output, const std::string& db_path, OutputKind kind) {
  const std::string what = kind_name(kind);
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) {
    // Nothing there yet, or a dangling link: not written through either.
    struct stat dangling {};
    if (::lstat(output.c_str(), &dangling) == 0) {
      throw InputError("refusing to write the " + what + " to " + output +
                       ": it is a symbolic link, and orch does not write through links");
    }
    return;
  }
  struct stat db {};
  if (::stat(db_path.c_str(), &db) == 0 && db.st_dev == out.st_dev && db.st_ino == out.st_ino) {
    throw InputError("refusing to write the " + what + " to " + output +
                     ": it is the results database (--db " + db_path + ")");
  }
  struct stat link {};
  if (::lstat(output.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    // Written through, a link planted in a shared folder would aim orch at its target.
    throw InputError("refusing to write the " + what + " to " + output +
                     ": it is a symbolic link, and orch does not write through links (give the "
                     "real path" +
                     std::string(kind == OutputKind::kHtml
                                     ? ")"
                                     : "; for standard output, leave -o out or give -o -)"));
  }

  if (S_ISDIR(out.st_mode)) {
    throw InputError("cannot write the " + what + " to " + output + ": it is a folder");
  }
  if (S_ISBLK(out.st_mode) || S_ISSOCK(out.st_mode)) {
    // A disk is never an output: the table written at its start would overwrite its data.
    throw InputError("refusing to write the " + what + " to " + output + ": it is a " +
                     (S_ISBLK(out.st_mode) ? "block device (a disk)" : "socket") +
                     "; give a regular file, a character device such as /dev/null, a FIFO, or "
                     "-o - for standard output");
  }
  if (!S_ISREG(out.st_mode)) {
    if (kind != OutputKind::kHtml) return;  // a character device or FIFO: written to, not replaced
    throw InputError("refusing to write the " + what + " to " + output +
                     ": it is not a regular file, and the report replaces its target");
  }
  if (out.st_size == 0) return;
  std::string head(4096, '\0');
  {
    std::ifstream in(output, std::ios::binary);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
  }
  if (head.rfind(std::string("SQLite format 3\0", 16), 0) == 0) {
    throw InputError("refusing to overwrite " + output + " with the " + what +
                     ": it is an SQLite database");
  }
  if (!looks_like(head, kind)) {
    throw InputError("refusing to overwrite " + output + ": it exists and is not an earlier " +
                     what + " of orch; remove it first or choose another file");
  }
}

}  // namespace orch
