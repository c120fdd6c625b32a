"""snarkjs 0.7.6 vs cuzk on the same .zkey and .wtns, BLS12-381: CLI and proving engine.

    python bench/bench_snarkjs.py --circuits sha256 poseidon --logs 16 18 20 --runs 2
    python bench/bench_snarkjs.py --circuits sha256 poseidon --logs 16 18 20 --backend cuda \
        --no-snarkjs       # on a GPU host: the files under --work must already exist

For each circuit kind and size 2^log: circom2 compiles a circuit whose constraints (plus public
signals) just fill the 2^log domain, snarkjs computes the witness, and cuzk's insecure test
setup (cuzk.interop.zkey_setup; snarkjs's own powers of tau take hours at these sizes here)
writes the key. Then, on identical files:

* snarkjs: ``snarkjs groth16 prove`` wall time, as a user runs it (node start included);
* cuzk CLI: ``cuzk snarkjs prove`` wall time, cold (Python start, numba cache load, worker
  start, key translation included);
* engine: ``snarkjs:circuit`` requests with the .wtns as payload through cuzk.engine, the key
  resident (the daemon's steady state): first load (bases translated into a fresh cache),
  second load (a new engine finding the cached translation; the key preparation alone is
  timed too, with an empty and a filled cache), then warm proves, with the
  per-stage split of the best one.

Every proof is checked with ``snarkjs groth16 verify`` (with cuzk's verifier under
--no-snarkjs). On a host without node, copy ``<work>/<kind>_<log>/circuit.r1cs`` and
``circuit.wtns`` (and vk.json if you have it): the key is rebuilt from the .r1cs with the
same seed, so it is the same key.

Circuits: "sha256" is circomlib's Sha256 over k blocks (bit-heavy: most wires are 0/1);
"poseidon" is K Merkle paths of depth 20 of circomlib's Poseidon(2) with a MultiMux1 per
level (dense: full field elements; circomlib's constants are BN254's, which is fine for
timing). "bits" and "dense" are the earlier hand-written stand-ins. circomlib is pinned in
bench/snarkjs_node/package.json (installed on demand with ``npm ci``). Generated files are
cached under --work. Writes bench/results/snarkjs_<backend>.json unless --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.interop import toolchain  # noqa: E402

from cuzk.backend import get_backend  # noqa: E402
from cuzk.backend.base import Backend  # noqa: E402
from cuzk.curve.pool import MsmPool  # noqa: E402
from cuzk.engine import Engine, EngineConfig, ProofRequest  # noqa: E402
from cuzk.field import fr  # noqa: E402
from cuzk.groth16.verifier import verify  # noqa: E402
from cuzk.interop import prepare, read_r1cs, read_wtns, read_zkey, verify_files  # noqa: E402
from cuzk.interop.snarkjs_json import (  # noqa: E402
    proof_from_json,
    public_from_json,
    read_json,
    write_result,
)
from cuzk.interop.zkey_setup import write_test_zkey  # noqa: E402
from cuzk.openmp import configure_openmp  # noqa: E402

CIRCOMLIB_NODE = REPO / "bench" / "snarkjs_node"
CIRCOMLIB = CIRCOMLIB_NODE / "node_modules" / "circomlib" / "circuits"
MERKLE_DEPTH = 20

BITS = """pragma circom 2.0.0;
template Bits(n) {{
    signal input v;
    signal output b[n];
    var acc = 0;
    for (var i = 0; i < n; i++) {{
        b[i] <-- (v >> i) & 1;
        b[i] * (b[i] - 1) === 0;
        acc += b[i] * (1 << i);
    }}
    acc === v;
}}
// One SHA-256-like step: out = rotr7(a XOR b) + a mod 2^32.
template Step() {{
    signal input a;
    signal input b;
    signal output out;
    component ba = Bits(32);
    ba.v <== a;
    component bb = Bits(32);
    bb.v <== b;
    signal x[32];
    var rot = 0;
    for (var i = 0; i < 32; i++) {{
        x[i] <== ba.b[i] + bb.b[i] - 2 * ba.b[i] * bb.b[i];
        rot += x[i] * (1 << ((i + 25) % 32));
    }}
    component s = Bits(33);
    s.v <== rot + a;
    var o = 0;
    for (var i = 0; i < 32; i++) {{
        o += s.b[i] * (1 << i);
    }}
    out <== o;
}}
template Chain(n) {{
    signal input w0;
    signal input w1;
    signal output out;
    signal w[n + 2];
    w[0] <== w0;
    w[1] <== w1;
    component st[n];
    for (var i = 0; i < n; i++) {{
        st[i] = Step();
        st[i].a <== w[i + 1];
        st[i].b <== w[i];
        w[i + 2] <== st[i].out;
    }}
    out <== w[n + 1];
}}
component main {{public [w0, w1]}} = Chain({rounds});
"""

DENSE = """pragma circom 2.0.0;
template Sbox() {{
    signal input x;
    signal output y;
    signal x2 <== x * x;
    signal x4 <== x2 * x2;
    y <== x4 * x;
}}
// A Poseidon-like permutation chain: width 3, x^5 on every lane, an MDS mix per round.
template Perm(n) {{
    signal input s0;
    signal input s1;
    signal input s2;
    signal output out;
    component sb[n][3];
    signal st[n + 1][3];
    st[0][0] <== s0;
    st[0][1] <== s1;
    st[0][2] <== s2;
    for (var r = 0; r < n; r++) {{
        for (var k = 0; k < 3; k++) {{
            sb[r][k] = Sbox();
            sb[r][k].x <== st[r][k] + r * 3 + k + 1;
        }}
        st[r + 1][0] <== 2 * sb[r][0].y + sb[r][1].y + sb[r][2].y;
        st[r + 1][1] <== sb[r][0].y + 2 * sb[r][1].y + sb[r][2].y;
        st[r + 1][2] <== sb[r][0].y + sb[r][1].y + 3 * sb[r][2].y;
    }}
    out <== st[n][0];
}}
component main {{public [s0]}} = Perm({rounds});
"""


SHA256 = """pragma circom 2.0.0;
include "circomlib/sha256/sha256.circom";
template Main(nBits) {{
    signal input in[nBits];
    signal output out[256];
    component h = Sha256(nBits);
    for (var i = 0; i < nBits; i++) {{ h.in[i] <== in[i]; }}
    for (var i = 0; i < 256; i++) {{ out[i] <== h.out[i]; }}
}}
component main = Main({units} * 512 - 72);
"""

POSEIDON = """pragma circom 2.0.0;
include "circomlib/poseidon.circom";
include "circomlib/mux1.circom";
// One level of a Merkle path: hash (cur, sib) or (sib, cur) as the path bit says.
template Level() {{
    signal input cur;
    signal input sib;
    signal input bit;
    signal output out;
    bit * (bit - 1) === 0;
    component m = MultiMux1(2);
    m.c[0][0] <== cur;
    m.c[0][1] <== sib;
    m.c[1][0] <== sib;
    m.c[1][1] <== cur;
    m.s <== bit;
    component h = Poseidon(2);
    h.inputs[0] <== m.out[0];
    h.inputs[1] <== m.out[1];
    out <== h.out;
}}
template Paths(K, D) {{
    signal input leaf[K];
    signal input sib[K][D];
    signal input bit[K][D];
    signal output root[K];
    component lv[K][D];
    signal cur[K][D + 1];
    for (var k = 0; k < K; k++) {{
        cur[k][0] <== leaf[k];
        for (var d = 0; d < D; d++) {{
            lv[k][d] = Level();
            lv[k][d].cur <== cur[k][d];
            lv[k][d].sib <== sib[k][d];
            lv[k][d].bit <== bit[k][d];
            cur[k][d + 1] <== lv[k][d].out;
        }}
        root[k] <== cur[k][D];
    }}
}}
component main = Paths({units}, {depth});
"""


def _sha_inputs(units: int) -> dict:
    n = units * 512 - 72
    return {"in": [(i * 0x9E3779B1 >> 7) & 1 for i in range(n)]}


def _poseidon_inputs(units: int) -> dict:
    mix = 0x2545F4914F6CDD1D
    return {
        "leaf": [str((k + 1) * mix) for k in range(units)],
        "sib": [
            [str((k * 131 + d + 7) * mix * mix) for d in range(MERKLE_DEPTH)] for k in range(units)
        ],
        "bit": [[(k + d) % 3 % 2 for d in range(MERKLE_DEPTH)] for k in range(units)],
    }


@dataclass(frozen=True)
class Kind:
    source: str  # circom text with {units}
    inputs: Callable[[int], dict]
    circomlib: bool = False


KINDS = {
    "sha256": Kind(SHA256, _sha_inputs, circomlib=True),
    "poseidon": Kind(POSEIDON, _poseidon_inputs, circomlib=True),
    "bits": Kind(
        BITS.replace("{rounds}", "{units}"), lambda _u: {"w0": 0x6A09E667, "w1": 0xBB67AE85}
    ),
    "dense": Kind(DENSE.replace("{rounds}", "{units}"), lambda _u: {"s0": 1, "s1": 2, "s2": 3}),
}


def _compile(kind: str, units: int, d: Path) -> toolchain.Circuit:
    d.mkdir(parents=True, exist_ok=True)
    k = KINDS[kind]
    if k.circomlib:  # circom2 (WASI) only sees files under its working directory
        _ensure_circomlib()
        if not (d / "circomlib").exists():
            shutil.copytree(CIRCOMLIB, d / "circomlib")
    (d / "circuit.circom").write_text(k.source.format(units=units, depth=MERKLE_DEPTH))
    return toolchain.compile_circuit(d / "circuit.circom", d)


def _ensure_circomlib() -> None:
    if not CIRCOMLIB.is_dir():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=CIRCOMLIB_NODE,
            check=True,
        )


def _witness(kind: str, units: int, circuit: toolchain.Circuit, out: Path) -> None:
    inputs = out.with_suffix(".input.json")
    inputs.write_text(json.dumps(KINDS[kind].inputs(units)))
    toolchain.snarkjs("wtns", "calculate", circuit.wasm, inputs, out, cwd=out.parent)


def build(kind: str, log: int, work: Path, pool: MsmPool, backend: Backend | None) -> dict:
    """Compile, compute the witness and write the key for ``kind`` at 2^log (cached); the
    key's fixed-base work runs on ``backend`` when given (CUDA), else on ``pool``."""
    d = work / f"{kind}_{log}"
    zkey, wtns = d / "circuit.zkey", d / "circuit.wtns"
    if not (d / "meta.json").exists() and (d / "circuit.r1cs").exists() and wtns.exists():
        # Copied here without node (a GPU host): the key is reproducible from the .r1cs.
        r1cs = read_r1cs(d / "circuit.r1cs")
        t0 = time.perf_counter()
        write_test_zkey(r1cs, zkey, pool, seed=log, backend=backend)
        meta = {
            "units": None,
            "compile_s": None,
            "witness_s": None,
            "setup_s": time.perf_counter() - t0,
            "constraints": r1cs.num_constraints,
            "wires": r1cs.num_wires,
            "public": r1cs.num_public,
        }
        (d / "meta.json").write_text(json.dumps(meta))
    if not (d / "meta.json").exists():
        units = _units_for(kind, log, work)
        t0 = time.perf_counter()
        circuit = _compile(kind, units, d)
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        _witness(kind, units, circuit, wtns)
        witness_s = time.perf_counter() - t0
        r1cs = read_r1cs(circuit.r1cs)
        t0 = time.perf_counter()
        write_test_zkey(r1cs, zkey, pool, seed=log, backend=backend)
        setup_s = time.perf_counter() - t0
        toolchain.snarkjs("zkey", "export", "verificationkey", zkey, d / "vk.json", cwd=d)
        meta = {
            "units": units,
            "compile_s": compile_s,
            "witness_s": witness_s,
            "setup_s": setup_s,
            "constraints": r1cs.num_constraints,
            "wires": r1cs.num_wires,
            "public": r1cs.num_public,
        }
        (d / "meta.json").write_text(json.dumps(meta))
    meta = json.loads((d / "meta.json").read_text())
    return {"dir": d, "zkey": zkey, "wtns": wtns, "vk": d / "vk.json", **meta}


