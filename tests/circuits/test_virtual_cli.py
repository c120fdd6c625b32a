"""``cuzk gen-vanilla --virtual``: every kind writes a file the engine's parsers open, the
``--curio`` directories go through the gRPC request converter as Curio's bytes would, and bad
combinations are refused with exit status 2."""

from __future__ import annotations

import json

import pytest

from cuzk.circuits import open_statement
from cuzk.circuits.filecoin.bincode_write import snap_partition_proof
from cuzk.circuits.filecoin.seal.virtual import virtual_update
from cuzk.circuits.filecoin.vanilla_json import read_request
from cuzk.cli.filecoin_cmd import curio_message
from cuzk.cli.main import main
from cuzk.server.proto import proving_pb2 as pb


def _gen(*argv: str) -> int:
    return main(["gen-vanilla", *argv])


@pytest.mark.parametrize(
    ("kind", "size", "circuit", "partitions"),
    [("porep", "2KiB", "porep-2k", 1), ("snap", "8MiB", "snap-8m", 4),
     pytest.param("porep", "32GiB", "porep-32g", 10, marks=pytest.mark.heavy)],
)  # fmt: skip
def test_porep_and_snap_files_open(kind, size, circuit, partitions, tmp_path, seed) -> None:
    out = tmp_path / "doc.json"
    assert _gen(kind, "--virtual", "--sector-size", size, "--seed", str(seed), "--out",
                str(out)) == 0  # fmt: skip
    st = open_statement(circuit, payload=out.read_bytes())
    assert st.partitions == partitions
    again = tmp_path / "again.json"
    assert _gen(kind, "--virtual", "--sector-size", size, "--seed", str(seed), "--out",
                str(again)) == 0  # fmt: skip
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(("kind", "size"), [("window-post", "2KiB"), ("winning-post", "8MiB"),
                                            ("window-post", "32GiB")])  # fmt: skip
def test_post_json_reads_back(kind, size, tmp_path, seed, capsys) -> None:
    out = tmp_path / "post.json"
    assert _gen(kind, "--virtual", "--sector-size", size, "--sectors" if kind == "window-post"
                else "--seed", "2" if kind == "window-post" else str(seed), "--out",
                str(out)) == 0  # fmt: skip
    cid, circuit, inputs = read_request(out.read_text())
    assert cid.endswith({"2KiB": "2k", "8MiB": "8m", "32GiB": "32g"}[size])
    assert "checked by the parser" in capsys.readouterr().out


def test_window_post_curio_through_the_converter(tmp_path, seed) -> None:
    """The .vproof files and request.json are the SubmitProofRequest Curio sends; the server's
    converter turns it into the payload the engine proves."""
    from cuzk.server.convert import to_engine

    out = tmp_path / "wpost"
    assert _gen("window-post", "--virtual", "--curio", "--sector-size", "32GiB", "--sectors",
                "3", "--partition", "1", "--seed", str(seed), "--out", str(out)) == 0  # fmt: skip
    msg = curio_message(out)
    assert msg.registered_proof == 13 and len(msg.vanilla_proofs) == 3
    assert msg.priority == pb.HIGH and msg.partition_index == 1
    ids = " ".join(n.split("-")[-1].split(".")[0] for n in
                   json.loads((out / "request.json").read_text())["vanilla_proofs"])  # fmt: skip
    assert msg.request_id == f"wdpost-{msg.miner_id}-1-[{ids}]"
    conv = to_engine(msg)
    assert conv.request.circuit_id == "wpost-32g"
    cid, _, inputs = read_request(conv.request.payload)
    assert cid == "wpost-32g" and len(inputs) == 2349 * 11  # short partition: last repeated


def test_snap_curio_files(tmp_path, seed) -> None:
    out = tmp_path / "snap"
    assert _gen("snap", "--virtual", "--sector-size", "8MiB", "--seed", str(seed), "--curio",
                "--out", str(out)) == 0  # fmt: skip
    msg = curio_message(out)
    doc = virtual_update(8 << 20, seed).document()
    assert msg.comm_r_new == bytes(doc["comm_r_new"]) and msg.comm_d_new == bytes(doc["comm_d_new"])
    assert msg.proof_kind == pb.SNAP_DEALS_UPDATE and msg.registered_proof == 1
    assert msg.request_id == f"snap-{msg.miner_id}-{msg.sector_number}"
    for k, raw in enumerate(msg.vanilla_proofs):
        assert raw == snap_partition_proof(doc["partition_proofs"][k])


@pytest.mark.parametrize(
    "argv",
    [
        ["porep", "--sector-size", "32GiB"],  # 32 GiB is never sealed for real
        ["snap", "--virtual", "--sectors", "2"],  # a PoSt option
        ["window-post", "--curio", "--sector-size", "512MiB"],  # only virtual at 512 MiB
        ["window-post", "--virtual", "--sectors", "3"],  # a 2 KiB partition holds 2
        ["winning-post", "--virtual", "--partition", "1"],
        ["porep", "--virtual", "--api", "1.0.0", "--sector-size", "2KiB", "--sectors", "1"],
    ],
)
def test_refused(argv, tmp_path) -> None:
    assert _gen(*argv, "--out", str(tmp_path / "x")) == 2
