"""The package's native objects (plans, layers' plans, device contexts) released at interpreter exit,
before the extension module is torn down.

A compiled torch function keeps what its guards and closures saw (a gnn Graph, the globals of the
module it was defined in) in caches that torch frees after this package's extension, or never; the
extension then finds those native objects alive and prints them as leaks. torch's own reset
(dynamo.reset) does not drop them all: __main__'s globals stay reachable from the compiled frame's
cache. So every Python object that owns native state registers here, and an exit hook drops that
state while the interpreter is whole. The Python objects themselves stay; calling one afterwards
(from an exit hook of the caller's that runs later) raises UsageError."""
import weakref

_holders = weakref.WeakSet()
_released = False


def hold(obj):
    """Registers obj, whose _release_native() drops its references to native objects."""
    _holders.add(obj)
    return obj


def released():
    """True once the exit hook has released the native objects."""
    return _released


def release_all():
    """Every registered holder's native references dropped (idempotent). Called at exit."""
    global _released
    _released = True
    for h in list(_holders):
        try:
            h._release_native()
        except Exception:  # noqa: BLE001 - at exit: release the others whatever one raises
            pass
