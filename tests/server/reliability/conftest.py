"""The reliability suite prints its figures (requests tried, failures, latencies, threads and
memory after the storm) at the end of the run."""

from __future__ import annotations

import json

from .harness import FIGURES


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for name, fields in FIGURES.items():
        terminalreporter.write_line(f"{name}: {json.dumps(fields, sort_keys=True)}")
