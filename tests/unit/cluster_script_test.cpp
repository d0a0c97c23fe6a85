// The sbatch script of a Slurm submission: array range, resources, the per-task command with
// quoted paths, and the preemption/time-limit handling (signal, trap, bounded requeue).
#include <catch2/catch.hpp>
#include <regex>

#include "cluster/shell.h"
#include "cluster/slurm_script.h"

namespace orch {
namespace {

using cluster::SlurmScriptInput;

SlurmScriptInput input(std::size_t tasks) {
  SlurmScriptInput in;
  in.sweep = "night sweep";
  in.orch_binary = "/opt/orch build/orch";
  in.plugin_paths = {"/shared/my plugins", "/shared/it's here"};
  in.dir = "/shared/results dir/night";
  for (std::size_t i = 0; i < tasks; ++i)
    in.result_names.push_back("h" + std::to_string(i) + "-r0");
  return in;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST_CASE("cluster: array range is 0-N or 0-N%K", "[cluster]") {
  CHECK(cluster::array_range(1, 0) == "0-0");
  CHECK(cluster::array_range(12, 0) == "0-11");
  CHECK(cluster::array_range(12, 3) == "0-11%3");
  CHECK_THROWS_AS(cluster::array_range(0, 2), std::invalid_argument);
}

TEST_CASE("cluster: shell quoting survives spaces and single quotes", "[cluster]") {
  CHECK(cluster::shell_quote("a b") == "'a b'");
  CHECK(cluster::shell_quote("it's") == "'it'\\''s'");
  auto r = cluster::run_capture({"printf", "%s|", "a b", "it's", ""});
  CHECK(r.exit_code == 0);
  CHECK(r.output == "a b|it's||");
}

TEST_CASE("cluster: the script asks for the resources given", "[cluster]") {
  auto in = input(4);
  in.options.partition = "gpu-h200";
  in.options.gpus_per_task = 2;
  in.options.time = "00:30:00";
  in.options.max_parallel = 3;
  in.options.sbatch_args = {"--account=proj1"};
  const std::string s = cluster::slurm_script(in);
  CHECK(s.rfind("#!/bin/bash\n", 0) == 0);
  CHECK(has_line(s, "#SBATCH --array=0-3%3"));
  CHECK(has_line(s, "#SBATCH --partition=gpu-h200"));
  CHECK(has_line(s, "#SBATCH --gpus-per-task=2"));
  CHECK(has_line(s, "#SBATCH --time=00:30:00"));
  CHECK(has_line(s, "#SBATCH --ntasks=1"));
  CHECK(has_line(s, "#SBATCH --account=proj1"));
  CHECK(has_line(s, "#SBATCH --job-name=orch-night_sweep"));
  // Every #SBATCH line comes before the first command, or sbatch ignores it.
  const auto last_sbatch = s.rfind("#SBATCH");
  const auto first_command = s.find("\nset -u");
  CHECK(last_sbatch < first_command);
}

TEST_CASE("cluster: defaults leave out what the user did not choose", "[cluster]") {
  auto in = input(2);
  in.options.gpus_per_task = 0;
  const std::string s = cluster::slurm_script(in);
  CHECK(has_line(s, "#SBATCH --array=0-1"));
  CHECK(s.find("--partition") == std::string::npos);
  CHECK(s.find("--gpus-per-task") == std::string::npos);
  CHECK(s.find("--time") == std::string::npos);
}

TEST_CASE("cluster: the per-task command runs orch exec on the task's spec", "[cluster]") {
  const std::string s = cluster::slurm_script(input(3));
  CHECK(has_line(s, "ORCH='/opt/orch build/orch'"));
  CHECK(has_line(s, "DIR='/shared/results dir/night'"));
  CHECK(has_line(
      s, "ORCH_ARGS=(--plugin-path '/shared/my plugins' --plugin-path '/shared/it'\\''s here')"));
  CHECK(has_line(s, "SPEC=\"$DIR/specs/$TASK.json\""));
  CHECK(has_line(s, "OUT=\"$DIR/results/${RESULTS[$TASK]}.json\""));
  // --supervise: the run goes through the local sweep's launcher (timeout, crash document,
  // batch_size: auto) inside the task.
  CHECK(has_line(s,
                 "\"$ORCH\" \"${ORCH_ARGS[@]}\" exec --supervise --work-dir \"$DIR/runs\" --spec "
                 "\"$SPEC\" --out \"$OUT\" &"));
  // Task i's result name is the i-th entry of RESULTS.
  CHECK(s.find("RESULTS=(\n  'h0-r0'\n  'h1-r0'\n  'h2-r0'\n)") != std::string::npos);
}

TEST_CASE("cluster: the script records a stopped task as interrupted and bounds requeues",
          "[cluster]") {
  auto in = input(2);
  in.options.signal_seconds = 90;
  in.options.max_requeues = 2;
  const std::string s = cluster::slurm_script(in);
  CHECK(has_line(s, "#SBATCH --signal=B:TERM@90"));
  CHECK(has_line(s, "#SBATCH --requeue"));
  CHECK(has_line(s, "MAX_REQUEUES=2"));
  CHECK(has_line(s, "trap on_term TERM"));
  CHECK(std::regex_search(s, std::regex("on_term\\(\\) \\{[^}]*kill -TERM \"\\$CHILD\"")));
  CHECK(std::regex_search(s, std::regex("outcome interrupted \"stopped by Slurm")));
  CHECK(std::regex_search(
      s, std::regex(
             "if \\[ \"\\$RESTARTS\" -lt \"\\$MAX_REQUEUES\" \\][^\\n]*\\n\\s*scontrol requeue")));
  CHECK(std::regex_search(s, std::regex("if \\[ \"\\$RESTARTS\" -gt \"\\$MAX_REQUEUES\" \\]")));
  CHECK(s.find("--write-outcome \"$1\"") != std::string::npos);
}

TEST_CASE("cluster: the script is valid bash", "[cluster]") {
  const std::string s = cluster::slurm_script(input(5));
  auto r = cluster::run_capture({"bash", "-n", "-c", s});
  INFO(r.output);
  CHECK(r.exit_code == 0);
}

}  // namespace
}  // namespace orch
