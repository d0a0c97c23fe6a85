"""orch's fastest ResNet50 training configuration (fused-vs-compile.yaml: fused batch-norm,
conv_bn_stats for fp16, whole-step CUDA graph, fused SGD, channels-last) against torchvision's
ResNet50 under torch.compile (baselines/pytorch_resnet50.py --compile default; with
--max-autotune also mode=max-autotune), AMP bf16 and fp16, batch 256 and 768, synthetic data,
15 warm-up + 40 measured steps on both sides (compilation happens in the warm-up).

The sides take turns cell by cell. torch.compile's first process per shape compiles for about a
minute (max-autotune: many minutes), later ones reuse TorchInductor's cache
(TORCHINDUCTOR_CACHE_DIR, /tmp/torchinductor_$USER by default): keep that folder to spare the
compilation in a later invocation."""

from context import one_run, why
from results import fmt, last, ratio, table

NAME = "fused-vs-compile"
TITLE = "orch's fused ResNet50 against torch.compile"
ORDER = 2
SUMMARY = ("ResNet50 AMP bf16/fp16, b256/b768: orch fused_bn + conv_bn_stats (fp16) + cuda-graph "
           "+ fused SGD vs torch.compile default (max-autotune with --max-autotune)")
DURATION = ("Full: 3 repeats, about 12 minutes (max-autotune adds ~10 minutes per shape from a "
            "cold cache). --quick: 1 repeat, about 5-6 minutes")
REPEATS = 3
QUICK_REPEATS = 1

# case, dtype, batch
CELLS = [("bf16-b256", "bf16", 256), ("fp16-b256", "fp16", 256), ("bf16-b768", "bf16", 768),
         ("fp16-b768", "fp16", 768)]

# On a CPU (smoke) the CUDA graph cannot capture; the fused paths fall back to the plain ops.
CPU_OVERRIDES = ["stream=default", "profile.steps=0"]


def modes(ctx):
    return ["default"] + (["max-autotune"] if ctx.args.max_autotune else [])


def run(ctx, results):
    db = ctx.raw / "orch.db"
    for repeat in range(ctx.repeats):
        for case, dtype, batch in CELLS:
            if not ctx.wanted(case):
                continue
            batch = 2 if ctx.smoke else batch
            fields = dict(batch=batch, dtype=dtype)
            if not ctx.fits(90):
                results.note(f"skipped (time budget): {case} from repeat {repeat + 1}")
                continue
            pins = [f"precision={{plugin: amp, dtype: {dtype}}}", f"batch_size={batch}"]
            if ctx.device == "cpu":
                pins += CPU_OVERRIDES
            proc, runs = ctx.orch_run("fused-vs-compile.yaml", pins, db, "orch.log")
            r, error = one_run(proc, runs)
            if r:
                results.add(case, "orch", r["images_per_s"], **fields)
            else:
                results.fail(case, "orch", error, **fields)
            line = f"repeat {repeat + 1} {case}: orch {last(results.get(case, 'orch'))}"
            for mode in modes(ctx):
                impl = f"torch.compile {mode}"
                if not ctx.fits(60):
                    results.note(f"skipped (time budget): {case} {impl} from repeat {repeat + 1}")
                    continue
                args = ["--precision", f"amp-{dtype}", "--channels-last", "--batch", str(batch),
                        "--compile", mode, *ctx.python_overrides()]
                proc, row = ctx.baseline("pytorch_resnet50.py", args, "pytorch.jsonl.log")
                if row:
                    c = results.add(case, impl, row["images_per_s"], **fields)
                    c.note = f"first step (compilation) {row['first_step_s']:.0f} s"
                else:
                    results.fail(case, impl, why(proc), **fields)
                line += f", {impl} {last(results.get(case, impl))}"
            ctx.log(line + " img/s")


def markdown(ctx, results) -> str:
    headers = ["configuration", "batch", "orch img/s"]
    for mode in modes(ctx):
        headers += [f"torch.compile {mode} img/s", f"orch / {mode}"]
    rows = []
    for case, dtype, batch in CELLS:
        o = results.get(case, "orch")
        if o is None:
            continue
        label = f"AMP {dtype}" + (", conv_bn_stats" if dtype == "fp16" else "")
        row = [label, o.batch, fmt(o)]
        for mode in modes(ctx):
            c = results.get(case, f"torch.compile {mode}")
            row += [fmt(c), ratio(o, c)]
        rows.append(row)
    setting = ("smoke: ResNet18, batch 2, 32x32, 1 + 2 steps, default stream on the CPU"
               if ctx.smoke else
               "ResNet50, channels-last, 224x224 synthetic, 15 warm-up + 40 measured steps; orch: "
               "fused_bn (cuDNN's for fp16's other batch-norms, ours with ReLU's 1-bit mask for "
               "bf16), cuda-graph, fused SGD, conv_bn_stats for fp16")
    n = ctx.repeats
    return (f"{setting}; the sides take turns cell by cell; img/s, mean"
            f"{' ± 95% interval' if n > 1 else ''} over {n} repeat{'s' if n > 1 else ''}.\n\n"
            + table(headers, rows))
