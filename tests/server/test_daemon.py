"""The daemon in-process, through a real gRPC client: every RPC, bad requests answered with
INVALID_ARGUMENT while the daemon keeps serving, results served from the journal after a
restart, and bearer-token protection (request ids: test_request_ids.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request

import grpc
import pytest

from cuzk.errors import BadInput
from cuzk.groth16 import proofs_from_bytes, read_vk, verify
from cuzk.server.client import Client, DaemonUnavailable
from cuzk.server.daemon import Daemon
from cuzk.server.journal import Journal
from cuzk.server.proto import proving_pb2 as pb

from .conftest import CIRCUIT, SLOW_CIRCUIT, daemon_config


def _check_valid(outcome) -> None:
    assert outcome.status == "completed", outcome.error
    vk = read_vk(outcome.vk_path)
    proofs = proofs_from_bytes(outcome.proof)
    assert len(proofs) == len(outcome.public_inputs) >= 1
    for inputs, proof in zip(outcome.public_inputs, proofs, strict=True):
        assert verify(vk, inputs, proof)


def _raw(daemon: Daemon, method: str, payload: bytes, metadata=None) -> grpc.RpcError:
    """Send raw bytes as ``method``'s request; return the error the daemon answers with."""
    with grpc.insecure_channel(daemon.address) as ch:
        call = ch.unary_unary(f"/cuzk.v1.ProvingEngine/{method}")
        with pytest.raises(grpc.RpcError) as info:
            call(payload, timeout=30, metadata=metadata)
    return info.value


def test_every_rpc(make_daemon, rng):
    d = make_daemon()
    seeds = [int(x) for x in rng.integers(0, 1 << 62, size=2)]
    with Client(d.address) as c:
        pre = c.preload(CIRCUIT)
        assert not pre.already_loaded and c.preload(CIRCUIT).already_loaded
        job = c.submit_circuit(CIRCUIT, seeds, priority=pb.HIGH)
        outcome = c.await_proof(job)
        _check_valid(outcome)
        assert outcome.circuit_id == CIRCUIT and len(outcome.public_inputs) == 2
        t = outcome.timings_ms
        assert t["total"] >= t["queue_wait"] and t["gpu_compute"] > 0 and t["total"] > 0
        assert [tl.partition for tl in outcome.timelines] == [0, 1]
        # Prove = submit + await; the same seeds give the same public inputs.
        again = c.prove(pb.SubmitProofRequest(circuit_id=CIRCUIT, seeds=seeds))
        _check_valid(again)
        assert again.public_inputs == outcome.public_inputs and again.job_id != job
        st = c.status()
        assert st.total_proofs_completed == 2 and [g.ordinal for g in st.gpus] == [0]
        assert [s.circuit_id for s in st.loaded_srs] == [CIRCUIT]
        assert '"jobs"' in st.status_json
        base = f"http://127.0.0.1:{d.http_port}"
        with urllib.request.urlopen(f"{base}/status", timeout=10) as r:
            doc = json.loads(r.read())
        assert doc["daemon"]["completed"] == 2 and doc["daemon"]["journal_jobs"]["succeeded"] == 2
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as r:
            assert b"cuzk_proofs_completed_total" in r.read()
        assert 'cuzk_proofs_completed_total{kind="synthetic"} 2.0' in c.metrics()
        assert not c.cancel(job)  # already finished
        ev = c.evict(CIRCUIT)
        assert ev.was_loaded and ev.freed_bytes > 0
        assert not c.evict(CIRCUIT).was_loaded
        # Evicted: the next job loads the parameters again and says how long it waited for it
        # (the first job found them preloaded).
        reloaded = c.await_proof(c.submit_circuit(CIRCUIT, seeds))
        _check_valid(reloaded)
        assert t["srs_load"] == 0
        assert 0 < reloaded.timings_ms["srs_load"] <= reloaded.timings_ms["queue_wait"]
        with pytest.raises(BadInput, match="no job"):
            c.await_proof("job-doesnotexist")


def test_cancel_and_await_timeout(make_daemon):
    d = make_daemon()
    with Client(d.address) as c:
        c.preload(SLOW_CIRCUIT)
        job = c.submit_circuit(SLOW_CIRCUIT, list(range(1, 9)))
        assert c.await_proof(job, timeout_s=0.05).status == "timeout"
        assert c.cancel(job)
        outcome = c.await_proof(job, timeout_s=30)
        assert outcome.status == "cancelled" and not outcome.proof
        assert not c.cancel(job)


