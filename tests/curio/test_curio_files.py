"""``cuzk gen-vanilla KIND --curio`` on real small sectors: the directory holds the request
Curio's Go client sends (priority, ids, Go abi numbers, the compact C1 wrapper, bincode vanilla
proofs) and the daemon's converter turns it into a statement that opens."""

from __future__ import annotations

import base64
import json
import re

import pytest

from cuzk.circuits import open_statement
from cuzk.cli.filecoin_cmd import curio_message
from cuzk.cli.main import main
from cuzk.errors import BadInput
from cuzk.server.convert import to_engine
from cuzk.server.proto import proving_pb2 as pb


def _gen(kind: str, out, seed: int) -> pb.SubmitProofRequest:
    assert main(["gen-vanilla", kind, "--curio", "--sector-size", "2KiB", "--seed", str(seed),
                 "--out", str(out)]) == 0  # fmt: skip
    return curio_message(out)


@pytest.mark.parametrize(
    ("kind", "proof_kind", "priority", "registered", "circuit"),
    [("window-post", pb.WINDOW_POST_PARTITION, pb.HIGH, 10, "wpost-2k"),
     ("winning-post", pb.WINNING_POST, pb.CRITICAL, 0, "winning-2k"),
     ("snap", pb.SNAP_DEALS_UPDATE, pb.NORMAL, 0, "snap-2k")],
)  # fmt: skip
def test_curio_request_fields(kind, proof_kind, priority, registered, circuit, tmp_path, seed):
    msg = _gen(kind, tmp_path / kind, seed)
    assert (msg.proof_kind, msg.priority, msg.registered_proof) == (proof_kind, priority,
                                                                     registered)  # fmt: skip
    assert msg.sector_size == 2048 and msg.miner_id > 0 and msg.vanilla_proofs
    assert not msg.vanilla_proof and not msg.circuit_id and not msg.seeds
    if kind == "window-post":
        assert re.fullmatch(rf"wdpost-{msg.miner_id}-0-\[[0-9 ]+\]", msg.request_id)
        assert msg.randomness[31] < 0x40  # top two bits masked, as Lotus does
    elif kind == "winning-post":
        assert msg.request_id == f"winpost-{msg.miner_id}-{msg.randomness.hex()}"
    else:
        assert msg.request_id == f"snap-{msg.miner_id}-{msg.sector_number}"
        assert len(msg.comm_r_old) == len(msg.comm_r_new) == len(msg.comm_d_new) == 32
    request = to_engine(msg).request
    assert request.circuit_id == circuit
    assert open_statement(circuit, payload=request.payload).partitions == 1


@pytest.mark.slow
def test_curio_porep_is_the_compact_c1_wrapper(tmp_path, seed):
    msg = _gen("porep", tmp_path / "porep", seed)
    assert msg.proof_kind == pb.POREP_SEAL_COMMIT and msg.registered_proof == 5  # V1_1 2 KiB
    assert msg.priority == pb.NORMAL and not msg.vanilla_proofs
    assert msg.request_id == f"porep-{msg.miner_id}-{msg.sector_number}"
    # Go's json.Marshal of {SectorNum int64, Phase1Out []byte, SectorSize uint64}: no spaces.
    m = re.fullmatch(rb'\{"SectorNum":(\d+),"Phase1Out":"([A-Za-z0-9+/]*=*)","SectorSize":2048\}',
                     msg.vanilla_proof)  # fmt: skip
    assert m is not None and int(m[1]) == msg.sector_number
    inner = base64.b64decode(m[2], validate=True)
    assert inner == json.dumps(json.loads(inner), separators=(",", ":")).encode()  # compact
    st = open_statement("porep-2k", payload=to_engine(msg).request.payload)
    assert st.partitions == 1


def test_malformed_directory_is_refused(tmp_path):
    (tmp_path / "request.json").write_text('{"message": {"proof_kind": "NO_SUCH_KIND"}}')
    with pytest.raises(BadInput, match="request.json"):
        curio_message(tmp_path)
    (tmp_path / "request.json").write_text('{"message": {}, "vanilla_proofs": ["missing"]}')
    with pytest.raises(BadInput, match="cannot read"):
        curio_message(tmp_path)
