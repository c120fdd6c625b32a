"""wait_kernels' two calls to the engine: ``h_done`` when H's MSM ends first (the staging area
may lend what the H quotient held), ``witness_read`` once the MSMs over the witness are done."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import Future

import pytest

from cuzk.errors import DeviceFault
from cuzk.groth16.prover import PendingProof, Timings, wait_kernels

NAMES = ("h", "l", "a", "b_g1", "b_g2")


def pending_of(futures: dict[str, Future]) -> PendingProof:
    return PendingProof(None, (), 0, 0, **futures, timings=Timings())  # type: ignore[arg-type]


def finish(futures: dict[str, Future], order: list[str], values: dict[str, object],
           fail: str | None = None) -> threading.Thread:  # fmt: skip
    """Complete the futures one by one, in ``order``, from another thread (as MSM workers
    do); ``fail`` ends with an error instead."""

    def run() -> None:
        for name in order:
            time.sleep(0.01)
            if name == fail:
                futures[name].set_exception(DeviceFault(f"{name} failed"))
            else:
                futures[name].set_result(values[name])

    t = threading.Thread(target=run)
    t.start()
    return t


@pytest.mark.parametrize("h_first", [True, False])
def test_h_done_is_called_only_when_h_ends_before_a(seed, h_first):
    rnd = random.Random(seed)
    values = {name: rnd.getrandbits(64) for name in NAMES}
    futures = {name: Future() for name in NAMES}
    witness = ["l", "b_g1", "b_g2"]
    rnd.shuffle(witness)
    order = ["h", *witness, "a"] if h_first else [*witness, "a", "h"]
    calls: list[str] = []
    t = finish(futures, order, values)
    sums = wait_kernels(pending_of(futures), lambda: calls.append("witness_read"),
                        lambda: calls.append("h_done"))  # fmt: skip
    t.join(5)
    assert calls == (["h_done", "witness_read"] if h_first else ["witness_read"])
    assert (sums.h, sums.l, sums.a, sums.b_g1, sums.b_g2) == tuple(values[n] for n in NAMES)


def test_a_failed_h_lends_nothing(seed):
    rnd = random.Random(seed)
    values = {name: rnd.getrandbits(64) for name in NAMES}
    futures = {name: Future() for name in NAMES}
    calls: list[str] = []
    t = finish(futures, ["h", "l", "b_g1", "b_g2", "a"], values, fail="h")
    with pytest.raises(DeviceFault, match="h failed"):
        wait_kernels(pending_of(futures), lambda: calls.append("witness_read"),
                     lambda: calls.append("h_done"))  # fmt: skip
    t.join(5)
    assert calls == ["witness_read"]  # the witness's MSMs ended: z may go; H's error is raised
