// A script run in `orch exec` (see script_workload.h).
#include "runner/script_workload.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "plan/bounded_file.h"
#include "plan/run_spec_json.h"
#include "plan/workload_config.h"
#include "process/child.h"
#include "process/leftovers.h"
#include "process/pipe_reader.h"
#include "process/signal_guard.h"
#include "result/json_dump.h"
#include "runner/code_version.h"
#include "runner/divergence.h"
#include "runner/environment.h"
#include "runner/out_of_memory.h"
#include "runner/run_samplers.h"
#include "storage/row_values.h"  // utc_now
#include "sweep/environment_fault.h"
#include "telemetry/gpu_facts.h"
#include "telemetry/host_facts.h"
#include "telemetry/host_sampler.h"
#include "telemetry/nvml_sampler.h"
#include "telemetry/telemetry_record.h"

#ifndef ORCH_PYTHON_DIR
#define ORCH_PYTHON_DIR ""
#endif

namespace orch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kTorchVenv = "venv-torch-2.11.0";
constexpr std::size_t kTailBytes = 4000;

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// The CUDA driver API, loaded at run time: exec must not link or initialise the runtime (that
// would make a context on the run's GPU beside the program's).
struct CudaDriver {
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using BusId = int (*)(char*, int, int);
  void* lib = nullptr;
  Init init = nullptr;
  Count count = nullptr;
  Get get = nullptr;
  BusId bus_id = nullptr;
  std::string error;

  CudaDriver() {
    lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      error = "the CUDA driver (libcuda.so.1) is not installed";
      return;
    }
    init = reinterpret_cast<Init>(::dlsym(lib, "cuInit"));
    count = reinterpret_cast<Count>(::dlsym(lib, "cuDeviceGetCount"));
    get = reinterpret_cast<Get>(::dlsym(lib, "cuDeviceGet"));
    bus_id = reinterpret_cast<BusId>(::dlsym(lib, "cuDeviceGetPCIBusId"));
    if (!init || !count || !get || !bus_id) {
      error = "the CUDA driver lacks cuInit/cuDeviceGetPCIBusId";
    } else if (int rc = init(0); rc != 0) {
      error = "cuInit failed with CUDA error " + std::to_string(rc);
    }
  }
  ~CudaDriver() {
    if (lib) ::dlclose(lib);
  }
  bool ok() const { return error.empty(); }
  int devices() const {
    int n = 0;
    return ok() && count(&n) == 0 ? n : 0;
  }
  /// "0000:3b:00.0" for CUDA's device `index` as this process sees it; empty with `why`.
  std::string pci_bus_id(int index, std::string& why) const {
    if (!ok()) {
      why = error;
      return "";
    }
    int dev = 0;
    char buf[64] = {};
    if (get(&dev, index) != 0 || bus_id(buf, sizeof buf, dev) != 0) {
      why = "CUDA has no device " + std::to_string(index);
      return "";
    }
    // In the form the rest of orch hands NVML (telemetry/gpu_facts.h), whatever the driver's.
    unsigned domain = 0, bus = 0, device = 0;
    if (std::sscanf(buf, "%x:%x:%x", &domain, &bus, &device) != 3) {
      why = std::string("CUDA gave an unreadable PCI bus id '") + buf + "'";
      return "";
    }
    return orch::pci_bus_id(static_cast<int>(domain), static_cast<int>(bus),
                            static_cast<int>(device));
  }
};

// Where the program runs: "cpu", or CUDA device `index` of exec's own numbering.
struct ScriptDevice {
  bool cuda = false;
  int index = 0;
  std::string error;  ///< a device the configuration asks for and this machine lacks
};

