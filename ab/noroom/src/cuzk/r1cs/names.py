"""Constraint names, stored as (prefix, leaf) ids per row instead of one string per row.

Names only label constraints (CheckCS and the prover's unsatisfied-constraint report), but a
32 GiB PoRep partition has 130M of them, ~120 characters each: as Python strings they alone
would outweigh the matrices. Nearly every name is a namespace path plus a leaf the circuit
repeats (a SHA-256 template's ~26,000 suffixes recur in every compression; a gadget's
``"boolean constraint"`` in every bit), so a row keeps two integers: a prefix id (a namespace
path ending in ``/``, or empty) and a leaf id, each into a table of distinct strings. The name
is ``prefix + leaf``; the tables are megabytes, the rows 2–8 bytes each.

:class:`NameBuilder` collects them during shape synthesis; :class:`ConstraintNames` is the
frozen result (its arrays may be memory-mapped from the shape cache).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from cuzk.r1cs.chunks import GrowArray, id_dtype, index_dtype

#: Prefixes remembered for reuse while building (a SHA-256 compression or a namespace makes a
#: new one; only recent ones recur), so the cache stays small however many there are.
PREFIX_CACHE = 4096


@dataclass(frozen=True)
class StringTable:
    """Strings as one UTF-8 blob and ``len + 1`` offsets into it."""

    blob: np.ndarray  # uint8
    offsets: np.ndarray  # uint32/uint64 (n + 1)

    @classmethod
    def of(cls, strings: Sequence[str]) -> StringTable:
        encoded = [s.encode() for s in strings]
        return cls.from_blob(b"".join(encoded), [len(e) for e in encoded])

    @classmethod
    def from_blob(cls, blob: bytes | bytearray, lengths: Sequence[int] | np.ndarray) -> StringTable:
        offsets = np.zeros(len(lengths) + 1, dtype=index_dtype(len(blob)))
        offsets[1:] = np.cumsum(np.asarray(lengths, dtype=np.uint64))
        return cls(np.frombuffer(bytes(blob), dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        return self.blob[int(self.offsets[i]) : int(self.offsets[i + 1])].tobytes().decode()

    @property
    def nbytes(self) -> int:
        return int(self.blob.nbytes + self.offsets.nbytes)


@dataclass(frozen=True, eq=False)
class ConstraintNames(Sequence[str]):
    """Row i is named ``prefixes[prefix_ids[i]] + leaves[leaf_ids[i]]``."""

    prefixes: StringTable
    leaves: StringTable
    prefix_ids: np.ndarray  # unsigned, one per row
    leaf_ids: np.ndarray  # unsigned, one per row

    def __len__(self) -> int:
        return len(self.prefix_ids)

    def _name(self, i: int) -> str:
        return self.prefixes[int(self.prefix_ids[i])] + self.leaves[int(self.leaf_ids[i])]

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...
    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        if isinstance(i, slice):
            return tuple(self._name(k) for k in range(*i.indices(len(self))))
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"constraint {i} of {n}")
        return self._name(i % n)

    def __iter__(self) -> Iterator[str]:
        pre = [self.prefixes[k] for k in range(len(self.prefixes))]
        leaves = [self.leaves[k] for k in range(len(self.leaves))]
        for p, q in zip(self.prefix_ids.tolist(), self.leaf_ids.tolist(), strict=True):
            yield pre[p] + leaves[q]

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same strings (a tuple, a list, other names)."""
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(x == y for x, y in zip(self, other, strict=True))

    # why the ignore below: compared by value and mutable: unhashable, as list is (typeshed types
    # __hash__ as a method)
    __hash__ = None  # type: ignore[assignment]

    @property
    def nbytes(self) -> int:
        return int(
            self.prefixes.nbytes
            + self.leaves.nbytes
            + self.prefix_ids.nbytes
            + self.leaf_ids.nbytes
        )


@dataclass(frozen=True)
class PrefixedNames:
    """Names of a block of rows appended at once: row i is ``prefixes[which[i]] + leaves[i]``.

    ``leaves`` is typically one template's list, the same object on every replay, so its ids
    are looked up once per builder (by identity)."""

    prefixes: tuple[str, ...]
    which: np.ndarray  # uint8 per row: index into prefixes
    leaves: list[str]

    def strings(self) -> list[str]:
        pre = self.prefixes
        return [pre[w] + leaf for w, leaf in zip(self.which.tolist(), self.leaves, strict=True)]


