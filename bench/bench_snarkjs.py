"""snarkjs 0.7.6 vs cuzk (CPU) on the same .zkey and .wtns, BLS12-381.

    python bench/bench_snarkjs.py --logs 12 14 16 [--circuits bits dense] [--runs 2]

For each circuit kind and size 2^log: circom2 compiles a generated circuit whose constraints
(plus public signals) fill the 2^log domain, snarkjs computes the witness, and cuzk's
insecure test setup (cuzk.interop.zkey_setup; snarkjs's own ceremony takes hours at 2^16 here)
writes the key. Then, on identical files:

* snarkjs: ``snarkjs groth16 prove`` wall time, as a user runs it (node start included);
* cuzk CLI: ``cuzk snarkjs prove`` wall time, cold (Python start, numba cache load, worker
  start, key translation included);
* cuzk warm: in-process with the key prepared and the backend's bases resident (the daemon's
  steady state), with the per-stage split.

Every proof is checked with ``snarkjs groth16 verify``. Circuits (ours, written for the
benchmark; not circomlib's): "bits" is SHA-256-like — 32-bit words decomposed into bits,
XORed, rotated and added mod 2^32, so most witness values are 0 or 1; "dense" is
Poseidon-like — a width-3 state through x^5 S-boxes and an MDS mix, so every value is a full
field element. Generated files are cached under --work. Writes bench/results/snarkjs.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.interop import toolchain  # noqa: E402

from cuzk.backend import get_backend  # noqa: E402
from cuzk.curve.pool import MsmPool  # noqa: E402
from cuzk.field import fr  # noqa: E402
from cuzk.groth16.prover import Timings  # noqa: E402
from cuzk.interop import (  # noqa: E402
    prepare,
    proof_to_json,
    prove,
    public_to_json,
    read_r1cs,
    read_wtns,
    read_zkey,
    write_json,
)
from cuzk.interop.zkey_setup import write_test_zkey  # noqa: E402

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

KINDS = {
    "bits": (BITS, {"w0": 0x6A09E667, "w1": 0xBB67AE85}),
    "dense": (DENSE, {"s0": 1, "s1": 2, "s2": 3}),
}


def build(kind: str, log: int, work: Path, pool: MsmPool) -> dict:
    """Compile, compute the witness and write the key for ``kind`` at 2^log (cached)."""
    d = work / f"{kind}_{log}"
    zkey, wtns = d / "circuit.zkey", d / "circuit.wtns"
    if not zkey.exists():
        d.mkdir(parents=True, exist_ok=True)
        template, inputs = KINDS[kind]
        rounds = _rounds_for(kind, log, work)
        (d / "circuit.circom").write_text(template.format(rounds=rounds))
        t0 = time.perf_counter()
        circuit = toolchain.compile_circuit(d / "circuit.circom", d)
        compile_s = time.perf_counter() - t0
        toolchain.witness(circuit, inputs, wtns)
        r1cs = read_r1cs(circuit.r1cs)
        t0 = time.perf_counter()
        write_test_zkey(r1cs, zkey, pool, seed=log)
        setup_s = time.perf_counter() - t0
        toolchain.snarkjs("zkey", "export", "verificationkey", zkey, d / "vk.json", cwd=d)
        meta = {"rounds": rounds, "compile_s": compile_s, "setup_s": setup_s,
                "constraints": r1cs.num_constraints, "wires": r1cs.num_wires,
                "public": r1cs.num_public}
        (d / "meta.json").write_text(json.dumps(meta))
    meta = json.loads((d / "meta.json").read_text())
    return {"dir": d, "zkey": zkey, "wtns": wtns, "vk": d / "vk.json", **meta}


def _rounds_for(kind: str, log: int, work: Path) -> int:
    """Rounds whose constraints plus public signals just fit 2^log: measured from two small
    compiles (constraints are affine in the round count)."""
    counts = {}
    for rounds in (2, 4):
        d = work / f"{kind}_probe_{rounds}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "circuit.circom").write_text(KINDS[kind][0].format(rounds=rounds))
        r1cs = read_r1cs(toolchain.compile_circuit(d / "circuit.circom", d).r1cs)
        counts[rounds] = r1cs.num_constraints + r1cs.num_public
    per_round = (counts[4] - counts[2]) // 2
    base = counts[2] - 2 * per_round
    return ((1 << log) - 1 - base) // per_round


def _timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0


def measure(case: dict, runs: int, workers: int | None) -> dict:
    d = case["dir"]
    snarkjs_bin = str(toolchain.ensure_installed() / "snarkjs")
    snarkjs_s = [
        _timed([snarkjs_bin, "groth16", "prove", str(case["zkey"]), str(case["wtns"]),
                "sj_proof.json", "sj_public.json"], d)
        for _ in range(runs)
    ]
    cuzk_cli = [str(REPO / ".venv" / "bin" / "cuzk"), "snarkjs", "prove", str(case["zkey"]),
                str(case["wtns"]), "cz_proof.json", "cz_public.json"]
    if workers:
        cuzk_cli += ["--workers", str(workers)]
    cli_s = [_timed(cuzk_cli, d) for _ in range(runs)]
    ok = {
        "snarkjs": toolchain.snarkjs_verifies(case["vk"], d / "sj_public.json",
                                              d / "sj_proof.json"),
        "cuzk_cli": toolchain.snarkjs_verifies(case["vk"], d / "cz_public.json",
                                               d / "cz_proof.json"),
    }

    t0 = time.perf_counter()
    zkey = read_zkey(case["zkey"])
    witness = read_wtns(case["wtns"])
    key = prepare(zkey)
    load_s = time.perf_counter() - t0
    backend = get_backend("cpu", workers=workers)
    warm = []
    try:
        for ps in key.bases.sets().values():
            backend.preload(ps)
        for _ in range(runs + 1):  # the first run loads the bases into the workers
            timings = Timings()
            t0 = time.perf_counter()
            proof, public = prove(key, witness, backend, timings=timings)
            warm.append((time.perf_counter() - t0, timings.stages))
    finally:
        backend.close()
        key.close()
    write_json(d / "warm_proof.json", proof_to_json(proof))
    write_json(d / "warm_public.json", public_to_json(public))
    ok["cuzk_warm"] = toolchain.snarkjs_verifies(case["vk"], d / "warm_public.json",
                                                 d / "warm_proof.json")
    best_warm = min(warm[1:], key=lambda x: x[0])
    kinds = fr.classify(witness.values)
    return {
        "snarkjs_s": snarkjs_s,
        "cuzk_cli_s": cli_s,
        "cuzk_warm_s": [w for w, _ in warm[1:]],
        "cuzk_warm_stages": {k: round(v, 4) for k, v in best_warm[1].items()},
        "cuzk_load_s": load_s,
        "witness_zero_one_share": float((kinds != 2).mean()),
        "verified_by_snarkjs": ok,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--logs", type=int, nargs="+", default=[12, 14, 16])
    ap.add_argument("--circuits", nargs="+", default=["bits", "dense"], choices=list(KINDS))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--work", type=Path, default=REPO / "bench" / ".keys" / "snarkjs")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "snarkjs.json")
    args = ap.parse_args()

    rows = []
    with MsmPool(args.workers) as pool:
        cases = [(k, log, build(k, log, args.work, pool)) for k in args.circuits
                 for log in args.logs]
    for kind, log, case in cases:
        r = measure(case, args.runs, args.workers)
        row = {"circuit": kind, "log": log, **{k: case[k] for k in
               ("rounds", "constraints", "wires", "public", "compile_s", "setup_s")}, **r}
        rows.append(row)
        sj, cli, warm = min(r["snarkjs_s"]), min(r["cuzk_cli_s"]), min(r["cuzk_warm_s"])
        print(f"{kind:5s} 2^{log}: {case['constraints']:>6} constraints  snarkjs {sj:6.2f} s  "
              f"cuzk cli {cli:6.2f} s ({sj / cli:4.2f}x)  warm {warm:6.2f} s "
              f"({sj / warm:4.2f}x)  verified {all(r['verified_by_snarkjs'].values())}",
              flush=True)
    result = {
        "command": " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "loadavg_end": os.getloadavg()},
        "versions": {"snarkjs": "0.7.6", "circom2": "0.2.23"},
        "note": "best of --runs in the summary; all runs listed; seconds",
        "rows": rows,
        "summary": [
            {"circuit": r["circuit"], "log": r["log"],
             "snarkjs_s": min(r["snarkjs_s"]), "cuzk_cli_s": min(r["cuzk_cli_s"]),
             "cuzk_warm_s": min(r["cuzk_warm_s"]),
             "median_snarkjs_s": statistics.median(r["snarkjs_s"])}
            for r in rows
        ],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
