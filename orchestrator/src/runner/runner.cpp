// One run in this process: wiring the plugins, the timed loop, and the result document.
#include "runner/runner.h"

#include <ATen/Context.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <new>
#include <numeric>
#include <optional>

#include "orch/nvtx.h"
#include "result/core_metrics.h"
#include "result/run_phases.h"
#include "runner/cuda_connections.h"
#include "runner/device.h"
#include "runner/device_health.h"
#include "runner/divergence.h"
#include "runner/environment.h"
#include "runner/gpu_memory_cap.h"
#include "runner/out_of_memory.h"
#include "runner/profiler.h"
#include "runner/run_samplers.h"
#include "runner/sgd.h"
#include "runner/steady_steps.h"
#include "runner/step_timer.h"
#include "storage/row_values.h"  // utc_now: the store and the documents share one time format
#include "telemetry/host_facts.h"
#include "telemetry/host_sampler.h"
#include "telemetry/nvml_sampler.h"
#include "telemetry/process_age.h"

namespace orch {
namespace {

// At most this many warm-up steps beyond the experiment's, for fp16 steps the loss scaler
// skipped: GradScaler's 65,536 start overflows ResNet50 about three times, the largest allowed
// start (2^24) about eleven; a run that skips every step has diverged and is judged later.
constexpr std::int64_t kMaxExtraWarmupSteps = 16;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The warm-up steps before any other rule: the experiment's; with `warmup: auto`, at least the
// stream strategy's own eager steps and its capture step and one more (steady_steps.h).
std::int64_t first_warmup_steps(const RunSpec& spec) {
  if (!spec.warmup_auto) return spec.warmup_steps;
  return std::max(spec.warmup_steps, stream_warmup_floor(spec.stream));
}

// When the previous run in this process ended: the next one's start-up starts there.
std::optional<Clock::time_point> g_previous_run_end;

// A run's start-up phase (result/run_phases.h), ending at `began`: since the process started,
// or since the previous run in this process ended.
std::optional<double> startup_seconds(Clock::time_point began) {
  if (g_previous_run_end) return std::chrono::duration<double>(began - *g_previous_run_end).count();
  return process_age_s();
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// PyTorch's `model.to(memory_format=torch.channels_last)`: every 4-D parameter and buffer
// is re-laid out in NHWC; everything else is left as it is.
void to_channels_last(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (auto& b : module.buffers()) {
    if (b.dim() == 4) b.set_data(b.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
}

void add_counters(nlohmann::json& out, const std::string& prefix,
                  const std::map<std::string, double>& counters) {
  for (const auto& [k, v] : counters) out[prefix + "." + k] = v;
}

// The measured part of a run, filled in by train().
struct Measurement {
  double warmup_s = 0, measure_s = 0;
  Clock::time_point warmup_began{}, measure_ended{};  // the phases around them (run_phases.h)
  std::int64_t warmup_steps = 0;      // taken: the experiment's, plus any for skipped fp16 steps
  std::optional<bool> warmup_steady;  // `warmup: auto`: ended steady (true) or at the cap
  std::vector<double> step_ms, data_wait_ms, loss;
  std::vector<double> gpu_idle_ms;  // per step; empty where not measured (step_timer.h)
  nlohmann::json counters = nlohmann::json::object();
  std::int64_t peak_allocated = -1, peak_reserved = -1;
  bool cudnn_benchmark = false;
  double param_checksum = 0;  // sum of every parameter after training, in float64
  std::int64_t host_peak_rss = 0;
  nlohmann::json profile;  // the document's `profile` section; null when not profiled
};

// The warm-up, timed apart from the measured steps: cuDNN autotuning, allocator growth and
// lazy initialisation happen here. Fills m's warm-up fields.
void warm_up(const RunSpec& spec, const c10::Device& device, StreamStrategy& strategy,
             StepFunctions& fns, const Precision& precision, Measurement& m) {
  const auto t0 = Clock::now();
  m.warmup_began = t0;
  const std::int64_t first_steps = first_warmup_steps(spec);
  for (std::int64_t i = 0; i < first_steps; ++i) strategy.step(fns);
  m.warmup_steps = first_steps;
  // fp16 loss scaling starts high and skips each step whose gradients overflow, often the first
  // few. A short warm-up (a batch-size probe's three steps) can then end before the optimizer
  // ever stepped, and its first real step, which allocates the optimizer state, would be timed.
  // So the warm-up goes on until the optimizer has stepped min(warm-up, 2) times, within a
  // bound; reading the count synchronises, which is harmless here, outside the timed steps.
  const std::int64_t want_stepped = std::min<std::int64_t>(spec.warmup_steps, 2);
  auto stepped = [&] {
    synchronize(device);  // every stream: a captured step may replay on the strategy's own
    const auto c = precision.counters();
    const auto it = c.find("skipped_steps");
    return m.warmup_steps -
           (it == c.end() ? std::int64_t{0} : static_cast<std::int64_t>(it->second));
  };
  while (want_stepped > 0 && m.warmup_steps < first_steps + kMaxExtraWarmupSteps &&
         stepped() < want_stepped) {
    strategy.step(fns);
    ++m.warmup_steps;
  }
  if (spec.warmup_auto) {
    // On until the step times settle (runner/steady_steps.h): each step timed alone, between
    // two synchronisations, which the warm-up can afford and the measured steps never do.
    SteadySteps steady;
    while (!steady.steady() && m.warmup_steps < SteadySteps::kMaxSteps &&
           seconds_since(t0) < SteadySteps::kMaxSeconds) {
      synchronize(device);
      const auto s0 = Clock::now();
      strategy.step(fns);
      synchronize(device);
      steady.add(seconds_since(s0));
      ++m.warmup_steps;
    }
    m.warmup_steady = steady.steady();
  }
  synchronize(device);
  m.warmup_s = seconds_since(t0);
}

// The run's plugins and optimizer, declared in the order they are made, so that they are
// destroyed in the reverse order (the strategy's captured graphs before the model they ran).
struct RunParts {
  std::shared_ptr<Precision> precision;
  std::shared_ptr<DataLoader> loader;
  std::shared_ptr<Model> model;
  std::shared_ptr<StreamStrategy> strategy;
  std::unique_ptr<StepOptimizer> optimizer;
};

// Builds the plugins for `device`, sets cuDNN's benchmark mode and puts the model on the
// device, in training mode and the run's memory format.
RunParts build_parts(const RunSpec& spec, const PluginRegistry& registry, const c10::Device& device,
                     std::int64_t batch, bool channels_last, Measurement& m) {
  RunParts parts;
  parts.precision = registry.create_precision(spec.precision, {device});
  parts.precision->configure();
  parts.loader = registry.create_loader(spec.data, {batch, device, spec.seed, channels_last});
  parts.model = registry.create_model(spec.model,
                                      {parts.loader->num_classes(), parts.loader->sample_shape()});
  parts.strategy = registry.create_strategy(spec.stream, {device});

  m.cudnn_benchmark =
      cudnn_benchmark_enabled(spec.cudnn_benchmark, batch, parts.loader->sample_shape());
  at::globalContext().setBenchmarkCuDNN(m.cudnn_benchmark);

  auto& net = parts.model->module();
  net.to(device);
  if (channels_last) to_channels_last(net);
  net.train();
  parts.optimizer = make_optimizer(spec.optimizer, net.parameters());
  return parts;
}

// The pieces of a step that the stream strategy puts together, filled in place: train_step
// calls the others through `fns`. `measured` is the measured steps' timer while they run
// (null otherwise): the loader's wait is timed into it.
void set_step_functions(StepFunctions& fns, RunParts& parts, const c10::Device& device,
                        bool channels_last, StepTimer*& measured) {
  fns.next_batch = [&parts, &measured] {
    // Each phase is an NVTX range (Nsight Systems) and a user scope (LibTorch's profiler
    // trace); with no profiler attached, either costs a couple of branches.
    NvtxRange r("data");
    RECORD_USER_SCOPE("data");
    if (measured) measured->input_wait_begin();
    Batch b = parts.loader->next();
    if (measured) measured->input_wait_end();
    return b;
  };
  fns.to_device = [device, channels_last](const Batch& b, bool non_blocking) {
    NvtxRange r("copy to device");
    RECORD_USER_SCOPE("copy to device");
    Batch out{b.images.to(device, non_blocking), b.labels.to(device, non_blocking)};
    if (channels_last) out.images = out.images.contiguous(at::MemoryFormat::ChannelsLast);
    return out;
  };
  fns.zero_grad = [&parts] { parts.optimizer->zero_grad(); };
  fns.forward_loss = [&parts](const Batch& b) {
    NvtxRange r("forward");
    RECORD_USER_SCOPE("forward");
    return parts.precision->forward_loss(*parts.model, b);
  };
  fns.backward_step = [&parts](const torch::Tensor& loss) {
    NvtxRange r("backward + optimizer");
    RECORD_USER_SCOPE("backward + optimizer");
    parts.precision->backward_step(loss, *parts.optimizer);
  };
  fns.train_step = [&fns](const Batch& b) {
    fns.zero_grad();
    auto loss = fns.forward_loss(b);
    fns.backward_step(loss);
    return loss.detach();
  };
}

// The measured steps: each step's time, input wait and loss. `sampler` and `host` (either may
// be null) are told when they begin and end, so the telemetry summaries cover exactly the
// steps the throughput covers.
void measure_steps(const RunSpec& spec, const c10::Device& device, StreamStrategy& strategy,
                   StepFunctions& fns, StepTimer*& measured, NvmlSampler* sampler,
                   HostSampler* host, Measurement& m) {
  const auto n = static_cast<std::size_t>(spec.measure_steps);
  StepTimer timer(device, n);
  std::vector<torch::Tensor> losses;
  losses.reserve(n);
  m.data_wait_ms.reserve(n);
  if (sampler) sampler->mark_measure_begin();
  if (host) host->mark_measure_begin();
  measured = &timer;
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    NvtxRange range("step");
    timer.start_step();
    StepResult r = strategy.step(fns);
    timer.end_step();
    losses.push_back(r.loss);
    m.data_wait_ms.push_back(r.data_wait_ms);
  }
  synchronize(device);
  m.measure_ended = Clock::now();
  m.measure_s = std::chrono::duration<double>(m.measure_ended - t0).count();
  measured = nullptr;
  if (sampler) sampler->mark_measure_end();
  if (host) host->mark_measure_end();

  m.step_ms = timer.step_ms();
  m.gpu_idle_ms = timer.input_idle_ms();
  auto all = torch::stack(losses).to(torch::kCPU, torch::kDouble);
  m.loss.assign(all.data_ptr<double>(), all.data_ptr<double>() + all.numel());
}

// What training left: the weights' checksum, the memory peaks and the plugins' counters.
void read_after_training(const RunParts& parts, const c10::Device& device, Measurement& m) {
  {
    // Where training left the weights, in one number: lets tests (and users) check that two
    // strategies computed the same thing, not just something equally fast.
    torch::NoGradGuard no_grad;
    auto total = torch::zeros({}, torch::TensorOptions(device).dtype(torch::kDouble));
    for (const auto& p : parts.model->module().parameters()) total += p.sum(torch::kDouble);
    m.param_checksum = total.item<double>();
  }
  m.peak_allocated = peak_allocated_bytes(device);
  m.peak_reserved = peak_reserved_bytes(device);
  // The process's peak, so with several runs in one process it covers the earlier ones too.
  m.host_peak_rss = host_peak_rss_bytes();
  add_counters(m.counters, "data", parts.loader->counters());
  add_counters(m.counters, "precision", parts.precision->counters());
  add_counters(m.counters, "stream", parts.strategy->counters());
  add_counters(m.counters, "model", parts.model->counters());
}

// `sampler` and `host` (either may be null) are told when the measured steps begin and end.
Measurement train(const RunSpec& spec, const PluginRegistry& registry, const c10::Device& device,
                  NvmlSampler* sampler, HostSampler* host, const std::string& trace_path) {
  Measurement m;
  torch::manual_seed(static_cast<std::uint64_t>(spec.seed));
  const bool channels_last = spec.memory_format == "channels_last";
  const std::int64_t batch = spec.batch_size.value_or(0);
  if (batch <= 0)
    throw std::runtime_error("batch_size: auto is resolved by `orch sweep`, not here");

  RunParts parts = build_parts(spec, registry, device, batch, channels_last, m);
  StepTimer* measured = nullptr;  // the measured steps' timer, while they run
  StepFunctions fns;
  set_step_functions(fns, parts, device, channels_last, measured);

  warm_up(spec, device, *parts.strategy, fns, *parts.precision, m);
  measure_steps(spec, device, *parts.strategy, fns, measured, sampler, host, m);
  read_after_training(parts, device, m);

  // Profiled steps come after everything above is read: the profiler costs host time per
  // operator (and CUPTI's kernel tracing costs some on the GPU), so profiling the measured
  // steps would lower the very throughput being measured. These steps keep training the same
  // model on the same data, so they look like the measured ones; the weights, losses, memory
  // peaks and counters recorded above do not include them.
  if (spec.profile.enabled()) {
    const auto n = static_cast<double>(spec.measure_steps);
    const double measured_step_ms = 1000.0 * m.measure_s / n;
    m.profile = profile_steps(spec.profile.steps, device, trace_path, measured_step_ms,
                              [&] { parts.strategy->step(fns); });
  }
  return m;
}

// The document's metrics from the measurement (the telemetry's are added by the caller);
// `t0` is when the run began, so set-up is the time until its warm-up.
nlohmann::json document_metrics(const Measurement& m, std::int64_t batch_size,
                                const std::optional<double>& startup_s, Clock::time_point t0) {
  const auto batch = static_cast<double>(batch_size);
  const auto steps = static_cast<double>(m.step_ms.size());
  CoreMetrics c;
  c.images_per_s = batch * steps / m.measure_s;
  c.step_ms_mean = 1000.0 * m.measure_s / steps;
  c.device_step_ms_mean = mean(m.step_ms);
  c.step_ms_p50 = percentile(m.step_ms, 0.50);
  c.step_ms_p90 = percentile(m.step_ms, 0.90);
  c.step_ms_p99 = percentile(m.step_ms, 0.99);
  c.data_wait_ms_mean = mean(m.data_wait_ms);
  if (!m.gpu_idle_ms.empty()) {
    // Of the wall step, as the data wait is: the share of the throughput lost to input.
    c.gpu_idle_ms_mean = mean(m.gpu_idle_ms);
    c.gpu_idle_share = *c.gpu_idle_ms_mean / *c.step_ms_mean;
  }
  c.startup_s = startup_s;
  c.setup_s = std::chrono::duration<double>(m.warmup_began - t0).count();
  c.warmup_s = m.warmup_s;
  c.warmup_steps = m.warmup_steps;
  c.warmup_steady = m.warmup_steady;
  c.measure_s = m.measure_s;
  c.loss_first = m.loss.front();
  c.loss_last = m.loss.back();
  if (m.counters.contains("precision.skipped_steps")) {
    c.skipped_steps = m.counters.at("precision.skipped_steps").get<double>();
  }
  c.cudnn_benchmark = m.cudnn_benchmark;
  c.param_checksum = m.param_checksum;
  if (m.peak_allocated >= 0) c.peak_allocated_bytes = m.peak_allocated;
  if (m.peak_reserved >= 0) c.peak_reserved_bytes = m.peak_reserved;
  c.host_peak_rss_bytes = m.host_peak_rss;
  nlohmann::json metrics = nlohmann::json::object();
  write_core_metrics(c, metrics);
  return metrics;
}

// One entry per measured step: its time, input wait, loss and, where measured, GPU idle time.
nlohmann::json document_steps(const Measurement& m) {
  nlohmann::json steps = nlohmann::json::array();
  for (std::size_t i = 0; i < m.step_ms.size(); ++i) {
    steps.push_back({{"step", i},
                     {"step_ms", m.step_ms[i]},
                     {"data_wait_ms", m.data_wait_ms[i]},
                     {"loss", m.loss[i]}});
    if (!m.gpu_idle_ms.empty()) steps.back()["gpu_idle_ms"] = m.gpu_idle_ms[i];
  }
  return steps;
}

}  // namespace

bool cudnn_benchmark_enabled(const std::string& setting, std::int64_t batch,
                             const std::vector<std::int64_t>& shape) {
  if (setting == "on") return true;
  if (setting == "off") return false;
  if (batch % 8 != 0) return false;
  return std::all_of(shape.begin(), shape.end(), [](std::int64_t d) { return d % 8 == 0; });
}

void start_up_begins_now() { g_previous_run_end = Clock::now(); }

namespace {

// The measured run's metrics, counters, steps and profile into the document, and its status:
// ok, or diverged.
void record_measurement(const Measurement& m, const RunSpec& spec,
                        const std::optional<double>& startup_s, Clock::time_point t0,
                        const RunSamplers& telemetry, ResultDocument& doc) {
  nlohmann::json metrics = document_metrics(m, *spec.batch_size, startup_s, t0);
  metrics.update(telemetry_metrics(*telemetry.gpu));
  if (telemetry.host) metrics.update(host_telemetry_metrics(*telemetry.host));
  // A number, so rank and the report can flag a run that shared its GPU (environment.cpp).
  if (doc.environment.contains("gpu_other_processes") &&
      doc.environment["gpu_other_processes"].is_array())
    metrics[metric_key::kGpuOtherProcesses] = doc.environment["gpu_other_processes"].size();
  doc.metrics = metrics;
  doc.counters = m.counters;
  doc.steps = document_steps(m);
  doc.profile = m.profile;  // null (left out) when not profiled
  // Checked after the measurement, on the losses already copied to the host: its metrics and
  // steps are kept (they show where it went wrong), but the numbers were not trained on.
  const auto diverged = divergence_error(m.loss, m.param_checksum);
  doc.status = diverged ? RunStatus::diverged : RunStatus::ok;
  if (diverged) doc.error = *diverged;
}

// Out of memory, however it was spelled (out_of_memory.h), is the configuration's outcome;
// any other error is a plain failure.
void record_failure(const std::string& what, const RunSpec& spec, ResultDocument& doc) {
  const auto oom = out_of_memory_error(what, spec.batch_size.value_or(0));
  doc.status = oom ? RunStatus::oom : RunStatus::failed;
  doc.error = oom ? *oom : what;
}

}  // namespace

ResultDocument run_document(const RunSpec& spec, const PluginRegistry& registry,
                            const RunOutputs& outputs) {
  ResultDocument doc;  // of the newest version (result_document.h)
  doc.experiment = spec.experiment;
  doc.run = RunIdentity{spec.name, spec.hash, spec.repeat};
  doc.config = spec.config.json();
  doc.started_at = storage::utc_now();
  const auto t0 = Clock::now();
  const std::optional<double> startup_s = startup_seconds(t0);
  std::optional<Clock::time_point> measure_ended;
  RunSamplers telemetry;
  try {
    // Refused rather than run with the driver's setting and stored as if it had been applied.
    if (auto why = cuda_connections_mismatch(spec)) throw std::runtime_error(*why);
    const c10::Device device = resolve_device(spec.device);
    doc.device = device.str();
    doc.environment = collect_environment(device);
    // Before anything is allocated on the device (runner/gpu_memory_cap.h).
    if (auto cap = apply_gpu_memory_cap(device)) doc.environment["gpu_memory_cap_bytes"] = *cap;
    reset_peak_memory(device);
    if (device.is_cuda())
      telemetry.start(spec, pci_bus_id_of(device), "");
    else
      telemetry.start(spec, "", "the run's device is the CPU");
    const Measurement m = train(spec, registry, device, telemetry.gpu_sampler(),
                                telemetry.host_sampler(), outputs.trace_path);
    telemetry.stop();
    measure_ended = m.measure_ended;
    record_measurement(m, spec, startup_s, t0, telemetry, doc);
  } catch (const c10::OutOfMemoryError& e) {
    doc.status = RunStatus::oom;
    doc.error = std::string("out of memory at batch size ") +
                std::to_string(spec.batch_size.value_or(0)) + ": " + e.what_without_backtrace();
  } catch (const c10::Error& e) {
    record_failure(e.what_without_backtrace(), spec, doc);
  } catch (const std::bad_alloc& e) {
    // Host memory: a huge batch's buffers, or a plugin's own vectors.
    doc.status = RunStatus::oom;
    doc.error = "out of host memory at batch size " + std::to_string(spec.batch_size.value_or(0)) +
                ": " + e.what();
  } catch (const std::exception& e) {
    record_failure(e.what(), spec, doc);
  }
  telemetry.stop();
  if (telemetry.gpu) doc.telemetry = telemetry_json(*telemetry.gpu);
  if (telemetry.host) doc.host_telemetry = host_telemetry_json(*telemetry.host);
  classify_run_failure(doc);
  if (measure_ended && doc.metrics.is_object()) {
    doc.metrics[phase_key::kAfter] = seconds_since(*measure_ended);
  }
  doc.duration_s = seconds_since(t0);
  doc.finished_at = storage::utc_now();
  g_previous_run_end = Clock::now();
  return doc;
}

nlohmann::json run_one(const RunSpec& spec, const PluginRegistry& registry,
                       const RunOutputs& outputs) {
  return to_json(run_document(spec, registry, outputs));
}

}  // namespace orch
