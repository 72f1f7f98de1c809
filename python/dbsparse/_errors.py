"""dbsparse's exceptions. Each carries the C++ library's message unchanged."""


class Error(Exception):
    """Root of every dbsparse exception."""


class UsageError(Error, ValueError):
    """A bad argument: wrong dtype, shape, device, layout, or a value out of range."""


class InputError(UsageError):
    """A bad input file (the message names the file, the line and what was expected)."""


class DeviceError(Error, RuntimeError):
    """The GPU or its driver refused (no device, a CUDA error)."""


class DeviceOutOfMemory(DeviceError, MemoryError):
    """The device has too little free memory for a plan or a call (the message gives the bytes
    needed and free); the plan that raised it holds nothing, and the context is still usable."""


class HostMemoryError(Error, MemoryError):
    """An input asks for more host memory than the limit (80% of physical memory, or
    DBSPARSE_HOST_MEMORY); files and generator specs say so as an InputError instead."""


class CompileError(DeviceError):
    """NVRTC could not compile a kernel (the message holds the log and where the source was written)."""


class TuningDbError(Error, RuntimeError):
    """The tuning database could not be read or written."""
