"""What a suite runs with: the orch binary, the Python for the baselines, the device, the quick
and smoke settings, the time budget, and the one way processes are started (their output kept
under the suite's raw folder, stopped at the budget)."""
import json
import os
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# Smoke runs check the plumbing on a CPU: the smallest training that still runs every step of a
# suite, not a measurement.
# A learning rate of 0.01: at batch 2 the suites' 0.1 takes AMP fp16 (the loss scaler's first
# unskipped step) to a NaN loss, which orch rightly records as diverged, failing the cell.
SMOKE_ORCH = ["model.depth=18", "batch_size=2", "data.image_size=32", "steps.warmup=1",
              "steps.measure=2", "optimizer.lr=0.01"]
SMOKE_PYTHON = ["--model", "resnet18", "--batch", "2", "--image-size", "32", "--warmup", "1",
                "--measure", "2", "--lr", "0.01"]


@dataclass
class Proc:
    rc: int
    out: str
    secs: float
    stopped: bool  # killed at its time limit


class Context:
    def __init__(self, args, suite_name: str, raw: Path, checkout: Path, default_repeats: int):
        self.args = args
        self.suite = suite_name
        self.raw = raw
        self.checkout = checkout
        self.bench = checkout / "bench"
        self.orch = args.orch
        self.python = args.python
        self.device = args.device
        self.quick = args.quick
        self.smoke = args.smoke
        self.repeats = args.repeats or default_repeats
        self.cases = set(args.cases.split(",")) if args.cases else None
        budget = args.budget if args.budget is not None else (330 if args.quick else 0)
        self.deadline = time.monotonic() + budget if budget > 0 else None
        self.started = time.monotonic()
        self.commit = ""
        # Each orch_run gets a sweep of its own (see there); the stamp keeps a second invocation
        # into the same --out from meeting the first one's sweeps.
        self.sweep_stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        self.sweeps = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # --- reporting -------------------------------------------------------------------------
    def log(self, message: str) -> None:
        line = f"[{self.suite} {time.monotonic() - self.started:5.0f}s] {message}"
        print(line, flush=True)
        with open(self.raw / "driver.log", "a") as f:
            f.write(line + "\n")

    # --- what to run -----------------------------------------------------------------------
    def wanted(self, case: str) -> bool:
        return self.cases is None or case in self.cases

    def left(self):
        """Seconds left of the budget; None without one."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def fits(self, need_s: float) -> bool:
        """Whether a step that needs about need_s seconds may start."""
        left = self.left()
        return left is None or left >= need_s

    def orch_overrides(self) -> list[str]:
        """Overrides every training experiment gets: the device, and smoke's tiny settings."""
        out = [f"device={self.device}"] if self.device != "cuda" else []
        return out + (SMOKE_ORCH if self.smoke else [])

    def python_overrides(self) -> list[str]:
        out = ["--device", self.device] if self.device != "cuda" else []
        return out + (SMOKE_PYTHON if self.smoke else [])

    # --- processes ---------------------------------------------------------------------------
    def run(self, argv, log_name: str, timeout=None, env=None, cwd=None) -> Proc:
        """Runs argv to its end (or to the budget / timeout), appending its output to
        raw/log_name; a whole process group, so `orch sweep`'s children stop with it."""
        left = self.left()
        if left is not None:
            timeout = max(1.0, left) if timeout is None else max(1.0, min(timeout, left))
        argv = [str(a) for a in argv]
        with open(self.raw / log_name, "a") as log:
            log.write(f"$ {' '.join(argv)}\n")
            log.flush()
            t0 = time.monotonic()
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env={**os.environ, **(env or {})}, cwd=cwd or self.checkout,
                                 start_new_session=True)
            stopped = False
            try:
                out, _ = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                stopped = True
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    out, _ = p.communicate(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    out, _ = p.communicate()
            secs = time.monotonic() - t0
            log.write(out)
            log.write(f"# exit {p.returncode} after {secs:.1f} s{' (stopped at its limit)' if stopped else ''}\n")
        return Proc(p.returncode, out, secs, stopped)

    def orch_cmd(self, *args, db=None) -> list[str]:
        return [self.orch] + (["--db", str(db)] if db else []) + [str(a) for a in args]

    def orch_run(self, yaml: str, overrides, db: Path, log_name: str, command="run",
                 extra=(), timeout=None):
        """`orch COMMAND suites/YAML overrides...` into db; returns (Proc, the runs it added).

        Each call is a sweep of its own: orch keeps one plan per sweep, so the cells a suite pins
        one at a time (other overrides, another plan) would be refused under the experiment's
        name, and running a cell again in its old sweep would replace that sweep's rows."""
        before = last_run_id(db)
        self.sweeps += 1
        sweep = ["--sweep", f"{Path(yaml).stem}-{self.sweep_stamp}-{self.sweeps}"]
        argv = self.orch_cmd(command, self.bench / "suites" / yaml, *overrides,
                             *self.orch_overrides(), *sweep, *extra, db=db)
        proc = self.run(argv, log_name, timeout=timeout)
        return proc, runs_after(db, before)

    def baseline(self, script: str, args, log_name: str, timeout=None):
        """A baseline in bench/baselines/ that prints one JSON line; (Proc, dict or None)."""
        argv = [self.python, self.bench / "baselines" / script, *args]
        proc = self.run(argv, log_name, timeout=timeout)
        for line in reversed(proc.out.splitlines()):
            if line.startswith("{"):
                try:
                    return proc, json.loads(line)
                except json.JSONDecodeError:
                    break
        return proc, None


def why(proc: Proc) -> str:
    """One line on why a process gave no result."""
    if proc.stopped:
        return f"stopped after {proc.secs:.0f} s (time limit)"
    tail = [l for l in proc.out.strip().splitlines() if l.strip()]
    return f"exit {proc.rc}: {tail[-1][:160] if tail else 'no output'}"


def last_run_id(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as c:
        try:
            return c.execute("SELECT coalesce(max(id), 0) FROM runs").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def runs_after(db: Path, after: int) -> list[dict]:
    """orch's runs with id > after, as dicts (config and document parsed)."""
    if not db.exists():
        return []
    with sqlite3.connect(db) as c:
        c.row_factory = sqlite3.Row
        try:
            rows = c.execute("SELECT * FROM runs WHERE id > ? ORDER BY id", (after,)).fetchall()
        except sqlite3.OperationalError:
            return []
        out = []
        for r in rows:
            d = dict(r)
            d["config"] = json.loads(d["config_json"]) if d.get("config_json") else {}
            d["document"] = json.loads(d["document_json"]) if d.get("document_json") else {}
            profile = c.execute("SELECT * FROM run_profile WHERE run_id = ?", (d["id"],)).fetchone() \
                if _has_table(c, "run_profile") else None
            d["profile"] = dict(profile) if profile else {}
            out.append(d)
        return out


def _has_table(c, name: str) -> bool:
    return c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                     (name,)).fetchone() is not None


def run_error(run: dict) -> str:
    return f"{run['status']}: {(run.get('error') or '')[:160]}"


def one_run(proc: Proc, runs: list[dict]):
    """(the run, None) when a cell's `orch run` made exactly one successful run, else (None,
    why not)."""
    if len(runs) == 1 and runs[0]["status"] == "ok":
        return runs[0], None
    if len(runs) == 1:
        return None, run_error(runs[0])
    if runs:
        return None, f"{len(runs)} runs where the cell pins one: " + ", ".join(r["name"] for r in runs)
    return None, why(proc)
