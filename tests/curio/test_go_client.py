"""A real Go gRPC client (clients/go, built here from our proto with Debian's protoc-gen-go and
grpc-go in GOPATH mode) sends what Curio sends to a real ``cuzk serve`` on a unix socket:
WindowPoSt from bincode vanilla proofs at HIGH, WinningPoSt at CRITICAL, retries under the same
request id (after a refused request, after a client-side deadline, and a WindowPoSt retry with a
changed sector set), and — heavy — a 2 KiB PoRep in the compact C1 wrapper and a 2 KiB SnapDeals
update through proof_kind. Every proof is checked against the verifying key with the public
inputs computed here from the request, independently of the daemon.

Request-id reuse (see the proto's request_id comment): an identical request while the first is
in flight joins it; a request whose earlier job failed, was cancelled or expired runs again; a
different payload under a used id is a new job. The assertions that depend on that rule are
collected in :data:`REUSE_RULE_TESTS`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk.circuits import get_circuit, key_file_stem, open_statement
from cuzk.cli.filecoin_cmd import curio_message
from cuzk.cli.main import main
from cuzk.groth16.setup import generate_parameters
from cuzk.r1cs import synthesize_shape
from cuzk.server.convert import to_engine

from ..server.conftest import daemon_log, spawn_daemon

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("go", "protoc", "protoc-gen-go", "protoc-gen-go-grpc")
GRPC_GO = Path("/usr/share/gocode/src/google.golang.org/grpc")
# Tests whose assertions follow the request-id reuse rule above (adjust here if it changes).
REUSE_RULE_TESTS = ("test_retry_after_a_deadline_gets_a_proof",
                    "test_window_post_retry_with_a_changed_sector_set_is_a_new_job")  # fmt: skip


def _missing() -> str | None:
    absent = [t for t in TOOLS if shutil.which(t) is None]
    if absent or not GRPC_GO.is_dir():
        return (f"Go client needs {', '.join(absent) or GRPC_GO} (Debian: golang-go "
                "protobuf-compiler protoc-gen-go protoc-gen-go-grpc golang-google-protobuf-dev "
                "golang-google-grpc-dev)")  # fmt: skip
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture(scope="session")
def go_client(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("go-client")
    run = subprocess.run([str(ROOT / "clients" / "go" / "build.sh"), str(out)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return out / "curio-client"


def _keys(d: Path, pool, circuits: tuple[str, ...]) -> Path:
    for i, cid in enumerate(circuits):
        shape = synthesize_shape(get_circuit(cid), cid)
        generate_parameters(shape, d, key_file_stem(cid), seed=900 + i, pool=pool)
    return d


@pytest.fixture(scope="module")
def post_daemon(tmp_path_factory, pool):
    tmp = tmp_path_factory.mktemp("curio-post")
    keys = _keys(tmp / "keys", pool, ("wpost-2k", "winning-2k"))
    proc = spawn_daemon(tmp, keys)
    yield tmp
    proc.terminate()
    proc.wait(timeout=60)


class Go:
    """Runs the Go client against a daemon; one JSON answer per call."""

    def __init__(self, exe: Path, daemon_dir: Path, tmp: Path) -> None:
        self.exe, self.addr, self.tmp, self.calls = exe, f"unix://{daemon_dir}/cuzk.sock", tmp, 0
        self.daemon_dir = daemon_dir

    def prove(self, req_dir: Path, *flags: str) -> dict:
        self.calls += 1
        proof, inputs = self.tmp / f"proof-{self.calls}", self.tmp / f"inputs-{self.calls}.json"
        run = subprocess.run([str(self.exe), "-addr", self.addr, "-dir", str(req_dir),
                              "-proof-out", str(proof), "-inputs-out", str(inputs), *flags],
                             capture_output=True, text=True, timeout=900)  # fmt: skip
        assert run.returncode == 0, run.stderr + daemon_log(self.daemon_dir)
        answer = json.loads(run.stdout)
        answer["proof_file"], answer["inputs_file"] = proof, inputs
        return answer

    def assert_valid(self, answer: dict, req_dir: Path, drop: int | None = None) -> None:
        """COMPLETED, and the proof verifies under the daemon's vk with the inputs the request
        states (computed here through the converter and the kind's parser)."""
        assert (answer["code"], answer.get("status")) == ("OK", "COMPLETED"), answer
        msg = curio_message(req_dir)
        if drop is not None:
            del msg.vanilla_proofs[drop]
        request = to_engine(msg).request
        st = open_statement(request.circuit_id, payload=request.payload)
        want = [[str(x) for x in st.expected(k)] for k in range(st.partitions)]
        assert json.loads(answer["inputs_file"].read_text()) == want
        assert answer["proof_len"] == 192 * st.partitions and Path(answer["vk_path"]).is_absolute()
        assert main(["verify", "--vk", answer["vk_path"], "--proof", str(answer["proof_file"]),
                     "--inputs", str(answer["inputs_file"])]) == 0  # fmt: skip


@pytest.fixture
def go(go_client, post_daemon, tmp_path) -> Go:
    return Go(go_client, post_daemon, tmp_path)


def _curio(kind: str, out: Path, seed: int, *extra: str) -> Path:
    assert main(["gen-vanilla", kind, "--curio", "--sector-size", "2KiB", "--seed", str(seed),
                 "--out", str(out), *extra]) == 0  # fmt: skip
    return out


def test_window_post_from_bincode_vanilla_proofs(go, tmp_path, seed) -> None:
    d = _curio("window-post", tmp_path / "wpost", seed)
    assert curio_message(d).request_id.endswith("-0-[0 1]")  # Curio's id: spaces, brackets
    go.assert_valid(go.prove(d), d)


def test_winning_post_at_critical(go, tmp_path, seed) -> None:
    d = _curio("winning-post", tmp_path / "winning", seed)
    assert curio_message(d).priority == 4  # CRITICAL
    go.assert_valid(go.prove(d), d)


def test_retry_after_a_refused_request(go, tmp_path, seed) -> None:
    d = _curio("window-post", tmp_path / "wpost", seed)
    bad = go.prove(d, "-corrupt")
    assert bad["code"] == "InvalidArgument" and "sector proof 1" in bad["message"], bad
    go.assert_valid(go.prove(d), d)  # same id, the good request


def test_retry_after_a_deadline_gets_a_proof(go, tmp_path, seed) -> None:
    """Curio's call gave up (deadline) and its task retries under the same id: the retry gets
    a proof (joining the job if it still runs, running again if it was cancelled)."""
    d = _curio("window-post", tmp_path / "wpost", seed)
    gave_up = go.prove(d, "-timeout", "5ms")
    assert gave_up["code"] == "DeadlineExceeded", gave_up
    go.assert_valid(go.prove(d), d)


def test_window_post_retry_with_a_changed_sector_set_is_a_new_job(go, tmp_path, seed) -> None:
    d = _curio("window-post", tmp_path / "wpost", seed)
    first = go.prove(d)
    go.assert_valid(first, d)
    retry = go.prove(d, "-drop", "1")  # sector 1 became faulty: same id, one sector fewer
    assert retry["request_id"] == first["request_id"] and retry["vanilla_proofs"] == 1
    go.assert_valid(retry, d, drop=1)
    assert retry["job_id"] != first["job_id"]


@pytest.mark.heavy
@pytest.mark.parametrize("kind", ["porep", "snap"])
def test_porep_and_snap_2k_through_proof_kind(kind, go_client, tmp_path_factory, pool,
                                              seed) -> None:  # fmt: skip
    tmp = tmp_path_factory.mktemp(f"curio-{kind}")
    keys = _keys(tmp / "keys", pool, (f"{kind}-2k",))
    # a 2 KiB PoRep partition needs ≈ 5 GiB with its key resident (the fixture's 1 GiB suits PoSt)
    proc = spawn_daemon(tmp, keys, "--set", "engine.memory_budget=8GiB")
    try:
        client = Go(go_client, tmp, tmp)
        d = _curio(kind, tmp / kind, seed)
        client.assert_valid(client.prove(d), d)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
