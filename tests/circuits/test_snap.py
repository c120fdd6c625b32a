"""SnapDeals (EmptySectorUpdate): counts pinned against upstream, official parameter names,
in-circuit randomness against the native derivation, and witnesses from random updates that
satisfy every constraint.

Count sources: storage-proofs-update tests/circuit.rs asserts 1,705,039 (2 KiB) and 81,049,499
(32 GiB); FILECOIN.md gives the other sizes. Challenge vectors: storage-proofs-update
challenges.rs tests. gen_challenge_bits' 568 constraints per digest is
from storage-proofs-update gadgets.rs tests. File names: rust-fil-proofs parameters.json.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from cuzk.circuits.filecoin.post_params import GIB, KIB, MIB
from cuzk.circuits.filecoin.snap import (
    GEN_RANDOMNESS_TAG,
    SnapCircuit,
    blank_circuit,
    challenge_high_bits,
    gen_challenge_bits,
    label_r_new,
    param_file_stem,
    shape_counts,
    snap_circuit_ids,
    snap_params,
    structural_counts,
)
from cuzk.circuits.filecoin.snap_vanilla import (
    challenges,
    generate_update,
    open_statement,
    phi,
    random_update,
    read_update,
    rho,
)
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.gadgets.boolean import AllocatedBit
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.poseidon.native import hash_one
from cuzk.r1cs import CheckCS, check_circuit, synthesize_witness

# id -> constraints (without the input rows): upstream tests / FILECOIN.md.
PINNED = {
    "snap-2k": 1_705_039,
    "snap-8m": 10_007_503,
    "snap-512m": 57_450_479,
    "snap-32g": 81_049_499,
    "snap-64g": 85_006_101,
}

# rust-fil-proofs parameters.json: v28 empty-sector-update file names.
OFFICIAL_STEMS = {
    "snap-2k": "8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194",
    "snap-8m": "8-0-0-92180959e1918d26350b8e6cfe217bbdd0a2d8de51ebec269078b364b715ad63",
    "snap-512m": "8-0-0-61fa69f38b9cc771ba27b670124714b4ea77fbeae05e377fb859c4a43b73a30c",
    "snap-32g": "8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18",
    "snap-64g": "8-8-2-102e1444a7e9a97ebf1e3d6855dcc77e66c011ea66f936d9b2c508f87f2f83a7",
}


@pytest.fixture(scope="module")
def doc_2k() -> str:
    return generate_update(2 * KIB, 20240601)


def test_params_table() -> None:
    """FILECOIN.md's SnapDeals column: partitions × challenges."""
    want = {"snap-2k": (1, 10, 2 * KIB), "snap-8m": (4, 10, 8 * MIB),
            "snap-512m": (16, 86, 512 * MIB), "snap-32g": (16, 86, 32 * GIB),
            "snap-64g": (16, 86, 64 * GIB)}  # fmt: skip
    assert snap_circuit_ids() == list(want)
    for cid, (parts, chall, size) in want.items():
        p = snap_params(cid)
        assert (p.partition_count, p.challenge_count, p.sector_size) == (parts, chall, size)
        assert param_file_stem(p) == (
            "v28-empty-sector-update-merkletree-poseidon_hasher-" + OFFICIAL_STEMS[cid]
        )
    # gen_challenge_bits costs 568 per digest; upstream's gadget test pins 568 · digests:
    # 568 (2 KiB, 8 MiB), 4,544 (512 MiB), 5,680 (32 and 64 GiB).
    digests = [snap_params(cid).digests_per_partition for cid in want]
    assert [568 * d for d in digests] == [568, 568, 4544, 5680, 5680]
    with pytest.raises(BadInput, match="unknown circuit"):
        snap_params("snap-4k")


@pytest.mark.parametrize("cid", ["snap-2k", "snap-8m"])
def test_counts_small(cid: str) -> None:
    c = structural_counts(snap_params(cid))
    assert (c.num_constraints, c.num_inputs) == (PINNED[cid], 4)


@pytest.mark.slow
@pytest.mark.parametrize(
    "cid",  # the production size in the default run; the others (same path) with -m heavy
    [pytest.param("snap-512m", marks=pytest.mark.heavy), "snap-32g",
     pytest.param("snap-64g", marks=pytest.mark.heavy)],
)  # fmt: skip
def test_counts_big(cid: str) -> None:
    c = structural_counts(snap_params(cid))
    assert (c.num_constraints, c.num_inputs) == (PINNED[cid], 4)


