#include "process/leftovers.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "process/child.h"
#include "text/terminal_text.h"

namespace orch::process {
namespace {

struct Stat {
  pid_t ppid = 0;
  char state = 0;
  std::string comm;
};

/// The state, parent pid and comm of /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may
/// hold spaces and parentheses, so it ends at the last ')'). false for a process gone.
bool read_stat(const std::string& pid, Stat* st) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  st->comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  long parent = 0;
  if (!(rest >> st->state >> parent)) return false;
  st->ppid = static_cast<pid_t>(parent);
  return true;
}

}  // namespace

bool become_child_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

bool is_child_subreaper() {
  int on = 0;
  return ::prctl(PR_GET_CHILD_SUBREAPER, &on, 0, 0, 0) == 0 && on != 0;
}

std::vector<Leftover> leftover_children() {
  std::vector<Leftover> out;
  const pid_t self = ::getpid();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    Stat st;
    if (!read_stat(name, &st) || st.ppid != self) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    // Only by pid: waitpid(-1) would take a live Child's status from its owner.
    if (is_live_child(pid)) continue;
    if (st.state == 'Z') {
      ::waitpid(pid, nullptr, WNOHANG);
      continue;
    }
    out.push_back({pid, st.comm});
  }
  return out;
}

std::vector<Leftover> end_leftover_children(std::chrono::milliseconds grace) {
  std::vector<Leftover> ended;
  std::set<pid_t> seen;
  using Clock = std::chrono::steady_clock;
  // Bounded: a process that forks as fast as it is killed must not hold us here forever.
  const auto give_up = Clock::now() + grace + std::chrono::seconds(10);
  std::map<pid_t, Clock::time_point> termed;
  while (Clock::now() < give_up) {
    const auto children = leftover_children();
    if (children.empty()) break;
    for (const auto& c : children) {
      if (seen.insert(c.pid).second) {
        ended.push_back(c);
        termed[c.pid] = Clock::now();
        ::kill(c.pid, SIGTERM);
      } else if (Clock::now() - termed[c.pid] >= grace) {
        ::kill(c.pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  (void)leftover_children();  // reaps the last ones to die
  return ended;
}

std::string describe_leftovers(const std::vector<Leftover>& left) {
  std::ostringstream s;
  s << left.size() << (left.size() == 1 ? " process (" : " processes (");
  for (std::size_t i = 0; i < left.size() && i < 5; ++i)
    s << (i ? ", " : "") << "pid " << left[i].pid << " " << terminal_text(left[i].command);
  if (left.size() > 5) s << ", ...";
  s << ")";
  return s.str();
}

}  // namespace orch::process
