"""Requests that carry their witness as a payload (a WindowPoSt request with vanilla proofs)
rather than seeds: parsed and checked at submit, proved, and bound to the inputs it states."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cuzk.circuits import get_circuit, key_file_stem
from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.vanilla_json import random_request
from cuzk.engine import Engine, EngineConfig, ProofRequest
from cuzk.errors import BadInput
from cuzk.groth16 import proofs_from_bytes, read_vk, verify
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape

from .helpers import idle_budget, wait_until

WPOST = "wpost-2k"


@pytest.fixture(scope="module")
def engine(tmp_path_factory, pool):
    d = tmp_path_factory.mktemp("wpost-keys")
    shape = synthesize_shape(get_circuit(WPOST), WPOST)
    generate_parameters(shape, d, key_file_stem(WPOST), seed=7, pool=pool)
    # One synthesis process: PoSt witnesses are built in a worker process here (the daemon's
    # PoSt test covers the in-thread path).
    cfg = EngineConfig(param_dir=d, devices=1, workers_per_device=1, msm_workers=1,
                       memory_budget=1 << 30, join_timeout_s=10.0,
                       synthesis_processes=1)  # fmt: skip
    with Engine(cfg) as e:
        yield e


def _request(seed: int, **kw) -> tuple[bytes, str]:
    text, _ = random_request(post_params(WPOST), np.random.default_rng(seed), **kw)
    return text.encode(), text


def test_window_post_payload_proves_the_stated_inputs(engine, seed):
    payload, _ = _request(seed)
    result = engine.prove(ProofRequest(WPOST, payload=payload), timeout=300)
    from cuzk.circuits.filecoin.vanilla_json import read_request

    _, _, stated = read_request(payload)
    assert result.public_inputs == (tuple(stated),)
    (proof,) = proofs_from_bytes(result.proof)
    vk = read_vk(result.vk_path)
    assert verify(vk, stated, proof)
    # an independent negative: the same proof does not verify for another randomness
    other = list(stated)
    other[0] = (other[0] + 1) % (1 << 250)
    assert not verify(vk, other, proof)
    wait_until(lambda: idle_budget(engine), what="budget back to idle")


def test_payload_dedup_by_bytes(engine, seed):
    a, _ = _request(seed)
    b, _ = _request(seed + 1)
    first = engine.submit(ProofRequest(WPOST, payload=a, request_id=f"post-{seed}"))
    assert engine.submit(ProofRequest(WPOST, payload=a, request_id=f"post-{seed}")) == first
    with pytest.raises(BadInput, match="another payload|different"):
        engine.submit(ProofRequest(WPOST, payload=b, request_id=f"post-{seed}"))
    engine.result(first, timeout=300)


def test_bad_payloads_are_refused_at_submit(engine, seed):
    good, text = _request(seed, sectors=1)
    doc = json.loads(text)
    doc["vanilla_proofs"][0]["comm_r"][0] ^= 1
    cases = {
        "not JSON": b"{nope",
        "truncated": good[: len(good) // 2],
        "comm_r": json.dumps(doc).encode(),
    }
    for what, payload in cases.items():
        with pytest.raises(BadInput) as e:
            engine.submit(ProofRequest(WPOST, payload=payload))
        assert str(e.value), what
    with pytest.raises(BadInput, match="winning-2k|not"):
        engine.submit(ProofRequest("winning-2k", payload=good))
    with pytest.raises(BadInput, match="seeds"):
        engine.submit(ProofRequest("synthetic:300", payload=good))
    with pytest.raises(BadInput, match="either"):
        ProofRequest(WPOST, seeds=(1,), payload=good)
    with pytest.raises(BadInput, match="either"):
        ProofRequest(WPOST)
    assert engine.status().counts.get("NORMAL", {}).get("failed", 0) == 0
