"""The pieces of the compact shape: chunked storage, dtype choice, names, dictionary CSR,
transpose, persistence (memory-mapped, format 1 refused and rebuilt by the cache)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.r1cs import CsrMatrix, PrefixedNames, R1CSShape, ShapeCS, synthesize_shape
from cuzk.r1cs.cache import ShapeCache
from cuzk.r1cs.chunks import GrowArray, id_dtype, index_dtype
from cuzk.r1cs.names import ConstraintNames, NameBuilder, StringTable
from cuzk.r1cs.shape import SHAPE_FORMAT_VERSION, shape_format
from tests.r1cs.circuits import CubeCircuit, RandomCircuit


def test_dtypes_sized_to_need():
    assert index_dtype(0) == np.uint32 and index_dtype((1 << 32) - 1) == np.uint32
    assert index_dtype(1 << 32) == np.uint64
    assert [id_dtype(n) for n in (1, 256, 257, 65536, 65537)] == [
        np.uint8, np.uint8, np.uint16, np.uint16, np.uint32,
    ]  # fmt: skip
    with pytest.raises(ValueError):
        id_dtype((1 << 32) + 1)


def test_grow_array_extend_tail_drain(rng):
    g = GrowArray(np.int32)
    want = []
    for _ in range(60):  # crosses several doubling chunks
        part = rng.integers(-1000, 1000, int(rng.integers(0, 3000)))
        g.extend(part)
        want.extend(part.tolist())
    assert len(g) == len(want)
    for start in (0, 1, len(want) // 3, len(want) - 1, len(want)):
        assert g.tail(start).tolist() == want[start:]
    with pytest.raises(IndexError):
        g.tail(len(want) + 1)
    out = g.drain(np.empty(len(want), np.int64), lambda c: c.astype(np.int64) * 2)
    assert out.tolist() == [2 * x for x in want] and len(g) == 0
    with pytest.raises(ValueError):
        g.drain(np.empty(1, np.int64))


def test_string_table_and_names():
    t = StringTable.of(["", "a/", "ü/x/"])
    assert [t[i] for i in range(len(t))] == ["", "a/", "ü/x/"]
    names = ConstraintNames(
        t,
        StringTable.of(["leaf", "b/c"]),
        np.array([1, 0, 2], dtype=np.uint8),
        np.array([0, 1, 1], dtype=np.uint8),
    )
    expect = ["a/leaf", "b/c", "ü/x/b/c"]
    assert list(names) == expect and names == expect and names == tuple(expect)
    assert names[-1] == "ü/x/b/c" and names[1:] == ("b/c", "ü/x/b/c")
    assert names != expect[:2] and names != "a/leafb/c"
    with pytest.raises(IndexError):
        names[3]


def test_name_builder_mixes_single_rows_and_blocks():
    b = NameBuilder()
    leaves = ["x", "y/z", "x"]
    b.add(b.prefix_id("p/"), "one")
    b.extend(PrefixedNames(("q/", ""), np.array([0, 1, 0], np.uint8), leaves))
    b.extend(PrefixedNames(("r/", "s/"), np.array([1, 1, 0], np.uint8), leaves))  # cached ids
    b.add(b.prefix_id(""), "two")
    expect = ["p/one", "q/x", "y/z", "q/x", "s/x", "s/y/z", "r/x", "two"]
    assert list(b) == expect and len(b) == 8 and b.tail(5) == expect[5:]
    with pytest.raises(ValueError):
        b.extend(PrefixedNames(("",), np.zeros(2, np.uint8), leaves))
    names = b.finish()
    assert names == expect and len(names.leaves) == 4 and names.leaf_ids.dtype == np.uint8


def test_from_coeffs_dictionary_round_trip(rng):
    values = [1, R - 1, 2, int(rng.integers(1 << 62))]
    coeffs = fr.from_ints([values[i] for i in rng.integers(0, 4, 500)])
    indptr = np.arange(0, 501, 5, dtype=np.int64)
    m = CsrMatrix.from_coeffs(indptr, rng.integers(0, 77, 500), coeffs, 77)
    assert len(m.table) <= 4 and m.coeff_ids.dtype == np.uint8
    assert m.indptr.dtype == np.uint32 and m.indices.dtype == np.uint32
    assert np.array_equal(m.coeffs, coeffs)
    with pytest.raises(BadInput):
        CsrMatrix.from_coeffs(indptr, np.full(500, -1), coeffs, 77)
    e = CsrMatrix.empty(3, 4)
    assert e.nnz == 0 and e.num_rows == 3 and not e.column_mask().any()
    assert np.array_equal(e.matvec(fr.ones(4)), fr.zeros(3))


def test_constructor_checks_dtypes_and_lengths():
    ok = dict(
        indptr=np.array([0, 1], np.uint32),
        indices=np.array([0], np.uint32),
        coeff_ids=np.array([0], np.uint8),
        table=fr.ones(1),
        num_cols=1,
    )
    CsrMatrix(**ok)
    for field, bad in (
        ("indices", np.array([0], np.int64)),  # signed
        ("coeff_ids", np.array([0, 0], np.uint8)),  # length
        ("table", np.ones((1, 3), np.uint64)),
        ("indptr", np.zeros(0, np.uint32)),
    ):
        with pytest.raises(BadInput):
            CsrMatrix(**{**ok, field: bad})


@pytest.mark.parametrize("ids", [np.uint8, np.uint16, np.uint32])
def test_transpose_and_mask_with_every_id_width(rng, ids):
    rows, cols = 300, 120
    counts = rng.integers(0, 5, rows)
    indptr = np.zeros(rows + 1, np.uint32)
    indptr[1:] = np.cumsum(counts)
    nnz = int(indptr[-1])
    m = CsrMatrix(
        indptr,
        rng.integers(0, cols - 10, nnz).astype(np.uint32),  # the last columns stay empty
        rng.integers(0, 9, nnz).astype(ids),
        fr.random(9, rng),
        cols,
    )
    t = m.transpose()
    assert (t.num_rows, t.num_cols, t.nnz) == (cols, rows, nnz) and t.coeff_ids.dtype == ids
    back = t.transpose()  # rows keep their entries in column order after two transposes
    for i in range(rows):
        cols_i, ids_i = m.row(i)
        order = np.argsort(cols_i, kind="stable")
        assert back.row(i)[0].tolist() == cols_i[order].tolist()
        assert back.row(i)[1].tolist() == ids_i[order].tolist()
    x = fr.random(rows, rng)
    dense = np.zeros((rows, cols), dtype=object)
    tab = fr.to_ints(m.table)
    for i in range(rows):
        for c, k in zip(*m.row(i), strict=True):
            dense[i, c] = (dense[i, c] + tab[k]) % R
    xs = fr.to_ints(x)
    want = [sum(dense[i, j] * xs[i] for i in range(rows)) % R for j in range(cols)]
    assert fr.to_ints(t.matvec(x)) == want
    mask = m.column_mask()
    assert mask.tolist() == [bool(dense[:, j].any()) for j in range(cols)]
    assert not mask.flags.writeable and m.column_mask() is mask


def test_save_load_is_memory_mapped(tmp_path, seed):
    shape = synthesize_shape(RandomCircuit(seed), "test:random")
    shape.save(tmp_path / "s")
    loaded = R1CSShape.load(tmp_path / "s")
    assert shape_format(tmp_path / "s") == SHAPE_FORMAT_VERSION
    for m in (loaded.a, loaded.b, loaded.c):
        assert all(isinstance(x, np.memmap) for x in (m.indptr, m.indices, m.coeff_ids))
    assert isinstance(loaded.names.prefix_ids, np.memmap)
    assert loaded.names == shape.names and loaded.constraint_name(3) == shape.names[3]
    assert R1CSShape.load(tmp_path / "s", with_names=False).names is None
    assert loaded.nbytes == shape.nbytes and loaded.a_aux_rows.dtype == np.uint32


def test_load_refuses_mismatched_arrays(tmp_path):
    shape = synthesize_shape(CubeCircuit(2), "test:cube")
    shape.save(tmp_path)
    np.save(tmp_path / "b_indptr.npy", np.zeros(3, np.uint32))
    with pytest.raises(BadInput, match="number of rows"):
        R1CSShape.load(tmp_path)
    np.save(tmp_path / "b_indptr.npy", np.zeros(3, np.int64))  # signed: not this format
    with pytest.raises(BadInput):
        R1CSShape.load(tmp_path)
    (tmp_path / "a_ids.npy").unlink()
    with pytest.raises(BadInput, match="not a usable shape"):
        R1CSShape.load(tmp_path)


def _format_1_entry(path, circuit_id: str) -> None:
    """A directory as the pre-compact code wrote it: int64 arrays, 32-byte coefficients."""
    path.mkdir(parents=True)
    for label in "abc":
        np.save(path / f"{label}_indptr.npy", np.zeros(2, np.int64))
        np.save(path / f"{label}_indices.npy", np.zeros(0, np.int64))
        np.save(path / f"{label}_coeffs.npy", np.zeros((0, 4), np.uint64))
    meta = {"format": 1, "circuit_id": circuit_id, "num_inputs": 1, "num_aux": 0,
            "num_constraints": 1}  # fmt: skip
    (path / "meta.json").write_text(json.dumps(meta))


def test_format_1_is_refused_and_rebuilt_by_the_cache(tmp_path):
    cache = ShapeCache(tmp_path)
    path = cache.path_for("test:cube")
    _format_1_entry(path, "test:cube")
    with pytest.raises(BadInput, match="format 1 is not supported"):
        R1CSShape.load(path)
    shape = cache.get("test:cube", CubeCircuit(2))
    assert shape_format(path) == SHAPE_FORMAT_VERSION
    assert shape.num_constraints == 5 and isinstance(shape.a.indptr, np.memmap)
    assert not (path / "a_coeffs.npy").exists()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # nothing stale left beside it


def test_append_rows_checks_blocks():
    cs = ShapeCS()
    cs.num_aux = 3
    ends = np.array([1, 2])
    names = PrefixedNames(("",), np.zeros(2, np.uint8), ["r0", "r1"])
    rows = ((ends, np.array([0, 1]), [1, 2]), (ends, [2, -1], [5, 1]), (np.array([0, 0]), [], []))
    cs.append_rows(rows, names, 0)
    assert cs.rows_from(0) == (
        ([1, 2], [0, 1], [1, 2]),
        ([1, 2], [2, -1], [5, 1]),
        ([0, 0], [], []),
    )
    with pytest.raises(BadInput):  # C has one row fewer
        cs.append_rows((rows[0], rows[1], (np.array([0]), [], [])), names, 0)
    with pytest.raises(BadInput):  # ends disagree with the keys
        cs.append_rows((rows[0], rows[1], (np.array([0, 1]), [], [])), names, 0)
    shape = cs.finish("t")
    assert list(shape.names) == ["r0", "r1", "input 0 constraint"]
