#!/usr/bin/env python3
"""Fetch the public real matrices of scripts/public_matrices.json into a cache folder.

Each matrix comes out of a public source archive (checked against the sha256 in the catalogue) as
NAME.mtx.gz: a Matrix Market file, gzip'ed (dbsparse reads .mtx.gz). Sources that are not Matrix
Market already (METIS graphs, a bundle-adjustment problem, graph-tool's binary .gt graphs) are
converted here, and the written text is checked against the catalogue's mtx_sha256. Idempotent: a
matrix already present whose text has the recorded sha256 is left alone; archives are kept in
DIR/downloads.

Usage:
  scripts/fetch_matrices.py                 # into $DBSPARSE_PUBLIC_MATRICES, else ~/.cache/dbsparse/public-matrices
  scripts/fetch_matrices.py --out DIR [NAME...]
  scripts/fetch_matrices.py --list
  scripts/fetch_matrices.py --record        # fill empty sha256 fields of the catalogue (maintainers)
Then: DBSPARSE_MATRICES=DIR dbsparse bench spmm --suite none   (see docs/MATRICES.md)
"""
import argparse
import gzip
import hashlib
import json
import os
import struct
import sys
import tarfile
import urllib.error
import urllib.request
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CATALOG = os.path.join(HERE, "public_matrices.json")


class FetchError(Exception):
    pass


def default_out():
    env = os.environ.get("DBSPARSE_PUBLIC_MATRICES")
    return env if env else os.path.join(os.path.expanduser("~"), ".cache", "dbsparse", "public-matrices")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(url, dest):
    """Downloads url to dest (through dest.part, so an interrupted download leaves no dest)."""
    print(f"  downloading {url}", flush=True)
    part = dest + ".part"
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(part, "wb") as out:
            total = int(r.headers.get("Content-Length") or 0)
            done, next_report = 0, 8 << 20
            for block in iter(lambda: r.read(1 << 20), b""):
                out.write(block)
                done += len(block)
                if done >= next_report:
                    print(f"    {done >> 20} MiB" + (f" of {total >> 20} MiB" if total else ""), flush=True)
                    next_report += 8 << 20
    except (urllib.error.URLError, OSError) as e:
        if os.path.exists(part):
            os.remove(part)
        raise FetchError(f"cannot download {url}: {e} (no network, or the archive has moved?)")
    os.replace(part, dest)


def source_archive(src_id, src, downloads, record):
    """The verified local path of a source archive, downloaded when missing or corrupt."""
    dest = os.path.join(downloads, os.path.basename(src["url"]))
    if os.path.exists(dest) and (not src["sha256"] or sha256_file(dest) == src["sha256"]):
        return dest
    os.makedirs(downloads, exist_ok=True)
    download(src["url"], dest)
    got = sha256_file(dest)
    if not src["sha256"]:
        if not record:
            raise FetchError(f"source '{src_id}' has no sha256 in {CATALOG}; run with --record to fill it")
        src["sha256"] = got
        print(f"  recorded sha256 {got} for {src_id}")
    elif got != src["sha256"]:
        os.remove(dest)
        raise FetchError(f"{src['url']}: sha256 {got}, the catalogue says {src['sha256']}; the file was removed")
    return dest


def read_member(archive, member):
    """The bytes of one file of a tar archive."""
    with tarfile.open(archive) as tar:
        try:
            f = tar.extractfile(member)
        except KeyError:
            f = None
        if f is None:
            raise FetchError(f"{archive} has no file {member}")
        return f.read()


def ascii_text(data, member):
    try:
        return data.decode("ascii")
    except UnicodeDecodeError as e:
        raise FetchError(f"{member}: not ASCII text ({e})")


def comment_block(m, src):
    lines = [f"% name: {m['name']} ({m['kind']})", f"% origin: {m['origin']}",
             f"% source: {src['url']} : {m['member']}", f"% license: {src['license']}",
             "% written by dbsparse scripts/fetch_matrices.py"]
    return "".join(line + "\n" for line in lines)