ScriptDevice resolve_script_device(const std::string& device, const CudaDriver& cuda) {
  ScriptDevice d;
  if (device == "cpu") return d;
  if (device == "auto") {
    d.cuda = cuda.devices() > 0;
    return d;
  }
  d.cuda = true;
  if (device.rfind("cuda:", 0) == 0) d.index = std::atoi(device.c_str() + 5);
  if (d.index >= cuda.devices()) {
    d.error =
        "the configuration's device " + device + " is not available (" +
        (cuda.ok() ? std::to_string(cuda.devices()) + " CUDA device(s) visible" : cuda.error) + ")";
  }
  return d;
}

// CUDA_VISIBLE_DEVICES for the program: only the run's GPU, so that it is cuda:0 there.
std::optional<std::string> visible_device_for(int index) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible) return std::to_string(index);
  std::string list = visible;
  std::size_t start = 0;
  for (int i = 0; start <= list.size(); ++i) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    if (i == index) return list.substr(start, end - start);
    start = end + 1;
  }
  return std::nullopt;
}

// The last non-empty line of a text.
std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  if (auto nl = text.rfind('\n'); nl != std::string::npos) text.erase(0, nl + 1);
  return text;
}

// A loss from the report: a number, or null / a string ("nan", "inf") for one JSON cannot hold.
double loss_value(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.find("inf") != std::string::npos || s.find("Inf") != std::string::npos)
      return s[0] == '-' ? -INFINITY : INFINITY;
  }
  return NAN;
}

// Exec's own facts, without CUDA: the program reports its own GPU and library versions.
json exec_environment(const std::string& pci_bus_id) {
  json env = host_environment();
  add_nvml_environment(env, pci_bus_id);
  return env;
}

// The pid signals sent to exec are forwarded to, and the first such signal.
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_signal = 0;

