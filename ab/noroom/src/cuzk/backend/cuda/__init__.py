"""CUDA kernels and the CUDA backend (:class:`cuzk.backend.cuda.backend.CudaBackend`).

Importing this package (or any module in it except through a device call) does not import
CuPy; :func:`cuda_available` says whether a device can be used here.
"""

from cuzk.backend.cuda.device import cuda_available

__all__ = ["cuda_available"]