def from_metis(text, m, src):
    """A METIS graph (1-based adjacency lists, each edge in both lists) as a symmetric pattern
    matrix, lower triangle stored."""
    rows = [ln for ln in text.splitlines() if not ln.startswith("%")]
    head = rows[0].split()
    n, m_edges = int(head[0]), int(head[1])
    if len(head) > 2 and head[2].strip("0"):
        raise FetchError(f"{m['member']}: weighted METIS graphs (fmt {head[2]}) are not handled")
    out = []
    for i in range(1, n + 1):
        adj = sorted(int(t) for t in rows[i].split()) if i < len(rows) else []
        out.extend(f"{i} {j}\n" for j in adj if j < i)
    if len(out) != m_edges:
        raise FetchError(f"{m['member']}: {len(out)} edges below the diagonal, the header says {m_edges}")
    return ("%%MatrixMarket matrix coordinate pattern symmetric\n" + comment_block(m, src) +
            f"{n} {n} {len(out)}\n" + "".join(out))


def from_bal(text, m, src):
    """The pattern of J^T J for a Bundle Adjustment in the Large problem: 9 parameters a camera
    (rows 1..9C), then 3 a point. An observation of point p by camera c couples c's and p's
    parameters; two cameras that see one point couple too. Symmetric, lower triangle stored."""
    lines = text.splitlines()
    ncam, npts, nobs = (int(t) for t in lines[0].split())
    cams_of_point = [[] for _ in range(npts)]
    for ln in lines[1:1 + nobs]:
        c, p = ln.split()[:2]
        cams_of_point[int(p)].append(int(c))
    pairs = set()
    for cams in cams_of_point:
        cams.sort()
        pairs.update((a, b) for k, a in enumerate(cams) for b in cams[:k] if b != a)
    base = 9 * ncam
    out = []
    # Camera rows: the lower triangle of the diagonal block, and full blocks with earlier cameras.
    for c in range(ncam):
        earlier = sorted(b for (a, b) in pairs if a == c)
        for r in range(9):
            row = 9 * c + r + 1
            cols = [9 * b + k + 1 for b in earlier for k in range(9)] + [9 * c + k + 1 for k in range(r + 1)]
            out.extend(f"{row} {col}\n" for col in cols)
    # Point rows: 3 x 9 blocks for each observing camera, then the diagonal block's lower triangle.
    for p, cams in enumerate(cams_of_point):
        cams = sorted(set(cams))
        for r in range(3):
            row = base + 3 * p + r + 1
            cols = [9 * c + k + 1 for c in cams for k in range(9)] + [base + 3 * p + k + 1 for k in range(r + 1)]
            out.extend(f"{row} {col}\n" for col in cols)
    n = base + 3 * npts
    return ("%%MatrixMarket matrix coordinate pattern symmetric\n" + comment_block(m, src) +
            f"{n} {n} {len(out)}\n" + "".join(out))


# graph-tool's binary format (its doc/gt_format.rst): the magic, a version byte (1), an endianness
# byte, a comment string, a directed byte, N, then each vertex's out-neighbour list (a uint64 count
# and that many indices: uint8 while N <= 255, uint16 while N <= 65535, then uint32, uint64). An
# undirected edge is listed once. Property maps follow; they are walked (not kept) so that a
# misread shows as a file that does not end where its last map does.
GT_MAGIC = b"\xe2\x9b\xbe gt"
GT_FIXED = {0: 1, 1: 2, 2: 4, 3: 8, 4: 8, 5: 16}  # bool, int16, int32, int64, double, long double
# Length-prefixed values, and the bytes of an element: string, vector<bool, int16, int32, int64,
# double, long double>, pickled python object.
GT_SEQUENCE = {6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8, 12: 16, 14: 1}
GT_STRINGS = 13  # vector<string>


