"""The NVML sampler's own cost: telemetry.yaml trains ResNet50 (AMP bf16, channels-last, batch
256, synthetic data on the device, default stream, 15 + 100 steps) with the sampler on (100 ms)
and off, alternating round by round in one `orch run`. The overhead is that of the means,
100 x (off - on) / off (positive: the sampler slows training); the bar is |overhead| < 1%."""
import statistics

from context import why
from results import fmt, table

NAME = "telemetry"
TITLE = "Telemetry sampler overhead"
ORDER = 5
SUMMARY = "ResNet50 AMP bf16 b256: img/s with the NVML sampler on vs off, alternating rounds"
DURATION = "Full: 5 rounds, about 2 minutes. --quick: 3 rounds, about 1.5 minutes"
REPEATS = 5
QUICK_REPEATS = 3


def run(ctx, results):
    if not ctx.wanted("sampler"):
        return
    seeds = ", ".join(str(s) for s in range(1, ctx.repeats + 1))
    proc, runs = ctx.orch_run("telemetry.yaml", [f"seed=[{seeds}]"], ctx.raw / "orch.db",
                              "orch.log")
    batch = 2 if ctx.smoke else 256
    pairs: dict[int, dict[bool, float]] = {}
    for r in runs:
        if r["status"] == "ok":
            pairs.setdefault(r["config"]["seed"], {})[r["config"]["telemetry"]["enabled"]] = \
                r["images_per_s"]
    if not pairs:
        results.fail("sampler", "orch, sampler on", why(proc), batch=batch, dtype="bf16")
        return
    for seed in sorted(pairs):
        p = pairs[seed]
        if True in p and False in p:
            results.add("sampler", "orch, sampler on", p[True], batch=batch, dtype="bf16")
            results.add("sampler", "orch, sampler off", p[False], batch=batch, dtype="bf16")
            results.add("sampler", "orch", 100.0 * (p[False] - p[True]) / p[False],
                        metric="overhead %", batch=batch, dtype="bf16")
            ctx.log(f"round {seed}: on {p[True]:.1f}, off {p[False]:.1f} img/s")
    on, off = results.get("sampler", "orch, sampler on"), results.get("sampler", "orch, sampler off")
    if on and off and on.values:
        overhead = 100.0 * (off.mean - on.mean) / off.mean
        per_round = results.get("sampler", "orch", "overhead %")
        per_round.note = f"overhead of the means {overhead:+.2f}%: " + (
            "PASS" if abs(overhead) < 1.0 else "FAIL") + " (|overhead| < 1%)"


def markdown(ctx, results) -> str:
    on, off = results.get("sampler", "orch, sampler on"), results.get("sampler", "orch, sampler off")
    d = results.get("sampler", "orch", "overhead %")
    if not (on and off and on.values):
        return "no complete on/off pair"
    overhead = 100.0 * (off.mean - on.mean) / off.mean
    spread = f"{statistics.stdev(d.values):.2f} points" if d.n > 1 else "-"
    setting = ("smoke: ResNet18, batch 2, 32x32, 1 + 2 steps on the CPU (no NVML there)"
               if ctx.smoke else "ResNet50, AMP bf16, channels-last, batch 256, synthetic on the "
               "device, default stream, 15 + 100 steps, sampler interval 100 ms")
    return (f"{setting}; on and off alternate, {on.n} round{'s' if on.n > 1 else ''}.\n\n"
            + table(["sampler on img/s", "sampler off img/s", "overhead of the means",
                     "per-round sd", "within 1%"],
                    [[fmt(on), fmt(off), f"{overhead:+.2f}%", spread,
                      "yes" if abs(overhead) < 1.0 else "NO"]]))
