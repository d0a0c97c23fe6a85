"""Issue 35's targets: a night that measures. night.yaml's 24 ResNet50 configurations (AMP bf16
and fp16 x channels-last and contiguous x the default, cuda-graph and copy-overlap streams x
batch 128 and 256; synthetic data, copy-overlap's from pinned host memory; 10 + 50 steps, fused
SGD, cudnn_benchmark on) swept on one GPU (`--gpus 0`), each case an `orch sweep` into a
database of its own (RAW/CASE.db), always naming `isolation` (its default may change):

  worker-r1   night.yaml         isolation=worker  repeat=1   measured share >= 35%
  process-r1  night.yaml         isolation=process repeat=1
  worker-r3   night.yaml         isolation=worker  repeat=3   measured share >= 50%
  halving     night-halving.yaml isolation=worker  repeat=3   (search: {method: halving}, eta 3)

The measured share and the other phases' shares are the sweep_efficiency view's (sweeps.py's
time_split gives the note). Compared when both cases of a pair ran in the same invocation:
process-r1 against worker-r1 (the same winner or a tie; Kendall tau-b over the configurations'
mean img/s >= 0.9; every configuration's |process - worker| / their mean <= 1.5%), and halving
against worker-r3 (its winner is the grid's or ties with it, 95% Student t intervals of the
grid's runs overlapping as in `orch rank`; its wall time at most half the grid's). A target
missed is reported (met / not met), not a failure; a run that does not end `ok` (or `pruned`)
is. --smoke on the CPU: ResNet18, batch 2, 32x32, 1 + 2 steps, AMP bf16, streams default and
copy-overlap (4 configurations): the plumbing, not a measurement."""
import importlib.util
import json
import math
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

from context import runs_after, why
from results import Cell, fmt, table

NAME = "night"
TITLE = "A night that measures: warm workers against processes, and successive halving (issue 35)"
ORDER = 6
SUMMARY = ("24 ResNet50 configurations (AMP bf16/fp16 x channels-last/contiguous x default/"
           "cuda-graph/copy-overlap x b128/b256) swept with isolation worker (repeat 3 and 1), "
           "process (repeat 1) and successive halving: the measured share of the wall time, "
           "process against worker, halving against the grid")
DURATION = ("Full: each case once, about 17 minutes on an H100 (worker-r1 ~160 s, process-r1 "
            "~230 s, worker-r3 ~400 s, halving ~200 s). --quick: the same cases, of which the "
            "330 s budget fits worker-r1 only (pick a pair with --cases and --budget)")
REPEATS = 1
QUICK_REPEATS = 1

# (case, experiment file, isolation, repeat, seconds it takes on an H100). Pairs that are
# compared run one after the other, so the GPU's state is alike for both.
CASES = [
    ("worker-r1", "night.yaml", "worker", 1, 160),
    ("process-r1", "night.yaml", "process", 1, 230),
    ("worker-r3", "night.yaml", "worker", 3, 400),
    ("halving", "night-halving.yaml", "worker", 3, 200),
]
ISOLATION_PAIR = ("process-r1", "worker-r1")
HALVING_PAIR = ("halving", "worker-r3")
# On a CPU: no CUDA graphs, no fp16 autocast (sweeps.py's CPU_PINS). copy-overlap stays (it runs
# in order on a CPU): pinned to `default` alone, the yaml's include entry for copy-overlap would
# match no combination and become a configuration of its own on top of base.
CPU_PINS = ["stream=[default, copy-overlap]", "precision={plugin: amp, dtype: bf16}"]

# Issue 35's targets.
SHARE_TARGETS = {"worker-r3": 50.0, "worker-r1": 35.0}  # measured share of the wall time, %
TAU_TARGET = 0.9  # Kendall tau-b, process against worker
WITHIN_PCT = 1.5  # every configuration's process and worker means within this; also the tie
HALVING_WALL_TARGET = 0.5  # halving's wall time / the grid's

# sweep_efficiency's shares (of wall x GPUs), in the order the table shows them.
SHARES = [("measured", "measured_share"), ("warm-up", "warmup_share"),
          ("start-up", "startup_share"), ("set-up", "setup_share"),
          ("after the steps", "after_share"), ("batch search", "batch_search_share"),
          ("between runs", "between_runs_share")]

