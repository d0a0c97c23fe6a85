"""Measure a PyTorch training script the way orch measures its own runs.

A script started by ``orch exec`` finds its run in the environment (ORCH_RUN_SPEC, the JSON
specification; ORCH_SCRIPT_REPORT, where the report goes); started by hand it uses the keyword
defaults of ``start()`` and prints one summary line. The contract with orch is
docs/script-workloads.md::

    import orch_workload
    run = orch_workload.start()
    for step in run.steps():          # warm-up steps first, then the measured ones
        with run.data_wait():
            images, labels = next(batches)
        loss = train_step(images, labels)
        run.record(loss=loss)         # a tensor is read after the loop, not per step
    run.finish()                      # writes the report

Standard library only: torch is used when the script has imported it (before start()), and
everything that needs it (CUDA event timing, memory peaks, the GPU's facts) is left out of the
report without it.
"""

import contextlib
import importlib.metadata
import json
import math
import numbers
import os
import platform
import resource
import sys
import tempfile
import time

__all__ = ["start", "Run", "WorkloadError", "percentile", "REPORT_FORMAT", "REPORT_VERSION"]

REPORT_FORMAT = "orch.script-report"
REPORT_VERSION = 1

# Defaults of a standalone run; orch's own defaults for `batch_size` and `steps`
# (docs/experiment-file.md), so a script measures the same steps with or without orch.
DEFAULT_BATCH_SIZE = 64
DEFAULT_WARMUP = 10
DEFAULT_MEASURE = 50


class WorkloadError(RuntimeError):
    """The module was used in a way that cannot give a measurement (said how to fix it)."""


def percentile(values, q):
    """Linear interpolation between the closest ranks, exactly as orch's runner computes its
    step-time percentiles (orchestrator/src/runner/runner.cpp), so a script's p90 and a built-in
    run's p90 are the same statistic. 0 for no values."""
    if not values:
        return 0.0
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _mean(values):
    return sum(values) / len(values) if values else 0.0


def _torch():
    """torch when the script imported it, else None. Never imported here: a script that does not
    use torch should not pay for its import, and one that does has imported it already."""
    return sys.modules.get("torch")


def _finite_or_none(x):
    # JSON has no NaN or infinity: orch's reader (nlohmann::json) writes them as null, and reads
    # a null loss as a loss that was not finite (the run is `diverged`).
    return x if math.isfinite(x) else None


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise WorkloadError(f"{what} must be a positive integer, got {value!r}")
    return value


def _non_negative_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WorkloadError(f"{what} must be an integer >= 0, got {value!r}")
    return value


def _read_spec(path):
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except OSError as e:
        raise WorkloadError(f"ORCH_RUN_SPEC={path}: cannot read it: {e.strerror}") from e
    except ValueError as e:
        raise WorkloadError(f"ORCH_RUN_SPEC={path}: not valid JSON: {e}") from e
    config = spec.get("config") if isinstance(spec, dict) else None
    if not isinstance(config, dict):
        raise WorkloadError(f"ORCH_RUN_SPEC={path}: no `config` object (is it orch's run spec?)")
    return spec


def _spec_value(config, path, key, default=None):
    node = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is not None:
                return default
            raise WorkloadError(f"ORCH_RUN_SPEC={path}: config.{key} is missing")
        node = node[part]
    return node


def _resolve_device(requested):
    """`cpu`, or `cuda:N`; `auto` is the first CUDA device when torch sees one."""
    requested = (requested or "auto").strip()
    if requested == "cpu":
        return "cpu"
    torch = _torch()
    has_cuda = torch is not None and torch.cuda.is_available()
    if requested == "auto":
        return "cuda:0" if has_cuda else "cpu"
    if requested == "cuda" or requested.startswith("cuda:"):
        if not has_cuda:
            why = ("torch is not imported (import torch before orch_workload.start())"
                   if torch is None else "torch sees no CUDA device")
            raise WorkloadError(f"device {requested!r} asked for, but {why}")
        return "cuda:0" if requested == "cuda" else requested
    raise WorkloadError(f"device {requested!r}: allowed are auto, cpu, cuda, cuda:N")


