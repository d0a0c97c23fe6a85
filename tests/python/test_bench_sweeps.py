"""bench/suites/sweeps.py: the sweeps benchmark judges each run's outcome. The injected faults
(the test-only `fault` model's out-of-memory and segfault) must count as expected whatever the
planner names their configurations, and a real run that fails must not."""

import importlib.util
import sys
import unittest
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"
sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, str(BENCH / "lib"))
spec = importlib.util.spec_from_file_location("sweeps_suite", BENCH / "suites" / "sweeps.py")
sweeps = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sweeps)


def run(name, status, model):
    return {"name": name, "status": status, "document": {"config": {"model": model}}}


def fault(mode):
    return {"plugin": "fault", "params": {"mode": mode, "at_step": 3}}


RESNET = {"plugin": "resnet", "params": {"depth": 50}}


class OutcomeTest(unittest.TestCase):
    def test_injected_faults_are_expected_under_any_name(self):
        for name in ("tf32/b64/default/fault-mode=oom", "fault-oom", "x"):
            self.assertEqual(sweeps.outcome(run(name, "oom", fault("oom"))), "as injected")
        self.assertEqual(sweeps.outcome(run("y", "failed", fault("segfault"))), "as injected")

    def test_an_injected_fault_with_another_outcome_is_reported(self):
        self.assertEqual(sweeps.outcome(run("a", "ok", fault("oom"))), "expected oom")
        self.assertEqual(sweeps.outcome(run("b", "oom", fault("segfault"))), "expected failed")

    def test_a_real_run_must_succeed(self):
        self.assertEqual(sweeps.outcome(run("tf32/b128/default/resnet", "ok", RESNET)), "ok")
        # A ResNet whose name happens to mention a fault is still judged as a ResNet.
        self.assertEqual(sweeps.outcome(run("fault-mode=oom", "oom", RESNET)), "unexpected")
        self.assertEqual(sweeps.outcome({"name": "n", "status": "failed"}), "unexpected")


if __name__ == "__main__":
    unittest.main()
