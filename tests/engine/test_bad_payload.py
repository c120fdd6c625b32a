"""Whatever a payload's parser raises while a request is opened, the engine's caller gets
BadPayload (an INVALID_ARGUMENT for the daemon), never an internal error; a request without a
payload is not the caller's fault and keeps its exception. A join timeout must be finite."""

from __future__ import annotations

import pytest

from cuzk.engine import EngineConfig, ProofRequest, intake
from cuzk.errors import BadInput, BadPayload

from .conftest import SMALL


class _Choking:
    """A family whose parser meets input it did not expect."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def open(self, request, config):
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        TypeError("'int' object is not subscriptable"),
        KeyError("x"),
        RecursionError(),
        ValueError("Exceeds the limit (4300 digits)"),
        IndexError("list index"),
    ],  # fmt: skip
)
def test_a_parser_failure_is_bad_payload(make_engine, monkeypatch, error):
    engine = make_engine()
    monkeypatch.setattr(intake, "family_for", lambda cid: _Choking(error))
    with pytest.raises(BadPayload, match=f"^{SMALL}: the payload does not parse"):
        engine.submit(ProofRequest(circuit_id=SMALL, payload=b"{}"))
    with pytest.raises(type(error)):  # seeds come from the caller's own code, not a sender
        engine.submit(ProofRequest(circuit_id=SMALL, seeds=(1,)))


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 0.0, -1.0, 3601.0])
def test_join_timeout_must_be_finite_and_positive(tmp_path, value):
    with pytest.raises(BadInput, match="join_timeout_s"):
        EngineConfig(param_dir=tmp_path, join_timeout_s=value)


def test_an_infinite_shutdown_timeout_waits_for_the_jobs_without_overflowing(make_engine):
    engine = make_engine()
    job = engine.submit(ProofRequest.of(SMALL, partitions=2, seed=5))
    engine.shutdown(graceful=True, timeout=float("inf"))  # was OverflowError in the wait
    assert engine.result(job, timeout=1).proof