def start(batch_size=DEFAULT_BATCH_SIZE, warmup=DEFAULT_WARMUP, measure=DEFAULT_MEASURE,
          device="auto", seed=0, args=None, report=None):
    """Begins a run. Under orch (ORCH_RUN_SPEC set) every number comes from the run's
    specification and the keywords are ignored; standalone the keywords are the run, and the
    report is written only where `report` (or ORCH_SCRIPT_REPORT) names a file."""
    spec_path = os.environ.get("ORCH_RUN_SPEC")
    if spec_path:
        spec = _read_spec(spec_path)
        config = spec["config"]
        batch = _spec_value(config, spec_path, "batch_size")
        if not isinstance(batch, int) or isinstance(batch, bool):
            raise WorkloadError(f"ORCH_RUN_SPEC={spec_path}: config.batch_size is {batch!r}, "
                                "not an integer (orch exec resolves `auto` before the start)")
        # ORCH_DEVICE is exec's resolved device (`cuda` with the run's GPU as the only visible
        # one); config.device is what the experiment asked for.
        device_name = os.environ.get("ORCH_DEVICE") or _spec_value(config, spec_path, "device",
                                                                   "auto")
        if device_name.startswith("cuda"):
            device_name = "cuda"  # the run's GPU is cuda:0 in the program, whatever its index
        run_args = config.get("args") or {}
        if not isinstance(run_args, dict):
            raise WorkloadError(f"ORCH_RUN_SPEC={spec_path}: config.args is not an object")
        return Run(batch_size=_positive_int(batch, "config.batch_size"),
                   warmup=_non_negative_int(_spec_value(config, spec_path, "steps.warmup"),
                                            "config.steps.warmup"),
                   measure=_positive_int(_spec_value(config, spec_path, "steps.measure"),
                                         "config.steps.measure"),
                   device=_resolve_device(device_name),
                   seed=_non_negative_int(_spec_value(config, spec_path, "seed", 0),
                                          "config.seed"),
                   args=dict(run_args), config=config, spec=spec,
                   report_path=os.environ.get("ORCH_SCRIPT_REPORT"), under_orch=True)
    config = {"batch_size": batch_size, "steps": {"warmup": warmup, "measure": measure},
              "device": device, "seed": seed, "args": dict(args or {})}
    return Run(batch_size=_positive_int(batch_size, "batch_size"),
               warmup=_non_negative_int(warmup, "warmup"),
               measure=_positive_int(measure, "measure"), device=_resolve_device(device),
               seed=_non_negative_int(seed, "seed"), args=dict(args or {}), config=config,
               spec=None, report_path=report or os.environ.get("ORCH_SCRIPT_REPORT"),
               under_orch=False)


