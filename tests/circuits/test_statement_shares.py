"""A payload opened in shares: each share reads and checks a run of the partitions, and the
join of every share is the statement opened whole — same partitions, circuits, public inputs
and digest — while a fault is found by the share holding it, named by partition."""

from __future__ import annotations

import copy
import json
import secrets

import pytest

from cuzk.circuits import Share, join, open_share, open_statement, opens_in_shares
from cuzk.circuits.filecoin.porep_c1 import parse_c1
from cuzk.circuits.filecoin.seal.virtual import virtual_seal
from cuzk.circuits.statement import StatementShare
from cuzk.errors import BadInput


@pytest.fixture(scope="module")
def c1_doc() -> dict:
    """A virtually sealed 32 GiB sector's C1 (10 partitions of 18 challenges), fresh seed."""
    seed = secrets.randbits(32)
    print(f"virtual sector seed: {seed}")
    return virtual_seal(32 << 30, seed).c1_document()


def _challenge(doc: dict, partition: int, challenge: int) -> dict:
    return next(iter(doc["vanilla_proofs"].values()))[partition][challenge]


@pytest.mark.parametrize("partitions", [1, 2, 3, 10, 13])
@pytest.mark.parametrize("count", [1, 2, 3, 4, 16])
def test_shares_tile_the_partitions(partitions: int, count: int) -> None:
    spans = [Share(k, count).of(partitions) for k in range(count)]
    assert [i for s in spans for i in s] == list(range(partitions))
    sizes = [len(s) for s in spans]
    assert max(sizes) - min(sizes) <= 1


def test_a_share_outside_its_count_is_refused() -> None:
    for index, count in ((1, 1), (-1, 2), (0, 0)):
        with pytest.raises(ValueError):
            Share(index, count)


@pytest.mark.slow
def test_joined_shares_equal_the_whole_statement(c1_doc: dict) -> None:
    """Four shares of ten partitions: runs of 2, 3, 2 and 3."""
    payload = json.dumps(c1_doc).encode()
    whole = open_statement("porep-32g", payload=payload)
    shares = [open_share("porep-32g", payload, Share(k, 4)) for k in range(4)]
    assert [len(s.span) for s in shares] == [2, 3, 2, 3] and whole.partitions == 10
    joined = join(shares[::-1], whole.digest)  # order of arrival does not matter
    assert (joined.circuit_id, joined.partitions, joined.digest) == (
        whole.circuit_id,
        whole.partitions,
        whole.digest,
    )
    assert joined.expected_inputs == whole.expected_inputs
    for i in range(whole.partitions):
        assert joined.circuit(i) == whole.circuit(i)
    # more shares than partitions: a share may hold none, and joins to nothing
    empty = open_share("porep-32g", payload, Share(0, 11))
    assert not empty.span and not empty.expected_inputs


@pytest.mark.slow
@pytest.mark.parametrize("partition", [7, 0])
def test_a_fault_is_found_by_the_share_that_holds_it(c1_doc: dict, partition: int) -> None:
    """Partition 0 included: the other shares read only its first challenge."""
    doc = copy.deepcopy(c1_doc)
    _challenge(doc, partition, 3)["comm_d_proofs"]["data"]["Single"]["leaf"][0] ^= 1
    payload = json.dumps(doc).encode()
    for k in range(3):
        if partition in Share(k, 3).of(10):
            with pytest.raises(BadInput, match=f"partition {partition} challenge 3 comm_d_proofs"):
                open_share("porep-32g", payload, Share(k, 3))
        else:
            assert open_share("porep-32g", payload, Share(k, 3)).span


@pytest.mark.slow
def test_every_share_checks_its_roots_against_the_first_challenge(c1_doc: dict) -> None:
    """A share that does not hold partition 0 still compares its roots with partition 0's
    first challenge: shares that each agree only with themselves are refused."""
    doc = copy.deepcopy(c1_doc)
    for challenge in next(iter(doc["vanilla_proofs"].values()))[9]:
        challenge["comm_r_last_proof"]["data"]["Sub"]["root"][0] ^= 1
    payload = json.dumps(doc).encode()
    with pytest.raises(BadInput, match="partition 9 challenge 0 comm_r_last_proof: root differs"):
        open_share("porep-32g", payload, Share(1, 2))
    assert parse_c1(payload, share=Share(0, 2)).span == range(5)


@pytest.mark.slow
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_share_decodes_only_its_partitions(
    c1_doc: dict, wrapped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A share reads the document cut at its partitions (raw, and inside Curio's wrapper):
    the bytes it decodes as C1 JSON are its own partitions, partition 0's first challenge
    (the roots every share checks against) and the document's head — and the joined shares
    are the whole."""
    import base64

    from cuzk import safejson

    raw = json.dumps(c1_doc).encode()
    payload = raw
    if wrapped:
        payload = json.dumps({"SectorNum": 7, "Phase1Out": base64.b64encode(raw).decode(),
                              "SectorSize": 32 << 30}).encode()  # fmt: skip
    whole = open_statement("porep-32g", payload=payload)
    decoded: list[int] = []
    loads = safejson.loads

    def counting(data, what, **kw):  # type: ignore[no-untyped-def]
        if kw.get("bytes32"):
            decoded.append(len(data))
        return loads(data, what, **kw)

    monkeypatch.setattr(safejson, "loads", counting)
    shares = [open_share("porep-32g", payload, Share(k, 4)) for k in range(4)]
    # every share: the head, its partitions, and partition 0's first challenge where it does
    # not hold partition 0 (a challenge: 1/180 of the document)
    assert len(decoded) == 4 + 10 + 3
    assert max(decoded) < len(raw) / 10 * 1.2 and sum(decoded) < len(raw) * 1.05
    joined = join(shares, whole.digest)
    assert joined.expected_inputs == whole.expected_inputs and joined.digest == whole.digest
    assert all(joined.circuit(i) == whole.circuit(i) for i in range(10))


def test_shares_of_different_statements_do_not_join() -> None:
    def share(span: range, total: int = 4, circuit: str = "porep-32g") -> StatementShare:
        return StatementShare(circuit, total, span, lambda i: None)  # type: ignore

    with pytest.raises(ValueError, match="different statements"):
        join([share(range(0, 2)), share(range(2, 4), circuit="porep-64g")], "d")
    with pytest.raises(ValueError, match="different statements"):
        join([share(range(0, 2)), share(range(2, 5), total=5)], "d")
    with pytest.raises(ValueError, match="not 0…3"):
        join([share(range(0, 2)), share(range(1, 4))], "d")
    with pytest.raises(ValueError, match="not 0…3"):
        join([share(range(0, 2))], "d")
    with pytest.raises(ValueError, match="no share"):
        join([share(range(0))], "d")


def test_only_kinds_with_many_partitions_open_in_shares() -> None:
    assert opens_in_shares("porep-32g") and opens_in_shares("porep-2k")
    assert not opens_in_shares("snap-32g") and not opens_in_shares("synthetic:1024")
    with pytest.raises(BadInput, match="opened whole"):
        open_share("snap-2k", b"{}", Share())
