"""The tuner and the kernel cache from Python: the same `dbtune` and `dbsparse` programs (so the
same tuning database and kernel cache) the C++ users run, installed with the package."""
import os
import shutil
import subprocess
import sys

from ._errors import DeviceError, UsageError

_HERE = os.path.dirname(os.path.abspath(__file__))


def _program(name):
    env = os.environ.get(f"DBSPARSE_{name.upper()}")
    for cand in (env, os.path.join(_HERE, "bin", name), shutil.which(name)):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise UsageError(f"the {name} program is not installed with this package nor on PATH "
                     f"(set DBSPARSE_{name.upper()} to its path)")


def _run(name, args, capture):
    cmd = [_program(name), *[str(a) for a in args]]
    r = subprocess.run(cmd, stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None,
                       text=True)
    if r.returncode != 0:
        msg = (r.stderr or "").strip() if capture else ""
        cls = UsageError if r.returncode in (1, 2) else DeviceError
        raise cls(f"{' '.join(cmd)} exited {r.returncode}" + (f": {msg}" if msg else ""))
    return r.stdout if capture else ""


def tune(*args, quiet=False):
    """Runs dbtune with its command-line arguments (progress printed as it goes), e.g.
    ``dbsparse.tune("--suite", "quick")``; writes the tuning database the library reads
    (DBSPARSE_DB or the default path). Without a GPU dbtune runs the parts that need none."""
    return _run("dbtune", args, capture=quiet)


def precompile(arch=None, ops=None):
    """Compiles every kernel variant into the persistent cache (no GPU needed), for `arch`
    (e.g. 'sm_90'; default: the current device's) and the named ops (default: all). Returns the log."""
    args = ["precompile"]
    if arch:
        args += ["--arch", arch]
    for op in ops or []:
        args += ["--op", op]
    return _run("dbsparse", args, capture=True)


def main(argv=None):
    """`python -m dbsparse tune ...` / `python -m dbsparse precompile ...` / `python -m dbsparse bench`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m dbsparse {tune|precompile|bench} [arguments]\n"
              "  tune        runs dbtune (same arguments; --help for them)\n"
              "  precompile  fills the kernel cache (dbsparse precompile)\n"
              "  bench       the Python package's benchmarks (python -m dbsparse.bench --help; bench llm --help)")
        return 0
    cmd, rest = argv[0], argv[1:]
    try:
        if cmd == "tune":
            tune(*rest)
        elif cmd == "precompile":
            _run("dbsparse", ["precompile", *rest], capture=False)
        elif cmd == "bench":
            from . import bench
            return bench.main(rest)
        else:
            print(f"unknown command {cmd!r}: tune, precompile or bench", file=sys.stderr)
            return 2
    except (UsageError, DeviceError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0