# How a configuration is matched across the cases' databases: its resolved configuration
# (runs.config_json) without these keys. Not config_hash: `isolation` is hashed when it is not
# the default (process today, worker in the tree being changed), so a configuration's process and
# worker runs have different hashes, and which one moves with the default. Not the run name:
# the planner shortens names as it sees fit. `repeat` and `timeout` are not hashed either, and
# `search` is only in halving's shorter rung runs.
NOT_MATCHED = ("isolation", "repeat", "timeout", "search")


def _from_sweeps(attr):
    """An attribute of the sweeps suite (bench/run loads suites by path, not as a package)."""
    spec = importlib.util.spec_from_file_location("suite_sweeps_for_night",
                                                  Path(__file__).with_name("sweeps.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attr)


time_split = _from_sweeps("time_split")


def config_key(run) -> str:
    config = {k: v for k, v in (run.get("config") or {}).items() if k not in NOT_MATCHED}
    return json.dumps(config, sort_keys=True)


def dtype_of(run) -> str:
    precision = (run.get("config") or {}).get("precision") or {}
    return (precision.get("params") or {}).get("dtype") or run.get("precision") or ""


def efficiency(db) -> dict:
    """The sweep_efficiency row of the (only) sweep in db; {} without one."""
    try:
        with closing(sqlite3.connect(db)) as c:
            c.row_factory = sqlite3.Row
            row = c.execute("SELECT * FROM sweep_efficiency ORDER BY sweep_id DESC LIMIT 1").fetchone()
    except sqlite3.Error:
        return {}
    return dict(row) if row else {}


def kendall_tau_b(xs, ys):
    """Kendall's tau-b (ties in either ranking corrected for); None when a side is all ties."""
    concordant = discordant = tied_x = tied_y = pairs = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            pairs += 1
            tied_x += dx == 0
            tied_y += dy == 0
            concordant += dx * dy > 0
            discordant += dx * dy < 0
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    return (concordant - discordant) / denominator if denominator else None


def mean(values):
    return sum(values) / len(values)


def interval(values):
    """(mean, half-width of the 95% Student t interval or 0 for one value), as results.Cell and
    `orch rank` compute it."""
    c = Cell("", "", values=list(values))
    return c.mean, c.ci95 or 0.0


def winner(side):
    return max(side, key=lambda k: mean(side[k]["values"])) if side else None


def verdict(ok) -> str:
    return "met" if ok else "not met"


def sweep_case(ctx, results, case, yaml, isolation, repeat):
    """One `orch sweep`; its cells; {config key: {name, values, ...}} of its full measurements."""
    db = ctx.raw / f"{case}.db"
    pins = CPU_PINS if ctx.device == "cpu" else []
    gpus = ["--gpus", "0"] if ctx.device == "cuda" else []
    argv = ctx.orch_cmd("sweep", ctx.bench / "suites" / yaml, f"isolation={isolation}",
                        f"repeat={repeat}", *pins, *ctx.orch_overrides(), *gpus, db=db)
    proc = ctx.run(argv, f"{case}.log")
    runs = runs_after(db, 0)
    if not runs:
        results.fail(case, "orch sweep", why(proc), metric="wall s")
        ctx.log(f"{case}: no run recorded ({why(proc)})")
        return None
    wall = results.add(case, "orch sweep", proc.secs, metric="wall s")
    counts = Counter(r["status"] for r in runs)
    wall.note = f"{len(runs)} runs: " + ", ".join(f"{n} {s}" for s, n in counts.most_common())
    if split := time_split(db):
        wall.note += "; " + split
    bad = [r for r in runs if r["status"] not in ("ok", "pruned")]
    if bad:
        wall.errors.append(f"{len(bad)} run(s) not ok: " + ", ".join(
            f"{r['name']} (repeat {r['repeat']}) {r['status']}: {(r.get('error') or '')[:80]}"
            for r in bad[:4]))
    if proc.stopped:
        wall.errors.append(f"stopped at the time budget after {proc.secs:.0f} s")
    row = efficiency(db)
    for label, column in SHARES:
        if row.get(column) is not None and (row[column] or column == "measured_share"):
            results.add(case, label, 100.0 * row[column], metric="share %")
    measured = results.get(case, "measured", "share %")
    if measured and case in SHARE_TARGETS:
        measured.note = (f"target >= {SHARE_TARGETS[case]:.0f}%: "
                         + verdict(measured.mean >= SHARE_TARGETS[case]))
    side = {}
    for r in runs:
        if r["status"] == "ok" and r.get("rung") is None:
            entry = side.setdefault(config_key(r), {"name": r["name"], "values": [],
                                                    "batch": r.get("batch_size") or "",
                                                    "dtype": dtype_of(r)})
            entry["values"].append(float(r["images_per_s"]))
            results.add(case, r["name"], r["images_per_s"], batch=entry["batch"],
                        dtype=entry["dtype"])
        elif r["status"] not in ("ok", "pruned") and r.get("rung") is None:
            results.fail(case, r["name"], f"{r['status']}: {(r.get('error') or '')[:160]}",
                         batch=r.get("batch_size") or "", dtype=dtype_of(r))
    ctx.night["sides"][case] = side
    if any(r.get("rung") is not None for r in runs):
        halving_rungs(ctx, results, case, runs, wall)
    best = winner(side)
    ctx.log(f"{case}: {proc.secs:.0f} s, {wall.note}"
            + (f"; best {side[best]['name']} {mean(side[best]['values']):,.1f} img/s" if best else ""))
    return side


def halving_rungs(ctx, results, case, runs, wall):
    """Successive halving's shorter rungs: the runs per rung, and each pruned configuration with
    the rung that dropped it and its measurement there."""
    per_rung = Counter(r["rung"] for r in runs if r.get("rung") is not None)
    full = sum(1 for r in runs if r.get("rung") is None)
    wall.note += "; runs per rung: " + ", ".join(
        f"rung {k} {n}" for k, n in sorted(per_rung.items())) + f", full {full}"
    by_config = {}
    for r in runs:
        if r.get("rung") is not None:
            ident = ((r.get("config") or {}).get("search") or {}).get("configuration") or r["name"]
            by_config.setdefault(ident, []).append(r)
    pruned = {}
    for rs in by_config.values():
        if not any(r["status"] == "pruned" for r in rs):
            continue
        rung = max(r["rung"] for r in rs)
        last = [r for r in rs if r["rung"] == rung and r.get("images_per_s") is not None]
        key = config_key(rs[0])  # the configuration's, as for its full runs ...
        key = json.dumps({**json.loads(key), "steps": None}, sort_keys=True)  # ... but its steps
        steps = ((rs[0].get("config") or {}).get("steps") or {}).get("measure")
        value = mean([float(r["images_per_s"]) for r in last]) if last else None
        pruned[key] = {"name": rs[0]["name"], "rung": rung, "steps": steps, "value": value}
        if value is not None:
            c = results.add(case, rs[0]["name"], value, metric="pruned img/s",
                            batch=rs[0].get("batch_size") or "", dtype=dtype_of(rs[0]))
            c.note = f"pruned at rung {rung}, {steps} measured steps"
    ctx.night["pruned"][case] = pruned


def compare_isolation(ctx, results):
    """process-r1 against worker-r1, configuration by configuration."""
    label = f"{ISOLATION_PAIR[0]} vs {ISOLATION_PAIR[1]}"
    proc_side, work_side = (ctx.night["sides"].get(c) for c in ISOLATION_PAIR)
    if proc_side is None or work_side is None:
        if any(ctx.wanted(c) for c in ISOLATION_PAIR):
            results.note(f"{label}: not compared, {' and '.join(c for c in ISOLATION_PAIR if ctx.night['sides'].get(c) is None)} "
                         "did not run (or recorded nothing) in this invocation")
        return
    common = [k for k in work_side if k in proc_side]
    alone = [s[k]["name"] for s, o in ((proc_side, work_side), (work_side, proc_side))
             for k in s if k not in o]
    if len(common) < 2:
        results.fail(label, "orch sweep", f"{len(common)} configuration(s) measured both ways",
                     metric="tau")
        return
    pm = {k: mean(proc_side[k]["values"]) for k in common}
    wm = {k: mean(work_side[k]["values"]) for k in common}
    tau = kendall_tau_b([wm[k] for k in common], [pm[k] for k in common])
    if tau is None:
        results.fail(label, "orch sweep", "every configuration ties on one side", metric="tau")
    else:
        c = results.add(label, "orch sweep", tau, metric="tau")
        c.note = (f"Kendall tau-b {tau:.3f} over {len(common)} configurations' mean img/s"
                  + (f", {len(alone)} measured one way only: {', '.join(alone)}" if alone else "")
                  + f"; target >= {TAU_TARGET}: {verdict(tau >= TAU_TARGET)}")
    diffs = {}
    for k in common:
        diffs[k] = 100.0 * abs(pm[k] - wm[k]) / ((pm[k] + wm[k]) / 2)
        results.add(label, work_side[k]["name"], 100.0 * (pm[k] - wm[k]) / wm[k],
                    metric="diff %", batch=work_side[k]["batch"], dtype=work_side[k]["dtype"])
    worst = max(diffs, key=diffs.get)
    c = results.add(label, "orch sweep", diffs[worst], metric="max diff %")
    c.note = (f"largest difference over the pair's mean: {work_side[worst]['name']} "
              f"(process {pm[worst]:,.1f}, worker {wm[worst]:,.1f} img/s); target <= {WITHIN_PCT}%: "
              f"{verdict(diffs[worst] <= WITHIN_PCT)}")
    # Winners: each sweep's best. With repeat 1 there is no interval, so a tie is the other
    # sweep's winner within WITHIN_PCT of this sweep's winner, in both sweeps.
    wp, ww = winner(proc_side), winner(work_side)
    same = wp == ww
    within = lambda side, a, b: (a in side and b in side and abs(mean(side[a]["values"]) - mean(
        side[b]["values"])) <= WITHIN_PCT / 100.0 * mean(side[b]["values"]))
    tie = not same and within(work_side, wp, ww) and within(proc_side, ww, wp)
    c = results.add(label, "orch sweep", 1.0 if same or tie else 0.0, metric="same winner")
    c.note = (f"process: {proc_side[wp]['name']} {mean(proc_side[wp]['values']):,.1f} img/s; "
              f"worker: {work_side[ww]['name']} {mean(work_side[ww]['values']):,.1f} img/s; "
              + ("the same configuration" if same else
                 f"a tie (each within {WITHIN_PCT}% of the other in both sweeps)" if tie else
                 f"different, not within {WITHIN_PCT}% of each other in both sweeps")
              + f"; target same or tie: {verdict(same or tie)}")
    ctx.log(f"{label}: tau-b {'-' if tau is None else f'{tau:.3f}'}, max diff {diffs[worst]:.2f}% "
            f"({work_side[worst]['name']}), winners {'same' if same else 'tie' if tie else 'differ'}")


def compare_halving(ctx, results):
    """halving against the repeat-3 grid: its winner, and its wall time."""
    label = f"{HALVING_PAIR[0]} vs {HALVING_PAIR[1]}"
    half_side, grid_side = (ctx.night["sides"].get(c) for c in HALVING_PAIR)
    if half_side is None or grid_side is None:
        if any(ctx.wanted(c) for c in HALVING_PAIR):
            results.note(f"{label}: not compared, {' and '.join(c for c in HALVING_PAIR if ctx.night['sides'].get(c) is None)} "
                         "did not run (or recorded nothing) in this invocation")
        return
    if not half_side or not grid_side:
        results.fail(label, "orch sweep", "no full measurement on one side", metric="same winner")
        return
    h, g = winner(half_side), winner(grid_side)
    same = h == g
    # orch rank's tie: the 95% intervals overlap, both from the grid's runs (does the grid tell
    # halving's choice from its own winner?).
    tie = False
    if not same and h in grid_side:
        (mh, ch), (mg, cg) = interval(grid_side[h]["values"]), interval(grid_side[g]["values"])
        tie = abs(mh - mg) <= ch + cg
    hm, hc = interval(half_side[h]["values"])
    gm, gc = interval(grid_side[g]["values"])
    c = results.add(label, "orch sweep", 1.0 if same or tie else 0.0, metric="same winner")
    c.note = (f"halving: {half_side[h]['name']} {hm:,.1f} ± {hc:,.1f} img/s; grid: "
              f"{grid_side[g]['name']} {gm:,.1f} ± {gc:,.1f} img/s; "
              + ("the same configuration" if same else
                 "a tie (95% intervals overlap in the grid's runs)" if tie else
                 "different" + ("" if h in grid_side else " (halving's winner has no grid runs)"))
              + f"; target same or tie: {verdict(same or tie)}")
    hw, gw = results.get(HALVING_PAIR[0], "orch sweep", "wall s"), \
        results.get(HALVING_PAIR[1], "orch sweep", "wall s")
    if hw and gw and hw.values and gw.values:
        # As a percentage: the CSV keeps 3 decimals for "%" metrics, 1 for the others.
        ratio = hw.mean / gw.mean
        c = results.add(label, "orch sweep", 100.0 * ratio, metric="wall % of grid")
        c.note = (f"halving / grid wall time {ratio:.3f} ({hw.mean:.0f} s / {gw.mean:.0f} s); "
                  f"target <= {HALVING_WALL_TARGET}: {verdict(ratio <= HALVING_WALL_TARGET)}")
    ctx.log(f"{label}: winners {'same' if same else 'tie' if tie else 'differ'}"
            + (f", wall {hw.mean / gw.mean:.2f} x the grid's" if hw and gw and hw.values and gw.values else ""))


def run(ctx, results):
    ctx.night = {"sides": {}, "pruned": {}}
    if ctx.repeats > 1:
        results.note(f"--repeats {ctx.repeats}: each case runs once; its repeats are the "
                     "sweeps' own `repeat` (1 and 3)")
    for case, yaml, isolation, repeat, need in CASES:
        if not ctx.wanted(case):
            continue
        if not ctx.fits(need):
            results.cell(case, "orch sweep", metric="wall s")  # no value: skipped
            results.note(f"skipped (time budget): {case}, about {need} s on an H100, "
                         f"{ctx.left():.0f} s left")
            continue
        sweep_case(ctx, results, case, yaml, isolation, repeat)
    compare_isolation(ctx, results)
    compare_halving(ctx, results)


# --- the table -------------------------------------------------------------------------------
def _pct(c) -> str:
    return "-" if c is None or not c.values else f"{c.mean:.1f}%"


def _target(results, case, metric, show, test, what):
    """[target, value, met] for a cell whose mean `test` judges."""
    c = results.get(case, "orch sweep" if metric != "share %" else "measured", metric)
    if c is None or not c.values:
        return [what, "not measured" + (f" ({'; '.join(c.errors)})" if c and c.errors else ""), "-"]
    return [what, show(c), verdict(test(c.mean))]


def markdown(ctx, results) -> str:
    state = getattr(ctx, "night", {"sides": {}, "pruned": {}})
    if ctx.smoke:
        setting = ("smoke: ResNet18, batch 2, 32x32, 1 + 2 steps on the CPU, AMP bf16, streams "
                   "default and copy-overlap (4 configurations); the plumbing, not a measurement "
                   "(the targets are judged all the same)")
    else:
        setting = ("night.yaml: ResNet50, synthetic 224x224 (2 batches; copy-overlap's in pinned "
                   "host memory, the others' on the device), AMP bf16 and fp16 x channels-last "
                   "and contiguous x default, cuda-graph and copy-overlap streams x batch 128 "
                   "and 256 = 24 configurations, 10 + 50 steps a run, fused SGD, cudnn_benchmark "
                   "on, timeout 5m, one GPU (`--gpus 0`)")
    commands = "\n".join(
        f"- `{case}`: `orch --db RAW/{case}.db sweep bench/suites/{yaml} isolation={iso} "
        f"repeat={rep}`" for case, yaml, iso, rep, _ in CASES)
    text = f"{setting}. Each case is one sweep into a database of its own:\n\n{commands}\n"

    rows = []
    shown = [(label, column) for label, column in SHARES if column != "batch_search_share"]
    for case, yaml, iso, rep, _ in CASES:
        wall = results.get(case, "orch sweep", "wall s")
        if wall is None:
            continue
        shares = [_pct(results.get(case, label, "share %")) for label, _ in shown]
        runs = wall.note.split(" runs:", 1)[0] if wall.note else ""
        rows.append([case, iso, "halving" if "halving" in yaml else "grid", rep, runs,
                     fmt(wall, 0)] + shares)
    if rows:
        text += ("\nWall time (the `orch sweep` process) and where it went (the database's "
                 "`sweep_efficiency` view, shares of wall x GPUs):\n\n"
                 + table(["case", "isolation", "search", "repeat", "runs", "wall s"]
                         + [f"{label} %" for label, _ in shown], rows) + "\n")
        failed = [f"{case}: {'; '.join(c.errors)}" for case, *_ in CASES
                  if (c := results.get(case, "orch sweep", "wall s")) and c.errors]
        if failed:
            text += "\n" + "\n".join(f"- {line}" for line in failed) + "\n"

    iso_label = f"{ISOLATION_PAIR[0]} vs {ISOLATION_PAIR[1]}"
    half_label = f"{HALVING_PAIR[0]} vs {HALVING_PAIR[1]}"
    detail = lambda c: c.note.split("; target")[0]  # a comparison cell's note, less its verdict
    targets = [
        _target(results, "worker-r3", "share %", lambda c: f"{c.mean:.1f}%",
                lambda v: v >= SHARE_TARGETS["worker-r3"],
                f"worker-r3 (repeat 3): measured share of the wall time >= {SHARE_TARGETS['worker-r3']:.0f}%"),
        _target(results, "worker-r1", "share %", lambda c: f"{c.mean:.1f}%",
                lambda v: v >= SHARE_TARGETS["worker-r1"],
                f"worker-r1 (repeat 1): measured share >= {SHARE_TARGETS['worker-r1']:.0f}%"),
        _target(results, iso_label, "same winner", detail, lambda v: v == 1.0,
                f"process-r1 vs worker-r1: the same winner, or a tie (repeat 1 has no interval: "
                f"each winner within {WITHIN_PCT}% of the other's in both sweeps)"),
        _target(results, iso_label, "tau", detail,
                lambda v: v >= TAU_TARGET,
                f"process-r1 vs worker-r1: Kendall tau-b of the configurations' mean img/s >= {TAU_TARGET}"),
        _target(results, iso_label, "max diff %", lambda c: f"{c.mean:.2f}%: {detail(c)}",
                lambda v: v <= WITHIN_PCT,
                f"process-r1 vs worker-r1: every configuration's difference over the pair's "
                f"mean <= {WITHIN_PCT}%"),
        _target(results, half_label, "same winner", detail, lambda v: v == 1.0,
                "halving finds worker-r3's winner, or a tie (95% Student t intervals of the "
                "grid's runs overlap, as in `orch rank`)"),
        _target(results, half_label, "wall % of grid", detail,
                lambda v: v <= 100.0 * HALVING_WALL_TARGET,
                f"halving's wall time <= {HALVING_WALL_TARGET} x worker-r3's"),
    ]
    text += "\nIssue 35's targets:\n\n" + table(["target", "measured", "met"], targets) + "\n"

    # Every configuration, matched across the cases by its configuration without `isolation`.
    sides, pruned = state["sides"], state["pruned"]
    grid_cases = [case for case, yaml, *_ in CASES if case in sides and "halving" not in yaml]
    keys, names = [], {}
    for case in grid_cases + [c for c in sides if c not in grid_cases]:
        for k, v in sides[case].items():
            if k not in names:
                keys.append(k)
                names[k] = v["name"]
    if keys:
        order_case = next((c for c in ("worker-r3", "worker-r1", "process-r1", "halving")
                           if sides.get(c)), None)
        keys.sort(key=lambda k: -mean(sides[order_case][k]["values"])
                  if k in sides[order_case] else 0.0)
        winners = {c: winner(s) for c, s in sides.items() if s}
        heads = [c for c, *_ in CASES if c in sides]
        compare = all(c in sides for c in ISOLATION_PAIR)
        body = []
        for k in keys:
            row = [names[k]]
            for case in heads:
                if k in sides[case]:
                    m, ci = interval(sides[case][k]["values"])
                    row.append(f"{m:,.1f}" + (f" ± {ci:,.1f}" if len(sides[case][k]["values"]) > 1 else ""))
                elif case in pruned:
                    p = pruned[case].get(json.dumps({**json.loads(k), "steps": None}, sort_keys=True))
                    row.append(f"pruned at rung {p['rung']}: {p['value']:,.1f} over {p['steps']} steps"
                               if p and p["value"] is not None else "-")
                else:
                    row.append("-")
            if compare:
                d = results.get(iso_label, names[k], "diff %") or results.get(
                    iso_label, sides[ISOLATION_PAIR[1]].get(k, {}).get("name", ""), "diff %")
                row.append(f"{d.mean:+.2f}%" if d and d.values else "-")
            row.append(", ".join(c for c, w in winners.items() if w == k))
            body.append(row)
        text += ("\nImg/s of every configuration (mean ± 95% Student t interval over its repeats), "
                 "best first"
                 + (", with process-r1 against worker-r1 ((process - worker) / worker)" if compare else "")
                 + ". Configurations are matched across the cases' databases by their resolved "
                 "configuration (`runs.config_json`) without `isolation`, `repeat` and `timeout`: "
                 "`config_hash` holds `isolation` when it is not the default, so a configuration's "
                 "process and worker runs hash apart.\n\n"
                 + table(["configuration"] + [f"{c} img/s" for c in heads]
                         + (["process vs worker"] if compare else []) + ["winner of"], body) + "\n")
    return text
