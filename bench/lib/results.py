"""What a suite measured: cells (one per case x implementation x metric, holding every repeat's
value), their statistics, and the two files a suite writes: SUITE.csv and SUITE.md."""
import csv
import math
import statistics
from dataclasses import dataclass, field

CSV_COLUMNS = ["suite", "case", "implementation", "batch", "dtype", "metric", "mean", "stdev",
               "ci95", "repeats", "values", "status", "note"]

# Two-sided 95% Student t quantiles for 1..30 degrees of freedom (the standard library has no
# t distribution); the normal 1.96 beyond.
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


@dataclass
class Cell:
    case: str
    implementation: str
    batch: object = ""
    dtype: str = ""
    metric: str = "img/s"
    values: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    note: str = ""

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self):
        return statistics.mean(self.values) if self.values else None

    @property
    def stdev(self):
        return statistics.stdev(self.values) if self.n > 1 else None

    @property
    def ci95(self):
        """Half-width of the 95% confidence interval of the mean."""
        if self.n < 2:
            return None
        t = _T95[self.n - 2] if self.n - 2 < len(_T95) else 1.96
        return t * self.stdev / math.sqrt(self.n)

    @property
    def status(self) -> str:
        """ok, partial (some repeats failed), failed, or skipped (the budget or --cases)."""
        if not self.values:
            return "failed" if self.errors else "skipped"
        return "partial" if self.errors else "ok"


class Results:
    """The cells of one suite, in the order they were first measured."""

    def __init__(self, suite: str):
        self.suite = suite
        self.cells: list[Cell] = []
        self.lines: list[str] = []  # notes printed under the table (skips, failures)

    def cell(self, case, implementation, metric="img/s", **fields) -> Cell:
        for c in self.cells:
            if (c.case, c.implementation, c.metric) == (case, implementation, metric):
                return c
        c = Cell(case, implementation, metric=metric, **fields)
        self.cells.append(c)
        return c

    def add(self, case, implementation, value, metric="img/s", **fields) -> Cell:
        c = self.cell(case, implementation, metric, **fields)
        c.values.append(float(value))
        return c

    def fail(self, case, implementation, error, metric="img/s", **fields) -> Cell:
        c = self.cell(case, implementation, metric, **fields)
        c.errors.append(str(error))
        return c

    def get(self, case, implementation, metric="img/s"):
        for c in self.cells:
            if (c.case, c.implementation, c.metric) == (case, implementation, metric):
                return c
        return None

    def note(self, line: str) -> None:
        if line not in self.lines:
            self.lines.append(line)


def _num(x, digits=1):
    return "" if x is None else f"{x:.{digits}f}"


def write_csv(path, results: Results) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for c in results.cells:
            digits = 3 if c.metric.endswith("%") else 1
            w.writerow([results.suite, c.case, c.implementation, c.batch, c.dtype, c.metric,
                        _num(c.mean, digits), _num(c.stdev, digits), _num(c.ci95, digits), c.n,
                        ";".join(_num(v, digits) for v in c.values), c.status,
                        "; ".join(filter(None, [c.note] + c.errors))])


def fmt(c, digits=1) -> str:
    """A cell for a markdown table: mean, with ± the 95% interval when repeated; why not, when it
    has no value."""
    if c is None:
        return "-"
    if not c.values:
        return "failed" if c.errors else "skipped"
    text = f"{c.mean:,.{digits}f}"
    if c.ci95 is not None:
        text += f" ± {c.ci95:,.{digits}f}"
    return text


def last(c) -> str:
    """The latest value of a cell, for progress lines."""
    return f"{c.values[-1]:,.1f}" if c is not None and c.values else "failed"


def ratio(a, b, digits=3) -> str:
    if a is None or b is None or not a.values or not b.values:
        return "-"
    return f"{a.mean / b.mean:.{digits}f}"


def table(headers, rows) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
