"""Integer handles for the Python objects a torch custom op works on: an op's schema takes ints, not
objects, so a layer or graph is named by a handle and looked up inside the op. Handles are weak: a
handle does not keep its object alive and leaves the table when the object is freed."""
import itertools
import weakref

from ._errors import UsageError


class Handles:
    """A table of weak handles; `what` names a lost one in the error, e.g. 'dbsparse::gnn: graph
    handle 3 is gone (its Graph was freed)' for Handles('dbsparse::gnn', 'graph', 'Graph')."""

    def __init__(self, op, noun, owner):
        self._refs, self._ids = {}, itertools.count(1)
        self._op, self._noun, self._owner = op, noun, owner

    def register(self, obj):
        h = next(self._ids)
        self._refs[h] = weakref.ref(obj)
        weakref.finalize(obj, self._refs.pop, h, None)
        return h

    def get(self, handle):
        ref = self._refs.get(handle)
        obj = ref() if ref is not None else None
        if obj is None:
            raise UsageError(f"{self._op}: {self._noun} handle {handle} is gone (its {self._owner} was freed)")
        return obj
