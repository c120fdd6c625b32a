"""Drives the pinned npm toolchain (snarkjs 0.7.6, circom2 0.2.23) for tests, fixtures and the
benchmark.

The packages are installed on demand into ``tests/interop/node`` from its committed
``package-lock.json`` (``npm ci``), so every run uses the same versions. Nothing here is part
of cuzk: it only makes the files cuzk reads and checks the proofs it writes.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

NODE_DIR = Path(__file__).resolve().parent / "node"
BIN = NODE_DIR / "node_modules" / ".bin"


class ToolchainError(RuntimeError):
    """An npm tool failed; the message carries its command line and output."""


def unavailable_reason() -> str | None:
    """Why the npm toolchain cannot be used here, or None when node and npm are present."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not on PATH (needed for snarkjs/circom2 tests)"
    return None


def ensure_installed() -> Path:
    """Install the pinned packages if they are not yet; returns the ``.bin`` directory.

    Serialised with a lock file so parallel test processes install once.
    """
    if (BIN / "snarkjs").exists() and (BIN / "circom2").exists():
        return BIN
    with open(Path(tempfile.gettempdir()) / "cuzk-npm-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (BIN / "snarkjs").exists() or not (BIN / "circom2").exists():
            _run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], NODE_DIR)
    return BIN


def _run(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise ToolchainError(
            f"{' '.join(map(str, cmd))} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def snarkjs(*args: str | Path, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run the pinned snarkjs CLI."""
    return _run([str(ensure_installed() / "snarkjs"), *map(str, args)], cwd, check)


def snarkjs_verifies(vk: Path, public: Path, proof: Path) -> bool:
    """``snarkjs groth16 verify``: True when it prints OK and exits 0."""
    proc = snarkjs("groth16", "verify", vk, public, proof, cwd=vk.parent, check=False)
    return proc.returncode == 0 and "OK!" in proc.stdout


@dataclass(frozen=True)
class Circuit:
    """A compiled circom circuit."""

    r1cs: Path
    wasm: Path


def compile_circuit(source: Path, out_dir: Path) -> Circuit:
    """circom2 → .r1cs and witness-generator .wasm, for BLS12-381."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _run(
        [
            str(ensure_installed() / "circom2"),
            str(source),
            "--r1cs",
            "--wasm",
            "--prime",
            "bls12381",
            "-o",
            str(out_dir),
        ],
        out_dir,
    )
    stem = source.stem
    return Circuit(out_dir / f"{stem}.r1cs", out_dir / f"{stem}_js" / f"{stem}.wasm")


def witness(circuit: Circuit, inputs: dict, out: Path) -> Path:
    """``snarkjs wtns calculate`` for ``inputs`` (a dict of signal name → value)."""
    inputs_path = out.with_suffix(".input.json")
    inputs_path.write_text(json.dumps({k: str(v) for k, v in inputs.items()}))
    snarkjs("wtns", "calculate", circuit.wasm, inputs_path, out, cwd=out.parent)
    return out


def powers_of_tau(power: int, out: Path) -> Path:
    """A prepared (phase 2) powers-of-tau file for 2^power constraints, one contribution.

    Slow beyond small powers (snarkjs, BLS12-381, 2 cores: ~8 s at 2^8, minutes at 2^12), so
    callers cache the result.
    """
    if out.exists():
        return out
    work = out.parent
    work.mkdir(parents=True, exist_ok=True)
    p0, p1 = work / f"pot{power}_0.ptau", work / f"pot{power}_1.ptau"
    snarkjs("powersoftau", "new", "bls12381", str(power), p0, cwd=work)
    snarkjs("powersoftau", "contribute", p0, p1, "--name=cuzk", "-e=cuzk test entropy", cwd=work)
    tmp = out.with_suffix(".partial")
    snarkjs("powersoftau", "prepare", "phase2", p1, tmp, cwd=work)
    tmp.rename(out)
    p0.unlink()
    p1.unlink()
    return out


def groth16_setup(r1cs: Path, ptau: Path, zkey: Path, vk: Path) -> tuple[Path, Path]:
    """Circuit-specific setup with one contribution, and the exported verification key."""
    work = zkey.parent
    z0 = zkey.with_suffix(".0.zkey")
    snarkjs("groth16", "setup", r1cs, ptau, z0, cwd=work)
    snarkjs("zkey", "contribute", z0, zkey, "--name=cuzk", "-e=cuzk zkey entropy", cwd=work)
    z0.unlink()
    snarkjs("zkey", "export", "verificationkey", zkey, vk, cwd=work)
    return zkey, vk
