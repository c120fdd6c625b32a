"""Proofs cuzk did not make: ``cuzk verify`` on two 2 KiB proofs of upstream's circuits.

tests/data/polka-storage/ holds (vk, proof, public inputs) triples from eigerco/polka-storage
(commit ce0aa7ff8f4e0c0028542882779cd82ff481dd9d, ``pallets/proofs/src/tests/porep.rs`` and
``post.rs``): proofs made by crates.io filecoin-proofs 18.1.0 / bellperson 0.26 with
polka-storage's own random setup, vk files in bellperson's layout. They must verify, any
tampering must not, and the public inputs must be what cuzk's own derivations (replica id,
interactive challenges, the DRG/expander graph, PoSt leaf challenges) compute from the
statement — so upstream's prover, not this project, vouches for those derivations.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cuzk.circuits.filecoin.porep_challenges import interactive_challenges
from cuzk.circuits.filecoin.post_params import window_params
from cuzk.circuits.filecoin.seal.graph import build_graph
from cuzk.circuits.filecoin.seal.sdr import replica_id
from cuzk.circuits.filecoin.vanilla import PublicSector, public_inputs
from cuzk.cli.main import main
from cuzk.field.constants import R
from cuzk.groth16 import proofs_from_bytes, read_vk, verify

DATA = Path(__file__).parents[1] / "data" / "polka-storage"
NAMES = ("porep-2kib", "wpost-2kib")

# The statements (polka-storage's tests; README of tests/data): sector 77, prover id 0^32.
COMM_R = bytes.fromhex("4afb35f82a95a10187a913bc14520d9a1d173328265b301b5dcf440ef2583950")
COMM_D = bytes.fromhex("129c7562bb0c189544f5dccd365feaec2141eab458097a5ca8429c109d154421")
SECTOR, TICKET, SEED, POREP_ID = 77, b"\x0c" * 32, b"\x0d" * 32, bytes(32)
POST_RANDOMNESS = b"\x01" * 32


def _files(name: str, where: Path = DATA) -> list[str]:
    return [str(where / f"{name}.{ext}") for ext in ("bellperson.vk", "proof.bin", "inputs.json")]


def _verify_cli(vk: str, proof: str, inputs: str) -> int:
    return main(["verify", "--vk", vk, "--proof", proof, "--inputs", inputs])


def _inputs(name: str) -> list[int]:
    (single,) = json.loads((DATA / f"{name}.inputs.json").read_text())
    return [int(x) for x in single]


@pytest.mark.parametrize("name", NAMES)
def test_cuzk_verify_accepts_upstream_proofs(name, capsys):
    assert _verify_cli(*_files(name)) == 0
    assert capsys.readouterr().out.strip() == "valid"


@pytest.mark.parametrize("name", NAMES)
def test_cuzk_verify_refuses_tampered_proofs_and_inputs(name, tmp_path, rng, capsys):
    vk, proof, inputs = _files(name, shutil.copytree(DATA, tmp_path / "d"))
    good_proof = Path(proof).read_bytes()
    good_inputs = _inputs(name)

    i = int(rng.integers(len(good_inputs)))  # one public input off by a random amount
    changed = list(good_inputs)
    changed[i] = (changed[i] + int(rng.integers(1, 1 << 62))) % R
    Path(inputs).write_text(json.dumps([[str(x) for x in changed]]))
    assert _verify_cli(vk, proof, inputs) == 1
    Path(inputs).write_text(json.dumps([str(x) for x in good_inputs]))  # plain list: same
    assert _verify_cli(vk, proof, inputs) == 0

    # A and C swapped: valid points, not a proof
    Path(proof).write_bytes(good_proof[144:] + good_proof[48:144] + good_proof[:48])
    assert _verify_cli(vk, proof, inputs) == 1
    # a flipped bit: an invalid proof or an undecodable point, never "valid"
    bad = bytearray(good_proof)
    bad[int(rng.integers(len(bad)))] ^= 1 << int(rng.integers(8))
    Path(proof).write_bytes(bytes(bad))
    assert _verify_cli(vk, proof, inputs) in (1, 2)
    # the other circuit's key
    other = _files(next(n for n in NAMES if n != name))[0]
    Path(proof).write_bytes(good_proof)
    assert _verify_cli(other, proof, inputs) in (1, 2)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "invalid" in err


def test_every_single_input_matters():
    """Each public input is bound by the proof: changing any one of them fails."""
    for name in NAMES:
        vk = read_vk(DATA / f"{name}.bellperson.vk")
        (proof,) = proofs_from_bytes((DATA / f"{name}.proof.bin").read_bytes())
        x = _inputs(name)
        assert len(vk.ic) == len(x) + 1 and verify(vk, x, proof)
        for i in range(len(x)):
            assert not verify(vk, x[:i] + [(x[i] + 1) % R] + x[i + 1 :], proof), (name, i)


def test_porep_inputs_are_cuzks_derivation():
    """replica_id, comm_d, comm_r, then per interactive challenge c: c, its 6 DRG and 8
    expander parents, and c three more times (api 1.2.0, porep_id 0^32, 64 nodes)."""
    rid = int.from_bytes(replica_id(bytes(32), SECTOR, TICKET, COMM_D, POREP_ID), "little")
    challenges = interactive_challenges(rid, SEED, 64, 2, 0)
    assert challenges == [37, 29]
    parents = build_graph(64, POREP_ID, "1.2.0").parents
    want = [rid, int.from_bytes(COMM_D, "little"), int.from_bytes(COMM_R, "little")]
    for c in challenges:
        want += [c, *(int(p) for p in parents[c]), c, c, c]
    assert _inputs("porep-2kib") == want


def test_window_post_inputs_are_cuzks_derivation():
    """[comm_r, 10 leaf challenges] for sector 77, repeated to fill the 2-sector partition."""
    sector = PublicSector(SECTOR, int.from_bytes(COMM_R, "little"))
    randomness = int.from_bytes(POST_RANDOMNESS, "little")
    want = public_inputs(window_params(2048), randomness, [sector])
    assert _inputs("wpost-2kib") == want and want[:11] == want[11:]
