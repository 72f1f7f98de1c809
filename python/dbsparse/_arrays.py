"""Arrays in, arrays out, without copies: the device pointer, shape and dtype of a torch tensor, a
CuPy array, anything with ``__cuda_array_interface__`` or ``__dlpack__``; outputs allocated in the
caller's framework; the caller's current stream."""
import sys

from ._errors import UsageError
from . import _core

# dtype names the C++ side uses, from each framework's spelling.
_TYPESTR = {"<f4": "f32", "<f8": "f64", "<f2": "f16", "<i4": "i32", "<i8": "i64"}
_DLPACK = {(2, 32): "f32", (2, 64): "f64", (2, 16): "f16", (4, 16): "bf16", (0, 32): "i32", (0, 64): "i64"}
_ITEMSIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8}


def _torch():
    return sys.modules.get("torch")


def _cupy():
    return sys.modules.get("cupy")


def _import_any():
    import importlib
    for name in ("torch", "cupy"):
        try:
            importlib.import_module(name)
            break
        except ImportError:
            pass
    return _torch(), _cupy()


_TORCH_NAMES = None


def _torch_dtype_name(dt):
    # Built once: this runs on every call, inside the <= 5 us a planned call may add.
    global _TORCH_NAMES
    if _TORCH_NAMES is None:
        torch = _torch()
        _TORCH_NAMES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
                        torch.int32: "i32", torch.int64: "i64"}
    return _TORCH_NAMES.get(dt) or str(dt)


def device_array(x, name):
    """(pointer, shape, dtype name, device index, framework) of a contiguous CUDA array.

    UsageError naming ``name`` for a host array, a non-contiguous one or an unknown kind."""
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        if not x.is_cuda:
            raise UsageError(f"{name}: expected a CUDA tensor, got one on {x.device}")
        if x.layout != torch.strided:
            raise UsageError(f"{name}: expected a dense (strided) tensor, got layout {x.layout}")
        if not x.is_contiguous():
            raise UsageError(f"{name}: the tensor is not contiguous (call .contiguous())")
        return x.data_ptr(), tuple(x.shape), _torch_dtype_name(x.dtype), x.device.index, "torch"
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        dt = _TYPESTR.get(cai["typestr"], cai["typestr"])
        strides = cai.get("strides")
        if strides is not None:
            expect, step = [], _ITEMSIZE.get(dt, 1)
            for n in reversed(shape):
                expect.insert(0, step)
                step *= n
            if tuple(strides) != tuple(expect) and 0 not in shape:
                raise UsageError(f"{name}: the array is not C-contiguous (strides {tuple(strides)})")
        cupy = _cupy()
        dev = x.device.id if cupy is not None and isinstance(x, cupy.ndarray) else 0
        return cai["data"][0], shape, dt, dev, "cupy" if cupy is not None and isinstance(x, cupy.ndarray) else "cai"
    if hasattr(x, "__array_interface__") or (hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] == 1):
        raise UsageError(f"{name}: a host array; dbsparse takes device arrays (torch CUDA tensors, CuPy arrays)")
    if hasattr(x, "__dlpack__"):
        if hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] != 2:
            raise UsageError(f"{name}: expected a CUDA array, got one on DLPack device {x.__dlpack_device__()}")
        ptr, shape, strides, code, bits, devtype, devid = _core.dlpack_info(x)
        dt = _DLPACK.get((code, bits), f"dlpack({code},{bits})")
        step = 1
        for n, s in zip(reversed(shape), reversed(strides)):
            if n > 1 and s != step:
                raise UsageError(f"{name}: the array is not C-contiguous")
            step *= n
        return ptr, tuple(shape), dt, devid, "dlpack"
    raise UsageError(f"{name}: expected a CUDA array (torch, CuPy, __cuda_array_interface__ or DLPack), got {type(x).__name__}")


def check(name, got, shape, dtype, device=None):
    """UsageError unless the array (ptr, shape, dtype, device, ...) has this shape and dtype, and,
    where `device` is given, lives on that CUDA device (the plan's)."""
    if tuple(got[1]) != tuple(shape):
        raise UsageError(f"{name}: expected shape {tuple(shape)}, got {tuple(got[1])}")
    if got[2] != dtype:
        raise UsageError(f"{name}: expected dtype {dtype}, got {got[2]}")
    if device is not None and got[3] is not None and got[3] != device:
        raise UsageError(f"{name}: on CUDA device {got[3]}, but the plan was made for device {device}")


