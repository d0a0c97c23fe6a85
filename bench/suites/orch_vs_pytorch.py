"""orch against PyTorch eager, in the same invocation on the same GPU: ResNet50, batch 256,
channels-last, 224x224 synthetic data, SGD (momentum 0.9, weight decay 1e-4), 15 warm-up + 40
measured steps on both sides. Each precision (orch-vs-pytorch.precisions.yaml) and each stream
strategy with AMP bf16 (orch-vs-pytorch.streams.yaml) against baselines/pytorch_resnet50.py
configured the same way (`--stream` mirrors each strategy in plain PyTorch).

The two sides take turns cell by cell (orch, then PyTorch, then the next cell), a repeat being
one pass over the cells: the two sides of a pair meet the same clocks and temperature, and the
spread between repeats shows in the ± (95% interval of the mean)."""

from context import one_run, why
from results import fmt, last, ratio, table

NAME = "orch-vs-pytorch"
TITLE = "orch against PyTorch eager"
ORDER = 1
SUMMARY = ("ResNet50 b256 channels-last synthetic: orch vs PyTorch eager, 4 precisions and 5 "
           "stream strategies, taking turns")
DURATION = ("Full: 3 repeats, about 20 minutes. --quick: 1 repeat, about 6 minutes; cells that "
            "do not fit the 330 s budget are listed as skipped (pick them with --cases)")
REPEATS = 3
QUICK_REPEATS = 1

AMP_BF16 = "precision={plugin: amp, dtype: bf16}"

# case, label, experiment file, overrides pinning the cell, PyTorch arguments, dtype, runs on a
# CPU (pinned memory, side streams and CUDA graphs need CUDA)
CELLS = [
    ("fp32", "fp32 (TF32 off)", "precisions", ["precision=fp32"], ["--precision", "fp32"],
     "fp32", True),
    ("tf32", "tf32", "precisions", ["precision=tf32"], ["--precision", "tf32"], "tf32", True),
    ("amp-bf16", "AMP bf16", "precisions", [AMP_BF16], ["--precision", "amp-bf16"], "bf16", True),
    ("amp-fp16", "AMP fp16 (dynamic loss scaling)", "precisions",
     ["precision={plugin: amp, dtype: fp16}"], ["--precision", "amp-fp16"], "fp16", True),
    ("stream-device", "bf16, `default`, batches on the device", "streams",
     ["stream=default", "data.location=device"], ["--precision", "amp-bf16"], "bf16", True),
    ("stream-pinned", "bf16, `default`, pinned host batches copied each step", "streams",
     ["stream=default", "data.location=pinned"], ["--precision", "amp-bf16", "--stream", "pinned"],
     "bf16", False),
    ("stream-copy-overlap", "bf16, `copy-overlap` from pinned memory", "streams",
     ["stream=copy-overlap", "data.location=pinned"],
     ["--precision", "amp-bf16", "--stream", "copy-overlap"], "bf16", False),
    ("stream-cuda-graph", "bf16, `cuda-graph` (whole step captured)", "streams",
     ["stream=cuda-graph", "data.location=device"],
     ["--precision", "amp-bf16", "--stream", "cuda-graph"], "bf16", False),
    ("stream-multi-stream", "bf16, `multi-stream`, 2 streams", "streams",
     ["stream={plugin: multi-stream, streams: 2}", "data.location=device"],
     ["--precision", "amp-bf16", "--stream", "multi-stream"], "bf16", False),
]


def cells(ctx):
    for cell in CELLS:
        case, cpu_ok = cell[0], cell[6]
        if not ctx.wanted(case):
            continue
        if ctx.device == "cpu" and not cpu_ok:
            continue
        yield cell


def run(ctx, results):
    db = ctx.raw / "orch.db"
    batch = 2 if ctx.smoke else 256
    skipped_cpu = [c[0] for c in CELLS if ctx.device == "cpu" and not c[6] and ctx.wanted(c[0])]
    if skipped_cpu:
        results.note(f"not on the CPU (they need CUDA): {', '.join(skipped_cpu)}")
    for repeat in range(ctx.repeats):
        for case, _, yaml, pins, py_args, dtype, _ in cells(ctx):
            fields = dict(batch=batch, dtype=dtype)
            if not ctx.fits(40):
                results.note(f"skipped (time budget): {case} from repeat {repeat + 1}")
                results.cell(case, "orch", **fields)
                results.cell(case, "pytorch", **fields)
                continue
            proc, runs = ctx.orch_run(f"orch-vs-pytorch.{yaml}.yaml", pins, db, "orch.log")
            r, error = one_run(proc, runs)
            if r:
                results.add(case, "orch", r["images_per_s"], **fields)
            else:
                results.fail(case, "orch", error, **fields)
            proc, row = ctx.baseline("pytorch_resnet50.py",
                                     ["--channels-last", *py_args, *ctx.python_overrides()],
                                     "pytorch.jsonl.log")
            if row:
                results.add(case, "pytorch", row["images_per_s"], **fields)
            else:
                results.fail(case, "pytorch", why(proc), **fields)
            ctx.log(f"repeat {repeat + 1} {case}: orch {last(results.get(case, 'orch'))}, "
                    f"pytorch {last(results.get(case, 'pytorch'))} img/s")


def markdown(ctx, results) -> str:
    rows = []
    for case, label, *_ in CELLS:
        o, p = results.get(case, "orch"), results.get(case, "pytorch")
        if o is None and p is None:
            continue
        rows.append([label, fmt(o), fmt(p), ratio(o, p)])
    setting = ("smoke: ResNet18, batch 2, 32x32, 1 + 2 steps" if ctx.smoke else
               "ResNet50, batch 256, channels-last, 224x224 synthetic, 15 warm-up + 40 measured "
               "steps, SGD momentum 0.9")
    n = ctx.repeats
    return (f"{setting}; orch and PyTorch eager take turns cell by cell; img/s, mean"
            f"{' ± 95% interval' if n > 1 else ''} over {n} repeat{'s' if n > 1 else ''}.\n\n"
            + table(["configuration", "orch img/s", "PyTorch img/s", "orch / PyTorch"], rows))