def test_bad_requests_get_invalid_argument_and_the_daemon_survives(make_daemon):
    d = make_daemon(**{"server.max_message_bytes": 64 * 1024})
    with Client(d.address) as c:
        bad = [
            pb.SubmitProofRequest(proof_kind=17),  # unknown kind
            pb.SubmitProofRequest(),  # nothing at all
            pb.SubmitProofRequest(circuit_id="nonsense:1", seeds=[1]),  # unknown circuit
            pb.SubmitProofRequest(
                proof_kind=pb.WINNING_POST,
                registered_proof=0,
                randomness=bytes(32),
                vanilla_proofs=[b"\x01\x02garbage"],
            ),
            pb.SubmitProofRequest(
                proof_kind=pb.WINNING_POST,
                registered_proof=0,
                randomness=bytes(32),
                vanilla_proofs=[b'{"sector_id": 1}'],
            ),
            pb.SubmitProofRequest(circuit_id="winning-2k", vanilla_proof=b'{"circuit": "winn'),
            pb.SubmitProofRequest(circuit_id=CIRCUIT, vanilla_proof=b"\0" * 70_000),  # oversize
        ]
        for msg in bad:
            with pytest.raises(BadInput) as info:
                c.submit(msg)
            assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT, msg
            assert str(info.value)
        assert "exceeds the limit" in str(info.value)
    # Bytes that are not a SubmitProofRequest at all, or fields of the wrong wire type.
    for raw in (
        b"\x0a\xff\xff",
        b"\xff" * 9,
        b"\x10\x80",
        b"\x52\x05abc",
        b"\x12\x03abc",  # proof_kind (a varint) sent as bytes
        b"\xc2\x02\x02\x01",  # circuit_id (string) "\x01…" cut short
        b"\xca\x02\x03\xff\xff\xff",
    ):  # seeds: a packed varint that never ends
        err = _raw(d, "SubmitProof", raw)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, raw
    err = _raw(d, "AwaitProof", b"\x0a\x03job")  # wrong-typed but decodable: unknown job
    assert err.code() == grpc.StatusCode.NOT_FOUND
    # Far beyond the limit: gRPC's transport refuses it before the servicer sees it.
    with Client(d.address) as c:
        with pytest.raises(Exception) as info:
            c.submit(pb.SubmitProofRequest(circuit_id=CIRCUIT, vanilla_proof=b"\0" * 200_000))
        assert info.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        _check_valid(c.prove(pb.SubmitProofRequest(circuit_id=CIRCUIT, seeds=[3])))


def test_results_survive_a_restart(tmp_path, server_keys):
    cfg = daemon_config(tmp_path, server_keys)
    with Daemon(cfg) as d, Client(d.address) as c:
        done = c.submit_circuit(CIRCUIT, [11], request_id="kept")
        first = c.await_proof(done)
        _check_valid(first)
    with Daemon(cfg) as d, Client(d.address) as c:
        again = c.await_proof(done)
        _check_valid(again)
        assert again.proof == first.proof and again.timings_ms == first.timings_ms
        assert c.submit_circuit(CIRCUIT, [11], request_id="kept") == done


def test_token_protected_listener(tmp_path, server_keys):
    cfg = daemon_config(
        tmp_path, server_keys, **{"server.listen": "127.0.0.1:0", "auth.token": "s3cret"}
    )
    with Daemon(cfg) as d:
        for token in (None, "wrong"):
            with Client(d.address, token=token) as c, pytest.raises(BadInput) as info:
                c.status()
            assert info.value.code == grpc.StatusCode.UNAUTHENTICATED
        err = _raw(d, "SubmitProof", b"")
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        with Client(d.address, token="s3cret") as c:
            assert c.status().uptime_seconds >= 0


def test_exposed_listener_without_token_is_refused(tmp_path, server_keys):
    with pytest.raises(BadInput, match="reachable from other hosts"):
        daemon_config(tmp_path, server_keys, **{"server.listen": "0.0.0.0:0"})


def test_shutdown_journals_what_runs_and_restart_finishes_it(tmp_path, server_keys, rng):
    cfg = daemon_config(tmp_path, server_keys)
    seeds = [int(x) for x in rng.integers(0, 1 << 62, size=8)]
    d = Daemon(cfg)
    d.start()
    try:
        with Client(d.address) as c:
            job = c.submit_circuit(SLOW_CIRCUIT, seeds)
    finally:
        d.stop(graceful=True, grace=0.0)  # no time to finish: what runs stays journalled
    j = Journal(cfg.journal.path, 3600)
    assert j.get(job).state == "pending"
    j.close()
    with Daemon(cfg) as d, Client(d.address) as c:
        outcome = c.await_proof(job, timeout_s=120)
        _check_valid(outcome)
        assert len(outcome.public_inputs) == len(seeds)


def test_tls_listener(tmp_path, server_keys):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    cfg = daemon_config(
        tmp_path,
        server_keys,
        **{"server.listen": "0.0.0.0:0", "auth.tls_cert": str(cert), "auth.tls_key": str(key)},
    )
    with Daemon(cfg) as d:
        port = d.address.rsplit(":", 1)[1]
        with Client(f"localhost:{port}", tls_ca=cert) as c:
            _check_valid(c.prove(pb.SubmitProofRequest(circuit_id=CIRCUIT, seeds=[4])))
        with Client(f"localhost:{port}") as c, pytest.raises(DaemonUnavailable):
            c.status()  # plaintext to a TLS listener
