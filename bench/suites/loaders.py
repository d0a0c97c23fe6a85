"""orch's input pipelines against torchvision's DataLoader, on a 10,000-image ImageNet-shaped
JPEG folder from `orch dataset make --classes 100 --per-class 100 --seed 0` (made, with its
256x256 cache for the `cached` loader, when missing; every file is read once first so no row
pays for a cold page cache).

Loader-only (no model): `orch dataset bench --device cuda --channels-last --batch-size 256
--batches 50 --warmup 5` and baselines/torchvision_loader.py (ImageFolder + DataLoader, the same
RandomResizedCrop/flip/normalise, pinned memory, prefetch 3) take turns at each worker count, a
round being one pass; torchvision's rate moves a lot between invocations, so the ratio is of the
means over the rounds, with the lowest single pair beside it. Then `cached`, `nvjpeg` (hardware
JPEG engines and the CUDA decoder) and pinned `synthetic`, once a round.

End to end (loaders.e2e.yaml): AMP bf16 channels-last ResNet50, batch 256, 10 + 40 steps, fed by
each loader against `synthetic` on the device, once a round; with --fastest, the fastest
configuration instead (AMP fp16, fused_bn, conv_bn_stats, fused SGD, cuda-graph), which asks the
most of a loader.

With --photos the folder is cut from photographs (lib/photo_folder.py) instead: generated images
compress better and decode faster than photographs, so both are worth a table."""
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from context import run_error, why
from results import fmt, last, table

NAME = "loaders"
TITLE = "orch's loaders against torchvision's DataLoader"
ORDER = 3
SUMMARY = ("imagefolder/cached/nvjpeg/synthetic: loader-only vs torchvision's DataLoader "
           "(alternating, ratio of means) and end to end with ResNet50 AMP bf16")
DURATION = ("Full: 3 rounds, about 9 minutes (+~1 minute making the folder the first time). "
            "--quick: 1 round, about 4 minutes")
REPEATS = 3
QUICK_REPEATS = 1

# --fastest: the configuration that asks the most of a loader (docs/benchmarks.md's fastest).
FASTEST = ["precision={plugin: amp, dtype: fp16}", "optimizer.impl=fused", "stream=cuda-graph",
           "model={plugin: resnet, depth: 50, fused_bn: true, conv_bn_stats: true}"]

ONLY_RE = re.compile(r"^(\w+): \d+ batches of \d+ in [0-9.]+ s: ([0-9.]+) img/s", re.M)


def worker_counts(ctx) -> list[int]:
    if ctx.args.workers:
        return [int(w) for w in ctx.args.workers.split(",")]
    if ctx.smoke:
        return [1]
    top = max(1, (os.cpu_count() or 4) - 2)
    return sorted({w for w in (4, 8, top) if w <= top})


def dataset(ctx):
    """(jpeg folder, cache file), made when missing: `orch dataset make`'s generated images, or
    with --photos crops of photographs (bench/lib/photo_folder.py)."""
    classes, per_class = (2, 8) if ctx.smoke else (100, 100)
    base = Path(ctx.args.data_dir or Path(tempfile.gettempdir()) / "orch-bench-data").resolve()
    kind = "photos" if ctx.args.photos else "jpeg"
    jpeg = base / f"{kind}-{classes}x{per_class}"
    cache = base / f"cache-{kind}-{classes}x{per_class}-256.bin"
    base.mkdir(parents=True, exist_ok=True)
    if not (jpeg / ".complete").exists():
        shutil.rmtree(jpeg, ignore_errors=True)  # a make stopped half-way; make refuses a full DIR
        ctx.log(f"making {jpeg} ({classes} classes x {per_class} images)")
        if ctx.args.photos:
            sources = ["--sources", ctx.args.photo_sources] if ctx.args.photo_sources else []
            argv = [ctx.python, ctx.bench / "lib" / "photo_folder.py", jpeg, "--classes",
                    classes, "--per-class", per_class, "--seed", 0, *sources]
            proc = ctx.run([str(a) for a in argv], "dataset.log", timeout=3600)
        else:
            proc = ctx.run(ctx.orch_cmd("dataset", "make", jpeg, "--classes", classes,
                                        "--per-class", per_class, "--seed", 0), "dataset.log",
                           timeout=3600)
        if proc.rc != 0:
            raise RuntimeError(f"making the folder: {why(proc)}")
        (jpeg / ".complete").touch()
    if not cache.exists():
        proc = ctx.run(ctx.orch_cmd("dataset", "cache", jpeg, str(cache) + ".part", "--size", 256),
                       "dataset.log", timeout=3600)
        if proc.rc != 0:
            raise RuntimeError(f"orch dataset cache: {why(proc)}")
        os.replace(str(cache) + ".part", cache)
    for path in (jpeg / "train").rglob("*"):
        if path.is_file():
            path.read_bytes()
    return jpeg, cache


