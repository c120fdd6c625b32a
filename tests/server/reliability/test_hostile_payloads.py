"""Hostile payloads are INVALID_ARGUMENT naming the field that held them (never INTERNAL, never
a traceback in the log), and a long job id is cut short in the error."""

from __future__ import annotations

import logging

import grpc
import pytest

from cuzk.errors import BadInput
from cuzk.server.client import Client
from cuzk.server.proto import proving_pb2 as pb

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 50_000 + b"1" + b"}" * 50_000
BIG_INT = b'{"x": ' + b"9" * 5000 + b"}"
BIG_INT_LIST = b"[" + b"9" * 5000 + b"]"
BIG_INT_TEXT = b'{"circuit": "winning-2k", "sectors": ["' + b"9" * 5000 + b'"]}'


def _requests():
    """(name, request, how its error begins): bytes that do not parse as JSON at all name the
    message field; JSON of the wrong shape names the document and what it lacks."""
    for name, blob, parses in [
        ("deep", DEEP, False),
        ("deep object", DEEP_OBJECT, False),
        ("big int", BIG_INT, False),
        ("big int list", BIG_INT_LIST, False),
        ("big int text", BIG_INT_TEXT, True),
    ]:
        porep = pb.SubmitProofRequest(
            proof_kind=pb.POREP_SEAL_COMMIT, registered_proof=8, vanilla_proof=blob
        )
        yield f"{name}, porep", porep, "C1 output: missing" if parses else "vanilla_proof"
        winning = pb.SubmitProofRequest(
            proof_kind=pb.WINNING_POST, registered_proof=0, randomness=bytes(32),
            vanilla_proofs=[blob],
        )  # fmt: skip
        yield f"{name}, winning", winning, "sector proof 0" if parses else "vanilla_proofs"
        for cid in ("winning-2k", "porep-2k", "wpost-2k"):
            direct = pb.SubmitProofRequest(circuit_id=cid, vanilla_proof=blob)
            yield f"{name}, {cid}", direct, "" if parses else "vanilla_proof"


CASES = list(_requests())


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, server_keys):
    from cuzk.server.daemon import Daemon

    from ..conftest import daemon_config

    d = Daemon(daemon_config(tmp_path_factory.mktemp("hostile"), server_keys))
    d.start()
    yield d
    d.stop(graceful=False)


@pytest.mark.parametrize("name,msg,field", CASES, ids=[c[0] for c in CASES])
def test_hostile_payload_is_invalid_argument_naming_the_field(daemon, caplog, name, msg, field):
    caplog.set_level(logging.WARNING)
    with Client(daemon.address) as c, pytest.raises(BadInput) as info:
        c.submit(msg)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert str(info.value).startswith(field), str(info.value)
    assert not [r for r in caplog.records if r.exc_info]


def test_a_long_job_id_is_cut_short_in_the_error(daemon):
    with Client(daemon.address) as c:
        for call in (c.await_proof, c.cancel):
            with pytest.raises(BadInput) as info:
                call("j" * 10_000)
            assert info.value.code == grpc.StatusCode.NOT_FOUND and len(str(info.value)) < 300
        with pytest.raises(BadInput, match="at most 128 characters"):
            c.preload("x" * 10_000)