@pytest.mark.heavy
def test_structural_matches_full_shape_2k() -> None:
    """The extrapolation (header + two challenge blocks, one apex hash) against a real shape:
    every count a .params header fixes."""
    p = snap_params("snap-2k")
    full, fast = shape_counts(p), structural_counts(p)
    assert {**full.as_dict(), "method": ""} == {**fast.as_dict(), "method": ""}


def test_blank_circuit_shape_mode() -> None:
    """The blank circuit synthesises without values (counting mode, one challenge) and
    refuses witness mode."""
    from cuzk.circuits.filecoin.snap import CountingCS, synthesize_snap

    cs = CountingCS()
    synthesize_snap(cs, blank_circuit("snap-2k").params, None, challenge_limit=1)
    assert cs.num_inputs == 5 and cs.num_constraints > 0
    with pytest.raises(BadInput):
        synthesize_witness(blank_circuit("snap-2k"))


class _XorShift:
    """rand_xorshift's ``XorShiftRng`` (the generator behind upstream's TEST_SEED vectors)."""

    def __init__(self, seed: bytes) -> None:
        self.s = [int.from_bytes(seed[i : i + 4], "little") for i in range(0, 16, 4)]

    def next_u32(self) -> int:
        x, y, z, w = self.s
        t = (x ^ (x << 11)) & 0xFFFFFFFF
        self.s = [y, z, w, (w ^ (w >> 19) ^ t ^ (t >> 8)) & 0xFFFFFFFF]
        return self.s[3]

    def next_u64(self) -> int:
        lo = self.next_u32()
        return lo | self.next_u32() << 32

    def fr(self) -> int:
        """blstrs ``Scalar::random``: four u64s, top bit cleared, rejected until below r."""
        while True:
            limbs = [self.next_u64() for _ in range(4)]
            v = sum(x << (64 * i) for i, x in enumerate(limbs)) & ((1 << 255) - 1)
            if v < R:
                return v


# storage-proofs-update challenges.rs test_challenges_against_hardcoded: comm_r_new is the
# first TreeRDomain::random of XorShiftRng::from_seed(TEST_SEED); first five challenges.
CHALLENGE_VECTORS = {
    ("snap-2k", 0): [53, 51, 56, 3, 0],
    ("snap-8m", 0): [36085, 32783, 44060, 10950, 3731],
    ("snap-8m", 1): [78878, 130797, 112892, 93994, 78379],
    ("snap-512m", 1): [2092548, 1213276, 1185483, 1164598, 1095197],
    ("snap-512m", 15): [16388544, 15794686, 16637142, 16319148, 16328348],
    ("snap-32g", 0): [1019125, 27985696, 15282860, 11586600, 44651330],
    ("snap-32g", 14): [990420169, 955146989, 968005601, 976863263, 944650706],
    ("snap-64g", 1): [243386253, 197875851, 204632136, 171516766, 247789010],
    ("snap-64g", 15): [2045262457, 2036941247, 2136653521, 2091356007, 2147167623],
}
TEST_SEED = bytes([0x59, 0x62, 0xBE, 0x5D, 0x76, 0x3D, 0x31, 0x8D,
                   0x17, 0xDB, 0x37, 0x32, 0x54, 0x06, 0xBC, 0xE5])  # fmt: skip


def test_challenges_known_answers() -> None:
    """Upstream's hard-coded challenges: checks the Custom(1) Poseidon tag and the bit cuts."""
    comm_r_new = _XorShift(TEST_SEED).fr()
    for (cid, k), want in CHALLENGE_VECTORS.items():
        assert challenges(snap_params(cid), comm_r_new, k)[:5] == want, (cid, k)


def test_challenges_native_vs_circuit(rng) -> None:
    """gen_challenge_bits + partition bits give the native challenges; 568 per digest."""
    p = snap_params("snap-8m")
    comm_r_new = fr.to_int(fr.random(1, rng)[0])
    k = int(rng.integers(p.partition_count))
    cs = CheckCS()
    c_num = AllocatedNum.alloc(cs, comm_r_new)
    part = AllocatedNum.alloc(cs, k)
    k_bits = [AllocatedBit.alloc(cs, bool((k >> i) & 1)) for i in range(p.partition_bit_len)]
    before = cs.num_constraints
    bits = gen_challenge_bits(cs, p, c_num, part)
    assert cs.num_constraints - before == 568 * p.digests_per_partition
    assert cs.is_satisfied()
    got = [sum(int(b.value) << i for i, b in enumerate(bs + k_bits)) for bs in bits]
    want = challenges(p, comm_r_new, k)
    assert got == want
    assert all(c >> p.random_bits_per_challenge == k for c in want)


