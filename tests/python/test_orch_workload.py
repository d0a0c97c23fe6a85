"""python/orch_workload.py without a GPU and without orch: a fake ORCH_RUN_SPEC and
ORCH_SCRIPT_REPORT, loops that sleep known times, and the report's numbers checked against them.

Runs with any Python 3 (the no-torch path) and with the setup's torch venv (tensor losses,
cudnn.benchmark); the torch-only cases skip themselves without torch.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, PYTHON_DIR)

import orch_workload  # noqa: E402

try:
    import torch
except ImportError:
    torch = None
try:
    import torchvision  # as the example does: its version is then the module's own
except ImportError:
    torchvision = None

REPORT_KEYS = {"format", "version", "batch_size", "device", "metrics", "steps", "environment",
               "counters"}
# Every metric a CPU run without torch can know; nothing else may appear.
CPU_METRICS = {"images_per_s", "step_ms_mean", "device_step_ms_mean", "step_ms_p50",
               "step_ms_p90", "step_ms_p99", "data_wait_ms_mean", "warmup_s", "measure_s",
               "loss_first", "loss_last", "host_peak_rss_bytes"}
# Sleeps are at least as long as asked; a loaded two-core machine may add a lot on top.
SLACK_MS = 60.0


def strict_json(text):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


class OrchEnvironment:
    """ORCH_RUN_SPEC and ORCH_SCRIPT_REPORT as orch exec sets them, in a temporary folder."""

    def __init__(self, batch_size=8, warmup=2, measure=5, seed=3, args=None, device="cpu"):
        self.dir = tempfile.TemporaryDirectory()
        self.spec_path = os.path.join(self.dir.name, "spec.json")
        self.report_path = os.path.join(self.dir.name, "report.json")
        self.spec = {
            "experiment": "fake", "run": {"name": "r", "hash": "0" * 32, "repeat": 0},
            "config": {"batch_size": batch_size, "steps": {"warmup": warmup, "measure": measure},
                       "device": device, "seed": seed, "args": args or {},
                       "workload": {"kind": "script", "command": "train.py"}},
            "swept": {}}
        with open(self.spec_path, "w") as f:
            json.dump(self.spec, f)
        self.env = {"ORCH_RUN_SPEC": self.spec_path, "ORCH_SCRIPT_REPORT": self.report_path,
                    "ORCH_DEVICE": device}
        self.patch = mock.patch.dict(os.environ, self.env)

    def __enter__(self):
        self.patch.start()
        return self

    def __exit__(self, *exc):
        self.patch.stop()
        self.dir.cleanup()

    def report(self):
        with open(self.report_path) as f:
            return strict_json(f.read())


def without_torch():
    """The module as a script without torch sees it (it only uses a torch already imported)."""
    modules = dict(sys.modules)
    modules.pop("torch", None)
    return mock.patch.dict(sys.modules, modules, clear=True)


def hand_percentile(sorted_values, q):
    # Written out separately from the module: linear interpolation between closest ranks.
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    frac = pos - lo
    if lo + 1 >= len(sorted_values):
        return sorted_values[lo]
    return sorted_values[lo] * (1 - frac) + sorted_values[lo + 1] * frac


class PercentileTest(unittest.TestCase):
    def test_matches_orchs_definition(self):
        v = [40.0, 10.0, 30.0, 20.0]  # unsorted on purpose
        self.assertAlmostEqual(orch_workload.percentile(v, 0.50), 25.0)
        self.assertAlmostEqual(orch_workload.percentile(v, 0.90), 37.0)  # 30 + 0.7 * 10
        self.assertAlmostEqual(orch_workload.percentile(v, 0.99), 39.7)  # 30 + 0.97 * 10
        self.assertAlmostEqual(orch_workload.percentile(v, 0.0), 10.0)
        self.assertAlmostEqual(orch_workload.percentile(v, 1.0), 40.0)
        self.assertEqual(orch_workload.percentile([7.5], 0.9), 7.5)
        self.assertEqual(orch_workload.percentile([], 0.5), 0.0)
        self.assertEqual(v, [40.0, 10.0, 30.0, 20.0])  # the caller's list is not sorted


class TimedLoopTest(unittest.TestCase):
    """Measured step k waits (5 + 5k) ms for data and computes 20 ms; a warm-up step sleeps
    150 ms, so measuring one by mistake shows in every number."""

    WAIT_MS = [5.0, 10.0, 15.0, 20.0, 25.0]
    COMPUTE_MS = 20.0
    WARMUP_SLEEP_S = 0.15

    def run_loop(self, run):
        for step in run.steps():
            if step < run.warmup_steps:
                time.sleep(self.WARMUP_SLEEP_S)
                run.record(loss=100.0)
                continue
            k = step - run.warmup_steps
            with run.data_wait():
                time.sleep(self.WAIT_MS[k] / 1000)
            time.sleep(self.COMPUTE_MS / 1000)
            run.record(loss=1.0 / (k + 1), counters={"k": k})
        return run.finish()

    def test_report_numbers_match_the_sleeps(self):
        with OrchEnvironment(batch_size=8, warmup=2, measure=5, args={"lr": 0.1}) as env, \
                without_torch():
            run = orch_workload.start(batch_size=999, warmup=99, measure=99)  # spec wins
            self.assertTrue(run.under_orch)
            self.assertEqual((run.batch_size, run.warmup_steps, run.measure_steps, run.seed),
                             (8, 2, 5, 3))
            self.assertEqual(run.device, "cpu")
            self.assertEqual(run.args, {"lr": 0.1})
            self.assertEqual(run.config["workload"]["kind"], "script")
            returned = self.run_loop(run)
            report = env.report()
            leftovers = [n for n in os.listdir(env.dir.name) if n not in ("spec.json",
                                                                          "report.json")]
        self.assertEqual(report, returned)
        self.assertEqual(leftovers, [])  # the temporary file of the atomic write is gone
        self.assertEqual(set(report), REPORT_KEYS)
        self.assertEqual((report["format"], report["version"]), ("orch.script-report", 1))
        self.assertEqual((report["batch_size"], report["device"]), (8, "cpu"))
        m = report["metrics"]
        self.assertEqual(set(m), CPU_METRICS)  # no torch: no peaks, no cudnn, no gpu idle

        steps = report["steps"]
        self.assertEqual([s["step"] for s in steps], [0, 1, 2, 3, 4])
        for k, s in enumerate(steps):
            self.assertEqual(set(s), {"step", "step_ms", "data_wait_ms", "loss"})
            expected = self.WAIT_MS[k] + self.COMPUTE_MS
            self.assertGreaterEqual(s["step_ms"], expected)
            self.assertLess(s["step_ms"], expected + SLACK_MS)
            self.assertGreaterEqual(s["data_wait_ms"], self.WAIT_MS[k])
            self.assertLess(s["data_wait_ms"], self.WAIT_MS[k] + SLACK_MS)
            self.assertLess(s["data_wait_ms"], s["step_ms"])
            self.assertAlmostEqual(s["loss"], 1.0 / (k + 1))

        step_ms = [s["step_ms"] for s in steps]
        sleeps_s = sum(self.WAIT_MS) / 1000 + 5 * self.COMPUTE_MS / 1000
        self.assertGreaterEqual(m["measure_s"], sleeps_s)
        # Less than the two warm-up steps' sleeps on top: they are not in it.
        self.assertLess(m["measure_s"], sleeps_s + 2 * self.WARMUP_SLEEP_S)
        self.assertGreaterEqual(m["measure_s"] * 1000, sum(step_ms))  # steps lie inside it
        self.assertAlmostEqual(m["images_per_s"], 8 * 5 / m["measure_s"])
        self.assertAlmostEqual(m["step_ms_mean"], 1000 * m["measure_s"] / 5)
        self.assertAlmostEqual(m["device_step_ms_mean"], sum(step_ms) / 5)
        self.assertAlmostEqual(m["data_wait_ms_mean"], sum(s["data_wait_ms"] for s in steps) / 5)
        ordered = sorted(step_ms)
        self.assertAlmostEqual(m["step_ms_p50"], ordered[2])  # odd count: the middle one
        self.assertAlmostEqual(m["step_ms_p90"], ordered[3] + 0.6 * (ordered[4] - ordered[3]))
        self.assertAlmostEqual(m["step_ms_p99"], ordered[3] + 0.96 * (ordered[4] - ordered[3]))
        self.assertAlmostEqual(m["step_ms_p90"], hand_percentile(ordered, 0.9))
        # Two 150 ms warm-up steps are timed apart, never in the measured ones.
        self.assertGreaterEqual(m["warmup_s"], 2 * self.WARMUP_SLEEP_S)
        self.assertLess(max(step_ms), 1000 * self.WARMUP_SLEEP_S)
        self.assertAlmostEqual(m["loss_first"], 1.0)
        self.assertAlmostEqual(m["loss_last"], 0.2)
        self.assertGreater(m["host_peak_rss_bytes"], 1 << 20)
        self.assertEqual(report["counters"], {"script.k": 4})
        env_facts = report["environment"]
        self.assertEqual(set(env_facts), {"python_version", "python_executable"})
        self.assertEqual(env_facts["python_executable"], sys.executable)

    def test_images_per_step_and_steps_without_a_record(self):
        with OrchEnvironment(batch_size=10, warmup=0, measure=4) as env, without_torch():
            run = orch_workload.start()
            for step in run.steps():
                time.sleep(0.005)
                if step == 1:
                    run.record(images=4)  # a short last batch, say
                elif step == 2:
                    run.record(loss=2.5)
            run.finish()
            report = env.report()
        m = report["metrics"]
        self.assertAlmostEqual(m["images_per_s"], (10 + 4 + 10 + 10) / m["measure_s"])
        # One step had a loss: it is the first and the last; the others have none.
        self.assertEqual((m["loss_first"], m["loss_last"]), (2.5, 2.5))
        self.assertEqual(["loss" in s for s in report["steps"]], [False, False, True, False])
        self.assertEqual(report["counters"], {})

    def test_no_loss_at_all_leaves_the_loss_metrics_out(self):
        with OrchEnvironment(warmup=1, measure=2) as env, without_torch():
            run = orch_workload.start()
            for _ in run.steps():
                pass
            run.finish()
            m = env.report()["metrics"]
        self.assertNotIn("loss_first", m)
        self.assertNotIn("loss_last", m)

    def test_a_loss_that_is_not_finite_is_null(self):
        with OrchEnvironment(warmup=0, measure=3) as env, without_torch():
            run = orch_workload.start()
            for step in run.steps():
                run.record(loss=[1.0, float("nan"), float("inf")][step])
            run.finish()
            with open(env.report_path) as f:
                text = f.read()
        report = strict_json(text)  # valid JSON: no NaN, no Infinity
        self.assertEqual([s["loss"] for s in report["steps"]], [1.0, None, None])
        self.assertEqual((report["metrics"]["loss_first"], report["metrics"]["loss_last"]),
                         (1.0, None))


class OverheadTest(unittest.TestCase):
    def test_the_modules_own_cost_per_step_is_far_below_a_training_step(self):
        # Empty steps with a data wait and a record each: what is left is the module. A ResNet50
        # step takes tens of milliseconds even on an H200, so 0.2 ms (loose, for a loaded
        # machine; typically a few microseconds) is well under 1% of it.
        with OrchEnvironment(batch_size=8, warmup=0, measure=2000) as env, without_torch():
            run = orch_workload.start()
            for step in run.steps():
                with run.data_wait():
                    pass
                run.record(loss=1.0)
            run.finish()
            m = env.report()["metrics"]
        self.assertLess(m["step_ms_mean"], 0.2)


class MisuseTest(unittest.TestCase):
    def standalone(self, **kw):
        with mock.patch.dict(os.environ):
            for name in ("ORCH_RUN_SPEC", "ORCH_SCRIPT_REPORT", "ORCH_DEVICE"):
                os.environ.pop(name, None)
            return orch_workload.start(device="cpu", **kw)

    def assert_error(self, pattern, fn, *a, **kw):
        with self.assertRaisesRegex(orch_workload.WorkloadError, pattern):
            fn(*a, **kw)

    def test_finish_before_steps_or_any_measured_step(self):
        run = self.standalone(warmup=2, measure=2)
        self.assert_error(r"finish\(\) before steps\(\)", run.finish)
        for step in run.steps():
            if step == 1:
                break  # still in the warm-up
        self.assert_error(r"before any measured step.*2 warm-up", run.finish)

    def test_leaving_the_loop_early(self):
        run = self.standalone(warmup=1, measure=4)
        for step in run.steps():
            if step == 2:
                break
        self.assert_error(r"after 1 of 4 measured steps", run.finish)

    def test_steps_twice_finish_twice(self):
        run = self.standalone(warmup=0, measure=1)
        run.steps()
        self.assert_error(r"steps\(\) was called twice", run.steps)
        run = self.standalone(warmup=0, measure=1)
        with mock.patch("sys.stdout"):
            for _ in run.steps():
                pass
            run.finish()
        self.assert_error(r"finish\(\) was called twice", run.finish)

    def test_record_and_data_wait_outside_a_step_or_twice(self):
        run = self.standalone(warmup=0, measure=2)
        self.assert_error(r"record\(\) outside a step", run.record, loss=1.0)
        with self.assertRaisesRegex(orch_workload.WorkloadError, r"data_wait\(\) outside a step"):
            with run.data_wait():
                pass
        for _ in run.steps():
            run.record(loss=1.0)
            self.assert_error(r"record\(\) called twice in step 0", run.record, loss=2.0)
            with run.data_wait():
                with self.assertRaisesRegex(orch_workload.WorkloadError, r"inside data_wait"):
                    with run.data_wait():
                        pass
            break

    def test_bad_values(self):
        self.assert_error(r"batch_size must be a positive integer, got 0", self.standalone,
                          batch_size=0)
        self.assert_error(r"measure must be a positive integer", self.standalone, measure=0)
        self.assert_error(r"warmup must be an integer >= 0", self.standalone, warmup=-1)
        run = self.standalone(warmup=0, measure=1)
        for _ in run.steps():
            self.assert_error(r"neither a tensor nor a number", run.record, loss="1.0")
            self.assert_error(r"images.*positive integer", run.record, images=0)
            self.assert_error(r"counter 'x'.*not a finite number", run.record,
                              counters={"x": "fast"})
            run.record(loss=1.0)  # the refused calls recorded nothing
            break
        with without_torch():
            self.assert_error(r"device 'cuda'.*torch is not imported", orch_workload.start,
                              device="cuda")
        self.assert_error(r"device 'gpu': allowed are auto, cpu, cuda, cuda:N",
                          orch_workload.start, device="gpu")

    def test_bad_run_spec(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "spec.json")
            cases = [("{not json", r"spec.json: not valid JSON"),
                     ('{"run": {}}', r"spec.json: no `config` object"),
                     ('{"config": {"batch_size": "auto", "steps": {"warmup": 1, "measure": 1}}}',
                      r"config.batch_size is 'auto', not an integer"),
                     ('{"config": {"batch_size": 8}}', r"config.steps.warmup is missing")]
            for text, pattern in cases:
                with open(path, "w") as f:
                    f.write(text)
                with mock.patch.dict(os.environ, {"ORCH_RUN_SPEC": path, "ORCH_DEVICE": "cpu"}):
                    self.assert_error(pattern, orch_workload.start)
            with mock.patch.dict(os.environ, {"ORCH_RUN_SPEC": os.path.join(d, "none.json")}):
                self.assert_error(r"none.json: cannot read it", orch_workload.start)


SCRIPT = """
import sys, time
sys.path.insert(0, {python_dir!r})
import orch_workload
run = orch_workload.start(batch_size=4, warmup=1, measure=3, device="cpu")
for step in run.steps():
    time.sleep(0.01)
    run.record(loss=0.5)
