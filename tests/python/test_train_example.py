"""examples/pytorch/train.py on the CPU with tiny settings (resnet18, 32x32 images, batch 8),
started as orch exec starts it: a fake ORCH_RUN_SPEC and ORCH_SCRIPT_REPORT, the args as
`--<name> <value>`. The report must hold the run's measured steps and throughput, and the
switches must have changed what the script did (read back from its counters).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TRAIN = os.path.join(ROOT, "examples", "pytorch", "train.py")

try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401
    from PIL import Image
except ImportError:
    torch = None

TINY = ["--model", "resnet18", "--image_size", "32"]


class ExampleRun(unittest.TestCase):
    """Runs train.py as orch exec would; no test cases of its own."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.report_path = os.path.join(self.tmp.name, "report.json")

    def run_train(self, args, batch_size=8, warmup=1, measure=2, device="cpu"):
        spec = {"experiment": "t", "run": {"name": "r", "hash": "0" * 32, "repeat": 0},
                "config": {"batch_size": batch_size,
                           "steps": {"warmup": warmup, "measure": measure},
                           "device": device, "seed": 1, "args": {},
                           "workload": {"kind": "script", "command": "train.py"}},
                "swept": {}}
        spec_path = os.path.join(self.tmp.name, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        env = dict(os.environ, ORCH_RUN_SPEC=spec_path, ORCH_SCRIPT_REPORT=self.report_path,
                   ORCH_DEVICE=device, ORCH_BATCH_SIZE=str(batch_size),
                   PYTHONPATH=os.path.join(ROOT, "python"))
        return subprocess.run([sys.executable, TRAIN] + TINY + args, env=env, cwd=self.tmp.name,
                              capture_output=True, text=True, timeout=600)

    def report(self):
        with open(self.report_path) as f:
            return json.load(f)

    def check_measured(self, out, batch_size, measure):
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        self.assertEqual(out.stdout, "")  # under orch: no summary line
        report = self.report()
        self.assertEqual(report["format"], "orch.script-report")
        self.assertEqual(report["batch_size"], batch_size)
        self.assertEqual(len(report["steps"]), measure)
        m = report["metrics"]
        self.assertGreater(m["images_per_s"], 0)
        self.assertAlmostEqual(m["images_per_s"], batch_size * measure / m["measure_s"])
        self.assertTrue(all(isinstance(s["loss"], float) and s["loss"] > 0
                            for s in report["steps"]))
        return report


@unittest.skipIf(torch is None, "needs torch, torchvision and Pillow (the setup's venv)")
class TrainExampleTest(ExampleRun):
    def test_synthetic_channels_last_and_orchs_batch_size(self):
        # --batch_size is the standalone default; under orch the run's batch (8) is used.
        out = self.run_train(["--data", "synthetic", "--workers", "0", "--channels_last",
                              "true", "--cudnn_benchmark", "true", "--batch_size", "16"])
        report = self.check_measured(out, batch_size=8, measure=2)
        c = report["counters"]
        self.assertEqual(c["script.channels_last"], 1)
        self.assertEqual((c["script.autocast_fp16"], c["script.autocast_bf16"]), (0, 0))
        self.assertEqual((c["script.workers"], c["script.compiled"], c["script.cuda_graph"]),
                         (0, 0, 0))
        self.assertEqual(report["metrics"]["cudnn_benchmark"], 1)
        self.assertEqual(report["environment"]["torchvision_version"], torchvision.__version__)

    def test_image_folder_with_workers_and_bf16(self):
        data = os.path.join(self.tmp.name, "data", "train")
        for c, colour in enumerate([(200, 30, 30), (30, 30, 200)]):
            folder = os.path.join(data, f"n0000000{c}")
            os.makedirs(folder)
            for i in range(6):
                image = Image.new("RGB", (48 + 8 * i, 40), colour)
                image.save(os.path.join(folder, f"{c}_{i}.JPEG"), quality=90)
        out = self.run_train(["--data", os.path.dirname(data), "--workers", "1",
                              "--persistent_workers", "false", "--prefetch", "2",
                              "--pin_memory", "true", "--channels_last", "false",
                              "--amp", "bf16"], batch_size=4, measure=3)
        report = self.check_measured(out, batch_size=4, measure=3)
        c = report["counters"]
        self.assertEqual(c["script.channels_last"], 0)
        self.assertEqual((c["script.autocast_bf16"], c["script.autocast_fp16"]), (1, 0))
        self.assertEqual(c["script.workers"], 1)
        self.assertEqual(c["script.pinned_batches"], 0)  # no CUDA: nothing to pin for

    def test_switches_that_cannot_run_are_refused_without_a_report(self):
        cases = [(["--cuda_graph", "true"], "--cuda_graph true needs a CUDA device"),
                 (["--channels_last", "maybe"], "'maybe' is not a boolean"),
                 (["--no_such_switch", "1"], "unrecognized arguments: --no_such_switch"),
                 (["--data", os.path.join(self.tmp.name, "none")], "no such folder")]
        for args, message in cases:
            out = self.run_train(args)
            self.assertNotEqual(out.returncode, 0, args)
            last = [line for line in out.stderr.splitlines() if line.strip()][-1]
            self.assertIn(message, last)  # orch reports the last stderr line
            self.assertFalse(os.path.exists(self.report_path), args)


HAS_CUDA = torch is not None and torch.cuda.is_available()


@unittest.skipUnless(HAS_CUDA, "needs a CUDA device (runs on the GPU machine)")
class TrainExampleCudaTest(ExampleRun):
    """The GPU paths: GradScaler, pinned batches, a captured step, torch.compile."""

    def run_gpu(self, args, warmup=3, measure=4):
        out = self.run_train(["--image_size", "64"] + args, batch_size=16, warmup=warmup,
                             measure=measure, device="cuda")
        report = self.check_measured(out, batch_size=16, measure=measure)
        self.assertEqual(report["device"], "cuda:0")
        m = report["metrics"]
        self.assertGreater(m["peak_allocated_bytes"], 0)
        self.assertIn("gpu_idle_ms_mean", m)
        self.assertIn("gpu_name", report["environment"])
        return report

    def test_fp16_grad_scaler_pinned_workers(self):
        report = self.run_gpu(["--data", "synthetic", "--workers", "2", "--pin_memory", "true",
                               "--amp", "fp16", "--channels_last", "true"])
        c = report["counters"]
        self.assertEqual((c["script.autocast_fp16"], c["script.grad_scaler"]), (1, 1))
        self.assertEqual((c["script.pinned_batches"], c["script.channels_last"]), (1, 1))

    def test_cuda_graph_replays_a_training_step(self):
        report = self.run_gpu(["--data", "synthetic-device", "--amp", "bf16", "--cuda_graph",
                               "true"], measure=6)
        self.assertEqual(report["counters"]["script.cuda_graph"], 1)
        losses = [s["loss"] for s in report["steps"]]
        # Each replay's loss is its own (the graph's output is copied per step), and the
        # replayed steps train: not one number repeated.
        self.assertGreater(len(set(losses)), 1, losses)

    def test_cuda_graph_beside_a_pin_memory_thread(self):
        # The DataLoader's pin-memory thread allocates pinned memory while the step is captured:
        # a "global" capture is invalidated by that, a thread-local one is not.
        report = self.run_gpu(["--data", "synthetic", "--workers", "2", "--pin_memory", "true",
                               "--amp", "bf16", "--cuda_graph", "true"], measure=6)
        c = report["counters"]
        self.assertEqual((c["script.cuda_graph"], c["script.pinned_batches"]), (1, 1))

    def test_compile_default(self):
        report = self.run_gpu(["--data", "synthetic-device", "--compile", "default"])
        self.assertEqual(report["counters"]["script.compiled"], 1)

    def test_cuda_graph_with_fp16_is_refused(self):
        out = self.run_train(["--cuda_graph", "true", "--amp", "fp16"], warmup=3,
                             device="cuda")
        self.assertEqual(out.returncode, 2)
        self.assertIn("use --amp bf16", out.stderr.strip().splitlines()[-1])
        self.assertFalse(os.path.exists(self.report_path))


if __name__ == "__main__":
    unittest.main()