def _units_for(kind: str, log: int, work: Path) -> int:
    """Units (blocks, paths, rounds) whose constraints plus public signals just fit 2^log:
    measured from two small compiles (constraints are affine in the unit count)."""
    counts = {}
    for units in (1, 2):
        d = work / f"{kind}_probe_{units}"
        cache = d / "count.json"
        if not cache.exists():
            r1cs = read_r1cs(_compile(kind, units, d).r1cs)
            cache.write_text(json.dumps(r1cs.num_constraints + r1cs.num_public))
        counts[units] = json.loads(cache.read_text())
    per_unit = counts[2] - counts[1]
    base = counts[1] - per_unit
    units = ((1 << log) - 1 - base) // per_unit
    if units < 1:
        raise SystemExit(f"{kind}: one unit takes {counts[1]} constraints, more than 2^{log}")
    return units


def _timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0


def _verified(case: dict, public: Path, proof: Path, snarkjs: bool) -> bool:
    if snarkjs:
        return toolchain.snarkjs_verifies(case["vk"], public, proof)
    if case["vk"].exists():
        return verify_files(case["vk"], public, proof)
    return verify(
        read_zkey(case["zkey"]).vk,
        public_from_json(read_json(public), str(public)),
        proof_from_json(read_json(proof), str(proof)),
    )


