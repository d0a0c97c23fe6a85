#include "report/output_target.h"

#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "plan/bounded_file.h"
#include "report/input_error.h"
#include "result/result_document.h"
#include "storage/database_files.h"

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
    case OutputKind::kResultDocument:
      return "result document";
    case OutputKind::kTrace:
      return "profiler trace";
  }
  return "output";
}

// From `i`: over white space, then `c`, then white space again; false (and `i` wherever it
// stopped) when the next character that is not white space is not `c`.
bool step_over(const std::string& s, std::size_t& i, char c) {
  const auto skip_space = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  };
  skip_space();
  if (i >= s.size() || s[i] != c) return false;
  ++i;
  skip_space();
  return true;
}

// A result document's "format" key may come anywhere in its object (the keys are sorted), so
// the whole file is read, within the bound every result document has.
bool is_result_document(const std::string& path) {
  try {
    const auto doc = nlohmann::json::parse(
        read_bounded_file(path, kMaxResultDocumentBytes, "a result document"));
    return doc.is_object() && doc.value("format", nlohmann::json()) == kResultFormat;
  } catch (const std::exception&) {
    return false;
  }
}

// What an earlier output of this kind starts with (see to_csv, to_json, render_html_report,
// result/result_document.h).
bool looks_like(const std::string& head, OutputKind kind, const std::string& path) {
  switch (kind) {
    case OutputKind::kCsv:
      return head.rfind("run_id,sweep,", 0) == 0;
    case OutputKind::kJson: {
      // An array of run objects, or an empty one.
      std::size_t i = 0;
      if (!step_over(head, i, '[')) return false;
      if (std::string_view(head).substr(i).starts_with(']')) return true;
      return step_over(head, i, '{') && std::string_view(head).substr(i).starts_with("\"run_id\"");
    }
    case OutputKind::kHtml:
      return head.rfind("<!DOCTYPE html>", 0) == 0 &&
             head.find("<title>orch report:") != std::string::npos;
    case OutputKind::kResultDocument:
      return head.rfind("{", 0) == 0 && is_result_document(path);
    case OutputKind::kTrace: {
      // A Chrome trace as the profiler writes it: an object whose first key is one of these.
      std::size_t i = 0;
      if (!step_over(head, i, '{')) return false;
      const std::string_view rest = std::string_view(head).substr(i);
      return rest.starts_with("\"schemaVersion\"") || rest.starts_with("\"traceEvents\"");
    }
  }
  return false;
}

// The first bytes of a regular file ("" when it cannot be read).
std::string head_of(const std::string& path, std::size_t bytes) {
  std::string head(bytes, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

// What SQLite file `head` begins as ("" for none): the database's header, or the magic numbers
// of its write-ahead log and its rollback journal.
std::string sqlite_file_kind(const std::string& head) {
  if (head.rfind(std::string("SQLite format 3\0", 16), 0) == 0) return "an SQLite database";
  if (head.rfind("\x37\x7f\x06\x82", 0) == 0 || head.rfind("\x37\x7f\x06\x83", 0) == 0)
    return "an SQLite write-ahead log";
  if (head.rfind("\xd9\xd5\x05\xf9\x20\xa1\x63\xd7", 0) == 0) return "an SQLite rollback journal";
  return {};
}

// DB-wal, DB-journal and DB-shm belong to the database DB beside them, even empty (a live WAL
// database's log is empty after each checkpoint) or not there yet: written over, SQLite would
// take the output for its journal. Refused by name, for any SQLite database.
void refuse_companion_name(const std::string& output, const std::string& what) {
  for (const std::string suffix : storage::kCompanionSuffixes) {
    if (output.size() <= suffix.size() ||
        output.compare(output.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string base = output.substr(0, output.size() - suffix.size());
    struct stat st {};
    if (::stat(base.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (sqlite_file_kind(head_of(base, 16)) != "an SQLite database") continue;
    throw InputError("refusing to write the " + what + " to " + output + ": it is the " + suffix +
                     " file of the SQLite database " + base + ", which SQLite keeps beside it");
  }
}

// The results database and its journal files, under the spellings SQLite uses (the path given
// and, links resolved, the real one).
void refuse_database_files(const std::string& output, const struct stat& out,
                           const std::string& db_path, const std::string& what) {
  const auto refuse_if_same = [&](const std::string& file, const std::string& which) {
    struct stat db {};
    if (::stat(file.c_str(), &db) == 0 && db.st_dev == out.st_dev && db.st_ino == out.st_ino) {
      throw InputError("refusing to write the " + what + " to " + output + ": it is the results " +
                       which + " (--db " + db_path + ")");
    }
  };
  for (const std::string& base : storage::database_spellings(db_path)) {
    refuse_if_same(base, "database");
    for (const std::string suffix : storage::kCompanionSuffixes)
      refuse_if_same(base + suffix, "database's " + suffix + " file");
  }
}

// A folder, a disk or a socket is never an output; a character device or FIFO only for the kinds
// that are written in place there.
void refuse_special_file(const std::string& output, const struct stat& out, OutputKind kind,
                         const std::string& what) {
  if (S_ISDIR(out.st_mode)) {
    throw InputError("cannot write the " + what + " to " + output + ": it is a folder");
  }
  if (S_ISBLK(out.st_mode) || S_ISSOCK(out.st_mode)) {
    // A disk is never an output: the table written at its start would overwrite its data.
    throw InputError("refusing to write the " + what + " to " + output + ": it is a " +
                     (S_ISBLK(out.st_mode) ? "block device (a disk)" : "socket") +
                     "; give a regular file, a character device such as /dev/null, a FIFO" +
                     (kind == OutputKind::kResultDocument ? "" : ", or -o - for standard output"));
  }
  if (!S_ISREG(out.st_mode) && (kind == OutputKind::kHtml || kind == OutputKind::kTrace)) {
    throw InputError("refusing to write the " + what + " to " + output +
                     ": it is not a regular file, and the " + what + " replaces its target");
  }
}

std::string link_hint(OutputKind kind) {
  switch (kind) {
    case OutputKind::kCsv:
    case OutputKind::kJson:
      return " (give the real path; for standard output, leave -o out or give -o -)";
    default:
      return " (give the real path)";
  }
}

}  // namespace

void check_output_target(const std::string& output, const std::string& db_path, OutputKind kind) {
  const std::string what = kind_name(kind);
  struct stat out {};
  const bool exists = ::stat(output.c_str(), &out) == 0;  // a link's target: the database's?
  if (exists) refuse_database_files(output, out, db_path, what);
  refuse_companion_name(output, what);
  struct stat link {};
  if (::lstat(output.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    // Written through, a link planted in a shared folder would aim orch at its target; a
    // dangling one would create it.
    throw InputError("refusing to write the " + what + " to " + output +
                     ": it is a symbolic link, and orch does not write through links" +
                     link_hint(kind));
  }
  if (!exists) return;  // nothing there yet
  refuse_special_file(output, out, kind, what);
  if (!S_ISREG(out.st_mode)) return;  // a character device or FIFO: written to, not replaced
  if (out.st_size == 0) return;
  const std::string head = head_of(output, 4096);
  if (const std::string sqlite = sqlite_file_kind(head); !sqlite.empty()) {
    throw InputError("refusing to overwrite " + output + " with the " + what + ": it is " + sqlite);
  }
  if (!looks_like(head, kind, output)) {
    throw InputError("refusing to overwrite " + output + ": it exists and is not an earlier " +
                     what + " of orch; remove it first or choose another file");
  }
}

}  // namespace orch
