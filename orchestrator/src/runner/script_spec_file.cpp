// Where a script run's specification goes, and what may stand there (script_workload.h).
#include <sys/stat.h>

#include "plan/bounded_file.h"
#include "runner/script_workload.h"  // declares both

namespace orch {

std::string script_spec_path(const std::string& out_path) { return out_path + ".script-spec.json"; }

std::string script_spec_refusal(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return {};
  return "refusing to write the script's run specification " + path + ": it is " +
         describe_file_type(st.st_mode) + ", and orch writes only a regular file there; remove it";
}

}  // namespace orch
