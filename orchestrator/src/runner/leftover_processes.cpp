// Finding and ending what a script's program left behind (leftover_processes.h).
#include "runner/leftover_processes.h"

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

#include "plan/terminal_text.h"

namespace orch {
namespace {

/// The parent pid and comm of /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold
/// spaces and parentheses, so it ends at the last ')'). false for a process gone or a zombie.
bool read_stat(const std::string& pid, pid_t* ppid, std::string* comm) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  *comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  char state = 0;
  long parent = 0;
  if (!(rest >> state >> parent)) return false;
  *ppid = static_cast<pid_t>(parent);
  return state != 'Z';
}

void reap_zombies() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

bool become_child_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::vector<Leftover> own_children() {
  reap_zombies();
  std::vector<Leftover> out;
  const pid_t self = ::getpid();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    pid_t ppid = 0;
    std::string comm;
    if (read_stat(name, &ppid, &comm) && ppid == self)
      out.push_back({static_cast<pid_t>(std::stol(name)), comm});
  }
  return out;
}

std::vector<Leftover> end_own_children(std::chrono::milliseconds grace) {
  std::vector<Leftover> ended;
  std::set<pid_t> seen;
  using Clock = std::chrono::steady_clock;
  // Bounded: a process that forks as fast as it is killed must not hold exec here forever.
  const auto give_up = Clock::now() + grace + std::chrono::seconds(10);
  std::map<pid_t, Clock::time_point> termed;
  while (Clock::now() < give_up) {
    const auto children = own_children();
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
  reap_zombies();
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

}  // namespace orch