def _nbytes(a):
    n = _ITEMSIZE.get(a[2], 1)
    for d in a[1]:
        n *= d
    return n


def disjoint(out_name, out, *inputs):
    """UsageError where the output's bytes overlap an input's (pairs of name and array): the kernels
    read their inputs while they write the output, so an aliased call would give wrong values."""
    lo = out[0]
    hi = lo + _nbytes(out)
    if hi == lo:  # an empty output overlaps nothing
        return
    for name, a in inputs:
        if a is not None and a[0] < hi and lo < a[0] + _nbytes(a):
            raise UsageError(f"{out_name}: overlaps {name} in device memory; pass a separate output array")


def real(name, v):
    """v as a float; UsageError naming `name` for anything that is not a real number."""
    if type(v) is float:
        return v
    if not isinstance(v, (str, bytes)):  # float("2") would take a string
        try:
            return float(v)
        except (TypeError, ValueError):
            pass
    raise UsageError(f"{name}: expected a real number, got {type(v).__name__} {v!r:.40}")


def vertex(name, v):
    """v as an int (an integer of any kind, never a float); UsageError naming `name` otherwise."""
    import operator
    try:
        return operator.index(v)
    except TypeError:
        raise UsageError(f"{name}: expected an integer vertex, got {type(v).__name__} {v!r:.40}") from None


def empty(shape, dtype, like_fw, device):
    """A new device array in `like_fw` ('torch' or 'cupy') when it is loaded, else in whichever is; when
    neither is loaded (a SciPy caller), torch or else CuPy is imported if installed."""
    torch, cupy = _torch(), _cupy()
    if torch is None and cupy is None:
        torch, cupy = _import_any()
    if torch is not None and (like_fw != "cupy" or cupy is None):
        t = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
             "i32": torch.int32}[dtype]
        return torch.empty(shape, dtype=t, device=f"cuda:{device or 0}")
    if cupy is not None:
        if dtype == "bf16":
            raise UsageError("CuPy has no bfloat16: pass out=")
        with cupy.cuda.Device(device or 0):
            return cupy.empty(shape, dtype={"f32": "float32", "f64": "float64", "f16": "float16", "i32": "int32"}[dtype])
    raise UsageError("no framework to allocate the output in (import torch or cupy, or pass out=)")


_RAW_STREAM = None
# Stream handles that came through a stream object (torch, CuPy) in this process: a raw int equal
# to one of them is taken. The driver dereferences a handle without checking it, so an arbitrary
# int would be a crash, not an error.
_KNOWN_STREAMS = set()


def _current_raw(device):
    global _RAW_STREAM
    if _RAW_STREAM is None:
        torch = _torch()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _RAW_STREAM = raw or (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _RAW_STREAM(device or 0)


def _raw_stream(h, device):
    """An int stream: the default streams (0 legacy, 1 legacy, 2 per-thread), a handle seen through
    a stream object, or a framework's current stream; anything else is refused by name."""
    if h in (0, 1, 2) or h in _KNOWN_STREAMS:
        return h
    torch, cupy = _torch(), _cupy()
    if (torch is not None and torch.cuda.is_initialized() and h == _current_raw(device)) or (
            cupy is not None and h == cupy.cuda.get_current_stream().ptr):
        _KNOWN_STREAMS.add(h)
        return h
    raise UsageError(f"stream: the int {h:#x} is not a stream this process has handed to dbsparse; pass the stream "
                     "object (torch.cuda.Stream, a CuPy stream), or 0, 1 or 2 for the default streams")


def stream_of(stream, fw, device):
    """The CUstream to run on: `stream` (a torch.cuda.Stream, a CuPy stream, or an int handle that
    is a default stream or one already seen, see _raw_stream) or the caller's framework's current
    stream on `device`."""
    if stream is not None:
        if isinstance(stream, bool):
            raise UsageError("stream: expected a stream, got a bool")
        if isinstance(stream, int):
            return _raw_stream(stream, device)
        for attr in ("cuda_stream", "ptr", "handle"):
            h = getattr(stream, attr, None)
            if isinstance(h, int):
                if len(_KNOWN_STREAMS) > 4096:
                    _KNOWN_STREAMS.clear()
                _KNOWN_STREAMS.add(h)
                return h
        raise UsageError(f"stream: expected a torch.cuda.Stream, a CuPy stream or an int handle, got "
                         f"{type(stream).__name__}")
    if fw == "torch":
        return _current_raw(device)
    if fw == "cupy":
        return _cupy().cuda.get_current_stream().ptr
    return 0
