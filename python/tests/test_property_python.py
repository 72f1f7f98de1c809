"""Property-based hostile tests of the Python surface (no GPU; hypothesis): arbitrary CSR arrays,
shapes and value kinds handed to the matrix reader. Each input either ends in a named dbsparse
exception or passes through unchanged: never another exception type, a crash, or a silently
changed index or value."""
import numpy as np

from hypothesis import given, settings, strategies as st  # scripts/test.sh installs hypothesis
from hypothesis.extra import numpy as hnp

import dbsparse
from dbsparse import _matrix as mat
from conftest import FakeCsr


_INT_DTYPES = st.sampled_from([np.int32, np.int64, np.uint32, np.int16, np.float64])
_VAL_DTYPES = st.sampled_from([np.float32, np.float64, np.float16, np.int32, np.complex64, np.bool_])


@st.composite
def csr_arrays(draw):
    """Arrays near a valid CSR (so that some pass) or anything at all."""
    rows, cols = draw(st.integers(-2, 40)), draw(st.integers(-2, 40))
    if draw(st.booleans()):  # a valid pattern, maybe damaged below
        r, c = max(rows, 0), max(cols, 0)
        counts = draw(hnp.arrays(np.int64, r, elements=st.integers(0, max(c, 0))))
        ip = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        ix = np.concatenate([np.sort(draw(hnp.arrays(np.int64, int(k), elements=st.integers(0, max(c - 1, 0)),
                                                      unique=True))) if c > 0 and k > 0 else np.zeros(0, np.int64)
                             for k in counts] or [np.zeros(0, np.int64)]).astype(np.int64)
        if c == 0:
            ip, ix = np.zeros(r + 1, np.int64), np.zeros(0, np.int64)
        v = draw(hnp.arrays(np.float64, len(ix), elements=st.floats(-1e6, 1e6)))
    else:
        ip = draw(hnp.arrays(np.int64, st.integers(0, 45), elements=st.integers(-3, 2**33)))
        ix = draw(hnp.arrays(np.int64, st.integers(0, 60), elements=st.integers(-3, 2**33)))
        v = draw(hnp.arrays(np.float64, st.integers(0, 60), elements=st.floats(allow_nan=True, allow_infinity=True)))
    ip = ip.astype(draw(_INT_DTYPES), copy=False)
    ix = ix.astype(draw(_INT_DTYPES), copy=False)
    with np.errstate(all="ignore"):
        v = v.astype(draw(_VAL_DTYPES))
    return (rows, cols), ip, ix, v


@settings(max_examples=400, deadline=None)
@given(csr_arrays(), st.sampled_from(["f32", "f64"]))
def test_any_csr_arrays_are_refused_by_name_or_pass_unchanged(arrays, dtype):
    shape, ip, ix, v = arrays
    try:
        c = mat.host_csr(FakeCsr(shape, ip, ix, v), dtype)
    except dbsparse.UsageError:
        return
    back = mat.to_scipy(c)
    assert back.shape == tuple(shape)
    assert np.array_equal(back.indptr.astype(np.int64), np.asarray(ip).astype(np.int64))
    assert np.array_equal(back.indices.astype(np.int64), np.asarray(ix).astype(np.int64))
    want = np.asarray(v).astype(np.float64)
    got = back.data.astype(np.float64)
    assert np.array_equal(got, want.astype(np.float32 if dtype == "f32" else np.float64).astype(np.float64))
