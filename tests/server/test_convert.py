"""SubmitProofRequest → engine request: proof kinds and registered proof numbers to circuit
ids, priorities, the PoSt envelope (from JSON and from bincode vanilla proofs), and a fuzz test
that decoding anything at all ends in a request or BadInput, never another exception."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.vanilla import random_sector
from cuzk.circuits.filecoin.vanilla_json import (
    BLOB_ENVELOPE,
    generate,
    read_blob_envelope,
    read_request,
    sector_vanilla_json,
)
from cuzk.circuits.filecoin.wire import prover_id
from cuzk.engine import Priority
from cuzk.engine.request import MAX_REQUEST_ID_LEN
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.server import convert
from cuzk.server.proto import proving_pb2 as pb

from ..circuits.test_vanilla_bincode import encode

SIZES = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30]
NAMES = ["2k", "8m", "512m", "32g", "64g"]


@pytest.mark.parametrize("i", range(5))
def test_registered_proofs_name_circuits(i):
    """filecoin-ffi numbering: seal 0–19 (four groups of five sizes), update 0–4, PoSt winning
    0–4 and window V1_1 10–14."""
    for group in range(4):
        msg = pb.SubmitProofRequest(
            proof_kind=pb.POREP_SEAL_COMMIT,
            registered_proof=5 * group + i,
            vanilla_proof=b"{}",
            sector_size=SIZES[i],
        )
        assert convert.to_engine(msg).request.circuit_id == f"porep-{NAMES[i]}"
    # SnapDeals: the circuit named in the refusal (the payload itself: tests/circuits/
    # test_snap_wire.py; sector_size 0, as Curio's proofshare path sends it, is accepted).
    msg = pb.SubmitProofRequest(proof_kind=pb.SNAP_DEALS_UPDATE, registered_proof=i)
    with pytest.raises(BadInput, match=f"snap-{NAMES[i]} needs vanilla_proofs"):
        convert.to_engine(msg)


def test_sector_size_must_agree_and_window_v1_is_refused():
    with pytest.raises(BadInput, match="does not match"):
        convert.to_engine(
            pb.SubmitProofRequest(
                proof_kind=pb.POREP_SEAL_COMMIT,
                registered_proof=3,
                sector_size=2048,
                vanilla_proof=b"{}",
            )
        )
    with pytest.raises(BadInput, match="retired"):
        convert.to_engine(
            pb.SubmitProofRequest(
                proof_kind=pb.WINDOW_POST_PARTITION,
                registered_proof=8,
                vanilla_proofs=[b"{}"],
                randomness=bytes(32),
            )
        )
    with pytest.raises(BadInput, match="unknown value 9"):
        convert.to_engine(pb.SubmitProofRequest(proof_kind=9))
    with pytest.raises(BadInput, match="unspecified"):
        convert.to_engine(pb.SubmitProofRequest())


def test_priorities_map_both_ways():
    want = {
        pb.PRIORITY_UNSPECIFIED: Priority.NORMAL,
        pb.LOW: Priority.LOW,
        pb.NORMAL: Priority.NORMAL,
        pb.HIGH: Priority.HIGH,
        pb.CRITICAL: Priority.CRITICAL,
    }
    for wire, engine in want.items():
        msg = pb.SubmitProofRequest(circuit_id="synthetic:512", seeds=[1], priority=wire)
        assert convert.to_engine(msg).request.priority is engine
        if wire:
            assert convert.wire_priority(engine) == wire
    with pytest.raises(BadInput, match="priority"):
        convert.to_engine(pb.SubmitProofRequest(circuit_id="synthetic:512", seeds=[1], priority=7))


def test_direct_circuit_requests(rng):
    seeds = [int(x) for x in rng.integers(0, 1 << 62, size=3)]
    conv = convert.to_engine(
        pb.SubmitProofRequest(circuit_id="synthetic:512", seeds=seeds, request_id="r")
    )
    assert conv.request.seeds == tuple(seeds) and conv.request.request_id == "r"
    # Curio's id for a full WindowPoSt partition names its 2,349 sectors
    sectors = " ".join(str(int(x)) for x in rng.integers(1 << 40, 1 << 63, size=2349))
    wdpost = f"wdpost-1000-0-[{sectors}]"
    assert len(wdpost) > 40_000
    conv = convert.to_engine(
        pb.SubmitProofRequest(circuit_id="synthetic:512", seeds=seeds, request_id=wdpost)
    )
    assert conv.request.request_id == wdpost
    for bad in (
        pb.SubmitProofRequest(circuit_id="synthetic:512"),
        pb.SubmitProofRequest(circuit_id="synthetic:512", seeds=[1], vanilla_proof=b"x"),
        pb.SubmitProofRequest(circuit_id="synthetic:512", vanilla_proofs=[b"x"]),
        pb.SubmitProofRequest(
            circuit_id="synthetic:512", seeds=[1], request_id="x" * (MAX_REQUEST_ID_LEN + 1)
        ),
    ):
        with pytest.raises(BadInput):
            convert.to_engine(bad)


@pytest.mark.parametrize("encoding", ["json", "bincode"])
def test_winning_post_envelope_round_trip(encoding, rng):
    p = post_params("winning-2k")
    sector = random_sector(p, int(rng.integers(1 << 40)), rng)
    randomness = fr.to_int(fr.random(1, rng)[0])
    docs = [sector_vanilla_json(s, p) for s in generate(p, [sector], randomness)]
    blobs = [json.dumps(d).encode() if encoding == "json" else encode(d) for d in docs]
    miner = int(rng.integers(1000, 1 << 40))
    msg = pb.SubmitProofRequest(
        proof_kind=pb.WINNING_POST,
        registered_proof=0,
        sector_size=2048,
        vanilla_proofs=blobs,
        miner_id=miner,
        randomness=randomness.to_bytes(32, "little"),
        priority=pb.CRITICAL,
    )
    conv = convert.to_engine(msg)
    assert conv.kind == "winning" and conv.request.circuit_id == "winning-2k"
    assert conv.request.priority is Priority.CRITICAL
    assert conv.request.payload.startswith(BLOB_ENVELOPE)
    env, raws = read_blob_envelope(conv.request.payload)
    assert raws == blobs  # as sent
    assert int.from_bytes(env["prover_id"], "little") == prover_id(miner)
    cid, circuit, inputs = read_request(conv.request.payload)
    assert cid == "winning-2k" and len(inputs) == 132
    # the same statement as the JSON request file of those sector proofs, and as the older
    # JSON envelope (base64 blobs) that journals of earlier daemons hold
    env = {k: list(v) if isinstance(v, bytes) else v for k, v in env.items()}
    for key, value in (
        ("vanilla_proofs", docs),
        ("vanilla_proof_blobs", [base64.b64encode(b).decode() for b in blobs]),
    ):
        same_cid, same_circuit, same_inputs = read_request(json.dumps({**env, key: value}).encode())
        assert (same_cid, same_inputs) == (cid, inputs)
        assert same_circuit.sectors == circuit.sectors  # fmt: skip


def test_bincode_starting_with_a_brace_is_still_bincode(rng):
    p = post_params("winning-2k")
    sector = random_sector(p, 256 * int(rng.integers(1 << 30)) + ord("{"), rng)
    doc = sector_vanilla_json(generate(p, [sector], 3)[0], p)
    raw = encode(doc)
    assert raw[:1] == b"{"
    msg = pb.SubmitProofRequest(
        proof_kind=pb.WINNING_POST,
        registered_proof=0,
        vanilla_proofs=[raw],
        randomness=(3).to_bytes(32, "little"),
    )
    payload = convert.to_engine(msg).request.payload
    assert read_blob_envelope(payload)[1] == [raw]
    read_request(payload)  # read as bincode, and it checks out


def test_bad_post_inputs_are_refused(rng):
    p = post_params("winning-2k")
    sector = random_sector(p, 5, rng)
    doc = sector_vanilla_json(generate(p, [sector], 1)[0], p)
    good = encode(doc)
    base = dict(proof_kind=pb.WINNING_POST, registered_proof=0, randomness=bytes(32))
    cases = {
        "truncated bincode": [good[: len(good) // 2]],
        "left over": [good + b"\0"],
        "not JSON": [b'{"sector_id": '],
        "expected a JSON object": [b"{}"[:1]],
    }
    for blobs in cases.values():  # refused when the engine opens the request
        payload = convert.to_engine(pb.SubmitProofRequest(vanilla_proofs=blobs, **base)).request
        with pytest.raises(BadInput, match=r"vanilla_proofs\[0\]"):
            read_request(payload.payload)
    payload = convert.to_engine(pb.SubmitProofRequest(vanilla_proofs=[good], **base)).request
    header, _ = read_blob_envelope(payload.payload)
    env = {k: list(v) if isinstance(v, bytes) else v for k, v in header.items()}
    env["vanilla_proof_blobs"] = [base64.b64encode(good).decode()]  # the older JSON envelope
    for bad, match in (([], "non-empty"), (["%%"], "base64"), ([7], "base64")):
        with pytest.raises(BadInput, match=match):
            read_request(json.dumps({**env, "vanilla_proof_blobs": bad}).encode())
    with pytest.raises(BadInput, match="together"):
        read_request(json.dumps({**env, "vanilla_proofs": [doc]}).encode())
    with pytest.raises(BadInput, match="32 bytes"):
        convert.to_engine(
            pb.SubmitProofRequest(
                proof_kind=pb.WINNING_POST,
                registered_proof=0,
                vanilla_proofs=[good],
                randomness=b"\1" * 31,
            )
        )
    with pytest.raises(BadInput, match="canonical"):
        convert.to_engine(
            pb.SubmitProofRequest(
                proof_kind=pb.WINNING_POST,
                registered_proof=0,
                vanilla_proofs=[good],
                randomness=b"\xff" * 32,
            )
        )


def _valid_messages() -> list[bytes]:
    return [
        pb.SubmitProofRequest(circuit_id="synthetic:512", seeds=[1, 2]).SerializeToString(),
        pb.SubmitProofRequest(
            proof_kind=pb.POREP_SEAL_COMMIT, registered_proof=8, vanilla_proof=b'{"SectorNum": 1}'
        ).SerializeToString(),
        pb.SubmitProofRequest(
            proof_kind=pb.WINNING_POST,
            registered_proof=0,
            randomness=bytes(32),
            miner_id=1000,
            vanilla_proofs=[b'{"sector_id": 1}', bytes(80)],
        ).SerializeToString(),
    ]


@st.composite
def garbled(draw) -> bytes:
    """Random bytes, or a valid message with bytes flipped, cut, inserted or repeated."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=400))
    raw = bytearray(draw(st.sampled_from(_valid_messages())))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "dup"]))
        pos = draw(st.integers(0, max(0, len(raw) - 1)))
        if op == "flip" and raw:
            raw[pos] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del raw[pos:]
        elif op == "insert":
            raw[pos:pos] = draw(st.binary(min_size=1, max_size=12))
        else:
            raw += raw[pos:]
    return bytes(raw)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbled())
