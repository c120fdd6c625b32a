"""A WindowPoSt partition the way the reference's Go client sends it — proof kind, registered
proof number, one serialised sector proof per sector, randomness, miner id — proved by the
daemon and checked against the inputs the vanilla proofs imply."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cuzk.circuits import get_circuit, key_file_stem
from cuzk.circuits.filecoin.post import post_params
from cuzk.circuits.filecoin.vanilla import random_sector
from cuzk.circuits.filecoin.vanilla_json import generate, read_request, sector_vanilla_json
from cuzk.field import fr
from cuzk.groth16 import proofs_from_bytes, read_vk, verify
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape
from cuzk.server import convert
from cuzk.server.client import Client
from cuzk.server.proto import proving_pb2 as pb

from .conftest import daemon_config

WPOST_2K_V1_2 = 10  # RegisteredPoStProof::StackedDrgWindow2KiBV1_1 (api StackedDrgWindow2KiBV1_2)


@pytest.fixture(scope="module")
def wpost_keys(tmp_path_factory, pool):
    d = tmp_path_factory.mktemp("wpost-daemon-keys")
    shape = synthesize_shape(get_circuit("wpost-2k"), "wpost-2k")
    generate_parameters(shape, d, key_file_stem("wpost-2k"), seed=11, pool=pool)
    return d


def test_window_post_partition_over_grpc(tmp_path, wpost_keys, seed):
    from cuzk.server.daemon import Daemon

    rng = np.random.default_rng(seed)
    p = post_params("wpost-2k")
    sectors = [random_sector(p, int(rng.integers(1 << 40)) + i, rng) for i in range(2)]
    randomness = fr.to_int(fr.random(1, rng)[0])
    docs = [sector_vanilla_json(s, p) for s in generate(p, sectors, randomness)]
    msg = pb.SubmitProofRequest(
        request_id=f"wpost-{seed}", proof_kind=pb.WINDOW_POST_PARTITION,
        registered_proof=WPOST_2K_V1_2, sector_size=2048, priority=pb.CRITICAL,
        vanilla_proofs=[json.dumps(d).encode() for d in docs], miner_id=1000 + seed % 1000,
        randomness=randomness.to_bytes(32, "little"), partition_index=0,
    )  # fmt: skip
    _, _, expected = read_request(convert.to_engine(msg).request.payload)
    daemon = Daemon(daemon_config(tmp_path, wpost_keys))
    daemon.start()
    try:
        with Client(f"unix://{tmp_path}/cuzk.sock") as client:
            outcome = client.prove(msg)
    finally:
        daemon.stop(graceful=False)
    assert outcome.status == "completed", outcome.error
    assert outcome.circuit_id == "wpost-2k" and outcome.public_inputs == [expected]
    (proof,) = proofs_from_bytes(outcome.proof)
    vk = read_vk(outcome.vk_path)
    assert verify(vk, expected, proof)
    assert not verify(vk, [expected[0] ^ 1, *expected[1:]], proof)
