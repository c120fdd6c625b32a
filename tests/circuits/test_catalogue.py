"""The circuit catalogue: ids parse to one canonical spelling, key files carry the official
names, statements open by kind, and unknown or malformed ids are refused with a reason."""

from __future__ import annotations

import pytest

from cuzk.circuits.catalogue import (
    KINDS,
    canonical_id,
    circuit_ids,
    filecoin_circuit,
    find_kind,
    get_circuit,
    key_file_stem,
    kind_of,
    open_statement,
    payload_from_parts,
    prover_of,
    snarkjs_name,
)
from cuzk.circuits.filecoin.wire import ClientParts
from cuzk.circuits.statement import payload_digest
from cuzk.errors import BadInput

from .test_porep import OFFICIAL as POREP_OFFICIAL
from .test_post import OFFICIAL_DIGESTS as POST_OFFICIAL
from .test_snap import OFFICIAL_STEMS as SNAP_OFFICIAL

SIZES = {"2k": 2 << 10, "8m": 8 << 20, "512m": 512 << 20, "32g": 32 << 30, "64g": 64 << 30}


def test_every_listed_id_is_canonical_and_has_one_kind():
    prefixes = [k.prefix for k in KINDS]
    assert len(set(prefixes)) == len(prefixes)
    assert not any(a != b and a.startswith(b) for a in prefixes for b in prefixes)
    for cid in circuit_ids():
        if cid.endswith(("N", "NAME")):
            continue  # a pattern, not an id
        assert canonical_id(cid) == cid and kind_of(cid).prefix in cid
    assert {k.name for k in KINDS} == {"synthetic", "winning", "wpost", "porep", "snap", "snarkjs"}


@pytest.mark.parametrize(
    "spelled,canonical",
    [
        ("synthetic:0512", "synthetic:512"),
        ("synthetic:512", "synthetic:512"),
        ("synthetic:1_000", "synthetic:1000"),
        ("synthetic:00065_536", "synthetic:65536"),
    ],
)
def test_synthetic_ids_have_one_spelling(spelled, canonical):
    assert canonical_id(spelled) == canonical
    assert key_file_stem(spelled) == canonical.replace(":", "-")
    assert get_circuit(spelled).circuit_id == canonical
    st = open_statement(spelled, seeds=(4, 5))
    assert st.circuit_id == canonical and st.partitions == 2
    assert st.digest == payload_digest(canonical, (4, 5), b"")
    assert st.circuit(1) == get_circuit(canonical, 5)


@pytest.mark.parametrize(
    "bad,reason",
    [
        ("synthetic:+512", "expected synthetic:N"),
        ("synthetic: 512", "expected synthetic:N"),
        ("synthetic:", "expected synthetic:N"),
        ("synthetic:512_", "expected synthetic:N"),
        ("synthetic:1__000", "expected synthetic:N"),
        ("synthetic:5", "at least"),
        ("synthetic:٥١٢", "expected synthetic:N"),  # non-ASCII digits
        ("Synthetic:512", "unknown circuit"),
        ("wpost-3k", "unknown circuit 'wpost-3k'; PoSt circuits"),
        ("porep-2K", "PoRep circuits"),
        ("snap-4k", "SnapDeals circuits"),
        ("snarkjs:../key", "expected snarkjs:NAME"),
        ("snarkjs:", "expected snarkjs:NAME"),
        ("sha:17", "unknown circuit"),
        ("", "unknown circuit"),
    ],
)
def test_malformed_ids_are_refused_everywhere(bad, reason):
    for lookup in (canonical_id, key_file_stem, get_circuit, prover_of):
        with pytest.raises(BadInput, match=reason):
            lookup(bad)
    with pytest.raises(BadInput, match=reason):
        open_statement(bad, seeds=(1,))


def test_filecoin_key_files_carry_the_official_names():
    post = "v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-"
    for cid, digest in POST_OFFICIAL.items():
        assert key_file_stem(cid) == post + digest
    for cid, (tree, digest) in POREP_OFFICIAL.items():
        assert key_file_stem(cid) == (
            f"v28-stacked-proof-of-replication-merkletree-poseidon_hasher-{tree}-"
            f"sha256_hasher-{digest}"
        )
    for cid, stem in SNAP_OFFICIAL.items():
        assert key_file_stem(cid) == "v28-empty-sector-update-merkletree-poseidon_hasher-" + stem
    assert key_file_stem("snarkjs:multiplier.v2") == "multiplier.v2"  # → multiplier.v2.zkey


def test_filecoin_ids_by_kind_and_size():
    for name, size in SIZES.items():
        for kind in ("winning", "wpost", "porep", "snap"):
            cid = filecoin_circuit(kind, size)
            assert cid == f"{kind}-{name}" and kind_of(cid).name == kind
    with pytest.raises(BadInput):
        filecoin_circuit("porep", 4096)
    with pytest.raises(BadInput, match="not a Filecoin proof kind"):
        filecoin_circuit("synthetic", 2048)


def test_provers_and_payloads_by_kind():
    assert prover_of("snarkjs:k") == "snarkjs" and snarkjs_name("snarkjs:k") == "k"
    assert snarkjs_name("synthetic:512") is None and snarkjs_name("nope") is None
    assert {prover_of(c) for c in ("synthetic:512", "wpost-2k", "porep-32g", "snap-8m")} == {
        "bellperson"
    }
    with pytest.raises(BadInput, match="takes witness seeds, not a payload"):
        open_statement("synthetic:0512", payload=b"{}")
    with pytest.raises(BadInput, match="opened by the engine's snarkjs family"):
        open_statement("snarkjs:k", payload=b"wtns")
    with pytest.raises(BadInput, match="no built-in circuit"):
        get_circuit("snarkjs:k")
    with pytest.raises(BadInput, match="either witness seeds or a payload"):
        open_statement("synthetic:512")
    with pytest.raises(BadInput, match="not valid JSON"):
        open_statement("wpost-2k", payload=b"{not json")  # the PoSt reader opened it
    with pytest.raises(BadInput, match="not a Filecoin circuit"):
        payload_from_parts("synthetic:512", ClientParts(vanilla_proof=b"x"))
    assert payload_from_parts("porep-2k", ClientParts(vanilla_proof=b"c1")) == b"c1"
    with pytest.raises(BadInput, match="porep-2k needs vanilla_proof"):
        payload_from_parts("porep-2k", ClientParts())


def test_find_kind_is_a_prefix_match_only():
    assert find_kind("wpost-999") is kind_of("wpost-2k")  # the label, not a check of the id
    assert find_kind("other:1") is None and find_kind("") is None