def test_fuzz_decoding_never_raises_anything_but_bad_input(raw):
    try:
        conv = convert.submit_from_bytes(raw)
    except BadInput as e:
        assert str(e)  # a message for the client
        return
    assert conv.request.circuit_id  # decoded into a well-formed engine request


def test_a_string_that_is_not_utf8_is_named(rng):
    """protobuf's own error does not say which field; the client is told."""
    bad = bytes([0xFF]) + bytes(rng.integers(0, 256, size=5, dtype="uint8"))
    good = pb.SubmitProofRequest(circuit_id="synthetic:512", seeds=[3], request_id="x")
    good = good.SerializeToString()
    for number, name in ((1, "request_id"), (40, "circuit_id")):
        field = _length_delimited(number, bad)
        with pytest.raises(BadInput, match=f"^SubmitProof: {name}: not valid UTF-8"):
            convert.submit_from_bytes(good + field)
        wrapped = _length_delimited(1, good + field)
        with pytest.raises(BadInput, match=f"^Prove: submit.{name}: not valid UTF-8"):
            convert.decode(pb.ProveRequest, wrapped, "Prove")
    # bytes fields may hold anything
    vanilla = good + _length_delimited(10, bad)
    assert convert.decode(pb.SubmitProofRequest, vanilla, "SubmitProof").vanilla_proof == bad


