"""The SHA-256 gadget: bellperson's counts, standard vectors, hashlib on random inputs."""

from __future__ import annotations

import hashlib
import random

import pytest

from cuzk.gadgets.boolean import FALSE, TRUE, AllocatedBit, Boolean
from cuzk.gadgets.multipack import bytes_to_bits
from cuzk.gadgets.sha256 import IV, compress_native, compression, iv, sha256
from cuzk.r1cs import WitnessCS
from tests.gadgets.helpers import flip, synthesize_all, tampered

COMPRESSION_CONSTRAINTS = 25_840  # bellperson test_full_block
SHA256_512_CONSTRAINTS = 44_874  # bellperson test_full_hash


def _alloc_bits(cs, bits, values):
    return [
        Boolean(AllocatedBit.alloc(cs, b if values else None, f"input bit {i}"))
        for i, b in enumerate(bits)
    ]


def _digest(bits: list[Boolean]) -> bytes:
    return bytes(
        sum(int(b.value) << (7 - j) for j, b in enumerate(bits[i : i + 8]))
        for i in range(0, 256, 8)
    )


def _words_be(words) -> bytes:
    return b"".join(w.value.to_bytes(4, "big") for w in words)


def test_native_compression_reproduces_hashlib(seed):
    rnd = random.Random(seed)
    data = rnd.randbytes(rnd.randrange(0, 200))
    n = len(data)
    padded = data + b"\x80" + b"\x00" * ((55 - n) % 64) + (8 * n).to_bytes(8, "big")
    state = IV
    for i in range(0, len(padded), 64):
        state = compress_native(state, padded[i : i + 64])
    assert b"".join(x.to_bytes(4, "big") for x in state) == hashlib.sha256(data).digest()


def test_compression_of_512_allocated_bits(seed):
    rnd = random.Random(seed)
    block = rnd.randbytes(64)
    bits = bytes_to_bits(block)

    def build(cs, values):
        return compression(cs, _alloc_bits(cs, bits, values), iv(), "sha256")

    run = synthesize_all(build)
    assert run.num_constraints - 512 == COMPRESSION_CONSTRAINTS
    expect = compress_native(IV, block)
    assert tuple(w.value for w in run.result) == expect
    assert tuple(w.value for w in run.witness_result) == expect
    # Every word's bits spell its value.
    for w in run.result:
        assert sum(int(b.value) << i for i, b in enumerate(w.bits)) == w.value
    # Negative: flip one random internal bit; some SHA-256 constraint must name the damage —
    # a gadget constraint, or the batched sum check of its additions ("multieq N", which the
    # MultiEq names in the caller's namespace as bellperson does).
    victim = rnd.randrange(512, run.shape.num_aux)
    index, name = tampered(build, victim, flip)
    assert index >= 512 and name.startswith(("sha256/", "multieq ")), (victim, index, name)


def test_sha256_of_512_allocated_bits(seed):
    rnd = random.Random(seed)
    data = rnd.randbytes(64)

    def build(cs, values):
        return sha256(cs, _alloc_bits(cs, bytes_to_bits(data), values), "sha256")

    run = synthesize_all(build)
    assert run.num_constraints - 512 == SHA256_512_CONSTRAINTS
    assert _digest(run.result) == hashlib.sha256(data).digest()
    assert _digest(run.witness_result) == hashlib.sha256(data).digest()
    # The second (padding) block runs under its own namespace.
    assert any(n.startswith("sha256/block 1/") for n in run.shape.names)


@pytest.mark.parametrize(
    ("message", "digest"),
    [
        (b"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
        ),
        (b"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ],
)
def test_fips_180_vectors_in_witness_mode(message, digest):
    """FIPS 180-2 examples (and the empty string) with every message bit allocated."""
    cs = WitnessCS()
    out = sha256(cs, _alloc_bits(cs, bytes_to_bits(message), True))
    assert _digest(out).hex() == digest


def test_constant_input_costs_nothing():
    """bellperson's test_blank_hash: an all-constant block folds to the digest, 0 constraints."""
    bits = [TRUE] + [FALSE] * 511
    run = synthesize_all(lambda cs, values: compression(cs, bits, iv()))
    assert run.num_constraints == 0 and run.shape.num_aux == 0
    assert _words_be(run.result).hex() == hashlib.sha256(b"").hexdigest()


def test_mixed_constant_bits_match_hashlib(seed):
    """Filecoin pads 255-bit field elements with constant zero bits before hashing; the folded
    circuit must still compute the right digest."""
    rnd = random.Random(seed)
    data = bytearray(rnd.randbytes(64))
    data[31] &= 0x3F
    data[63] &= 0x3F
    const_positions = {31 * 8, 31 * 8 + 1, 63 * 8, 63 * 8 + 1}  # the two top bits of each value

    def build(cs, values):
        bits = bytes_to_bits(bytes(data))
        return sha256(
            cs,
            [
                FALSE
                if i in const_positions
                else Boolean(AllocatedBit.alloc(cs, b if values else None, f"bit {i}"))
                for i, b in enumerate(bits)
            ],
        )

    run = synthesize_all(build)
    assert _digest(run.result) == hashlib.sha256(bytes(data)).digest()
    assert run.num_constraints < 508 + SHA256_512_CONSTRAINTS
