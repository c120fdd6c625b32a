"""``cuzk client prove|submit --curio DIR`` sends exactly the request ``cuzk gen-vanilla KIND
--curio`` wrote (what Curio would send), and ``--kind snap`` takes the three commitments."""

from __future__ import annotations

import argparse

import pytest

from cuzk.cli.client_cmd import _submit_message, add_parser
from cuzk.cli.filecoin_cmd import curio_message
from cuzk.cli.main import main
from cuzk.errors import BadInput


def _args(*argv: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command")
    add_parser(sub)
    return ap.parse_args(["client", "submit", *argv])


@pytest.fixture(scope="module")
def curio_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("curio") / "snap"
    argv = ["gen-vanilla", "snap", "--sector-size", "2KiB", "--curio", "--out", str(out)]
    assert main([*argv, "--seed", "5"]) == 0
    return out


def test_curio_directory_is_the_whole_request(curio_dir):
    want = curio_message(curio_dir)
    assert want.comm_r_old and want.vanilla_proofs  # a SnapDeals request, commitments included
    assert _submit_message(_args("--curio", str(curio_dir))) == want
    changed = _submit_message(
        _args("--curio", str(curio_dir), "--request-id", "snap-1-2", "--priority", "high")
    )
    assert changed.request_id == "snap-1-2" and changed.priority == want.priority + 1
    assert changed.vanilla_proofs == want.vanilla_proofs
    with pytest.raises(BadInput, match="whole request"):
        _submit_message(_args("--curio", str(curio_dir), "--kind", "snap"))


def test_snap_commitments_by_flag(curio_dir):
    want = curio_message(curio_dir)
    msg = _submit_message(
        _args("--kind", "snap", "--comm-r-old", want.comm_r_old.hex(),
              "--comm-r-new", want.comm_r_new.hex(), "--comm-d-new", want.comm_d_new.hex())
    )  # fmt: skip
    assert (msg.comm_r_old, msg.comm_r_new, msg.comm_d_new) == (
        want.comm_r_old, want.comm_r_new, want.comm_d_new)  # fmt: skip
    with pytest.raises(BadInput, match="not hex"):
        _submit_message(_args("--kind", "snap", "--comm-r-old", "zz"))
    with pytest.raises(BadInput, match="is for --kind snap"):
        _submit_message(_args("--kind", "winning", "--comm-d-new", "00"))
