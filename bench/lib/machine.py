"""Facts about the machine and the checkout that a result table's header states."""
import os
import platform
import subprocess
from datetime import datetime, timezone


def _output(argv, cwd=None) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=cwd,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def gpus() -> list[tuple[str, str]]:
    """(name, driver version) of each GPU nvidia-smi lists; empty without one."""
    out = _output(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    return [tuple(part.strip() for part in line.split(",", 1)) for line in out.splitlines()
            if "," in line]


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(device: str) -> str:
    """'NVIDIA H200, driver 580.95.05' (x2 when two of a kind), or the CPU for --device cpu."""
    found = gpus()
    if device == "cpu" or not found:
        return f"CPU: {cpu_name()} ({os.cpu_count()} cores), no GPU used"
    name, driver = found[0]
    count = f" x{len(found)}" if len(found) > 1 else ""
    return f"{name}{count}, driver {driver}"


def commit(given: str, checkout) -> str:
    """--commit, else $ORCH_COMMIT, else the checkout's HEAD (a copied checkout's .git can be
    stale, so a caller that knows better passes it)."""
    if given:
        return given
    if os.environ.get("ORCH_COMMIT"):
        return os.environ["ORCH_COMMIT"]
    head = _output(["git", "rev-parse", "--short", "HEAD"], cwd=checkout)
    if head and _output(["git", "status", "--porcelain", "--untracked-files=no"], cwd=checkout):
        head += "+dirty"
    return head or "unknown"


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
