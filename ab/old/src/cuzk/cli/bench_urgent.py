"""``cuzk bench --urgent CIRCUIT=PATH``: how long a deadline proof waits while the bench's load
runs — a WindowPoSt submitted at CRITICAL priority while the devices are busy with PoRep.

A probe thread submits the urgent request every ``--urgent-every`` seconds while the bench's
own jobs run, one at a time (the next only after the last one's result), and records each one's
latency from submit to verified proof. The engine runs queued partitions by priority, but a
partition already holding a device's compute lock finishes first, so the wait it reports is
what a Curio operator's WindowPoSt deadline has to absorb. The urgent jobs are kept out of the
bench's own figures (their proofs are not counted, their kernels not in the busy share); their
partitions' stage times are reported beside them.
"""

from __future__ import annotations

import dataclasses
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuzk.cli.bench_jobs import Outcome, curio_request
from cuzk.errors import BadInput, CuzkError


@dataclass(frozen=True)
class UrgentSource:
    """What ``--urgent`` proves: a request file for ``circuit``, or a Curio directory."""

    circuit: str
    payload: bytes | None = None
    curio: Any = None  # a SubmitProofRequest read from a Curio directory

    @classmethod
    def parse(cls, spec: str) -> UrgentSource:
        """``CIRCUIT=PATH``, PATH a request file (``cuzk gen-vanilla``) or a Curio directory
        (``gen-vanilla --curio``), checked by opening it once.

        Raises:
            BadInput: the spec, the file or the request is not usable for ``CIRCUIT``.
        """
        from cuzk.circuits import canonical_id, open_statement
        from cuzk.cli.inputs import read_input

        circuit, sep, path_text = spec.partition("=")
        if not sep or not circuit or not path_text:
            raise BadInput(f"--urgent takes CIRCUIT=PATH, got {spec!r}")
        circuit = canonical_id(circuit)
        path = Path(path_text)
        if path.is_dir():
            from cuzk.cli.filecoin_cmd import curio_message

            source = cls(circuit, curio=curio_message(path))
            first = source.request("urgent-check")
            if first.circuit_id != circuit:
                raise BadInput(f"{path} is a {first.circuit_id} request, not {circuit}")
            payload = first.payload
        else:
            source = cls(circuit, payload=read_input(path))
            payload = source.payload
        open_statement(circuit, payload=payload)  # refuses a bad request before the run
        return source

    def request(self, request_id: str) -> Any:
        """A fresh CRITICAL request for this source."""
        from cuzk.engine import Priority, ProofRequest

        if self.curio is not None:
            request = curio_request(self.curio, request_id)
        elif self.payload is not None:
            request = ProofRequest(self.circuit, payload=self.payload, request_id=request_id)
        else:
            raise BadInput("an urgent source needs a request file or a Curio directory")
        return dataclasses.replace(request, priority=Priority.CRITICAL)


@dataclass(frozen=True)
class UrgentOutcome(Outcome):
    """One urgent job as the probe saw it: the bench's outcome, and its timing."""

    submitted_s: float  # since the bench's clock started
    latency_s: float  # submit to result (or to the error)


class UrgentProbe:
    """Submits ``source`` every ``every`` seconds from :meth:`start` until :meth:`stop`."""

    def __init__(self, engine: Any, source: UrgentSource, every: float) -> None:
        self.engine = engine
        self.source = source
        self.every = every
        self.outcomes: list[UrgentOutcome] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-urgent", daemon=True)
        self._t0 = 0.0

    def warm_up(self) -> None:
        """One unmeasured urgent proof: its key loads and its gadgets compile before the clock."""
        try:
            self.engine.result(self.engine.submit(self.source.request("urgent-warm-up")))
        except CuzkError:
            pass  # an injected fault; the warm-up still happened

    def start(self, t0: float) -> None:
        self._t0 = t0
        self._thread.start()

    def stop(self) -> list[UrgentOutcome]:
        """No further submissions; waits for the one in flight."""
        self._stop.set()
        self._thread.join()
        return self.outcomes

    def _run(self) -> None:
        index = 0
        while not self._stop.wait(self.every):
            submitted = time.perf_counter()
            job_id = None
            try:
                job_id = self.engine.submit(self.source.request(f"urgent-{index}"))
                r = self.engine.result(job_id)
                state, error, proof, inputs = "succeeded", None, r.proof, r.public_inputs
            except CuzkError as e:
                state = "cancelled" if type(e).__name__ == "JobCancelled" else "failed"
                error, proof, inputs = str(e), None, None
            now = time.perf_counter()
            self.outcomes.append(UrgentOutcome(index, job_id, state, error, proof, inputs,
                                               submitted - self._t0, now - submitted))  # fmt: skip
            index += 1


def urgent_summary(probe: UrgentProbe, timelines: list) -> dict:
    """The report's ``urgent`` entry: latencies, and the medians of the stages where an
    urgent partition waits (queue: for a synthesis lane; device_wait: for the compute lock)."""
    source, every, outcomes = probe.source, probe.every, probe.outcomes
    ok = [o.latency_s for o in outcomes if o.state == "succeeded"]

    def median(stage: str) -> float | None:
        values = [d[stage] for t in timelines if stage in (d := t.durations())]
        return statistics.median(values) if values else None

    return {
        "circuit": source.circuit,
        "priority": "CRITICAL",
        "every_s": every,
        "submitted": len(outcomes),
        "succeeded": len(ok),
        "latency_s": [round(o.latency_s, 4) for o in outcomes],
        "latency_median_s": statistics.median(ok) if ok else None,
        "latency_max_s": max(ok) if ok else None,
        "queue_median_s": median("queue"),
        "device_wait_median_s": median("device_wait"),
        "kernels_median_s": median("kernels"),
    }


def print_urgent(report: dict) -> None:
    from rich.table import Table

    from cuzk.cli.tasks import out

    u = report["urgent"]
    table = Table(title=f"urgent {u['circuit']} ({u['priority']}) every {u['every_s']:g} s "
                        "during the run")  # fmt: skip
    table.add_column("metric")
    table.add_column("value", justify="right")

    def s(v: float | None) -> str:
        return "—" if v is None else f"{v:.3f} s"

    for k, v in (
        ("urgent proofs (ok / submitted)", f"{u['succeeded']} / {u['submitted']}"),
        ("latency, submit to verified proof (median / max)",
         f"{s(u['latency_median_s'])} / {s(u['latency_max_s'])}"),
        ("waited for a synthesis lane (median)", s(u["queue_median_s"])),
        ("waited for the device (median)", s(u["device_wait_median_s"])),
        ("kernels (median)", s(u["kernels_median_s"])),
    ):  # fmt: skip
        table.add_row(k, v)
    out.print(table)