def test_high_bits_rho_and_label(rng) -> None:
    """c_high selection, rho and label_r_new in-circuit against native values."""
    p = snap_params("snap-8m")
    cs = CheckCS()
    c = int(rng.integers(p.sector_nodes))
    h_index = int(rng.integers(6))
    c_bits = [AllocatedBit.alloc(cs, bool((c >> i) & 1)) for i in range(p.challenge_bit_len)]
    sel = [AllocatedBit.alloc(cs, i == h_index) for i in range(6)]
    high = challenge_high_bits(cs, c_bits, sel, p.hs)
    assert high.value == c >> (p.challenge_bit_len - p.hs[h_index])
    old, data, phi_v = (fr.to_int(x) for x in fr.random(3, rng))
    r = rho(phi_v, high.value)
    assert r == hash_one([phi_v, high.value], tag=GEN_RANDOMNESS_TAG)
    new = label_r_new(cs, AllocatedNum.alloc(cs, old), AllocatedNum.alloc(cs, data),
                      AllocatedNum.alloc(cs, r))  # fmt: skip
    assert new.value == (old + data * r) % R
    assert cs.is_satisfied()


def test_update_encoding(rng, seed) -> None:
    """The bulk-built new replica against the rule, node by node at random places."""
    p = snap_params("snap-2k")
    up = random_update(p, seed)
    old = fr.to_ints(up.tree_r_old[0])
    new = fr.to_ints(up.tree_r_new[0])
    data = [int.from_bytes(b, "little") for b in up.tree_d_new[0]]
    phi_v = phi(up.comm_d_new, up.comm_r_old)
    for i in rng.integers(p.sector_nodes, size=8):
        i = int(i)
        assert new[i] == (old[i] + data[i] * rho(phi_v, i >> (p.challenge_bit_len - up.h))) % R
    assert up.comm_r_new == hash_one([up.comm_c, up.root_r_new])


def test_statement_2k(doc_2k: str) -> None:
    st = open_statement("snap-2k", doc_2k.encode())
    req = read_update(doc_2k)
    assert st.partitions == 1
    # one partition (no k bits); h_select = 1 (h = 1 is hs[0]).
    assert st.expected(0) == (1, req.comm_r_old, req.comm_d_new, req.comm_r_new)
    with pytest.raises(BadInput, match="not snap-8m"):
        open_statement("snap-8m", doc_2k.encode())


@pytest.mark.slow
def test_2k_witness_satisfies(doc_2k: str) -> None:
    st = open_statement("snap-2k", doc_2k.encode())
    cs = check_circuit(st.circuit(0))
    assert cs.first_failure is None
    assert cs.num_constraints == PINNED["snap-2k"]
    assert tuple(cs.inputs[1:]) == st.expected(0)


@pytest.mark.heavy
def test_8m_update_and_one_partition(seed, rng) -> None:
    t = time.time()
    doc = generate_update(8 * MIB, seed)
    generated = time.time() - t
    st = open_statement("snap-8m", doc.encode())
    assert st.partitions == 4
    firsts = [(st.expected(i) or (-1,))[0] for i in range(4)]
    # k in the low 2 bits, h_select = 1 << index of h = 10 in hs (3) above them.
    assert firsts == [k | (1 << 3) << 2 for k in range(4)]
    k = int(rng.integers(4))
    cs = check_circuit(st.circuit(k))
    assert cs.first_failure is None, cs.first_failure
    assert tuple(cs.inputs[1:]) == st.expected(k)
    print(f"8 MiB update generated in {generated:.1f} s")


# -- corrupted requests ---------------------------------------------------------------------


def _corrupt(doc: str, edit: Callable[[dict[str, Any]], object]) -> bytes:
    d = json.loads(doc)
    edit(d)
    return json.dumps(d).encode()


def _bump(v: list[int]) -> None:
    v[0] ^= 1


def _cp(d: dict[str, Any], j: int = 0) -> dict[str, Any]:
    return d["partition_proofs"][0]["challenge_proofs"][j]