void forward_signal(int sig) {
  if (g_signal == 0) g_signal = sig;
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

struct Finished {
  int exit_code = -1;
  int signal = 0;
  std::string stderr_tail;
  std::string spawn_error;
  int leftovers = 0;  ///< processes the program left running, ended by exec
};

// The program: in exec's process group, so a sweep that kills the group kills it and its own
// children (DataLoader workers) too; killed if exec alone dies; its stderr through a pipe.
process::ChildOptions program_options(const std::vector<std::string>& argv,
                                      const std::map<std::string, std::string>& added_env) {
  process::ChildOptions o;
  o.argv = argv;
  o.env = added_env;
  o.search_path = true;
  o.in = process::Stdio::null();
  o.out = process::Stdio::inherit();
  o.err = process::Stdio::pipe();
  o.own_group = false;
  o.default_signals = false;  // what exec ignores stays ignored, as execve leaves it
  o.die_with_parent = true;
  return o;
}

void write_stderr(std::string_view text) {
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

// Copies the program's stderr to exec's (the run's log) while keeping a tail, until it has ended
// and its pipe is closed; the program's children (workers) may hold the pipe a little longer
// than it lives, not forever.
process::ExitStatus follow_program(process::Child& program, process::TailBuffer& tail) {
  process::PipeReader reader;
  reader.add(program.stderr_fd(), [&](std::string_view text) {
    write_stderr(text);
    tail.append(text);
  });
  std::optional<process::ExitStatus> status;
  std::optional<Clock::time_point> ended;
  for (;;) {
    const bool open = reader.read_for(std::chrono::milliseconds(reader.open() ? 100 : 0));
    if (!status) {
      status = open ? program.poll() : program.wait();
      if (status) ended = Clock::now();
    }
    if (ended && (!open || Clock::now() - *ended > std::chrono::seconds(2))) break;
  }
  return *status;
}

// Starts the program, copies its stderr to exec's (the run's log) while keeping a tail, and
// waits for it. What it leaves running outside exec's group (setsid) is ended once it has
// ended, before the run is reported (process/leftovers.h).
Finished run_program(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& added_env) {
  Finished f;
  const process::SignalGuard term(SIGTERM, forward_signal), interrupt(SIGINT, forward_signal);
  // Where the kernel refuses, orphans go to init as before: nothing else changes.
  (void)process::become_child_subreaper();
  process::TailBuffer tail(kTailBytes);
  std::optional<process::Child> program;
  try {
    program.emplace(program_options(argv, added_env));
  } catch (const process::SpawnError& e) {
    if (e.step() == process::SpawnError::Step::pipe) {
      f.spawn_error = std::string("cannot make a pipe: ") + std::strerror(e.code().value());
      return f;
    }
    if (e.step() == process::SpawnError::Step::fork) {
      f.spawn_error = std::string("cannot fork: ") + std::strerror(e.code().value());
      return f;
    }
    // The program could not be started: it failed, as one that exits 127 at once would.
    const std::string said = std::string("orch exec: cannot start the script's program: ") +
                             std::strerror(e.code().value()) + "\n";
    write_stderr(said);
    f.exit_code = 127;
    f.stderr_tail = said;
    return f;
  }
  g_child = program->pid();
  if (g_signal != 0) program->signal(g_signal);  // a signal that came before the pid was known
  const process::ExitStatus status = follow_program(*program, tail);
  g_child = 0;
  program.reset();  // its pipe closed: what it left running writes to nobody
  if (const auto left = process::end_leftover_children(); !left.empty()) {
    write_stderr("orch exec: the script's program left " + process::describe_leftovers(left) +
                 " running when it ended; ended them\n");
    f.leftovers = static_cast<int>(left.size());
  }
  f.exit_code = status.exit_code;
  f.signal = status.signal;
  f.stderr_tail = tail.text();
  return f;
}

}  // namespace

std::string script_interpreter(const WorkloadSpec& workload) {
  if (!workload.python.empty()) return workload.python;
  if (const char* p = std::getenv("ORCH_PYTHON"); p && *p) return p;
  fs::path cache;
  if (const char* c = std::getenv("ORCH_CACHE"); c && *c)
    cache = c;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    cache = fs::path(x) / "orch";
  else if (const char* h = std::getenv("HOME"); h && *h)
    cache = fs::path(h) / ".cache" / "orch";
  if (!cache.empty()) {
    const fs::path venv = cache / kTorchVenv / "bin" / "python";
    if (executable_file(venv)) return venv.string();
  }
  return "python3";
}

std::vector<std::string> script_argv(const RunSpec& spec) {
  std::vector<std::string> words = split_command(spec.workload.command);
  if (words.empty()) throw std::invalid_argument("the workload's command is empty");
  const int w = spec.workload.script_word;
  if (w >= 0 && static_cast<std::size_t>(w) < words.size() && !spec.workload.script_path.empty())
    words[static_cast<std::size_t>(w)] = spec.workload.script_path;
  const std::string& first = words.front();
  if (first.size() >= 3 && first.compare(first.size() - 3, 3, ".py") == 0)
    words.insert(words.begin(), script_interpreter(spec.workload));
  for (std::string& a : arg_words(spec.args)) words.push_back(std::move(a));
  return words;
}

std::map<std::string, std::string> script_environment(const RunSpec& spec,
                                                      const std::string& spec_path,
                                                      const std::string& report_path,
                                                      const std::string& device) {
  std::map<std::string, std::string> env;
  env["ORCH_RUN_SPEC"] = fs::absolute(spec_path).string();
  env["ORCH_SCRIPT_REPORT"] = fs::absolute(report_path).string();
  env["ORCH_BATCH_SIZE"] = std::to_string(spec.batch_size.value_or(0));
  env["ORCH_WARMUP_STEPS"] = std::to_string(spec.warmup_steps);
  env["ORCH_MEASURE_STEPS"] = std::to_string(spec.measure_steps);
  env["ORCH_SEED"] = std::to_string(spec.seed);
  env["ORCH_DEVICE"] = device;
  std::string pythonpath = ORCH_PYTHON_DIR;
  if (const char* p = std::getenv("PYTHONPATH"); p && *p)
    pythonpath = pythonpath.empty() ? p : pythonpath + ":" + p;
  if (!pythonpath.empty()) env["PYTHONPATH"] = pythonpath;
  return env;
}

void script_outcome(ResultDocument& doc, const RunSpec& spec, int exit_code, int signal,
                    const std::string& stderr_tail, const std::optional<json>& report,
                    const std::string& report_error) {
  const std::int64_t batch = spec.batch_size.value_or(0);
  if (signal > 0) {
    const char* abbrev = sigabbrev_np(signal);
    const std::string line = last_line(stderr_tail);
    doc.status = RunStatus::failed;
    doc.error = "the script was killed by signal " + std::to_string(signal) +
                (abbrev ? std::string(" (SIG") + abbrev + ")" : "") +
                (line.empty() ? "" : ": " + line);
    return;
  }
  if (exit_code != 0) {
    const std::string line = last_line(stderr_tail);
    // The last line that names an allocation failure (out_of_memory.h), which need not be the
    // traceback's last line.
    std::optional<std::string> oom;
    for (std::size_t end = stderr_tail.size(); end > 0 && !oom;) {
      std::size_t start = stderr_tail.rfind('\n', end - 1);
      start = start == std::string::npos ? 0 : start + 1;
      oom = out_of_memory_error(last_line(stderr_tail.substr(start, end - start)), batch);
      end = start == 0 ? 0 : start - 1;
    }
    if (oom) {
      doc.status = RunStatus::oom;
      doc.error = *oom;
    } else {
      doc.status = RunStatus::failed;
      doc.error = "exit code " + std::to_string(exit_code) + (line.empty() ? "" : ": " + line);
    }
    return;
  }
  if (!report) {
    doc.status = RunStatus::failed;
    doc.error = report_error.empty()
                    ? "the script ended without a report (call orch_workload's finish())"
                    : report_error;
    return;
  }
  const json& r = *report;
  auto invalid = [&](const std::string& why) {
    doc.status = RunStatus::failed;
    doc.error = "the script's report is not valid: " + why;
  };
  if (!r.is_object() || r.value("format", "") != "orch.script-report") {
    return invalid("its format is not orch.script-report");
  }
  if (!r.contains("version") || !r["version"].is_number_integer() || r["version"] != 1) {
    return invalid("version " + (r.contains("version") ? r["version"].dump() : "(none)") +
                   " is not 1, the version this orch reads");
  }
  if (!r.contains("metrics") || !r["metrics"].is_object()) return invalid("no metrics");
  if (!r.contains("steps") || !r["steps"].is_array() || r["steps"].empty()) {
    return invalid("no measured step");
  }
  json metrics = json::object();
  for (const auto& [k, v] : r["metrics"].items()) {
    if (v.is_number()) metrics[k] = v;
  }
  if (!read_core_metrics(metrics).images_per_s) {
    return invalid(std::string("metrics.") + metric_key::kImagesPerS + " is missing");
  }
  doc.metrics = metrics;
  doc.steps = r["steps"];
  if (r.contains("counters") && r["counters"].is_object()) doc.counters = r["counters"];
  if (r.contains("batch_size") && r["batch_size"].is_number_integer() && r["batch_size"] != batch &&
      batch > 0) {
    return invalid("it ran batch " + r["batch_size"].dump() + ", not the run's " +
                   std::to_string(batch));
  }
  std::vector<double> losses;
  for (const json& s : doc.steps) {
    if (s.is_object() && s.contains("loss")) losses.push_back(loss_value(s["loss"]));
  }
  const auto diverged = divergence_error(losses, 0.0);
  doc.status = diverged ? RunStatus::diverged : RunStatus::ok;
  if (diverged) doc.error = *diverged;
}

namespace {

// What the program is started with: its command line and environment, and the GPU's PCI bus
// id for the sampler.
struct ScriptLaunch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string pci_bus_id;
  std::string no_gpu;  // why the GPU is not sampled ("": it is, at pci_bus_id)
};

// The run's spec for the program, beside the result document: in a sweep, in the run's folder,
// where something planted at the name (a link to another file, a FIFO) must never be written
// through. Only a regular file (an earlier attempt's) is replaced, by renaming over it; anything
// else is refused by name as the environment's fault, so the sweep stops and a resume runs the
// run again once it is removed.
void write_script_spec(const std::string& path, const std::string& text) {
  if (const std::string refused = script_spec_refusal(path); !refused.empty()) {
    throw sweep::EnvironmentFault(refused);
  }
  sweep::write_file_atomically(path, text);
}

// Sets the document's device and environment and writes the run's spec for the program.
ScriptLaunch prepare_launch(const RunSpec& spec, const ScriptDevice& device, const CudaDriver& cuda,
                            const std::string& spec_path, const std::string& report_path,
                            ResultDocument& doc) {
  if (!device.error.empty()) throw std::runtime_error(device.error);
  if (!spec.batch_size) {
    throw std::runtime_error(
        "batch_size: auto needs a batch (--batch-size N); orch sweep searches it");
  }
  ScriptLaunch launch;
  doc.device = device.cuda ? "cuda:0" : "cpu";
  launch.env = script_environment(spec, spec_path, report_path, device.cuda ? "cuda" : "cpu");
  if (device.cuda) {
    const auto visible = visible_device_for(device.index);
    if (!visible) throw std::runtime_error("CUDA_VISIBLE_DEVICES has no device " + spec.device);
    launch.env["CUDA_VISIBLE_DEVICES"] = *visible;
    std::string why;
    launch.pci_bus_id = cuda.pci_bus_id(device.index, why);
    if (launch.pci_bus_id.empty()) launch.no_gpu = "the GPU's PCI bus id is unknown (" + why + ")";
  } else {
    launch.no_gpu = "the run's device is the CPU";
  }
  write_script_spec(spec_path, json_dump(run_spec_json(spec), 2) + "\n");
  launch.argv = script_argv(spec);
  doc.environment = exec_environment(launch.pci_bus_id);
  doc.environment["script_argv"] = launch.argv;
  // The user's code as it was: the script's repository (or the working folder's, for a
  // command that names no file), so compare can say two runs measured different code.
  doc.environment["code"] =
      code_version_of(spec.workload.script_path.empty() ? "." : spec.workload.script_path);
  return launch;
}

// The program's report, if it wrote one, or why it cannot be read (empty when it wrote none).
std::pair<std::optional<json>, std::string> read_script_report(const std::string& report_path) {
  std::error_code ec;
  if (!fs::exists(report_path, ec)) return {std::nullopt, ""};
  try {
    return {
        json::parse(read_bounded_file(report_path, kMaxResultDocumentBytes, "a script's report")),
        ""};
  } catch (const BoundedReadError& e) {
    return {std::nullopt, std::string("the script's report cannot be read: ") + e.what()};
  } catch (const std::exception& e) {
    return {std::nullopt, "the script's report " + report_path + " is not JSON: " + e.what()};
  }
}

// What a report says beyond its outcome: the program's environment and device, and the
// measured window for the telemetry (its steps ended when it wrote the report).
void take_report_details(const json& r, const std::string& report_path, ResultDocument& doc,
                         RunSamplers& telemetry) {
  if (r.contains("environment") && r["environment"].is_object()) {
    doc.environment.update(r["environment"]);  // the program knows its GPU and libraries
  }
  if (r.contains("device") && r["device"].is_string()) doc.device = r["device"].get<std::string>();
  struct stat st {};
  if (::stat(report_path.c_str(), &st) == 0 && r.contains("metrics") && r["metrics"].is_object() &&
      r["metrics"].value("measure_s", json()).is_number()) {
    const auto written = std::chrono::system_clock::time_point(
        std::chrono::seconds(st.st_mtim.tv_sec) +
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    telemetry.set_measure_window(written, r["metrics"]["measure_s"].get<double>());
  }
}

ProcessOutcome outcome_of(const Finished& f) {
  ProcessOutcome outcome;
  if (f.signal)
    outcome.signal = f.signal;
  else
    outcome.exit_code = f.exit_code;
  outcome.stderr_tail = f.stderr_tail;
  return outcome;
}

// Runs the program and reads what it left: the run's outcome, its report's metrics and details.
void run_and_read(const RunSpec& spec, const ScriptLaunch& launch, const std::string& report_path,
                  ResultDocument& doc, RunSamplers& telemetry) {
  const Finished f = run_program(launch.argv, launch.env);
  telemetry.stop();
  if (!f.spawn_error.empty()) throw std::runtime_error(f.spawn_error);
  const auto [report, report_error] = read_script_report(report_path);
  if (g_signal != 0 && f.exit_code != 0) {
    doc.status = RunStatus::interrupted;
    doc.error = std::string("orch exec was stopped by ") +
                (g_signal == SIGINT ? "SIGINT" : "SIGTERM") + " while the script ran";
  } else {
    script_outcome(doc, spec, f.exit_code, f.signal, f.stderr_tail, report, report_error);
  }
  if (report && report->is_object()) take_report_details(*report, report_path, doc, telemetry);
  doc.outcome = outcome_of(f);
}

// The telemetry's records and summaries, the failure's class, the run's times.
void finish_script_document(ResultDocument& doc, const RunSamplers& telemetry,
                            Clock::time_point t0) {
  const bool measured = doc.status == RunStatus::ok || doc.status == RunStatus::diverged;
  if (telemetry.gpu) {
    doc.telemetry = telemetry_json(*telemetry.gpu);
    if (measured) doc.metrics.update(telemetry_metrics(*telemetry.gpu));
  }
  if (telemetry.host) {
    doc.host_telemetry = host_telemetry_json(*telemetry.host);
    if (measured) doc.metrics.update(host_telemetry_metrics(*telemetry.host));
  }
  // The program's failures are its configuration's; whether its GPU is still sound is the
  // sweep's device check to find, not exec's (a check here would make a CUDA context).
  if (!measured && !doc.failure_class) doc.failure_class = FailureClass::configuration;
  doc.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  doc.finished_at = storage::utc_now();
}

}  // namespace

ResultDocument run_script_document(const RunSpec& spec, const std::string& out_path) {
  g_signal = 0;
  ResultDocument doc;
  doc.experiment = spec.experiment;
  doc.run = RunIdentity{spec.name, spec.hash, spec.repeat};
  doc.config = spec.config.json();
  doc.started_at = storage::utc_now();
  const auto t0 = Clock::now();
  const std::string spec_path = script_spec_path(out_path);
  const std::string report_path = out_path + ".script-report.json";
  std::error_code ec;
  fs::remove(report_path, ec);  // an earlier attempt's report is not this one's

  const CudaDriver cuda;
  const ScriptDevice device = resolve_script_device(spec.device, cuda);
  RunSamplers telemetry;
  try {
    const ScriptLaunch launch = prepare_launch(spec, device, cuda, spec_path, report_path, doc);
    telemetry.start(spec, launch.pci_bus_id, launch.no_gpu);
    run_and_read(spec, launch, report_path, doc, telemetry);
  } catch (const sweep::EnvironmentFault& e) {
    // A file of the run's refused or not written: the surroundings' fault, not the program's.
    telemetry.stop();
    doc.status = RunStatus::failed;
    doc.error = e.what();
    doc.failure_class = FailureClass::environment;
  } catch (const std::exception& e) {
    telemetry.stop();
    doc.status = RunStatus::failed;
    doc.error = e.what();
  }
  finish_script_document(doc, telemetry, t0);
  return doc;
}

}  // namespace orch