def measure_engine(case: dict, runs: int, backend: str, workers: int | None) -> dict:
    """First load into a fresh bases cache, second load from it, then warm proves."""
    d = case["dir"]
    payload = case["wtns"].read_bytes()
    cache = Path(tempfile.mkdtemp(prefix="cuzk-bench-cache-", dir=d))
    cfg = EngineConfig(
        param_dir=d, backend=backend, devices=1, msm_workers=workers, shape_cache=cache
    )
    out: dict = {}
    try:
        for label in ("first_load_s", "second_load_s"):
            with Engine(cfg) as engine:
                t0 = time.perf_counter()
                engine.preload("snarkjs:circuit")
                out[label] = time.perf_counter() - t0
                if label == "first_load_s":
                    continue
                walls, best = [], None
                for _ in range(runs + 1):  # the first prove waits for the bases' decode
                    t0 = time.perf_counter()
                    result = engine.prove(ProofRequest("snarkjs:circuit", payload=payload))
                    wall = time.perf_counter() - t0
                    walls.append(wall)
                    if best is None or wall < best[0]:
                        best = (wall, result)
        assert best is not None
        out["warm_s"] = walls[1:]
        out["first_prove_s"] = walls[0]
        timeline = best[1].timelines[0]
        out["warm_stages"] = {k: round(v, 4) for k, v in timeline.stages.items()}
        out["warm_engine_stages"] = {k: round(v, 4) for k, v in timeline.durations().items()}
        write_result(
            best[1].proof, best[1].public_inputs, d / "engine_proof.json", d / "engine_public.json"
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    out.update(measure_key_cache(case))
    return out


def measure_key_cache(case: dict) -> dict:
    """The key preparation alone (no backend): read_zkey, then prepare into an empty bases
    cache (digest + translation) and again (digest from the stat memo, no translation)."""
    cache = Path(tempfile.mkdtemp(prefix="cuzk-bench-cache-", dir=case["dir"]))
    try:
        t0 = time.perf_counter()
        zkey = read_zkey(case["zkey"])
        read_s = time.perf_counter() - t0
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            prepare(zkey, cache_dir=cache).close()
            times.append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"read_zkey_s": read_s, "prepare_miss_s": times[0], "prepare_hit_s": times[1]}