CORRUPTIONS = {
    "wrong sibling": (lambda d: _bump(
        _cp(d)["proof_r_old"]["data"]["Single"]["path"]["path"][0]["hashes"][2]),
        "does not hash to its root"),
    "wrong leaf": (lambda d: _bump(_cp(d, 3)["proof_d_new"]["data"]["Single"]["leaf"]),
                   "does not hash to its root"),
    "wrong root": (lambda d: _bump(_cp(d, 1)["proof_r_new"]["data"]["Single"]["root"]),
                   "does not hash to its root"),
    "wrong comm_r_old": (lambda d: _bump(d["comm_r_old"]), "comm_r_old is not Poseidon"),
    "wrong comm_r_new": (lambda d: _bump(d["comm_r_new"]), "challenge is node|comm_r_new"),
    "wrong comm_d_new": (lambda d: _bump(d["comm_d_new"]), "comm_d_new"),
    "wrong comm_c": (lambda d: _bump(d["partition_proofs"][0]["comm_c"]), "comm_r_old"),
    "wrong apex leaf": (lambda d: _bump(d["partition_proofs"][0]["apex_leafs"][5]),
                        "apex leaf|apex leaves"),
    "wrong partition count": (lambda d: d["partition_proofs"].append(d["partition_proofs"][0]),
                              "expected 1 entries, got 2"),
    "wrong challenge count": (lambda d: d["partition_proofs"][0]["challenge_proofs"].pop(),
                              "expected 10 entries, got 9"),
    "wrong h": (lambda d: d.update(h=10), "h = 10"),
    "wrong index": (lambda d: _cp(d)["proof_d_new"]["data"]["Single"]["path"]["path"][0]
                    .update(index=1 - _cp(d)["proof_d_new"]["data"]["Single"]["path"]["path"]
                            [0]["index"]), "root|challenge is node"),
    "non-canonical": (lambda d: d.update(comm_d_new=[255] * 32), "not a canonical"),
    "missing field": (lambda d: _cp(d).pop("proof_r_new"), "missing 'proof_r_new'"),
    "wrong proof kind": (lambda d: _cp(d)["proof_r_old"].update(
        data={"Sub": _cp(d)["proof_r_old"]["data"]["Single"]}), "'Single' proof"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_corrupt_request_refused(doc_2k: str, name: str) -> None:
    edit, reason = CORRUPTIONS[name]
    bad = _corrupt(doc_2k, edit)
    with pytest.raises(BadInput, match=reason):
        open_statement("snap-2k", bad)


def test_truncated_and_not_json(doc_2k: str) -> None:
    with pytest.raises(BadInput, match="not valid JSON"):
        open_statement("snap-2k", doc_2k.encode()[: len(doc_2k) // 2])
    with pytest.raises(BadInput, match="not valid JSON"):
        open_statement("snap-2k", b"\xff\xfe")
    with pytest.raises(BadInput, match="expected an object"):
        open_statement("snap-2k", b"[]")
    with pytest.raises(BadInput, match="missing 'circuit'"):
        open_statement("snap-2k", b"{}")


def test_witness_checks_leaf_relation(doc_2k: str) -> None:
    """A hand-built witness with a wrong new label is refused before synthesis finishes."""
    from dataclasses import replace

    req = read_update(doc_2k)
    w = req.partitions[0]
    bad_c = replace(w.challenges[0], leaf_r_new=(w.challenges[0].leaf_r_new + 1) % R)
    bad = replace(w, challenges=(bad_c, *w.challenges[1:]))
    with pytest.raises(BadInput, match="leaf_r_new"):
        synthesize_witness(SnapCircuit(req.params, bad))


def test_seeded_circuit(seed: int) -> None:
    """The registry's seeded circuit: the same seed gives the same statement, another seed
    another sector."""
    from cuzk.circuits.filecoin.snap_vanilla import SeededSnapCircuit

    p = snap_params("snap-2k")
    circuit, inputs = SeededSnapCircuit(p, seed).with_witness()
    assert circuit.witness is not None and circuit.witness.k == 0
    assert inputs == SeededSnapCircuit(p, seed).with_witness()[1]
    assert inputs[3] != SeededSnapCircuit(p, seed + 1).with_witness()[1][3]
    assert inputs == read_update(generate_update(2 * KIB, seed)).public_inputs(0)


def test_partition_witness_from_challenge_views(seed: int) -> None:
    """A SnapDeals partition is a header and one block per challenge: its witness built view
    by view (and with deferred SHA-256 runs) is the whole circuit's, value for value."""
    import numpy as np

    from cuzk.circuits import open_statement
    from cuzk.circuits.filecoin.snap_vanilla import generate_update
    from cuzk.r1cs import SynthesisOptions
    from cuzk.r1cs.blocks import BlockCircuit, witness_in_blocks

    payload = generate_update(2048, seed % 2**32).encode()
    circuit = open_statement("snap-2k", payload=payload).circuit(0)
    assert isinstance(circuit, BlockCircuit) and circuit.block_count() > 1
    whole = synthesize_witness(circuit)
    inputs, aux = witness_in_blocks(circuit, 3)
    assert inputs == whole.inputs and np.array_equal(aux, whole.aux_vector())
    options = SynthesisOptions(defer_bit_programs=True)
    inputs, deferred = witness_in_blocks(circuit, 2, options)
    assert inputs == whole.inputs
    assert np.array_equal(deferred.expand(), whole.aux_vector())


def test_views_replay_the_header_of_their_partition(monkeypatch, seed):
    """A synthesis process synthesizes a partition's header once: later views of the same
    partition (and options) replay it, value for value and run for run; another partition or
    other options synthesize their own."""
    import numpy as np

    from cuzk.circuits import open_statement
    from cuzk.circuits.filecoin import snap
    from cuzk.circuits.filecoin.snap_vanilla import generate_update
    from cuzk.r1cs import PROCESS_CACHE, SynthesisOptions, WitnessCS
    from cuzk.r1cs.blocks import view_witness
    from cuzk.r1cs.deferred import DeferredAux

    calls = []
    real = snap._header
    monkeypatch.setattr(snap, "_header", lambda *a: (calls.append(1), real(*a))[1])
    one, two = (
        open_statement("snap-2k", payload=generate_update(2048, s).encode()).circuit(0)
        for s in (seed % 2**32, (seed + 1) % 2**32)
    )
    deferred = SynthesisOptions(defer_bit_programs=True)

    def fresh(circuit, blocks, options):  # the reference: nothing cached
        PROCESS_CACHE.clear()
        return view_witness(circuit, blocks, options)

    for options in (SynthesisOptions(), deferred):
        for circuit in (one, two):
            PROCESS_CACHE.clear()
            calls.clear()
            view_witness(circuit, (0,), options)
            again = view_witness(circuit, (1, 0), options)
            assert len(calls) == 1, "the second view synthesized the header again"
            ref = fresh(circuit, (1, 0), options)
            assert again[0] == ref[0]
            if isinstance(ref[1], DeferredAux):
                assert np.array_equal(again[1].expand(), ref[1].expand())
            else:
                assert np.array_equal(again[1], ref[1])
    PROCESS_CACHE.clear()
    calls.clear()
    view_witness(one, (0,))
    view_witness(two, (0,))  # another partition's header
    view_witness(two, (0,), deferred)  # other options
    assert len(calls) == 3
    with pytest.raises(ValueError, match="fresh"):
        cs = WitnessCS()
        cs.alloc("x", 1)
        last = PROCESS_CACHE.memo(snap.LastHeader).last
        assert last is not None
        cs.replay_prefix(last[1])


def _byte_arrays(node: Any, out: list[list[int]]) -> list[list[int]]:
    """Every 32-byte value of a parsed request, in document order."""
    if isinstance(node, list) and len(node) == 32 and all(type(b) is int for b in node):
        out.append(node)
    elif isinstance(node, list):
        for x in node:
            _byte_arrays(x, out)
    elif isinstance(node, dict):
        for x in node.values():
            _byte_arrays(x, out)
    return out


@pytest.mark.parametrize("layout", ["compact", "spaced", "one as written by hand"])
def test_any_changed_value_is_refused(doc_2k: str, rng, layout: str) -> None:
    """Every 32-byte value of a request is bound by a hash: changing a random one (a random
    low bit, so it stays canonical) is refused whichever way the JSON is laid out, whether
    the reader decodes the value in bulk or one by one."""
    for _ in range(6):
        d = json.loads(doc_2k)
        values = _byte_arrays(d, [])
        v = values[int(rng.integers(0, len(values)))]
        v[int(rng.integers(0, 31))] ^= 1 << int(rng.integers(0, 8))
        text = json.dumps(d, separators=(", ", ": ") if layout == "spaced" else (",", ":"))
        if layout == "one as written by hand":  # a newline inside: read one byte at a time
            written = json.dumps(v, separators=(",", ":"))
            text = text.replace(written, written.replace(",", ",\n", 1), 1)
        with pytest.raises(BadInput):
            open_statement("snap-2k", text.encode())
    assert open_statement("snap-2k", doc_2k.encode()).partitions == 1
