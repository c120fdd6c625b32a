"""CPU seconds spent by this process and by its live descendants, read from ``/proc``.

`cuzk bench` charges host CPU to the proofs of its measured window: the engine process (its
device, staging and synthesis threads share one GIL, so this is the figure that says whether one
process can feed more GPUs) apart from its helper processes (synthesis pool, request opener, the
CPU backend's MSM workers). A helper that exits inside the window takes its CPU time with it;
the engine's helpers live as long as the engine does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuTimes:
    """User + system seconds: the engine process (all its threads) and its helpers."""

    process_s: float
    helpers_s: float

    def __sub__(self, earlier: CpuTimes) -> CpuTimes:
        return CpuTimes(self.process_s - earlier.process_s, self.helpers_s - earlier.helpers_s)


def _stat(pid: int, proc: Path) -> tuple[int, float] | None:
    """(parent pid, user + system seconds) of ``pid``, or None if it is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ")".
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def helpers_seconds(root: int, proc: Path = PROC) -> float:
    """CPU seconds of every live descendant of ``root``."""
    children: dict[int, list[int]] = {}
    seconds: dict[int, float] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name), proc)
        if stat is not None:
            children.setdefault(stat[0], []).append(int(entry.name))
            seconds[int(entry.name)] = stat[1]
    total, todo = 0.0, list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        total += seconds[pid]
        todo.extend(children.get(pid, ()))
    return total


def cpu_times() -> CpuTimes | None:
    """This process's and its live descendants' CPU seconds; None where there is no ``/proc``."""
    if not (PROC / "self" / "stat").exists():
        return None
    t = os.times()
    return CpuTimes(t.user + t.system, helpers_seconds(os.getpid()))
