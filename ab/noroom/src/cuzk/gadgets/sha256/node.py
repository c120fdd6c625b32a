"""Filecoin's SHA-256 node hash (filecoin-hashers ``Sha256Function``), native and in-circuit.

Natively a node is SHA-256 of the children's 32-byte little-endian encodings, concatenated, with
the top two bits of byte 31 cleared so the digest is a valid Fr element ("trim to fr32"); a
domain value maps to Fr by reading its bytes little-endian.

In the circuit (``hash_multi_leaf_circuit`` / ``hash2_circuit``) each child is decomposed with
``to_bits_le`` (256 constraints), padded with one constant zero bit to 256, and every byte's bits
are reversed into SHA-256's most-significant-first order; the digest's bytes are reversed back,
and the first 254 little-endian bits are packed into one number (which is the trim: bits 254 and
255 are dropped). That constant pad bit per child is why these hashes cost a little less than
SHA-256 of fully allocated input.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from cuzk.field.constants import R
from cuzk.gadgets._names import Name, leaf
from cuzk.gadgets.boolean import FALSE, Boolean
from cuzk.gadgets.multipack import FR_CAPACITY, pack_bits
from cuzk.gadgets.num import AllocatedNum
from cuzk.gadgets.sha256.circuit import sha256
from cuzk.gadgets.sha256.message import Message, fast_path, field_bits, sha256_packed
from cuzk.r1cs import ConstraintSystem, WitnessCS


def trim_to_fr32(digest: bytes) -> bytes:
    """Clear the two top bits of byte 31 (the digest read little-endian is then < 2^254 < r)."""
    return digest[:31] + bytes([digest[31] & 0x3F])


def node_hash(children: Sequence[int]) -> int:
    """The native node hash of field elements (as Filecoin's SHA-256 Merkle trees compute it)."""
    data = b"".join((c % R).to_bytes(32, "little") for c in children)
    return int.from_bytes(trim_to_fr32(hashlib.sha256(data).digest()), "little")


def _byte_swap(bits: Sequence[Boolean]) -> list[Boolean]:
    """Reverse the bit order inside each byte (little-endian ↔ SHA-256's big-endian bytes)."""
    return [b for i in range(0, len(bits), 8) for b in reversed(bits[i : i + 8])]


def hash_bits(cs: ConstraintSystem, bits: Sequence[Boolean], ns: Name = None) -> AllocatedNum:
    """``hash_circuit``: SHA-256 of big-endian-per-byte bits, packed as one Fr (first 254 LE
    bits of the digest)."""
    be = sha256(cs, bits, leaf(ns, "hash"))
    return pack_bits(cs, _byte_swap(be)[:FR_CAPACITY], leaf(ns, "pack_le"))


def _num_bits(cs: ConstraintSystem, num: AllocatedNum, ns: Name) -> list[Boolean]:
    bits = num.to_bits_le(cs, ns)
    bits += [FALSE] * (-len(bits) % 8)
    return _byte_swap(bits)


def sha256_node(
    cs: ConstraintSystem, children: Sequence[AllocatedNum], ns: Name = None
) -> AllocatedNum:
    """``hash_multi_leaf_circuit``: the node hash of any number of children."""
    if fast_path(cs):
        return _witness_node(cs, children, ns)
    bits: list[Boolean] = []
    for i, child in enumerate(children):
        bits += _num_bits(cs, child, leaf(ns, f"{i}_num_into_bits"))
    return hash_bits(cs, bits, ns)


def sha256_hash2(
    cs: ConstraintSystem, a: AllocatedNum, b: AllocatedNum, ns: Name = None
) -> AllocatedNum:
    """``hash2_circuit``: the node hash of two children (only the namespaces differ)."""
    if fast_path(cs):
        return _witness_node(cs, (a, b), ns)
    bits = _num_bits(cs, a, leaf(ns, "a_bits"))
    bits += _num_bits(cs, b, leaf(ns, "b_bits"))
    return hash_bits(cs, bits, ns)


def _witness_node(cs: WitnessCS, children: Sequence[AllocatedNum], ns: Name) -> AllocatedNum:
    """The node hash in witness mode: the same values, the children's bits in bulk."""
    bits = [field_bits(cs, child) for child in children]
    msg = Message()
    for b in bits:
        msg.add_field(b)
    return sha256_packed(cs, msg, ns)
