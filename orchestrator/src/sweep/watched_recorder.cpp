#include "sweep/watched_recorder.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace orch::sweep {

WatchedRecorder::WatchedRecorder(Recorder& inner, std::string db_path)
    : inner_(inner), path_(std::move(db_path)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    throw DatabaseGone("cannot stat the database " + path_ + ": " + std::strerror(errno));
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
}

void WatchedRecorder::check() const {
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists && st.st_dev == dev_ && st.st_ino == ino_) return;
  throw DatabaseGone("the database " + path_ + " was " +
                     (exists ? "replaced by another file" : "deleted or moved away") +
                     " during the sweep; nothing more can be recorded in it, so the sweep stops "
                     "(runs in flight are stopped). Put the database back, or start a new one, "
                     "and run the same command again");
}

std::map<std::pair<std::string, int>, PriorRun> WatchedRecorder::prior_runs() {
  return inner_.prior_runs();
}

std::optional<double> WatchedRecorder::measured_duration_s(const RunSpec& spec) {
  return inner_.measured_duration_s(spec);
}

std::int64_t WatchedRecorder::begin(const RunSpec& spec, const std::string& gpu) {
  check();
  return inner_.begin(spec, gpu);
}

void WatchedRecorder::heartbeat(std::int64_t id) {
  check();
  inner_.heartbeat(id);
}

void WatchedRecorder::finish(std::int64_t id, const nlohmann::json& document) {
  check();
  inner_.finish(id, document);
}

void WatchedRecorder::mark_stale(const RunSpec& spec, const std::string& reason) {
  check();
  inner_.mark_stale(spec, reason);
}

void WatchedRecorder::device_checked(const std::string& gpu, const DeviceVerdict& verdict) {
  check();
  inner_.device_checked(gpu, verdict);
}

void WatchedRecorder::mark_pruned(const RunSpec& spec) {
  check();
  inner_.mark_pruned(spec);
}

}  // namespace orch::sweep
