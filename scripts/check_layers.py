#!/usr/bin/env python3
"""The include rules of docs/ARCHITECTURE.md, checked.

Reads every tracked C++/CUDA file's #include lines and fails, naming file:line and the rule, where a
file includes across a forbidden boundary:
  - the library (include/, support/, codegen/, templates/, runtime/, tuner/, tuning_db/) never
    includes tools/ or tests/, and never a cuSPARSE or cuBLAS header (only tools/ links them);
  - a public header (include/dbsparse/) includes neither a CUDA header nor a non-public folder;
  - every folder includes only what the "may include" column of ARCHITECTURE.md's table allows it,
    read as layers: a folder may include what the folders it may include may include.
An include that names no file of the tree (a system or third-party header) is not checked, except
for the CUDA, cuSPARSE and cuBLAS headers above.

Usage: scripts/check_layers.py [REPO_ROOT]   (default: the repository holding this script).
Exit status 0 when every include keeps the rules, 1 otherwise. Python 3 standard library only.
"""

import os
import re
import subprocess
import sys

SOURCE_ENDINGS = (".cpp", ".cc", ".hpp", ".h", ".cuh", ".cu", ".inl")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
CUDA_HEADER_RE = re.compile(r"^(cuda[a-zA-Z0-9_]*\.h|cuda/.*|nvrtc\.h|cusparse[a-zA-Z0-9_]*\.h|cublas[a-zA-Z0-9_]*\.h|"
                            r"mma\.h|cooperative_groups.*|vector_types\.h|driver_types\.h|nv/.*)$")
VENDOR_LIBRARY_RE = re.compile(r"^(cusparse|cublas)[a-zA-Z0-9_]*\.h$")

LIBRARY = ["include/dbsparse", "support", "codegen", "templates", "runtime", "tuner", "tuning_db"]
OPS = ["runtime/spmv", "runtime/spmspv", "runtime/bfs", "runtime/spmm", "runtime/spgemm", "runtime/decode", "runtime/sddmm"]

# A layer is a folder; a file belongs to the longest layer that prefixes its path. Each entry
# mirrors a row of ARCHITECTURE.md's table ("may include"); a layer may always include itself.
# "library" stands for every folder of LIBRARY.
MAY_INCLUDE = {
    "include/dbsparse/abi": [],
    "include/dbsparse": ["include/dbsparse/abi"],
    "support": ["include/dbsparse"],
    "codegen": ["support", "include/dbsparse"],
    "templates": ["include/dbsparse/abi"],
    "runtime/gpu": ["codegen", "include/dbsparse"],
    "runtime/core": ["include/dbsparse"],
    "runtime/profile": ["runtime/gpu", "codegen/keys", "include/dbsparse"],
    "runtime/formats": ["runtime/gpu", "codegen/keys"],
    "runtime/io": ["include/dbsparse", "support"],
    "runtime/generators": ["include/dbsparse", "support"],
    "runtime/reference": ["include/dbsparse", "support"],
    **{op: ["runtime/gpu", "codegen/keys", "include/dbsparse"] for op in OPS},
    "runtime/apps": ["runtime/gpu", "codegen/keys", "include/dbsparse", "runtime/spgemm"],
    "tuner": ["include/dbsparse"],
    "tuning_db": ["include/dbsparse"],
    "tools/baselines": ["library"],
    "tools/bench": ["library", "tools/baselines"],
    "tools/ops": ["library", "tools/bench", "tools/baselines"],
    "tools/apps": ["library", "tools/bench", "tools/baselines"],
    # the two CLIs and what only they share (tools/cli_checks.hpp)
    "tools": ["library", "tools/ops", "tools/bench", "tools/baselines", "tools/apps"],
    "tools/dbsparse": ["library", "tools/ops", "tools/bench", "tools/baselines", "tools/apps", "tools"],
    "tools/dbtune": ["library", "tools/ops", "tools/bench", "tools/baselines", "tools/apps", "tools"],
    "python": ["library"],
    "tests": None,  # anything
}
LAYERS = sorted(MAY_INCLUDE, key=len, reverse=True)


