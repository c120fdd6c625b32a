"""Large payloads opened in a helper process: the statement that comes back is the one the
engine's process would have opened, a bad payload is refused the same way, and a statement
that cannot travel (a closure) is opened locally from then on."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from cuzk.circuits import open_statement
from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.seal.virtual import virtual_seal
from cuzk.circuits.filecoin.snap_vanilla import generate_update
from cuzk.circuits.filecoin.vanilla_json import random_request
from cuzk.engine import EngineConfig, ProofRequest
from cuzk.engine.intake import open_request
from cuzk.engine.opener import MAX_HELPERS, PayloadOpener, default_helpers, portable
from cuzk.errors import BadInput, BadPayload, UnsatisfiedConstraint


@pytest.fixture(scope="module")
def opener():
    o = PayloadOpener(min_bytes=0)
    yield o
    o.close()


def test_a_statement_opened_in_the_helper_equals_the_local_one(opener, seed):
    payload = generate_update(2048, seed).encode()
    local = open_statement("snap-2k", (), payload)
    before = opener.opened
    remote = opener.statement("snap-2k", (), payload)
    assert remote is not None and opener.opened == before + 1
    assert (remote.circuit_id, remote.partitions, remote.digest) == (
        local.circuit_id,
        local.partitions,
        local.digest,
    )
    assert remote.expected_inputs == local.expected_inputs and any(remote.expected_inputs)
    for i in range(local.partitions):
        assert remote.circuit(i) == local.circuit(i)


def test_a_post_request_comes_back_from_the_helper(opener, seed):
    """A PoSt statement holds its circuit (built while opening) in a picklable ``Built``: a
    lambda there once sent every PoSt request back to the engine's process, GIL and all."""
    text, _ = random_request(post_params("wpost-2k"), np.random.default_rng(seed))
    local = open_statement("wpost-2k", (), text.encode())
    before = opener.opened
    remote = opener.statement("wpost-2k", (), text.encode())
    assert remote is not None and opener.opened == before + 1
    assert remote.expected_inputs == local.expected_inputs
    assert remote.circuit(0) == local.circuit(0)


def test_a_statement_that_does_not_pickle_is_opened_locally_from_then_on(opener, seed):
    """Seeded statements build their circuits in a closure."""
    before = opener.opened
    assert opener.statement("winning-2k", (seed,), b"") is None
    assert opener.statement("winning-2k", (seed,), b"") is None  # not sent again
    assert opener.opened == before


def test_a_bad_payload_is_refused_through_the_helper(opener, tmp_path, seed):
    config = EngineConfig(param_dir=tmp_path)
    with pytest.raises(BadPayload, match="not valid JSON"):
        open_request(ProofRequest("snap-2k", payload=b'{"not": json'), config, opener)
    payload = bytearray(generate_update(2048, seed).encode())
    at = payload.index(b"comm_r_new")
    payload[at : at + 40] = b"x" * 40  # a field name and value gone
    with pytest.raises(BadInput):
        opener.statement("snap-2k", (), bytes(payload))


def test_small_payloads_stay_in_the_engine():
    o = PayloadOpener()
    assert not o.wants(b"x" * 1000) and o.wants(b"x" * (1 << 20))
    o.close()  # never started: nothing to stop


class _TwoArgs(KeyError):
    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")


def test_an_error_that_would_not_unpickle_travels_as_its_nearest_base():
    """The executor reports a pool as broken when a worker's exception fails to unpickle in
    the parent: the helper sends the nearest base class that travels, with the message."""
    for error, kind in ((UnsatisfiedConstraint(7, "c7"), BadInput), (_TwoArgs("f", "x"), KeyError)):
        with pytest.raises(TypeError):
            pickle.loads(pickle.dumps(error))
        back = pickle.loads(pickle.dumps(portable(error)))
        assert type(back) is kind and str(error) in str(back)
    ok = BadPayload("not valid JSON")
    assert portable(ok) is ok


def test_a_closed_opener_opens_nothing():
    o = PayloadOpener(min_bytes=0)
    o.close()
    assert o.statement("snap-2k", (), b"{}") is None  # a late submit opens it locally
    assert o._helpers is None


def test_a_host_gets_a_helper_per_three_cores_up_to_five():
    assert [default_helpers(c) for c in (1, 2, 4, 7, 8, 16, 128)] == [1, 1, 1, 2, 2, 5, 5]
    assert default_helpers() <= MAX_HELPERS