run.finish()
"""


class StandaloneTest(unittest.TestCase):
    def run_script(self, extra_env, cwd=None):
        env = {k: v for k, v in os.environ.items()
               if k not in ("ORCH_RUN_SPEC", "ORCH_SCRIPT_REPORT", "ORCH_DEVICE")}
        env.update(extra_env)
        return subprocess.run([sys.executable, "-c", SCRIPT.format(python_dir=PYTHON_DIR)],
                              env=env, cwd=cwd, capture_output=True, text=True, check=True,
                              timeout=120)

    def test_standalone_prints_one_summary_line_and_writes_no_report(self):
        with tempfile.TemporaryDirectory() as d:
            out = self.run_script({}, cwd=d)
            self.assertEqual(os.listdir(d), [])
        lines = out.stdout.splitlines()
        self.assertEqual(len(lines), 1, out.stdout)
        match = re.fullmatch(r"orch_workload: ([0-9.]+) img/s over 3 steps \(batch 4, cpu; "
                             r"step ([0-9.]+) ms mean, .*\)", lines[0])
        self.assertIsNotNone(match, lines[0])
        # 4 images per ~10 ms step: a few hundred img/s at most, never more than 400.
        self.assertGreater(float(match.group(1)), 0)
        self.assertLessEqual(float(match.group(1)), 400)
        self.assertGreaterEqual(float(match.group(2)), 10.0)

    def test_under_orch_it_prints_nothing_and_writes_the_report(self):
        with OrchEnvironment(batch_size=2, warmup=0, measure=2) as env:
            out = self.run_script(env.env)
            report = env.report()
        self.assertEqual(out.stdout, "")
        self.assertEqual(len(report["steps"]), 2)
        self.assertEqual(report["batch_size"], 2)


@unittest.skipIf(torch is None, "torch is not installed in this Python")
class TorchTest(unittest.TestCase):
    def test_tensor_losses_are_read_after_the_loop_and_cudnn_is_recorded(self):
        previous = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = True
        try:
            with OrchEnvironment(batch_size=4, warmup=1, measure=3) as env:
                run = orch_workload.start()
                w = torch.ones(3, requires_grad=True)
                for step in run.steps():
                    loss = (w * float(step)).sum()  # 3 * step, attached to the graph
                    loss.backward()
                    run.record(loss=loss)
                run.finish()
                report = env.report()
        finally:
            torch.backends.cudnn.benchmark = previous
        self.assertEqual([s["loss"] for s in report["steps"]], [3.0, 6.0, 9.0])
        m = report["metrics"]
        self.assertEqual(m["cudnn_benchmark"], 1)
        self.assertEqual((m["loss_first"], m["loss_last"]), (3.0, 9.0))
        # A CPU run has no device memory peaks and no GPU idle time, and no GPU facts.
        for key in ("peak_allocated_bytes", "peak_reserved_bytes", "gpu_idle_ms_mean",
                    "gpu_idle_share"):
            self.assertNotIn(key, m)
        env_facts = report["environment"]
        self.assertEqual(env_facts["torch_version"], torch.__version__)
        self.assertNotIn("gpu_name", env_facts)
        if torchvision is not None:
            self.assertEqual(env_facts["torchvision_version"], torchvision.__version__)

    def test_a_loss_tensor_of_several_elements_is_refused(self):
        with OrchEnvironment(warmup=0, measure=1):
            run = orch_workload.start()
            for _ in run.steps():
                with self.assertRaisesRegex(orch_workload.WorkloadError, "3 elements"):
                    run.record(loss=torch.ones(3))


class FakeCudaTorch(types.ModuleType):
    """Just enough of torch for the module's CUDA path on a machine without one: an event
    records the host clock (as a real one does on an idle GPU), the memory peaks are fixed."""

    class Event:
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.t = None

        def record(self):
            self.t = time.perf_counter()

        def elapsed_time(self, end):
            return 1000.0 * (end.t - self.t)

    class Props:
        name, major, minor = "Fake GPU", 9, 0
        multi_processor_count, total_memory = 132, 80 << 30
        pci_domain_id, pci_bus_id, pci_device_id = 0, 0x19, 0

    def __init__(self):
        super().__init__("torch")
        self.__version__ = "0.0.0+fake"
        self.version = types.SimpleNamespace(cuda="13.0")
        self.backends = types.SimpleNamespace(
            cudnn=types.SimpleNamespace(benchmark=True, version=lambda: 91000))
        self.synchronized = 0
        self.reset = 0
        self.initialized = False

        def init():
            self.initialized = True

        def synchronize():
            self.synchronized += 1

        def reset_peak_memory_stats(device):
            # As torch's: the caching allocator exists only once CUDA is initialised.
            if not self.initialized:
                raise RuntimeError("Invalid device argument")
            self.reset += 1

        self.cuda = types.SimpleNamespace(
            is_available=lambda: True, init=init, Event=FakeCudaTorch.Event,
            synchronize=synchronize,
            reset_peak_memory_stats=reset_peak_memory_stats,
            max_memory_allocated=lambda device: 3 << 30,
            max_memory_reserved=lambda device: 4 << 30,
            get_device_properties=lambda device: FakeCudaTorch.Props())
        self.device = lambda name: name


class FakeCudaPathTest(unittest.TestCase):
    """The module's GPU path, run against FakeCudaTorch: step and idle times come from the
    events, peaks and GPU facts from torch, and nothing synchronises inside the measured loop."""

    def test_cuda_path_with_a_fake_torch(self):
        fake = FakeCudaTorch()
        with OrchEnvironment(batch_size=4, warmup=1, measure=3, device="cuda") as env, \
                mock.patch.dict(sys.modules, {"torch": fake}):
            run = orch_workload.start()
            self.assertEqual(run.device, "cuda:0")
            self.assertEqual(fake.reset, 1)
            syncs_in_loop = []
            for step in run.steps():
                before = fake.synchronized
                with run.data_wait():
                    time.sleep(0.01)
                time.sleep(0.01)
                run.record(loss=0.5)
                syncs_in_loop.append(fake.synchronized - before)
            run.finish()
            report = env.report()
        self.assertEqual(syncs_in_loop, [0, 0, 0, 0])
        # Three in all: after the warm-up, after the last measured step, in finish().
        self.assertEqual(fake.synchronized, 3)
        m = report["metrics"]
        for s in report["steps"]:
            self.assertGreaterEqual(s["step_ms"], 20.0)
            self.assertGreaterEqual(s["gpu_idle_ms"], 10.0)
            self.assertLess(s["gpu_idle_ms"], s["step_ms"])
        idle = [s["gpu_idle_ms"] for s in report["steps"]]
        self.assertAlmostEqual(m["gpu_idle_ms_mean"], sum(idle) / 3)
        self.assertAlmostEqual(m["gpu_idle_share"], m["gpu_idle_ms_mean"] / m["step_ms_mean"])
        self.assertEqual((m["peak_allocated_bytes"], m["peak_reserved_bytes"]), (3 << 30, 4 << 30))
        self.assertEqual(m["cudnn_benchmark"], 1)
        e = report["environment"]
        self.assertEqual((e["gpu_name"], e["compute_capability"], e["pci_bus_id"]),
                         ("Fake GPU", "9.0", "0000:19:00.0"))
        self.assertEqual((e["cudnn_version"], e["torch_cuda_version"], e["sm_count"]),
                         (91000, "13.0", 132))
        self.assertEqual(e["gpu_memory_bytes"], 80 << 30)

    def test_a_step_without_a_data_wait_leaves_gpu_idle_out(self):
        with OrchEnvironment(warmup=0, measure=2, device="cuda") as env, \
                mock.patch.dict(sys.modules, {"torch": FakeCudaTorch()}):
            run = orch_workload.start()
            for step in run.steps():
                if step == 0:
                    with run.data_wait():
                        pass
            run.finish()
            report = env.report()
        self.assertNotIn("gpu_idle_ms_mean", report["metrics"])
        self.assertNotIn("gpu_idle_ms", report["steps"][0])


HAS_CUDA = torch is not None and torch.cuda.is_available()


@unittest.skipUnless(HAS_CUDA, "needs torch with a CUDA device (runs on the GPU machine)")
class CudaTest(unittest.TestCase):
    def test_event_timing_idle_time_peaks_and_gpu_facts(self):
        props = torch.cuda.get_device_properties(0)
        gpu_ms = 30.0
        cycles = int(props.clock_rate * gpu_ms)  # clock_rate is in kHz: cycles per ms
        wait_ms = 10.0
        with OrchEnvironment(batch_size=8, warmup=1, measure=4, device="cuda") as env:
            run = orch_workload.start()
            self.assertEqual(run.device, "cuda:0")
            for step in run.steps():
                with run.data_wait():
                    time.sleep(wait_ms / 1000)  # the GPU is idle meanwhile
                x = torch.ones(1 << 22, device="cuda")  # 16 MiB: in the peaks
                t0 = time.perf_counter()
                torch.cuda._sleep(cycles)  # queued: the host does not wait for it
                host_ms = 1000 * (time.perf_counter() - t0)
                run.record(loss=x.sum() / x.numel())
            run.finish()
            report = env.report()
        self.assertLess(host_ms, gpu_ms / 2)
        m = report["metrics"]
        for k, s in enumerate(report["steps"]):
            # Device time: the wait, then the queued sleep, which the host never waited for.
            self.assertGreater(s["step_ms"], wait_ms + 0.5 * gpu_ms, k)
            # The first step's wait finds the GPU idle; later ones find it still running the
            # previous step's sleep, so it idles less than the host waited.
            self.assertGreaterEqual(s["gpu_idle_ms"], 0.0)
            self.assertLessEqual(s["gpu_idle_ms"], s["data_wait_ms"] + 1.0)
            self.assertEqual(s["loss"], 1.0)
        self.assertGreater(report["steps"][0]["gpu_idle_ms"], 0.5 * wait_ms)
        self.assertAlmostEqual(m["gpu_idle_share"], m["gpu_idle_ms_mean"] / m["step_ms_mean"])
        self.assertGreaterEqual(m["peak_allocated_bytes"], 4 << 22)
        self.assertGreaterEqual(m["peak_reserved_bytes"], m["peak_allocated_bytes"])
        e = report["environment"]
        self.assertEqual(e["gpu_name"], props.name)
        self.assertEqual(e["compute_capability"], f"{props.major}.{props.minor}")
        self.assertEqual(e["gpu_memory_bytes"], props.total_memory)
        self.assertRegex(e["pci_bus_id"], r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.0$")
        self.assertEqual(e["cudnn_version"], torch.backends.cudnn.version())
        self.assertEqual(e["torch_cuda_version"], torch.version.cuda)


if __name__ == "__main__":
    unittest.main()