def measure(case: dict, runs: int, workers: int | None, backend: str, snarkjs: bool) -> dict:
    d = case["dir"]
    big = case["log"] >= 20
    once = 1 if big else runs  # 2^20 runs take minutes: once
    r: dict = {}
    ok = {}
    if snarkjs:
        snarkjs_bin = str(toolchain.ensure_installed() / "snarkjs")
        r["snarkjs_s"] = [
            _timed(
                [
                    snarkjs_bin,
                    "groth16",
                    "prove",
                    str(case["zkey"]),
                    str(case["wtns"]),
                    "sj_proof.json",
                    "sj_public.json",
                ],
                d,
            )
            for _ in range(once)
        ]
        ok["snarkjs"] = _verified(case, d / "sj_public.json", d / "sj_proof.json", True)
    venv_cli = REPO / ".venv" / "bin" / "cuzk"
    cli = [str(venv_cli)] if venv_cli.exists() else [sys.executable, "-m", "cuzk.cli.main"]
    cuzk_cli = [
        *cli,
        "snarkjs",
        "prove",
        str(case["zkey"]),
        str(case["wtns"]),
        "cz_proof.json",
        "cz_public.json",
        "--backend",
        backend,
    ]
    if workers:
        cuzk_cli += ["--workers", str(workers)]
    r["cuzk_cli_s"] = [_timed(cuzk_cli, d) for _ in range(once)]
    ok["cuzk_cli"] = _verified(case, d / "cz_public.json", d / "cz_proof.json", snarkjs)
    r["engine"] = measure_engine(case, runs, backend, workers)
    ok["engine"] = _verified(case, d / "engine_public.json", d / "engine_proof.json", snarkjs)
    kinds = fr.classify(read_wtns(case["wtns"]).values)
    r["witness_zero_one_share"] = float((kinds != 2).mean())
    r["verified"] = ok
    r["verified_by"] = "snarkjs groth16 verify" if snarkjs else "cuzk verify_files"
    return r


