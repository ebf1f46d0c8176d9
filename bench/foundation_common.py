"""Shared helpers of the foundation benchmarks (bench/foundation_*.py); not a benchmark itself.

Every spawned process gets HOME and the XDG dirs in a temp dir, so a benchmark never reads or writes the
user's settings, sessions or logs, and talks only to loopback.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
PYTHON = str(VENV_BIN / "python") if (VENV_BIN / "python").exists() else sys.executable
BENCH_API_KEY = "sk-ant-bench-0000000000000000"

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def isolated_env(base_url: str | None = None) -> tuple[dict[str, str], tempfile.TemporaryDirectory[str]]:
    """An environment for a child: a temp HOME/XDG tree, no inherited ANTHROPIC_*/SIDECAR_* settings."""
    tmp = tempfile.TemporaryDirectory(prefix="sidecar-bench-")
    root = Path(tmp.name)
    for sub in ("home", "data", "cache", "config"):
        (root / sub).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SIDECAR_"))}
    env.update({
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_CACHE_HOME": str(root / "cache"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "SIDECAR_MANAGED_SETTINGS": str(root / "managed-settings.json"),
        "PYTHONPATH": str(REPO),
        "NO_PROXY": "127.0.0.1,localhost",
        "ANTHROPIC_API_KEY": BENCH_API_KEY,
    })
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    return env, tmp


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def load_avg() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def header(title: str) -> None:
    print(f"== {title}  (cpus {os.cpu_count()}, load {load_avg()})", flush=True)


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """A memory field of /proc/PID/status in kB (VmRSS, VmHWM …)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


# ---- the closing table of bench/run ----------------------------------------------------------------
# Each benchmark reports its headline numbers with ``row``; bench/run sets BENCH_SUMMARY to a file and
# prints every row, in the order of issue 18's table (``ORDER``), when all benchmarks have run.

ORDER = ["first_prompt", "first_prompt_1s", "first_prompt_now", "first_prompt_whole", "busy_requests",
         "step_read_small", "step_bash_ls",
         "step_read_x8", "read_head", "read_last", "read_whole", "idle_rss",
         "startup", "glob", "edit", "read_tail", "read_deep", "bash_output",
         "bash_output_floor",
         "grep_content", "bash_cancel", "scale_sessions", "scale_long", "scale_watcher_rss", "scale_watcher_notice",
         "scale_load", "panel_load", "panel_input", "panel_frames", "panel_final"]


def row(key: str, measure: str, value: str, goal: str, ok: bool | None) -> None:
    """One line of bench/run's closing table (also printed here, so a benchmark run alone shows it).
    ``ok`` None: the goal's reference cannot be run here (printed as NOT JUDGED, never as met)."""
    import json

    verdict = "NOT JUDGED" if ok is None else "OK" if ok else "MISSED"
    print(f"-> {measure}: {value}   goal {goal}   {verdict}", flush=True)
    path = os.environ.get("BENCH_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"key": key, "measure": measure, "value": value, "goal": goal,
                                  "verdict": verdict}) + "\n")


def print_summary(path: str) -> None:
    """The closing table: one line per row of issue 18's table, in its order; rows not run say so."""
    import json

    rows: dict[str, dict[str, str]] = {}
    if os.path.exists(path):
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                rows[item["key"]] = item
    names = {"first_prompt": "first prompt vs tenth",
             "first_prompt_1s": "first prompt 1 s after session/new → request",
             "first_prompt_now": "session/new → request (prompt right after)",
             "first_prompt_whole": "process start → first request (prompt at once)",
             "busy_requests": "set_mode / cancel during the first prompt",
             "startup": "startup to LSP initialize vs jedi",
             "glob": "Glob **/*.py vs rg --files -g", "edit": "Edit 1M lines vs read-replace-write+fsync",
             "read_tail": "Read last 2000 lines vs tail -n", "read_deep": "Read 2000 lines deep vs sed -n",
             "bash_output": "Bash output vs shell to /dev/null",
             "bash_output_floor": "Bash output vs zero-copy pipe reader",
             "grep_content": "Grep content vs rg (same output)",
             "bash_cancel": "cancel a running Bash", "scale_sessions": "50 vs 5 concurrent sessions",
             "scale_long": "long session per-turn overhead", "scale_watcher_rss": "watcher RSS, big workspace",
             "scale_watcher_notice": "watcher notice latency, big workspace",
             "scale_load": "session/load of a long session",
             "panel_load": "panel: 300-turn session/load rendered",
             "panel_input": "panel: key to frame, 10k-delta stream",
             "panel_frames": "panel: longest frame gap, stream", "panel_final": "panel: last delta to rendered"}
    print(f"{'measure':<44} {'value':<46} {'goal':<22} verdict")
    for key in ORDER + [k for k in rows if k not in ORDER]:
        item = rows.get(key)
        if item is None:
            print(f"{names.get(key, key):<44} {'(not run)':<46} {'':<22} -")
        else:
            print(f"{item['measure'][:44]:<44} {item['value']:<46} {item['goal']:<22} {item['verdict']}")

