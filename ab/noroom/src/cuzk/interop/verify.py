"""Verification of snarkjs-format statements: ``vk.json``, ``public.json``, ``proof.json``.

The pairing equation is snarkjs's and bellperson's alike, so this only translates the JSON and
calls :func:`cuzk.groth16.verifier.verify`: False for a well-formed proof that does not check,
BadInput for files that are not a statement of this key.
"""

from __future__ import annotations

import os
from typing import Any

from cuzk.groth16.verifier import verify
from cuzk.interop.snarkjs_json import proof_from_json, public_from_json, read_json, vk_from_json


def verify_json(
    vk: Any, public: Any, proof: Any, where: tuple[str, str, str] | None = None
) -> bool:
    """Verify parsed JSON values; ``where`` names the three sources in errors."""
    vk_name, public_name, proof_name = where or ("vk", "public", "proof")
    key = vk_from_json(vk, vk_name)
    signals = public_from_json(public, public_name)
    return verify(key, signals, proof_from_json(proof, proof_name))


def verify_files(
    vk_path: str | os.PathLike[str],
    public_path: str | os.PathLike[str],
    proof_path: str | os.PathLike[str],
) -> bool:
    """``snarkjs groth16 verify VK PUBLIC PROOF``, in-process.

    Raises:
        BadInput: unreadable or malformed files, a count of signals the key does not take.
    """
    return verify_json(
        read_json(vk_path),
        read_json(public_path),
        read_json(proof_path),
        (str(vk_path), str(public_path), str(proof_path)),
    )
