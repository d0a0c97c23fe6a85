"""bench/tools/trace_kernels.py --by-op: each small kernel is put to the CPU operator that
launched it, by the kernel's own "External id" or its runtime call's (the "correlation"), and a
kernel no operator launched (a CUDA graph replay) is said to be so, not dropped."""

import contextlib
import importlib.util
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent.parent / "bench" / "tools" / "trace_kernels.py"
sys.dont_write_bytecode = True  # no __pycache__ in the checkout
spec = importlib.util.spec_from_file_location("trace_kernels", TOOL)
trace_kernels = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trace_kernels)


def event(cat, name, dur=1.0, **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": 0, "dur": dur, "args": args}


EVENTS = [
    event("cpu_op", "aten::zeros", **{"External id": 1}),
    event("cpu_op", "aten::copy_", **{"External id": 2}),
    event("cuda_runtime", "cudaMemsetAsync", correlation=10, **{"External id": 1}),
    event("cuda_runtime", "cudaLaunchKernel", correlation=11, **{"External id": 2}),
    event("cuda_runtime", "cudaGraphLaunch", correlation=12, **{"External id": 99}),
    # Found through its runtime call only.
    event("gpu_memset", "Memset (Device)", 4.0, correlation=10),
    # Carries its operator's id itself (twice: two steps).
    event("kernel", "void at::native::copy_kernel<float>", 3.0, correlation=11,
          **{"External id": 2}),
    event("kernel", "void at::native::copy_kernel<float>", 3.0, correlation=11,
          **{"External id": 2}),
    # Replayed from a graph: no operator.
    event("kernel", "void at::native::fill_kernel", 2.0, correlation=12),
    # Another family: not in a "copy" table.
    event("kernel", "sm90_xmma_gemm_f16", 50.0, correlation=11, **{"External id": 2}),
]


class ByOpTest(unittest.TestCase):
    def run_tool(self, *args):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "trace.json"
            path.write_text(json.dumps({"traceEvents": EVENTS}))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = trace_kernels.main([str(path), *args])
        self.assertEqual(rc, 0)
        return out.getvalue()

    def test_small_kernels_are_put_to_their_operators(self):
        text = self.run_tool("--steps", "2", "--by-op", "copy")
        table = text.split("| CPU operator (kernels", 1)[1]
        rows = [r for r in table.splitlines() if r.startswith("| ") and "---" not in r]
        # Sorted by time: the two copies (6 us over 2 steps), the memset, the replayed fill.
        self.assertIn("aten::copy_ | `void at::native::copy_kernel<float>` | 1.0 | 0.003", rows[0])
        self.assertIn("aten::zeros | `Memset (Device)` | 0.5 | 0.002", rows[1])
        self.assertIn(trace_kernels.NO_OP, rows[2])
        self.assertIn("fill_kernel", rows[2])
        self.assertEqual(len(rows), 3)
        self.assertNotIn("xmma", table)

    def test_without_by_op_no_operator_table(self):
        self.assertNotIn("CPU operator", self.run_tool("--steps", "1"))


if __name__ == "__main__":
    unittest.main()
