"""What a PoRep prover derives rather than reads: SDR labels, the parents a label hashes, and
the challenged nodes of each partition (interactive, non-interactive and synthetic PoRep), as
upstream's storage-proofs-porep derives them. The C1 reader (:mod:`.porep_c1`) checks a
payload against them, and the sealers (:mod:`.seal`) build sectors with them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from cuzk.circuits.filecoin.porep import TOTAL_PARENTS


def label(replica_id: int, layer: int, node: int, parents: Sequence[int]) -> int:
    """An SDR label: SHA-256(replica_id ‖ layer u32 BE ‖ node u64 BE ‖ 20 zero bytes ‖ parents),
    the top two bits cleared, read little-endian (upstream ``LabelingProof::create_label``)."""
    h = hashlib.sha256()
    h.update(replica_id.to_bytes(32, "little"))
    h.update(layer.to_bytes(4, "big") + node.to_bytes(8, "big") + bytes(20))
    h.update(b"".join(p.to_bytes(32, "little") for p in parents))
    return int.from_bytes(h.digest(), "little") & ((1 << 254) - 1)


def expected_label_parents(
    drg_rows: Sequence[Sequence[int]], exp_rows: Sequence[Sequence[int]], layer: int
) -> list[int]:
    """The 37 parent labels of a node's label in ``layer`` (1-based): DRG parents' labels in
    that layer then (from layer 2) expander parents' labels in the previous one, cycled."""
    base = [r[layer - 1] for r in drg_rows]
    if layer > 1:
        base += [r[layer - 2] for r in exp_rows]
    return [base[i % len(base)] for i in range(TOTAL_PARENTS)]


def interactive_challenges(
    replica_id: int, seed: bytes, nodes: int, per_partition: int, k: int
) -> list[int]:
    """Upstream ``InteractiveChallenges::derive`` for partition ``k``: SHA-256(replica_id ‖ seed
    ‖ j u32 LE) read little-endian, mod (nodes − 1), plus 1 (node 0 is never challenged)."""
    out = []
    for i in range(per_partition):
        j = per_partition * k + i
        d = hashlib.sha256(replica_id.to_bytes(32, "little") + seed + j.to_bytes(4, "little"))
        out.append(int.from_bytes(d.digest(), "little") % (nodes - 1) + 1)
    return out


def ni_challenges(replica_id: int, comm_r: int, nodes: int, per_partition: int,
                  k: int) -> list[int]:  # fmt: skip
    """Upstream ``NiChallenges::derive``: as interactive, with a tag and comm_r instead of the
    seed."""
    tag = b"filecoin.io|PoRep|1|NonInteractive|1"
    pre = tag + replica_id.to_bytes(32, "little") + comm_r.to_bytes(32, "little")
    out = []
    for i in range(per_partition):
        j = per_partition * k + i
        d = hashlib.sha256(pre + j.to_bytes(4, "little")).digest()
        out.append(int.from_bytes(d, "little") % (nodes - 1) + 1)
    return out


_SYNTH_NONCE = b"synth-porep\x00"
_SYNTH_DEFAULT_COUNT = 1 << 18  # synthetic challenges per sector (capped at the node count)


#: The quarter rounds of one ChaCha double round (RFC 8439 §2.3): four columns, four diagonals.
_CHACHA_QUARTERS = (
    (0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
    (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14),
)  # fmt: skip


def _chacha20_stream(key: bytes, nonce: bytes, offset: int, length: int) -> bytes:
    """RFC 8439 ChaCha20 keystream bytes ``offset … offset + length`` (counter from 0)."""

    def rotl(x: int, n: int) -> int:
        return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF

    def qr(s: list[int], a: int, b: int, c: int, d: int) -> None:
        s[a] = (s[a] + s[b]) & 0xFFFFFFFF
        s[d] = rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & 0xFFFFFFFF
        s[b] = rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & 0xFFFFFFFF
        s[d] = rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & 0xFFFFFFFF
        s[b] = rotl(s[b] ^ s[c], 7)

    consts = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    k = [int.from_bytes(key[i : i + 4], "little") for i in range(0, 32, 4)]
    n = [int.from_bytes(nonce[i : i + 4], "little") for i in range(0, 12, 4)]
    out = bytearray()
    block = offset // 64
    while len(out) < offset % 64 + length:
        init = consts + k + [block & 0xFFFFFFFF] + n
        s = list(init)
        for _ in range(10):  # a column round, then a diagonal round
            for a, b, c, d in _CHACHA_QUARTERS:
                qr(s, a, b, c, d)
        out += b"".join(
            ((x + y) & 0xFFFFFFFF).to_bytes(4, "little") for x, y in zip(s, init, strict=True)
        )
        block += 1
    start = offset % 64
    return bytes(out[start : start + length])


def synthetic_challenges(
    replica_id: int,
    comm_r: int,
    seed: bytes,
    nodes: int,
    per_partition: int,
    k: int,
    num_synth: int | None = None,
) -> list[int]:
    """Upstream ``SynthChallenges::derive`` for partition ``k``: ChaCha20 keyed by keyed
    BLAKE2b of (replica_id, seed) picks indexes into the synthetic challenge set, whose i-th
    element is the i-th 32-byte keystream word (keyed by (replica_id, comm_r)) mod (nodes − 1),
    plus 1."""
    num = num_synth if num_synth is not None else min(nodes, _SYNTH_DEFAULT_COUNT)
    rid = replica_id.to_bytes(32, "little")
    gen_key = hashlib.blake2b(
        rid + comm_r.to_bytes(32, "little"),
        digest_size=32,
        key=b"filecoin.io|PoRep|1|Synthetic|1|Generation",
    ).digest()
    sel_key = hashlib.blake2b(
        rid + seed, digest_size=32, key=b"filecoin.io|PoRep|1|Synthetic|1|Selection"
    ).digest()
    raw = _chacha20_stream(sel_key, _SYNTH_NONCE, 4 * per_partition * k, 4 * per_partition)
    out = []
    for j in range(per_partition):
        i = int.from_bytes(raw[4 * j : 4 * j + 4], "little") % num
        word = _chacha20_stream(gen_key, _SYNTH_NONCE, 32 * i, 32)
        out.append(int.from_bytes(word, "little") % (nodes - 1) + 1)
    return out
