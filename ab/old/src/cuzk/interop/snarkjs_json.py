"""snarkjs's JSON files: ``proof.json``, ``public.json`` and ``verification_key.json``.

snarkjs writes numbers as decimal strings and points as projective triples with z = 1 —
G1 ``[x, y, "1"]``, G2 ``[[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]`` — and infinity as
``[0, 1, 0]``; files are ``JSON.stringify(value, null, 1)`` without a trailing newline, which
:func:`dumps` reproduces byte for byte. Readers accept what snarkjs's ``unstringifyBigInts``
accepts (decimal or 0x-hex strings, plain integers) and refuse anything else with BadInput.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cuzk import safejson
from cuzk.curve import G1, G2, g1_identity, g2_identity
from cuzk.curve.encoding import g1_from_bytes, g1_to_bytes, g2_from_bytes, g2_to_bytes
from cuzk.errors import BadInput, shown
from cuzk.field.constants import FP_BYTES, P, R
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof, proofs_from_bytes
from cuzk.interop.curves import CURVE_NAME

_NUMBER = re.compile(r"^(?:[0-9]+|0x[0-9a-fA-F]+)$")
# Decimal digits a number may have: every value in these files is below p (116 digits), with
# room for leading zeros. Longer strings are refused before int() sees them: past 4,300 digits
# int() itself refuses them (Python's guard against slow parsing), with a ValueError.
_MAX_DIGITS = 1000


# -- writing ---------------------------------------------------------------------------------


def dumps(value: Any) -> str:
    """The exact text snarkjs writes for ``value`` (one-space indent, no final newline)."""
    return json.dumps(value, indent=1)


def write_json(path: str | os.PathLike[str], value: Any) -> None:
    """Write ``value`` as snarkjs would, replacing the file atomically."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(dumps(value))
        os.replace(tmp, p)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise BadInput(f"cannot write {p}: {e.strerror}") from e


def g1_to_json(p: G1) -> list[str]:
    raw = g1_to_bytes(p, compressed=False)
    if p == g1_identity():
        return ["0", "1", "0"]
    return [str(int.from_bytes(raw[k : k + FP_BYTES], "big")) for k in (0, FP_BYTES)] + ["1"]


def g2_to_json(p: G2) -> list[list[str]]:
    if p == g2_identity():
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    raw = g2_to_bytes(p, compressed=False)  # zcash order: x.c1 x.c0 y.c1 y.c0
    v = [str(int.from_bytes(raw[k * FP_BYTES : (k + 1) * FP_BYTES], "big")) for k in range(4)]
    return [[v[1], v[0]], [v[3], v[2]], ["1", "0"]]


def proof_to_json(proof: Proof) -> dict[str, Any]:
    """proof.json's object, keys in snarkjs's order."""
    return {
        "pi_a": g1_to_json(proof.a),
        "pi_b": g2_to_json(proof.b),
        "pi_c": g1_to_json(proof.c),
        "protocol": "groth16",
        "curve": CURVE_NAME,
    }


def public_to_json(values: Sequence[int]) -> list[str]:
    return [str(int(v)) for v in values]


def result_to_json(
    proof: bytes, public_inputs: Sequence[Sequence[int]]
) -> tuple[dict[str, Any], list[str]]:
    """proof.json's and public.json's objects for an engine result of a snarkjs key (its
    192-byte proof encoding and per-partition public inputs; snarkjs jobs have one partition).

    Raises:
        BadInput: not exactly one proof, or public inputs for another number of partitions.
    """
    proofs = proofs_from_bytes(proof)
    if len(proofs) != 1 or len(public_inputs) != 1:
        raise BadInput(
            f"a snarkjs result holds one proof and one public-input list; got "
            f"{len(proofs)} and {len(public_inputs)}"
        )
    return proof_to_json(proofs[0]), public_to_json(public_inputs[0])


def write_result(
    proof: bytes,
    public_inputs: Sequence[Sequence[int]],
    proof_path: str | os.PathLike[str],
    public_path: str | os.PathLike[str],
) -> None:
    """Write an engine result as snarkjs's proof.json and public.json."""
    proof_obj, public_obj = result_to_json(proof, public_inputs)
    write_json(proof_path, proof_obj)
    write_json(public_path, public_obj)


# -- reading ---------------------------------------------------------------------------------


def read_json(path: str | os.PathLike[str]) -> Any:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not a text file ({e.reason})") from e
    return safejson.loads(text, str(path), invalid="not JSON")


def number(value: Any, where: str) -> int:
    """A non-negative integer written as snarkjs writes (or accepts) it."""
    if isinstance(value, bool):
        raise BadInput(f"{where}: expected a number, got {value!r}")
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and _NUMBER.match(value):
        if value.startswith("0x"):
            return int(value, 16)  # (a power-of-two base has no length limit)
        return safejson.decimal(value, where, _MAX_DIGITS)
    raise BadInput(f"{where}: expected a non-negative decimal string, got {shown(value)}")


def _fp(value: Any, where: str) -> int:
    x = number(value, where)
    if x >= P:
        raise BadInput(f"{where}: coordinate is not a field element (≥ p)")
    return x


