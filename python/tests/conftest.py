"""GPU cases need a CUDA device and torch (CuPy cases CuPy too); without them they are skipped, not
failed. The package is imported from the build tree when PYTHONPATH points there."""
import pytest

import dbsparse

HAVE_GPU, WHY = dbsparse.device_available()
try:
    import torch
    HAVE_TORCH = torch.cuda.is_available()
except ImportError:
    torch = None
    HAVE_TORCH = False
try:
    import cupy  # noqa: F401
    HAVE_CUPY = HAVE_GPU
except ImportError:
    HAVE_CUPY = False

gpu = pytest.mark.skipif(not (HAVE_GPU and HAVE_TORCH), reason=f"needs a CUDA device and torch ({WHY or 'no torch'})")
cupy_gpu = pytest.mark.skipif(not HAVE_CUPY, reason="needs a CUDA device and CuPy")


class FakeCsr:
    """What host_csr reads of a SciPy matrix, with none of SciPy's own checks (a hostile caller's)."""
    __module__ = "scipy.sparse._fake"
    format = "csr"

    def __init__(self, shape, ip, ix, v):
        self.shape, self.indptr, self.indices, self.data = shape, ip, ix, v

    def tocsr(self):
        return self