class Run:
    """One run: its settings (read-only attributes), the timed step loop and the report."""

    def __init__(self, batch_size, warmup, measure, device, seed, args, config, spec,
                 report_path, under_orch):
        self.batch_size = batch_size
        self.warmup_steps = warmup
        self.measure_steps = measure
        self.device = device
        self.seed = seed
        self.args = args
        self.config = config
        self.spec = spec
        self.report_path = report_path
        self.under_orch = under_orch

        self._torch = _torch()
        self._cuda = device.startswith("cuda")
        self._step = None  # the step being run (index), None outside one
        self._measuring = False
        self._loop_started = self._loop_done = self._finished = False
        self._recorded = False  # record() was called in the current step
        self._in_wait = False
        self._wait_t0 = 0.0
        self._waits_in_step = 0
        self._warmup_s = 0.0
        self._measure_s = None
        self._measure_t0 = 0.0
        self._counters = {}
        # The measured steps, index k = step warmup + k.
        self._host_ms = []
        self._data_wait_ms = []
        self._images = []
        self._losses = []  # per step: a tensor, a float or None
        self._wait_pairs = []  # per step: [(begin event, end event), ...] on CUDA
        self._events = None
        self._wait_pool = None
        if self._cuda:
            # Peaks over the whole run, as orch's runner resets them before the model exists.
            dev = self._torch.device(device)
            # The caching allocator exists once CUDA is initialised: resetting its peaks before
            # that raises "Invalid device argument".
            self._torch.cuda.init()
            self._torch.cuda.reset_peak_memory_stats(dev)

    # --- the loop -------------------------------------------------------------------------

    def steps(self):
        """Yields 0 .. warmup + measure - 1; each iteration is one timed step. Measured steps
        are timed with a CUDA event before and after each (read after the loop: no host
        synchronisation per step) on a GPU, with the host clock on the CPU."""
        if self._loop_started:
            raise WorkloadError("steps() was called twice: one run has one step loop")
        self._loop_started = True
        return self._loop()

    def _loop(self):
        n = self.measure_steps
        perf = time.perf_counter
        starts = ends = None
        if self._cuda:
            # Created before the loop so a measured step only records them.
            event = self._torch.cuda.Event
            starts = [event(enable_timing=True) for _ in range(n)]
            ends = [event(enable_timing=True) for _ in range(n)]
            self._events = (starts, ends)
            # One data-wait pair per step; a second wait in one step makes its own.
            self._wait_pool = [(event(enable_timing=True), event(enable_timing=True))
                               for _ in range(n)]
        t0 = perf()
        try:
            for i in range(self.warmup_steps):
                self._begin_step(i)
                yield i
                self._end_step()
            # Warm-up (cuDNN autotuning, torch.compile, allocator growth) is timed apart from
            # the measured steps and must be over before they start.
            self._synchronize()
            self._warmup_s = perf() - t0
            self._measuring = True
            self._measure_t0 = perf()
            for k in range(n):
                i = self.warmup_steps + k
                self._begin_step(i)
                self._data_wait_ms.append(0.0)
                self._images.append(None)
                self._losses.append(None)
                if self._cuda:
                    self._wait_pairs.append([])
                    starts[k].record()
                host_t0 = perf()
                yield i
                host_t1 = perf()
                if self._cuda:
                    ends[k].record()
                self._host_ms.append(1000.0 * (host_t1 - host_t0))
                self._end_step()
            self._synchronize()
            self._measure_s = perf() - self._measure_t0
            self._loop_done = True
        finally:
            self._step = None
            self._in_wait = False

    def _begin_step(self, i):
        self._step = i
        self._recorded = False
        self._waits_in_step = 0

    def _end_step(self):
        if self._in_wait:
            raise WorkloadError(f"step {self._step} ended inside data_wait()")
        self._step = None

    def _synchronize(self):
        if self._cuda:
            self._torch.cuda.synchronize()

    @contextlib.contextmanager
    def data_wait(self):
        """Marks the wait for the step's batch. Its host time is the step's data_wait_ms; on a
        GPU, events around it measure how long the GPU sat idle for it (gpu_idle_ms)."""
        if self._step is None:
            raise WorkloadError("data_wait() outside a step: use it inside `for step in "
                                "run.steps()`")
        if self._in_wait:
            raise WorkloadError("data_wait() inside data_wait()")
        measured = self._measuring
        pair = None
        if measured and self._cuda:
            if self._wait_pairs[-1]:
                event = self._torch.cuda.Event
                pair = (event(enable_timing=True), event(enable_timing=True))
            else:
                pair = self._wait_pool[len(self._wait_pairs) - 1]
            pair[0].record()
        self._in_wait = True
        t0 = time.perf_counter()
        try:
            yield
        finally:
            t1 = time.perf_counter()
            self._in_wait = False
            if measured:
                if pair is not None:
                    pair[1].record()
                    self._wait_pairs[-1].append(pair)
                self._data_wait_ms[-1] += 1000.0 * (t1 - t0)

    def record(self, loss=None, images=None, counters=None):
        """Once per step: its loss (a tensor, read after the loop, or a number), the images it
        trained on (default: the batch size) and counters (reported as `script.<name>`; the last
        value given for a name is the one reported)."""
        if self._step is None:
            raise WorkloadError("record() outside a step: call it inside `for step in "
                                "run.steps()`")
        if self._recorded:
            raise WorkloadError(f"record() called twice in step {self._step}")
        values = {}
        for name, value in (counters or {}).items():
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise WorkloadError(f"counter {name!r}: {value!r} is not a finite number")
            values[f"script.{name}"] = value
        if images is not None:
            _positive_int(images, "record(images=...)")
        if loss is not None and not isinstance(loss, numbers.Real) and not hasattr(loss,
                                                                                   "detach"):
            raise WorkloadError(f"record(loss=...): {type(loss).__name__} is neither a tensor "
                                "nor a number")
        if loss is not None and hasattr(loss, "numel") and loss.numel() != 1:
            raise WorkloadError(f"record(loss=...): a tensor of {loss.numel()} elements; "
                                "pass the step's scalar loss")
        self._recorded = True
        self._counters.update(values)
        if not self._measuring:
            return
        if images is not None:
            self._images[-1] = images
        if loss is not None:
            # Kept on the device: reading it now would wait for the step to finish.
            self._losses[-1] = float(loss) if isinstance(loss, numbers.Real) else loss.detach()

    # --- the report -----------------------------------------------------------------------

    def finish(self):
        """Synchronises, computes the metrics, writes the report (atomically) and returns it.
        Standalone, also prints one summary line."""
        if self._finished:
            raise WorkloadError("finish() was called twice")
        if not self._loop_started:
            raise WorkloadError("finish() before steps(): nothing was measured")
        n = len(self._host_ms)
        if n == 0:
            raise WorkloadError(
                "finish() before any measured step: the loop stopped within the "
                f"{self.warmup_steps} warm-up steps (a run has {self.warmup_steps} warm-up + "
                f"{self.measure_steps} measured steps; run every step of run.steps())")
        if not self._loop_done:
            raise WorkloadError(
                f"finish() after {n} of {self.measure_steps} measured steps: the loop was left "
                "early (run every step of run.steps(); orch ranks the steps it asked for)")
        self._finished = True
        self._synchronize()
        measure_s = self._measure_s
        report = self._report(n, measure_s)
        if self.report_path:
            write_report(self.report_path, report)
        if not self.under_orch:
            print(summary_line(report))
        return report

    def _step_ms(self, n):
        if not self._cuda:
            return list(self._host_ms)
        starts, ends = self._events
        return [starts[k].elapsed_time(ends[k]) for k in range(n)]

    def _gpu_idle_ms(self, n):
        # Only where every measured step marked its wait: a step without one says nothing about
        # how long the GPU waited for input.
        if not self._cuda or any(not pairs for pairs in self._wait_pairs[:n]):
            return None
        return [sum(b.elapsed_time(e) for b, e in pairs) for pairs in self._wait_pairs[:n]]

    def _loss_values(self, n):
        losses = self._losses[:n]
        tensors = [x for x in losses if x is not None and not isinstance(x, float)]
        read = []
        if tensors:
            torch = self._torch
            flat = torch.stack([t.reshape(()).to(torch.float64) for t in tensors]).cpu()
            read = flat.tolist()
        it = iter(read)
        return [None if x is None else (x if isinstance(x, float) else next(it)) for x in losses]

    def _report(self, n, measure_s):
        step_ms = self._step_ms(n)
        data_wait = self._data_wait_ms[:n]
        images = [self.batch_size if x is None else x for x in self._images[:n]]
        idle = self._gpu_idle_ms(n)
        losses = self._loss_values(n)
        step_ms_mean = 1000.0 * measure_s / n
        m = {
            "images_per_s": sum(images) / measure_s,
            "step_ms_mean": step_ms_mean,
            "device_step_ms_mean": _mean(step_ms),
            "step_ms_p50": percentile(step_ms, 0.50),
            "step_ms_p90": percentile(step_ms, 0.90),
            "step_ms_p99": percentile(step_ms, 0.99),
            "data_wait_ms_mean": _mean(data_wait),
        }
        if idle is not None:
            m["gpu_idle_ms_mean"] = _mean(idle)
            m["gpu_idle_share"] = _mean(idle) / step_ms_mean
        m["warmup_s"] = self._warmup_s
        m["measure_s"] = measure_s
        known = [x for x in losses if x is not None]
        if known:
            m["loss_first"] = _finite_or_none(known[0])
            m["loss_last"] = _finite_or_none(known[-1])
        torch = self._torch
        if torch is not None:
            m["cudnn_benchmark"] = 1 if torch.backends.cudnn.benchmark else 0
        if self._cuda:
            dev = torch.device(self.device)
            m["peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated(dev))
            m["peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved(dev))
        m["host_peak_rss_bytes"] = host_peak_rss_bytes()

        steps = []
        for k in range(n):
            s = {"step": k, "step_ms": step_ms[k], "data_wait_ms": data_wait[k]}
            if losses[k] is not None:
                s["loss"] = _finite_or_none(losses[k])
            if idle is not None:
                s["gpu_idle_ms"] = idle[k]
            steps.append(s)
        return {"format": REPORT_FORMAT, "version": REPORT_VERSION,
                "batch_size": self.batch_size, "device": self.device, "metrics": m,
                "steps": steps, "environment": environment(self.device),
                "counters": dict(sorted(self._counters.items()))}


def host_peak_rss_bytes():
    """The process's peak resident set, as orch's runner records it (DataLoader workers are
    processes of their own and not in it)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # bytes vs KiB


def _package_version(name):
    module = sys.modules.get(name)
    version = getattr(module, "__version__", None) if module else None
    if version is None:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None
    return str(version)


def environment(device):
    """What the script ran with; what cannot be known here is left out."""
    env = {"python_version": platform.python_version(), "python_executable": sys.executable}
    torch = sys.modules.get("torch")
    if torch is None:
        return env
    env["torch_version"] = str(torch.__version__)
    tv = _package_version("torchvision")
    if tv:
        env["torchvision_version"] = tv
    if torch.version.cuda:
        env["torch_cuda_version"] = str(torch.version.cuda)
    if device.startswith("cuda"):
        cudnn = torch.backends.cudnn.version()
        if cudnn:
            env["cudnn_version"] = int(cudnn)
        p = torch.cuda.get_device_properties(torch.device(device))
        env["gpu_name"] = p.name
        env["compute_capability"] = f"{p.major}.{p.minor}"
        env["sm_count"] = int(p.multi_processor_count)
        env["gpu_memory_bytes"] = int(p.total_memory)
        if hasattr(p, "pci_bus_id"):
            # Formatted as orch formats it (telemetry/gpu_facts.cpp), so the two compare equal.
            env["pci_bus_id"] = (f"{p.pci_domain_id:04x}:{p.pci_bus_id:02x}:"
                                 f"{p.pci_device_id:02x}.0")
    return env


def write_report(path, report):
    """Writes the report atomically: a reader sees the old file, or none, or the whole new one."""
    text = json.dumps(report, indent=1, allow_nan=False) + "\n"
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".orch-report-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def summary_line(report):
    m = report["metrics"]
    line = (f"orch_workload: {m['images_per_s']:.1f} img/s over {len(report['steps'])} steps "
            f"(batch {report['batch_size']}, {report['device']}; step {m['step_ms_mean']:.2f} ms "
            f"mean, p50 {m['step_ms_p50']:.2f} ms, p90 {m['step_ms_p90']:.2f} ms; "
            f"data wait {m['data_wait_ms_mean']:.2f} ms; warm-up {m['warmup_s']:.2f} s")
    if "peak_allocated_bytes" in m:
        line += f"; peak {m['peak_allocated_bytes'] / 2**30:.2f} GiB allocated"
    return line + ")"