def summary_line(kind: str, log: int, case: dict, r: dict, backend: str) -> str:
    cli, e = min(r["cuzk_cli_s"]), r["engine"]
    warm = min(e["warm_s"])
    sj = min(r["snarkjs_s"]) if "snarkjs_s" in r else None
    vs = (lambda t: f" ({sj / t:5.1f}x)") if sj else (lambda _t: "")
    sj_text = f"snarkjs {sj:7.2f} s  " if sj else ""
    return (
        f"{kind:8s} 2^{log} [{backend}] {case['constraints']:>8} constraints  {sj_text}"
        f"cuzk cli {cli:7.2f} s{vs(cli)}  engine warm {warm:7.2f} s{vs(warm)}  "
        f"load {e['first_load_s']:.2f}/{e['second_load_s']:.2f} s (prepare "
        f"{e['prepare_miss_s']:.2f}/{e['prepare_hit_s']:.2f} s)  "
        f"verified {all(r['verified'].values())}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--logs", type=int, nargs="+", default=[16, 18, 20])
    ap.add_argument("--circuits", nargs="+", default=["sha256", "poseidon"], choices=list(KINDS))
    ap.add_argument("--runs", type=int, default=2, help="runs per measurement (1 at 2^20+)")
    ap.add_argument("--workers", type=int, default=None, help="CPU MSM worker processes")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument(
        "--no-snarkjs",
        action="store_true",
        help="skip snarkjs (no node here): reuse the built files, verify with cuzk",
    )
    ap.add_argument("--build-only", action="store_true", help="make the files, measure nothing")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / ".keys" / "snarkjs")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or REPO / "bench" / "results" / f"snarkjs_{args.backend}.json"

    setup_backend = get_backend("cuda") if args.backend == "cuda" else None
    try:
        with MsmPool(args.workers) as pool:
            cases = [
                (k, log, {**build(k, log, args.work, pool, setup_backend), "log": log})
                for k in args.circuits
                for log in args.logs
            ]
    finally:
        if setup_backend is not None:
            setup_backend.close()
    if args.build_only:
        for kind, log, case in cases:
            print(
                f"{kind} 2^{log}: {case['constraints']} constraints, {case['wires']} wires, "
                f"compile {case['compile_s']:.0f} s, setup {case['setup_s']:.0f} s"
            )
        return
    rows = []
    for kind, log, case in cases:
        r = measure(case, args.runs, args.workers, args.backend, not args.no_snarkjs)
        rows.append(
            {
                "circuit": kind,
                "log": log,
                **{
                    k: case[k]
                    for k in ("units", "constraints", "wires", "public", "compile_s", "setup_s")
                },
                **r,
            }
        )
        print(summary_line(kind, log, case, r, args.backend), flush=True)
    result = {
        "command": " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_end": os.getloadavg(),
        },
        "backend": args.backend,
        "versions": {"snarkjs": "0.7.6", "circom2": "0.2.23", "circomlib": "2.0.5"},
        "note": "seconds; best of the runs in the summary, every run in rows; engine warm = "
        "submit to verified result with the key resident",
        "rows": rows,
        "summary": [
            {
                "circuit": r["circuit"],
                "log": r["log"],
                "constraints": r["constraints"],
                "snarkjs_s": min(r["snarkjs_s"]) if "snarkjs_s" in r else None,
                "cuzk_cli_s": min(r["cuzk_cli_s"]),
                "engine_warm_s": min(r["engine"]["warm_s"]),
                "engine_first_load_s": r["engine"]["first_load_s"],
                "engine_second_load_s": r["engine"]["second_load_s"],
                "prepare_miss_s": r["engine"]["prepare_miss_s"],
                "prepare_hit_s": r["engine"]["prepare_hit_s"],
                "median_snarkjs_s": statistics.median(r["snarkjs_s"]) if "snarkjs_s" in r else None,
            }
            for r in rows
        ],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    main()
