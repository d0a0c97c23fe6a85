#include "process/parent_death.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace orch::process {

bool die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return ::getppid() == parent;
}

}  // namespace orch::process
