"""Run a cuzk command with a device-side timeline of each partition: CUDA events around the
compute stream's stages (witness upload, a/b/c, the a·b = c check, the H quotient) and around
each MSM on its lane's stream ("msm"; "msm-dense" for the second lane under a cap), so what
ran alone and what overlapped is read off the device's own clock, not the host's. At exit the
spans go to $STREAM_LOG, one per line:

    stream  name  start_ms  end_ms      (ms from the first event of the run)

    CUZK="python3 bench/stream_trace.py" STREAM_LOG=/tmp/out/streams.log bash bench/filecoin_32g.sh
    python3 bench/stream_trace.py --summarize /tmp/out/streams.log   # medians per partition

MSMs are named by their vector's place in the key file (h, l, a, b_g1, b_g2: bellperson's
order), which holds for every bellperson key the engine proves.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from cuzk.backend.cuda import msm as cuda_msm
from cuzk.backend.cuda.backend import CudaBackend
from cuzk.cli.main import main

VECTORS = ("h", "l", "a", "b_g1", "b_g2")
#: (stream, name — or a vector's (path, offset, group) —, start event, end event)
SPANS: list[tuple[str, Any, Any, Any]] = []
_offsets: dict[str, list[int]] = {}
_lock = threading.Lock()


def _event(cp: Any, stream: Any) -> Any:
    ev = cp.cuda.Event()
    ev.record(stream)
    return ev


def _vector_name(path: str, offset: int, group: str) -> str:
    """h, l, a, b_g1 or b_g2 by the vector's place among its file's vectors (all seen by the
    time the log is written)."""
    seen = sorted(_offsets.get(path, ()))
    if len(seen) == len(VECTORS):
        return VECTORS[seen.index(offset)]
    return f"{group}@{offset}"


def _seen(bases: Any) -> tuple[str, int, str]:
    with _lock:
        offsets = _offsets.setdefault(bases.path, [])
        if bases.offset not in offsets:
            offsets.append(bases.offset)
    return bases.path, bases.offset, bases.group


def _trace_msms() -> None:
    running = cuda_msm.GpuMsm._running

    @contextlib.contextmanager
    def traced(self: Any, bases: Any, after: Any) -> Iterator[Any]:
        with running(self, bases, after) as res:
            start = _event(self._cp, self._stream)  # past its wait for the scalars
            yield res
            lane = "msm-dense" if len(self._lanes) > 1 and self._lane is self._lanes[-1] else "msm"
            SPANS.append((lane, _seen(bases), start, _event(self._cp, self._stream)))

    cuda_msm.GpuMsm._running = traced  # type: ignore[method-assign]


def _trace_compute(name: str, method: str) -> None:
    inner = getattr(CudaBackend, method)

    @functools.wraps(inner)
    def traced(self: CudaBackend, *args: Any, **kwargs: Any) -> Any:
        cp, stream = self.gpu.cp, self.gpu.stream
        with self.gpu.context():
            start = _event(cp, stream)
        out = inner(self, *args, **kwargs)
        with self.gpu.context():
            SPANS.append(("compute", name, start, _event(cp, stream)))
        return out

    setattr(CudaBackend, method, traced)


def write_log(path: str) -> None:
    """Every span in ms from the earliest start (waits for the device to pass each end)."""
    if not SPANS:
        return
    from cuzk.backend.cuda import loader

    ms = loader.cupy().cuda.get_elapsed_time
    for *_, end in SPANS:
        end.synchronize()
    ref = SPANS[0][2]
    rows = sorted(
        (ms(ref, a), ms(ref, b), stream, name if isinstance(name, str) else _vector_name(*name))
        for stream, name, a, b in SPANS
    )
    zero = rows[0][0]
    with open(path, "w") as f:
        f.write("stream\tname\tstart_ms\tend_ms\n")
        for a, b, stream, name in rows:
            f.write(f"{stream}\t{name}\t{a - zero:.2f}\t{b - zero:.2f}\n")


def summarize(path: str) -> dict[str, float]:
    """Medians (ms) over the partitions of a log: each stage's and MSM's span, the kernel
    region (a/b/c's start to its last MSM's end: with two MSM lanes H need not be last), the
    L phase (a/b/c's start to the later of
    L's MSM and the H quotient) and the gap to the next partition's a/b/c. A partition is
    what follows one a/b/c span (kernel regions never overlap: one compute lock a device)."""
    import statistics

    parts: list[dict[str, tuple[float, float]]] = []
    rows: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        rows.setdefault(name, []).append(value)

    with open(path) as f:
        next(f)
        for line in f:
            stream, name, a, b = line.rstrip("\n").split("\t")
            key, span = f"{stream}:{name}", (float(a), float(b))
            if key == "compute:witness":  # staging: it may come before the last one's end
                add(key, span[1] - span[0])
                continue
            if key == "compute:abc":
                parts.append({})
            if parts and key not in parts[-1]:
                parts[-1][key] = span

    for k, part in enumerate(parts):
        for key, (a, b) in part.items():
            add(key, b - a)
        msm_h = any(key.startswith("msm") and key.endswith(":h") for key in part)
        if "compute:abc" in part and msm_h:
            start = part["compute:abc"][0]
            last = max(b for key, (_, b) in part.items() if key.startswith("msm"))
            add("kernel region", last - start)
            ends = [part[x][1] for x in ("msm:l", "compute:h") if x in part]
            add("L phase", max(ends) - start)
            if k + 1 < len(parts) and "compute:abc" in parts[k + 1]:
                add("gap to the next", parts[k + 1]["compute:abc"][0] - last)
    return {name: statistics.median(v) for name, v in rows.items()} | {"partitions": len(parts)}


if __name__ == "__main__" and sys.argv[1:2] == ["--summarize"]:
    for name, value in summarize(sys.argv[2]).items():
        print(f"{name:>18}  {value:9.2f}")
    sys.exit(0)

if __name__ == "__main__":
    _trace_msms()
    for stage, method in (
        ("witness", "upload_witness"),
        ("abc", "evaluate_abc"),
        ("check", "unsatisfied_rows"),
        ("h", "h_quotient"),
    ):
        _trace_compute(stage, method)
    try:
        code = main(sys.argv[1:])
    finally:
        write_log(os.environ.get("STREAM_LOG", "streams.log"))
    sys.exit(code)
