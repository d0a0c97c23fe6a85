// Kernels per step, GPU busy share and the top operations, from trace events (see
// profile_summary.h).
#include "telemetry/profile_summary.h"

#include <algorithm>
#include <map>

namespace orch {
namespace {

using json = nlohmann::json;

struct OpTotals {
  std::int64_t calls = 0;
  std::int64_t total_ns = 0, self_ns = 0;
};

std::int64_t duration_ns(const TraceEvent& e) {
  return std::max<std::int64_t>(0, e.end_ns - e.start_ns);
}

// Time covered by at least one interval: what "the GPU was busy" means when kernels of several
// streams overlap.
std::int64_t union_ns(std::vector<std::pair<std::int64_t, std::int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  std::int64_t total = 0, open_start = 0, open_end = 0;
  bool open = false;
  for (const auto& [s, e] : spans) {
    if (e <= s) continue;
    if (open && s <= open_end) {
      open_end = std::max(open_end, e);
      continue;
    }
    if (open) total += open_end - open_start;
    open = true;
    open_start = s;
    open_end = e;
  }
  if (open) total += open_end - open_start;
  return total;
}

// Self time of each host event: its duration minus that of the events directly inside it on
// the same thread. Operators nest (aten::conv2d calls aten::convolution calls
// aten::mkldnn_convolution), so summing durations would count the same time several times.
std::vector<std::int64_t> self_times(const std::vector<TraceEvent>& events,
                                     const std::vector<std::size_t>& host) {
  std::vector<std::int64_t> self(events.size(), 0);
  std::map<std::uint64_t, std::vector<std::size_t>> by_thread;
  for (std::size_t i : host) by_thread[events[i].thread].push_back(i);
  for (auto& [thread, ids] : by_thread) {
    // Parents first: earlier start, and for equal starts the longer one.
    std::sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
      if (events[a].start_ns != events[b].start_ns) return events[a].start_ns < events[b].start_ns;
      return events[a].end_ns > events[b].end_ns;
    });
    std::vector<std::size_t> stack;
    std::vector<std::int64_t> children(events.size(), 0);
    for (std::size_t i : ids) {
      const TraceEvent& e = events[i];
      while (!stack.empty() && events[stack.back()].end_ns <= e.start_ns) stack.pop_back();
      if (!stack.empty()) {
        const TraceEvent& parent = events[stack.back()];
        children[stack.back()] +=
            std::max<std::int64_t>(0, std::min(e.end_ns, parent.end_ns) - e.start_ns);
      }
      stack.push_back(i);
    }
    for (std::size_t i : ids)
      self[i] = std::max<std::int64_t>(0, duration_ns(events[i]) - children[i]);
  }
  return self;
}

json top_list(const std::map<std::string, OpTotals>& totals, std::size_t top) {
  std::vector<std::pair<std::string, OpTotals>> rows(totals.begin(), totals.end());
  std::int64_t all_self = 0;
  for (const auto& [name, t] : rows) all_self += t.self_ns;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (a.second.self_ns != b.second.self_ns) return a.second.self_ns > b.second.self_ns;
    return a.first < b.first;
  });
  if (rows.size() > top) rows.resize(top);
  json out = json::array();
  for (const auto& [name, t] : rows) {
    out.push_back(
        {{"name", name},
         {"calls", t.calls},
         {"total_ms", static_cast<double>(t.total_ns) / 1e6},
         {"self_ms", static_cast<double>(t.self_ns) / 1e6},
         {"share",
          all_self > 0 ? static_cast<double>(t.self_ns) / static_cast<double>(all_self) : 0.0}});
  }
  return out;
}

}  // namespace

json summarize_profile(const std::vector<TraceEvent>& events, const ProfileWindow& window,
                       std::size_t top) {
  const bool gpu = window.gpu;
  const double n = static_cast<double>(std::max<std::int64_t>(1, window.steps));
  std::vector<std::size_t> host;
  std::vector<std::pair<std::int64_t, std::int64_t>> kernel_spans;
  std::map<std::string, OpTotals> kernels;
  std::int64_t kernel_count = 0, kernel_ns = 0, launches = 0, cpu_ops = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    switch (e.kind) {
      case TraceEventKind::kKernel: {
        ++kernel_count;
        kernel_ns += duration_ns(e);
        kernel_spans.emplace_back(e.start_ns, e.end_ns);
        OpTotals& t = kernels[e.name];
        ++t.calls;
        t.total_ns += duration_ns(e);
        t.self_ns += duration_ns(e);
        break;
      }
      case TraceEventKind::kCpuOp:
        ++cpu_ops;
        host.push_back(i);
        break;
      case TraceEventKind::kUserScope:
        host.push_back(i);  // a parent of operators, never listed itself
        break;
      case TraceEventKind::kLaunch:
        ++launches;
        break;
      default:
        break;
    }
  }
  const std::vector<std::int64_t> self = self_times(events, host);
  std::map<std::string, OpTotals> ops;
  for (std::size_t i : host) {
    if (events[i].kind != TraceEventKind::kCpuOp) continue;
    OpTotals& t = ops[events[i].name];
    ++t.calls;
    t.total_ns += duration_ns(events[i]);
    t.self_ns += self[i];
  }

  const double step_ms = window.wall_ms / n;
  json out;
  out["step_ms"] = step_ms;
  out["measured_step_ms"] = window.measured_step_ms > 0 ? json(window.measured_step_ms) : json();
  out["kernels_per_step"] = gpu ? static_cast<double>(kernel_count) / n : 0.0;
  out["cpu_ops_per_step"] = static_cast<double>(cpu_ops) / n;
  if (gpu) {
    const double busy_ms = static_cast<double>(union_ns(std::move(kernel_spans))) / 1e6 / n;
    out["gpu_kernel_ms_per_step"] = static_cast<double>(kernel_ns) / 1e6 / n;
    out["gpu_busy_ms_per_step"] = busy_ms;
    // Busy time can exceed a step only through clock skew between the GPU's and the host's
    // timestamps, or kernels slowed by CUPTI's tracing against the unprofiled step.
    auto share = [&](double of_ms) { return of_ms > 0 ? std::min(1.0, busy_ms / of_ms) : 0.0; };
    out["gpu_busy_share"] = share(window.measured_step_ms > 0 ? window.measured_step_ms : step_ms);
    out["gpu_busy_share_profiled"] = share(step_ms);
    out["cuda_launches_per_step"] = static_cast<double>(launches) / n;
  } else {
    for (const char* k : {"gpu_kernel_ms_per_step", "gpu_busy_ms_per_step", "gpu_busy_share",
                          "gpu_busy_share_profiled", "cuda_launches_per_step"}) {
      out[k] = nullptr;
    }
  }
  out["top_kernels"] = top_list(kernels, top);
  out["top_cpu_ops"] = top_list(ops, top);
  return out;
}

}  // namespace orch