def only_rows(ctx, jpeg, cache, workers):
    """(case, data YAML, implementation-of-the-row) for the loader-only rows after the pairs."""
    top = workers[-1]
    rows = [(f"only-cached-w{top}", f"{{plugin: cached, path: {json.dumps(str(cache))}, "
             f"workers: {top}}}")]
    if ctx.device == "cuda":
        for backend in ("hardware", "gpu"):
            rows.append((f"only-nvjpeg-{backend}", f"{{plugin: nvjpeg, root: "
                         f"{json.dumps(str(jpeg))}, backend: {backend}}}"))
    rows.append(("only-synthetic-pinned", "{plugin: synthetic, location: pinned, batches: 2}"))
    return rows


def e2e_data(ctx, jpeg, cache, workers) -> list[tuple[str, str]]:
    root, path = json.dumps(str(jpeg)), json.dumps(str(cache))
    # Smoke's data.image_size override applies to each of these (all have the parameter).
    data = [("e2e-synthetic", "{plugin: synthetic, image_size: 224, batches: 2}")]
    data += [(f"e2e-imagefolder-w{w}", f"{{plugin: imagefolder, root: {root}, workers: {w}}}")
             for w in workers]
    data.append((f"e2e-cached-w{workers[-1]}", f"{{plugin: cached, path: {path}, "
                 f"workers: {workers[-1]}}}"))
    if ctx.device == "cuda":
        data += [(f"e2e-nvjpeg-{b}", f"{{plugin: nvjpeg, root: {root}, backend: {b}}}")
                 for b in ("hardware", "gpu")]
    return data


def e2e_case(data: dict) -> str:
    """The case a run's resolved `data` is, to check runs against the pinned list."""
    p = data["params"]
    if data["plugin"] == "nvjpeg":
        return f"e2e-nvjpeg-{p['backend']}"
    return f"e2e-{data['plugin']}" + (f"-w{p['workers']}" if "workers" in p else "")


def bench_args(ctx) -> list[str]:
    if ctx.smoke:
        return ["--device", ctx.device, "--batch-size", "4", "--batches", "3", "--warmup", "1"]
    return ["--device", ctx.device, "--channels-last", "--batch-size", "256", "--batches", "50",
            "--warmup", "5"]


def orch_only(ctx, results, case, data, fields):
    proc = ctx.run(ctx.orch_cmd("dataset", "bench", *bench_args(ctx), "--data", data), "only.log")
    m = ONLY_RE.search(proc.out)
    if m and proc.rc == 0:
        return results.add(case, "orch", float(m.group(2)), **fields)
    return results.fail(case, "orch", why(proc), **fields)