def _triple(value: Any, where: str) -> list:
    if not isinstance(value, list) or len(value) not in (2, 3):
        raise BadInput(f"{where}: expected a point [x, y, z], got {str(value)[:80]}")
    return value


def g1_from_json(value: Any, where: str) -> G1:
    """A G1 point from [x, y, z] (z = 1, or 0 for infinity), checked on curve and in the
    subgroup."""
    v = _triple(value, where)
    z = number(v[2], f"{where}.z") if len(v) == 3 else 1
    if z == 0:
        return g1_identity()
    if z != 1:
        raise BadInput(f"{where}: only affine points (z = 1) are supported, got z = {z}")
    x, y = _fp(v[0], f"{where}.x"), _fp(v[1], f"{where}.y")
    try:
        return g1_from_bytes(
            x.to_bytes(FP_BYTES, "big") + y.to_bytes(FP_BYTES, "big"), compressed=False
        )
    except BadInput as e:
        raise BadInput(f"{where}: {e}") from e


def g2_from_json(value: Any, where: str) -> G2:
    """A G2 point from [[x0, x1], [y0, y1], [z0, z1]] (z = 1 or 0), fully checked."""
    v = _triple(value, where)
    coords = []
    for k, name in enumerate(("x", "y", "z")[: len(v)]):
        c = v[k]
        if not isinstance(c, list) or len(c) != 2:
            raise BadInput(f"{where}.{name}: expected [c0, c1], got {str(c)[:80]}")
        coords.append([_fp(c[0], f"{where}.{name}.c0"), _fp(c[1], f"{where}.{name}.c1")])
    z = coords[2] if len(coords) == 3 else [1, 0]
    if z == [0, 0]:
        return g2_identity()
    if z != [1, 0]:
        raise BadInput(f"{where}: only affine points (z = [1, 0]) are supported, got {z}")
    (x0, x1), (y0, y1) = coords[0], coords[1]
    raw = b"".join(c.to_bytes(FP_BYTES, "big") for c in (x1, x0, y1, y0))
    try:
        return g2_from_bytes(raw, compressed=False)
    except BadInput as e:
        raise BadInput(f"{where}: {e}") from e


def _field(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise BadInput(f"{where}: expected a JSON object")
    if key not in obj:
        raise BadInput(f"{where}: missing {key!r}")
    return obj[key]


def _check_kind(obj: dict, where: str) -> None:
    protocol = obj.get("protocol", "groth16")
    if protocol != "groth16":
        raise BadInput(f"{where}: protocol is {protocol!r}; cuzk verifies groth16 only")
    curve = obj.get("curve", CURVE_NAME)
    if curve != CURVE_NAME:
        raise BadInput(f"{where}: curve is {curve!r}; cuzk verifies {CURVE_NAME!r} only")


def proof_from_json(obj: Any, where: str) -> Proof:
    """Proof points from proof.json's object (``where`` names the file in errors)."""
    a = g1_from_json(_field(obj, "pi_a", where), f"{where}: pi_a")
    b = g2_from_json(_field(obj, "pi_b", where), f"{where}: pi_b")
    c = g1_from_json(_field(obj, "pi_c", where), f"{where}: pi_c")
    _check_kind(obj, where)
    return Proof(a, b, c)


def public_from_json(obj: Any, where: str) -> list[int]:
    """public.json's signals; each must be < r (snarkjs rejects the proof otherwise)."""
    if not isinstance(obj, list):
        raise BadInput(f"{where}: expected a JSON list of decimal strings")
    out = [number(x, f"{where}: signal {i}") for i, x in enumerate(obj)]
    for i, x in enumerate(out):
        if x >= R:
            raise BadInput(f"{where}: signal {i} is not a field element (≥ r)")
    return out


def vk_from_json(obj: Any, where: str) -> VerifyingKey:
    """verification_key.json → a VerifyingKey (β₁ and δ₁, prover-only, are set to infinity).

    Raises:
        BadInput: another protocol or curve, a missing field, nPublic ≠ len(IC) − 1, or a
            point that is malformed, off the curve or outside the subgroup.
    """
    if not isinstance(obj, dict):
        raise BadInput(f"{where}: expected a JSON object")
    _check_kind(obj, where)
    ic_raw = _field(obj, "IC", where)
    if not isinstance(ic_raw, list) or not ic_raw:
        raise BadInput(f"{where}: IC must be a non-empty list of points")
    ic = tuple(g1_from_json(p, f"{where}: IC[{i}]") for i, p in enumerate(ic_raw))
    if "nPublic" in obj and number(obj["nPublic"], f"{where}: nPublic") != len(ic) - 1:
        raise BadInput(f"{where}: nPublic is {obj['nPublic']} but IC has {len(ic)} points")
    return VerifyingKey(
        alpha_g1=g1_from_json(_field(obj, "vk_alpha_1", where), f"{where}: vk_alpha_1"),
        beta_g1=g1_identity(),
        beta_g2=g2_from_json(_field(obj, "vk_beta_2", where), f"{where}: vk_beta_2"),
        gamma_g2=g2_from_json(_field(obj, "vk_gamma_2", where), f"{where}: vk_gamma_2"),
        delta_g1=g1_identity(),
        delta_g2=g2_from_json(_field(obj, "vk_delta_2", where), f"{where}: vk_delta_2"),
        ic=ic,
    )
