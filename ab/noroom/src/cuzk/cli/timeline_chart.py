"""The Gantt chart of a run's partitions (``--timeline`` of ``cuzk bench``, in process or
against a daemon, and of the demo): one row per synthesis lane and per device worker.

matplotlib is imported only when a chart is drawn, keeping ``cuzk --help`` fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cuzk.errors import BadInput

MATPLOTLIB_PIN = "matplotlib==3.11.2"


def require_matplotlib() -> Any:
    """matplotlib's pyplot on the file-only backend, or a clear error naming the package to
    install: called before a run whose picture is wanted, so a missing package fails fast."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise BadInput(
            f"--timeline needs matplotlib, which is not installed (pip install '{MATPLOTLIB_PIN}')"
        ) from e
    return plt


STAGE_COLOURS = {
    "synthesis": "#7fb3d5",
    "device_wait": "#e5e7e9",
    "kernels": "#c0392b",
    "finalize": "#f5b041",
}


def draw_timeline(timelines: list, path: Path, title: str = "") -> None:
    """One row per synthesis lane and per device worker; bars for synthesis, waiting for the
    device, kernels (lock held) and finalize."""
    plt = require_matplotlib()
    rows: dict[str, list[tuple[float, float, str]]] = {}
    synth_lanes: list[float] = []  # end time of the last bar in each synthesis lane
    for t in sorted(timelines, key=lambda t: t.synth_start or 0.0):
        if t.synth_start is not None and t.synth_end is not None:
            lane = next((i for i, end in enumerate(synth_lanes) if end <= t.synth_start), None)
            if lane is None:
                lane = len(synth_lanes)
                synth_lanes.append(0.0)
            synth_lanes[lane] = t.synth_end
            rows.setdefault(f"synthesis {lane}", []).append(
                (t.synth_start, t.synth_end, "synthesis")
            )
        if t.worker is None:
            continue
        row = rows.setdefault(t.worker, [])
        for stage, a, b in (
            ("device_wait", t.device_pick, t.kernels_start),
            ("kernels", t.kernels_start, t.kernels_end),
            ("finalize", t.kernels_end, t.finalize_end),
        ):
            if a is not None and b is not None:
                row.append((a, b, stage))
    names = sorted(rows, key=lambda n: (not n.startswith("synthesis"), n))
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.45 * len(names)))
    for y, name in enumerate(names):
        for stage in STAGE_COLOURS:
            bars = [(a, b - a) for a, b, s in rows[name] if s == stage]
            if bars:
                ax.broken_barh(
                    bars,
                    (y - 0.35, 0.7),
                    facecolors=STAGE_COLOURS[stage],
                    edgecolor="white",
                    linewidth=0.3,
                )
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the engine started")
    ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in STAGE_COLOURS.values()]
    ax.legend(handles, list(STAGE_COLOURS), loc="upper right", ncols=4, fontsize="small")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise BadInput(f"cannot write {path}: {e.strerror}") from e
    finally:
        plt.close(fig)