def run(ctx, results):
    workers = worker_counts(ctx)
    batch = 4 if ctx.smoke else 256
    try:
        jpeg, cache = dataset(ctx)
    except RuntimeError as e:
        results.note(str(e))
        return
    if ctx.device != "cuda":
        results.note("nvjpeg rows: CUDA only, not run on the CPU")
    tv_args = ["--batch", str(batch)] + (["--batches", "3", "--warmup", "1"] if ctx.smoke else [])
    for rnd in range(ctx.repeats):
        for w in workers:
            case = f"only-imagefolder-w{w}"
            if not ctx.wanted(case):
                continue
            if not ctx.fits(30):
                results.note(f"skipped (time budget): {case} from round {rnd + 1}")
                continue
            fields = dict(batch=batch, dtype="uint8->fp32")
            o = orch_only(ctx, results, case, f"{{plugin: imagefolder, root: "
                          f"{json.dumps(str(jpeg))}, workers: {w}}}", fields)
            proc, row = ctx.baseline("torchvision_loader.py", [jpeg, "--workers", w, *tv_args],
                                     "torchvision.jsonl.log")
            t = (results.add(case, "torchvision", row["images_per_s"], **fields) if row else
                 results.fail(case, "torchvision", why(proc), **fields))
            ctx.log(f"round {rnd + 1} {case}: orch {last(o)}, torchvision {last(t)} img/s")
        for case, data in only_rows(ctx, jpeg, cache, workers):
            if ctx.wanted(case) and ctx.fits(20):
                c = orch_only(ctx, results, case, data, dict(batch=batch, dtype="uint8->fp32"))
                ctx.log(f"round {rnd + 1} {case}: {last(c)} img/s")
    db = ctx.raw / "orch.db"
    data = [(case, d) for case, d in e2e_data(ctx, jpeg, cache, workers) if ctx.wanted(case)]
    for rnd in range(ctx.repeats if data else 0):
        if not ctx.fits(90):
            results.note(f"skipped (time budget): end to end from round {rnd + 1}")
            break
        pins = ["data=[" + ", ".join(d for _, d in data) + "]"]
        if ctx.args.fastest:
            pins += FASTEST
        proc, runs = ctx.orch_run("loaders.e2e.yaml", pins, db, "e2e.log")
        if len(runs) != len(data):
            results.note(f"end to end, round {rnd + 1}: {len(runs)} of {len(data)} runs: {why(proc)}")
        for (case, _), r in zip(data, runs):
            fields = dict(batch=2 if ctx.smoke else 256,
                          dtype="fp16" if ctx.args.fastest else "bf16")
            if e2e_case(r["config"]["data"]) != case:
                results.fail(case, "orch", f"run {r['name']} is not this loader", **fields)
            elif r["status"] == "ok":
                c = results.add(case, "orch", r["images_per_s"], **fields)
                c.note = r.get("diagnosis") or ""
            else:
                results.fail(case, "orch", run_error(r), **fields)
        ctx.log(f"round {rnd + 1} end to end: " + ", ".join(
            f"{case} {last(results.get(case, 'orch'))}" for case, _ in data[:len(runs)]))


def markdown(ctx, results) -> str:
    n = ctx.repeats
    spread = " ± 95% interval" if n > 1 else ""
    only, e2e = [], []
    for c in results.cells:
        if c.case.startswith("only-") and c.implementation == "orch":
            tv = results.get(c.case, "torchvision")
            name = c.case[len("only-"):]
            ratio = lowest = "-"
            if tv and tv.values and c.values:
                ratio = f"{c.mean / tv.mean:.2f}x"
                lowest = f"{min(a / b for a, b in zip(c.values, tv.values)):.2f}x"
            only.append([name, fmt(c, 0), fmt(tv, 0), ratio, lowest])
    synthetic = results.get("e2e-synthetic", "orch")
    for c in results.cells:
        if c.case.startswith("e2e-"):
            share = (f"{100 * c.mean / synthetic.mean:.1f}%" if synthetic and synthetic.values
                     and c.values else "-")
            e2e.append([c.case[len("e2e-"):], fmt(c), share, c.note or "-"])
    folder = ("crops of photographs (`bench/lib/photo_folder.py --classes 100 --per-class 100 "
              "--seed 0`" + (f" from {ctx.args.photo_sources}" if ctx.args.photo_sources else
                             ", scikit-image's") + ")"
              if ctx.args.photos else
              "generated images (`orch dataset make --classes 100 --per-class 100 --seed 0`)")
    training = ("AMP fp16, `fused_bn`, `conv_bn_stats`, fused SGD, `cuda-graph`"
                if ctx.args.fastest else "AMP bf16, `default` stream")
    setting = ("smoke: 2 classes x 8 images, batch 4, 3 batches; ResNet18, 32x32, 1 + 2 steps"
               if ctx.smoke else
               f"10,000 JPEGs, {folder}, batch 256; loader-only: 5 + 50 batches, channels-last, "
               f"pinned; end to end: ResNet50, {training}, channels-last, 10 + 40 steps")
    text = (f"{setting}. img/s, mean{spread} over {n} round{'s' if n > 1 else ''}; "
            f"{os.cpu_count()} CPU cores.")
    # --cases can leave out every loader-only case; an empty table would read as a failure.
    if only:
        text += ("\n\nLoader-only (orch and torchvision take turns at each worker count; ratio of "
                 "the means, and the lowest single pair):\n\n"
                 + table(["loader", "orch img/s", "torchvision img/s", "orch / torchvision",
                          "lowest pair"], only))
    if any(row[0] == "synthetic-pinned" for row in only):
        text += ("\n\n`synthetic-pinned` hands out batches made once, so its figure is the cost of "
                 "the loader harness itself (a bound no decoding loader can pass), not a decoder's "
                 "speed.")
    if e2e:
        text += ("\n\nEnd to end (the same training fed by each loader):\n\n"
                 + table(["data", "img/s", "of synthetic", "diagnosis"], e2e))
    return text