class _GtReader:
    def __init__(self, data, member):
        self.data, self.member, self.pos, self.end = data, member, 0, "<"

    def take(self, n, what):
        if self.pos + n > len(self.data):
            raise FetchError(f"{self.member}: the file ends at byte {len(self.data)}, inside {what}")
        self.pos += n
        return self.pos - n

    def unpack(self, fmt, what):
        fmt = self.end + fmt
        return struct.unpack_from(fmt, self.data, self.take(struct.calcsize(fmt), what))

    def string(self, what):
        n = self.unpack("Q", what)[0]
        at = self.take(n, what)
        return self.data[at:at + n]


def read_gt(data, member):
    """(directed, N, [(source, target), ...] in file order) of a graph-tool .gt (or .gt.gz) file."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise FetchError(f"{member}: a damaged gzip stream ({e})")
    r = _GtReader(data, member)
    if data[:6] != GT_MAGIC:
        raise FetchError(f"{member}: not a graph-tool .gt file (no magic {GT_MAGIC!r})")
    r.pos = 6
    version, big = r.unpack("BB", "the header")
    if version != 1 or big not in (0, 1):
        raise FetchError(f"{member}: .gt version {version}, endianness byte {big}; version 1 is handled")
    r.end = ">" if big else "<"
    comment = r.string("the comment").decode("utf-8", "replace")
    directed, n = r.unpack("BQ", "the graph header")
    code = "B" if n <= 0xFF else "H" if n <= 0xFFFF else "I" if n <= 0xFFFFFFFF else "Q"
    width = struct.calcsize(code)
    edges = []
    for v in range(n):
        k = r.unpack("Q", f"vertex {v}'s list")[0]
        at = r.take(k * width, f"vertex {v}'s list of {k}")
        for u in struct.unpack_from(f"{r.end}{k}{code}", data, at):
            if u >= n:
                raise FetchError(f"{member}: vertex {v} has neighbour {u}, but there are {n} vertices")
            edges.append((v, u))
    count = {0: 1, 1: n, 2: len(edges)}
    for i in range(r.unpack("Q", "the property-map count")[0]):
        kind = r.unpack("B", f"property map {i}")[0]
        name = r.string(f"property map {i}'s name").decode("utf-8", "replace")
        vtype = r.unpack("B", f"property map {name}")[0]
        if kind not in count:
            raise FetchError(f"{member}: property map {name} is of key type {kind}; 0, 1 or 2 expected")
        what = f"property map {name}"
        if vtype in GT_FIXED:
            r.take(GT_FIXED[vtype] * count[kind], what)
        elif vtype in GT_SEQUENCE:
            for _ in range(count[kind]):
                r.take(GT_SEQUENCE[vtype] * r.unpack("Q", what)[0], what)
        elif vtype == GT_STRINGS:
            for _ in range(count[kind]):
                for _ in range(r.unpack("Q", what)[0]):
                    r.string(what)
        else:
            raise FetchError(f"{member}: property map {name} has value type {vtype}, not one of graph-tool's")
    if r.pos != len(data):
        raise FetchError(f"{member}: {len(data) - r.pos} bytes after the last property map")
    stats = f"stats: {n} vertices, {len(edges)} edges, {'directed' if directed else 'undirected'}"
    if "stats:" in comment and stats not in comment:
        said = comment[comment.find("stats:"):]
        raise FetchError(f"{member}: read {stats!r}, but the file's comment says {said!r}")
    return bool(directed), n, edges


def from_gt(data, m, src):
    """A graph-tool graph as a pattern matrix: directed, a general one with an entry (u, v) for each
    edge u -> v; undirected, a symmetric one, lower triangle stored. Parallel edges become one entry;
    self-loops are diagonal entries."""
    directed, n, edges = read_gt(data, m["member"])
    if directed:
        pairs = sorted(set(edges))
    else:
        pairs = sorted({(max(u, v), min(u, v)) for u, v in edges})
    out = "".join(f"{i + 1} {j + 1}\n" for i, j in pairs)
    sym = "general" if directed else "symmetric"
    return (f"%%MatrixMarket matrix coordinate pattern {sym}\n" + comment_block(m, src) +
            f"{n} {n} {len(pairs)}\n" + out)


def from_mtx(text, m, src):
    if not text.startswith("%%MatrixMarket"):
        raise FetchError(f"{m['member']}: not a Matrix Market file")
    return text


CONVERTERS = {"mtx": from_mtx, "metis": from_metis, "bal-jtj": from_bal, "gt": from_gt}
BINARY_FORMATS = {"gt"}  # their converters take the member's bytes; the others its ASCII text


def mtx_text_sha(path):
    with gzip.open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def fetch_one(m, catalog, out, record):
    dest = os.path.join(out, m["name"] + ".mtx.gz")
    want = m.get("mtx_sha256", "")
    if os.path.exists(dest) and want and mtx_text_sha(dest) == want:
        print(f"{m['name']}: present and verified ({os.path.getsize(dest) >> 10} KiB)")
        return dest
    print(f"{m['name']}: {m['kind']}, from {m['source']}:{m['member']}", flush=True)
    src = catalog["sources"][m["source"]]
    archive = source_archive(m["source"], src, os.path.join(out, "downloads"), record)
    data = read_member(archive, m["member"])
    if m["format"] not in BINARY_FORMATS:
        data = ascii_text(data, m["member"])
    text = CONVERTERS[m["format"]](data, m, src).encode("ascii")
    got = hashlib.sha256(text).hexdigest()
    if not want:
        if not record:
            raise FetchError(f"{m['name']} has no mtx_sha256 in {CATALOG}; run with --record to fill it")
        m["mtx_sha256"] = got
        print(f"  recorded mtx_sha256 {got}")
    elif got != want:
        raise FetchError(f"{m['name']}: the written text has sha256 {got}, the catalogue says {want}")
    part = dest + ".part"
    with open(part, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(text)
    os.replace(part, dest)
    print(f"  wrote {dest} ({os.path.getsize(dest) >> 10} KiB gzip'ed, {len(text) >> 10} KiB text)")
    return dest


def print_list(catalog):
    print(f"{'name':<22} {'kind':<18} {'rows':>8} {'cols':>8} {'entries':>9} {'symmetry':<9} source")
    for m in catalog["matrices"]:
        print(f"{m['name']:<22} {m['kind']:<18} {m['rows']:>8} {m['cols']:>8} {m['entries']:>9} "
              f"{m['symmetry']:<9} {catalog['sources'][m['source']]['url']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="only these matrices (default: all)")
    ap.add_argument("--out", default=default_out(), help="cache folder (default: %(default)s)")
    ap.add_argument("--list", action="store_true", help="print the catalogue and exit")
    ap.add_argument("--record", action="store_true", help="fill empty sha256 fields of the catalogue")
    a = ap.parse_args()
    with open(CATALOG) as f:
        catalog = json.load(f)
    if a.list:
        print_list(catalog)
        return 0
    known = {m["name"]: m for m in catalog["matrices"]}
    unknown = [n for n in a.names if n not in known]
    if unknown:
        print(f"error: unknown matrix {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    failed = []
    for m in catalog["matrices"]:
        if a.names and m["name"] not in a.names:
            continue
        try:
            fetch_one(m, catalog, a.out, a.record)
        except FetchError as e:
            print(f"error: {e}", file=sys.stderr)
            failed.append(m["name"])
    if a.record:
        with open(CATALOG, "w") as f:
            json.dump(catalog, f, indent=2)
            f.write("\n")
    total = sum(os.path.getsize(os.path.join(a.out, f)) for f in os.listdir(a.out) if f.endswith(".mtx.gz"))
    print(f"{a.out}: {total / 1e6:.1f} MB of .mtx.gz")
    if failed:
        print(f"error: not fetched: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
