#include "cluster/shell.h"

#include "process/child.h"
#include "process/pipe_reader.h"

namespace orch::cluster {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

CommandOutput run_capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CommandOutput r;
  process::ChildOptions o;
  o.argv = argv;
  o.search_path = true;
  o.out = process::Stdio::pipe();
  o.err = process::Stdio::pipe();
  try {
    process::Child child(o);
    // Through the process library rather than popen: a signal that orch catches (SIGHUP while
    // following a job) interrupts a blocking read, and popen's fread took the cut as the end of
    // the output: squeue's list came back empty, and the job read as gone.
    process::PipeReader reader;
    const auto keep = [&r](std::string_view text) { r.output.append(text); };
    reader.add(child.stdout_fd(), keep);
    reader.add(child.stderr_fd(), keep);
    const auto deadline = process::PipeReader::Clock::now() + timeout;
    if (!reader.read_until(deadline)) {
      child.stop(std::chrono::seconds(2));
      const auto ms = timeout.count();
      r.output += "\n" + argv.front() + " gave no answer within " +
                  (ms < 1000 ? std::to_string(ms) + " ms" : std::to_string(ms / 1000) + " s");
      return r;  // exit_code -1
    }
    const process::ExitStatus status = child.wait();
    r.exit_code = status.exited() ? status.exit_code : -1;
  } catch (const process::SpawnError& e) {
    r.output = e.what();
  }
  return r;
}

}  // namespace orch::cluster