@pytest.mark.slow
def test_a_32gib_c1_is_opened_in_shares_by_every_helper(seed):
    """Three helpers, ten partitions: each helper reads a run of them; the joined statement
    is the one opened whole here. A fault in partition 6 is refused through the helpers with
    the same words, and they go on serving."""
    doc = virtual_seal(32 << 30, seed).c1_document()
    payload = json.dumps(doc).encode()
    local = open_statement("porep-32g", (), payload)
    opener = PayloadOpener(processes=3, min_bytes=0)
    try:
        remote = opener.statement("porep-32g", (), payload)
        assert remote is not None and remote.partitions == local.partitions == 10
        assert (remote.digest, remote.expected_inputs) == (local.digest, local.expected_inputs)
        for i in range(10):
            assert remote.circuit(i) == local.circuit(i)
        bad = next(iter(doc["vanilla_proofs"].values()))[6][5]
        bad["labeling_proofs"][2]["parents"][0][0] ^= 1
        with pytest.raises(BadInput, match="partition 6 challenge 5 labeling_proofs"):
            opener.statement("porep-32g", (), json.dumps(doc).encode())
        # broken JSON inside a partition: the position the whole document's reader names
        cut = payload.index(b",", len(payload) * 7 // 10)
        broken = payload[:cut] + b";" + payload[cut + 1 :]
        with pytest.raises(BadPayload) as whole:
            open_statement("porep-32g", (), broken)
        with pytest.raises(BadPayload) as shared:
            opener.statement("porep-32g", (), broken)
        assert str(shared.value) == str(whole.value) and "char" in str(whole.value)
        assert opener.statement("porep-32g", (), payload).expected_inputs == local.expected_inputs
    finally:
        opener.close()


@pytest.mark.parametrize("room", [True, False])
def test_a_c1_reaches_the_helpers_with_or_without_room_for_a_segment(seed, room, monkeypatch):
    """Shares read the payload from one shared-memory segment, or where the file system
    has no room for it (a container's small /dev/shm: writing past it is a SIGBUS), from
    their own pickled copies; either way the statement is the one opened here."""
    from cuzk.circuits.filecoin.seal import generate_c1
    from cuzk.engine import opener as opener_module

    payload = generate_c1(2048, seed).encode()
    local = open_statement("porep-2k", (), payload)
    monkeypatch.setattr(opener_module, "_segment_room", lambda size: room)
    opener = PayloadOpener(processes=2, min_bytes=0)
    try:
        remote = opener.statement("porep-2k", (), payload)
        assert remote is not None and opener.opened == 1
        assert (remote.digest, remote.expected_inputs) == (local.digest, local.expected_inputs)
        assert all(remote.circuit(i) == local.circuit(i) for i in range(local.partitions))
    finally:
        opener.close()


def test_a_share_hashes_on_its_part_of_the_cores_and_a_whole_payload_on_all():
    """Helpers opening shares at once split the cores between them; a payload opened whole
    (a full WindowPoSt partition: ≈ 13 core-s of Poseidon) hashes on every core."""
    import numba

    from cuzk.circuits import Share
    from cuzk.engine.opener import _hashing_threads

    cores = numba.config.NUMBA_NUM_THREADS
    before = numba.get_num_threads()
    try:
        _hashing_threads(Share(0, 5))
        assert numba.get_num_threads() == max(1, cores // 5)
        _hashing_threads(None)
        assert numba.get_num_threads() == cores
    finally:
        numba.set_num_threads(before)


def test_a_requests_tasks_are_served_together_and_urgent_ones_first():
    """Two requests opened in shares at the same moment: each one's shares reach the helpers
    together whatever order their submits interleaved in (interleaved, the first request's
    join waited for shares served after the second's), and a more urgent request that
    arrives later goes ahead of both."""
    import concurrent.futures as cf
    import threading

    from cuzk.engine.opener import _Tasks
    from cuzk.engine.ranked import RankedSubmitter
    from cuzk.engine.request import Priority

    served: list[str] = []
    release = threading.Event()
    with cf.ThreadPoolExecutor(1) as one_helper:
        queue = RankedSubmitter(one_helper, 1)
        try:
            hold = queue.submit((-1,), release.wait, 10)  # the only helper, busy
            first = _Tasks(queue, (Priority.NORMAL, 0))
            second = _Tasks(queue, (Priority.NORMAL, 1))
            urgent = _Tasks(queue, (Priority.CRITICAL, 2))
            futures = []
            for k in range(3):  # the submits interleave: first, second, first, second, …
                futures.append(first.submit(served.append, f"first {k}", order=k))
                futures.append(second.submit(served.append, f"second {k}", order=k))
            futures.append(urgent.submit(served.append, "urgent", order=0))
            release.set()
            cf.wait([hold, *futures], timeout=10)
        finally:
            queue.close()
    assert served == ["urgent", *(f"first {k}" for k in range(3)),
                      *(f"second {k}" for k in range(3))]  # fmt: skip


def test_a_helper_that_dies_fails_its_request_and_the_next_gets_fresh_helpers(seed):
    """A helper killed (the kernel's OOM killer, say) fails the request it was opening with
    an internal error, not a hang; the next request spawns new helpers and opens."""
    import os
    import signal

    from cuzk.errors import InternalError

    payload = generate_update(2048, seed).encode()
    want = open_statement("snap-2k", (), payload)
    o = PayloadOpener(processes=2, min_bytes=0)
    try:
        assert o.statement("snap-2k", (), payload) is not None  # helpers started
        helpers = o._helpers
        assert helpers is not None
        for pid in list(helpers.pool._processes):
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(InternalError, match="payload opener process died"):
            for _ in range(50):  # until the executor has seen its processes die
                o.statement("snap-2k", (), payload)
        again = o.statement("snap-2k", (), payload)
        assert o._helpers is not helpers
        assert again is not None and again.expected_inputs == want.expected_inputs
    finally:
        o.close()