class NameBuilder(Sequence[str]):
    """The growing names of a :class:`~cuzk.r1cs.system.ShapeCS` (reads as a sequence of str)."""

    STAGE = 1 << 14

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._prefix_blob = bytearray()
        self._prefix_lens = GrowArray(np.uint64)
        self._num_prefixes = 0
        self._recent: dict[str, int] = {}
        self._leaf_ids: dict[str, int] = {}
        self._list_ids: dict[int, tuple[list[str], np.ndarray]] = {}
        self._pids = GrowArray(np.uint16)  # both widened when the tables outgrow 16 bits
        self._lids = GrowArray(np.uint16)
        self._stage_p: list[int] = []
        self._stage_l: list[int] = []
        self._snapshot: ConstraintNames | None = None

    # -- building --------------------------------------------------------------------------------
    def prefix_id(self, prefix: str) -> int:
        """The id of ``prefix`` (a namespace path with its trailing ``/``, or "")."""
        pid = self._recent.get(prefix)
        if pid is None:
            if len(self._recent) >= PREFIX_CACHE:
                self._recent.clear()
            encoded = prefix.encode()
            self._prefix_blob += encoded
            self._prefix_lens.extend(np.array([len(encoded)], dtype=np.uint64))
            pid = self._recent[prefix] = self._num_prefixes
            self._num_prefixes += 1
        return pid

    def _leaf_id(self, leaf: str) -> int:
        lid = self._leaf_ids.get(leaf)
        if lid is None:
            lid = self._leaf_ids[leaf] = len(self._leaf_ids)
        return lid

    def add(self, prefix_id: int, leaf: str) -> None:
        """One row's name (the hot path of ``enforce``)."""
        self._stage_p.append(prefix_id)
        self._stage_l.append(self._leaf_id(leaf))
        if len(self._stage_p) >= self.STAGE:
            self._flush()

    def extend(self, names: PrefixedNames) -> None:
        """A block of rows' names (a replayed template)."""
        self._flush()
        hit = self._list_ids.get(id(names.leaves))
        if hit is None or hit[0] is not names.leaves:
            ids = np.array([self._leaf_id(s) for s in names.leaves], dtype=np.uint32)
            hit = self._list_ids[id(names.leaves)] = (names.leaves, ids)
        pids = np.array([self.prefix_id(p) for p in names.prefixes], dtype=np.uint32)
        if len(names.which) != len(hit[1]):
            raise ValueError(f"{len(names.which)} prefixes for {len(hit[1])} leaves")
        self._pids.extend(pids[names.which])
        self._lids.extend(hit[1])

    def _flush(self) -> None:
        if self._stage_p:
            self._pids.extend(np.array(self._stage_p, dtype=np.uint32))
            self._lids.extend(np.array(self._stage_l, dtype=np.uint32))
            self._stage_p, self._stage_l = [], []

    def finish(self) -> ConstraintNames:
        """The frozen names; this builder is left empty."""
        self._flush()
        n = len(self._pids)
        prefixes = StringTable.from_blob(
            self._prefix_blob, self._prefix_lens.drain(np.empty(self._num_prefixes, np.uint64))
        )
        leaves = StringTable.of(list(self._leaf_ids))
        pids = self._pids.drain(np.empty(n, dtype=id_dtype(max(1, len(prefixes)))))
        lids = self._lids.drain(np.empty(n, dtype=id_dtype(max(1, len(leaves)))))
        self._reset()
        return ConstraintNames(prefixes, leaves, pids, lids)

    def ids(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(prefix ids, leaf ids) of rows [start, stop)."""
        self._flush()
        return self._pids.tail(start, stop), self._lids.tail(start, stop)

    def extend_ids(self, prefix_ids: np.ndarray, leaf_ids: np.ndarray) -> None:
        """Rows named by ids this builder gave out (a replayed block's)."""
        self._flush()
        if len(prefix_ids) != len(leaf_ids):
            raise ValueError(f"{len(prefix_ids)} prefix ids for {len(leaf_ids)} leaf ids")
        self._pids.extend(prefix_ids)
        self._lids.extend(leaf_ids)

    def prefix_table(self) -> StringTable:
        """Every prefix so far (a copy)."""
        return StringTable.from_blob(self._prefix_blob, self._prefix_lens.tail(0))

    # -- reading (tests, replay checks) ------------------------------------------------------------
    def tail(self, start: int) -> list[str]:
        """The names of rows [start, len) as strings."""
        self._flush()
        prefixes = self.prefix_table()
        leaves = list(self._leaf_ids)
        return [
            prefixes[p] + leaves[q]
            for p, q in zip(
                self._pids.tail(start).tolist(), self._lids.tail(start).tolist(), strict=True
            )
        ]

    def _names(self) -> ConstraintNames:
        if self._snapshot is None or len(self._snapshot) != len(self):
            self._flush()
            self._snapshot = ConstraintNames(
                self.prefix_table(),
                StringTable.of(list(self._leaf_ids)),
                self._pids.tail(0),
                self._lids.tail(0),
            )
        return self._snapshot

    def __len__(self) -> int:
        return len(self._pids) + len(self._stage_p)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...
    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        return self._names()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __eq__(self, other: object) -> bool:
        return self._names() == other

    # why the ignore below: compared by value and mutable: unhashable, as list is (typeshed types
    # __hash__ as a method)
    __hash__ = None  # type: ignore[assignment]
