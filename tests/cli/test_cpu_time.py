"""The bench's host CPU meter: descendants found through /proc, odd command names included."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from cuzk.cli.cpu_time import cpu_times, helpers_seconds

TICK = os.sysconf("SC_CLK_TCK")


def _write_stat(proc, pid: int, comm: str, ppid: int, utime: int, stime: int) -> None:
    rest = ["S", str(ppid), *["0"] * 9, str(utime), str(stime), *["0"] * 8]
    (proc / str(pid)).mkdir()
    (proc / str(pid) / "stat").write_text(f"{pid} ({comm}) {' '.join(rest)}\n")


def test_descendants_are_summed_and_strangers_are_not(tmp_path):
    _write_stat(tmp_path, 100, "python3", 1, 500, 500)  # the engine: not a helper of itself
    _write_stat(tmp_path, 101, "worker (1) x", 100, 3 * TICK, TICK)  # spaces, parentheses
    _write_stat(tmp_path, 102, "grand)child", 101, TICK, 0)
    _write_stat(tmp_path, 103, "stranger", 1, 50 * TICK, 0)
    (tmp_path / "self").mkdir()  # not a pid: skipped
    (tmp_path / "104").mkdir()  # a process that exited while we read: skipped
    assert helpers_seconds(100, proc=tmp_path) == pytest.approx(5.0)
    assert helpers_seconds(101, proc=tmp_path) == pytest.approx(1.0)
    assert helpers_seconds(103, proc=tmp_path) == 0.0


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux /proc")
def test_a_busy_child_is_charged_to_the_helpers():
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
            "time.sleep(30)",
        ]  # fmt: skip
    )
    try:
        before = cpu_times()
        deadline = time.monotonic() + 20
        while helpers_seconds(os.getpid()) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        after = cpu_times()
        assert before is not None and after is not None
        assert after.helpers_s >= 0.3 and (after - before).helpers_s >= 0.0
        assert after.process_s >= before.process_s
    finally:
        child.kill()
        child.wait()