def layer_of(path):
    for layer in LAYERS:
        if path == layer or path.startswith(layer + "/"):
            return layer
    if path.startswith("runtime/"):  # a runtime folder the table does not name yet
        return "/".join(path.split("/")[:2])
    return None


def in_library(path):
    return any(path == top or path.startswith(top + "/") for top in LIBRARY)


def expand(names):
    out = []
    for name in names:
        out.extend(LIBRARY if name == "library" else [name])
    return out


def allowed_closure(layer):
    """The folders `layer` may include: its own, its table entry's, and theirs, transitively."""
    seen, todo = {layer}, list(expand(MAY_INCLUDE.get(layer) or []))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(expand(MAY_INCLUDE.get(name) or []))
    return seen


def allows(folders, target):
    """A layer in `folders` holds `target`; a name that is no layer (runtime, codegen/keys) is a prefix."""
    if layer_of(target) in folders:
        return True
    return any(f not in MAY_INCLUDE and target.startswith(f + "/") for f in folders)


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):  # not a checkout: every file below the folders
        files = []
        for top in LIBRARY + ["tools", "python", "tests"]:
            for dirpath, _, names in os.walk(os.path.join(root, top)):
                files.extend(os.path.relpath(os.path.join(dirpath, n), root) for n in names)
        return files


def resolver(root, files):
    """Maps (includer, include text) to a tracked path, as the build's include paths would."""
    fileset = set(files)
    # templates/ and the ABI headers are embedded and included by file name alone
    by_name = {}
    for f in files:
        if f.startswith("templates/") or f.startswith("include/dbsparse/abi/"):
            by_name.setdefault(os.path.basename(f), f)

    def resolve(includer, text):
        here = os.path.dirname(includer)
        candidates = [os.path.normpath(os.path.join(here, text)), text, "include/" + text]
        if includer.startswith("tests/"):
            candidates.append("tests/" + text)
        for c in candidates:
            if c in fileset:
                return c
        if includer.startswith("templates/") or includer.startswith("tests/golden/"):
            return by_name.get(os.path.basename(text))
        return None

    return resolve


def check(root):
    files = [f for f in tracked_files(root) if f.endswith(SOURCE_ENDINGS)]
    resolve = resolver(root, files)
    problems = []
    for f in sorted(files):
        layer = layer_of(f)
        try:
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                lines = fh.readlines()
        except OSError:
            continue
        for n, line in enumerate(lines, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            text = m.group(2).strip()
            where = f"{f}:{n}: #include {m.group(1)}{text}{'>' if m.group(1) == '<' else chr(34)}"
            if f.startswith("include/dbsparse/") and CUDA_HEADER_RE.match(text):
                problems.append(f"{where}: a public header includes a CUDA header (an installed dbsparse needs no toolkit)")
                continue
            if in_library(f) and VENDOR_LIBRARY_RE.match(text):
                problems.append(f"{where}: the library includes a cuSPARSE/cuBLAS header (only tools/ links them)")
                continue
            target = resolve(f, text)
            if target is None:
                continue  # a system or third-party header
            if in_library(f) and (target.startswith("tools/") or target.startswith("tests/")):
                problems.append(f"{where}: the library never includes tools/ or tests/ ({target})")
                continue
            if f.startswith("include/dbsparse/") and not target.startswith("include/dbsparse/"):
                problems.append(f"{where}: a public header includes a non-public file ({target})")
                continue
            if layer is None or MAY_INCLUDE.get(layer, []) is None:
                continue
            folders = allowed_closure(layer)
            if not allows(folders, target):
                direct = ", ".join(expand(MAY_INCLUDE.get(layer) or [])) or "only itself"
                problems.append(f"{where}: {layer}/ may include {direct} (and what those may include), "
                                f"not {layer_of(target) or os.path.dirname(target)}/ ({target})")
    return problems, len(files)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems, count = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break docs/ARCHITECTURE.md's table ({count} files read)")
        return 1
    print(f"check_layers: {count} files keep docs/ARCHITECTURE.md's include rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