def _length_delimited(number: int, value: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(value)) + value


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def test_bad_envelopes_are_refused(rng):
    """The daemon's PoSt envelope is checked before any sector proof is read: its header line,
    the sizes it states and the bytes that follow must agree exactly."""
    p = post_params("winning-2k")
    good = encode(sector_vanilla_json(generate(p, [random_sector(p, 5, rng)], 1)[0], p))
    msg = pb.SubmitProofRequest(
        proof_kind=pb.WINNING_POST,
        registered_proof=0,
        randomness=(1).to_bytes(32, "little"),
        vanilla_proofs=[good],
    )
    payload = convert.to_engine(msg).request.payload
    read_request(payload)
    head, line, body = payload.partition(b"\n")
    header = json.loads(body[: body.index(b"\n")])
    rest = body[body.index(b"\n") + 1 :]

    def envelope(h: object, tail: bytes = rest) -> bytes:
        return head + line + json.dumps(h).encode() + b"\n" + tail

    cases = {
        "sizes add up to": [payload[:-1], payload + b"\0", envelope(header, rest + rest)],
        "not terminated": [BLOB_ENVELOPE + b'{"circuit": "winning-2k"'],
        "not valid JSON": [envelope("x", b"")[:-1].replace(b'"x"', b"{") + b"\n"],
        "JSON object": [envelope([1, 2])],
        "non-empty array": [envelope({**header, "vanilla_proof_sizes": []}),
                            envelope({k: v for k, v in header.items()
                                      if k != "vanilla_proof_sizes"})],
        "byte counts": [envelope({**header, "vanilla_proof_sizes": [-1]}),
                        envelope({**header, "vanilla_proof_sizes": [1.5]})],
        "also holds": [envelope({**header, "vanilla_proofs": []})],
    }  # fmt: skip
    for match, payloads in cases.items():
        for bad in payloads:
            with pytest.raises(BadInput, match=match):
                read_request(bad)
