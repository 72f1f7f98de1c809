#!/usr/bin/env python3
"""Unit tests of scripts/fetch_matrices.py's converters and catalogue on hand-worked inputs (no
network): a METIS graph, a tiny bundle-adjustment problem, whose J^T J pattern is counted by hand
below, and graph-tool .gt files packed here byte by byte. Run: python3 scripts/test_fetch_matrices.py
(ctest: fetch_matrices)."""
import gzip
import json
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch_matrices as fm  # noqa: E402

SRC = {"url": "http://example.invalid/a.tar.xz", "license": "test"}


def meta(fmt):
    return {"name": "t", "kind": "test", "origin": "hand-made", "member": "m", "format": fmt}


def entries(text):
    """(size line, set of (row, col)) of a Matrix Market coordinate text."""
    body = [ln for ln in text.splitlines() if not ln.startswith("%")]
    return tuple(int(t) for t in body[0].split()), {tuple(int(t) for t in ln.split()[:2]) for ln in body[1:]}


class Metis(unittest.TestCase):
    # A triangle 1-2-3 with a pendant vertex 4 on 3; every edge listed from both ends.
    GRAPH = "% a comment\n4 4\n2 3\n1 3\n1 2 4\n3\n"

    def test_lower_triangle_of_each_edge(self):
        text = fm.from_metis(self.GRAPH, meta("metis"), SRC)
        self.assertTrue(text.startswith("%%MatrixMarket matrix coordinate pattern symmetric\n"))
        size, got = entries(text)
        self.assertEqual(size, (4, 4, 4))
        self.assertEqual(got, {(2, 1), (3, 1), (3, 2), (4, 3)})

    def test_edge_count_must_match_header(self):
        with self.assertRaises(fm.FetchError):
            fm.from_metis("4 5\n2 3\n1 3\n1 2 4\n3\n", meta("metis"), SRC)

    def test_weighted_graph_refused(self):
        with self.assertRaises(fm.FetchError):
            fm.from_metis("2 1 1\n2 5\n1 5\n", meta("metis"), SRC)


class BundleAdjustment(unittest.TestCase):
    # 2 cameras, 2 points; camera 0 sees point 0, camera 1 sees points 0 and 1 (then parameters
    # and the observations' pixel values, which the pattern ignores).
    BAL = "2 2 3\n0 0 1.0 2.0\n1 0 3.0 4.0\n1 1 5.0 6.0\n" + "0.0\n" * (2 * 9 + 2 * 3)

    def test_pattern_counted_by_hand(self):
        size, got = entries(fm.from_bal(self.BAL, meta("bal-jtj"), SRC))
        # Rows 1-9 camera 0: its diagonal block's lower triangle, 45. Rows 10-18 camera 1: a full
        # 9 x 9 block with camera 0 (they share point 0) and 45, 126. Rows 19-21 point 0: both
        # cameras' 9 columns and the lower triangle, 3 * 18 + 6 = 60. Rows 22-24 point 1: camera 1
        # only, 3 * 9 + 6 = 33. 45 + 126 + 60 + 33 = 264 (full: 2 * 264 - 24 = 504, as 18 x 18 +
        # 2 * 9 + 2 * 54 + 2 * 27 counts it).
        self.assertEqual(size, (24, 24, 264))
        self.assertEqual(len(got), 264)
        self.assertTrue(all(c <= r for r, c in got))
        for present in [(1, 1), (9, 1), (10, 9), (18, 18), (19, 1), (19, 18), (21, 21), (22, 10), (24, 22)]:
            self.assertIn(present, got)
        for absent in [(22, 9), (22, 1), (22, 19), (20, 21)]:
            self.assertNotIn(absent, got)


def gt_file(directed, n, adj, props=(), comment=b"", big=False):
    """A graph-tool .gt file: adj[v] is v's out-neighbour list; props are (key type, name, value
    type, encoded values) records."""
    e = ">" if big else "<"
    code = "B" if n <= 0xFF else "H" if n <= 0xFFFF else "I"
    out = [b"\xe2\x9b\xbe gt", bytes([1, 1 if big else 0]), struct.pack(e + "Q", len(comment)), comment,
           bytes([1 if directed else 0]), struct.pack(e + "Q", n)]
    for v in range(n):
        nb = adj.get(v, [])
        out.append(struct.pack(f"{e}Q{len(nb)}{code}", len(nb), *nb))
    out.append(struct.pack(e + "Q", len(props)))
    for key, name, vtype, values in props:
        out += [bytes([key]), struct.pack(e + "Q", len(name)), name, bytes([vtype]), values]
    return b"".join(out)


def gt_string(s, big=False):
    return struct.pack((">" if big else "<") + "Q", len(s)) + s


class GraphTool(unittest.TestCase):
    # Undirected: a triangle 0-1-2, a pendant 3 on 2, the edge 2-3 again from 3 (parallel) and a
    # self-loop on 1; six edges in file order: 0-1, 0-2, 1-1, 1-2, 2-3, 3-2, five entries. Property
    # maps: a graph string, a vertex double, an edge vector<string> (the first edge's holds two
    # strings, the others none).
    ADJ = {0: [1, 2], 1: [1, 2], 2: [3], 3: [2]}

    def props(self, big=False):
        e = ">" if big else "<"
        edge_strings = b"".join([struct.pack(e + "Q", 2) + gt_string(b"ab", big) + gt_string(b"", big)] +
                                [struct.pack(e + "Q", 0)] * 5)
        return [(0, b"description", 6, gt_string(b"hand-made", big)),
                (1, b"value", 4, struct.pack(e + "4d", 1, 2, 3, 4)),
                (2, b"names", 13, edge_strings)]

    def undirected(self, big=False, comment=b""):
        return gt_file(False, 4, self.ADJ, self.props(big), comment, big)

    def test_undirected_is_symmetric_lower_triangle(self):
        for big in (False, True):
            text = fm.from_gt(self.undirected(big), meta("gt"), SRC)
            self.assertTrue(text.startswith("%%MatrixMarket matrix coordinate pattern symmetric\n"))
            size, got = entries(text)
            self.assertEqual(size, (4, 4, 5))
            self.assertEqual(got, {(2, 1), (3, 1), (2, 2), (3, 2), (4, 3)})

    def test_directed_is_general_and_gzip_is_read(self):
        raw = gt_file(True, 3, {0: [1], 1: [0, 2], 2: [2]},
                      comment=b"stats: 3 vertices, 4 edges, directed, 0 graph props")
        text = fm.from_gt(gzip.compress(raw), meta("gt"), SRC)
        self.assertTrue(text.startswith("%%MatrixMarket matrix coordinate pattern general\n"))
        size, got = entries(text)
        self.assertEqual(size, (3, 3, 4))
        self.assertEqual(got, {(1, 2), (2, 1), (2, 3), (3, 3)})

    def test_256_vertices_take_two_byte_indices(self):
        size, got = entries(fm.from_gt(gt_file(False, 256, {255: [0, 254]}), meta("gt"), SRC))
        self.assertEqual(size, (256, 256, 2))
        self.assertEqual(got, {(256, 1), (256, 255)})

    def test_damaged_files_refused(self):
        good = self.undirected()
        bad = {"truncated": good[:-1], "trailing bytes": good + b"\0", "magic": b"x" + good[1:],
               "version": good[:6] + b"\2" + good[7:],
               "stats": self.undirected(comment=b"stats: 4 vertices, 5 edges, undirected"),
               "neighbour": gt_file(False, 2, {0: [2]}),
               "value type": gt_file(False, 1, {}, [(1, b"x", 15, b"")])}
        for what, data in bad.items():
            with self.subTest(what), self.assertRaises(fm.FetchError):
                fm.from_gt(data, meta("gt"), SRC)

    def test_comment_stats_that_agree_pass(self):
        ok = self.undirected(comment=b"made by hand, stats: 4 vertices, 6 edges, undirected, 1 graph props")
        self.assertEqual(entries(fm.from_gt(ok, meta("gt"), SRC))[0], (4, 4, 5))


class Catalogue(unittest.TestCase):
    def test_every_entry_names_a_source_and_a_converter(self):
        with open(fm.CATALOG) as f:
            cat = json.load(f)
        names = [m["name"] for m in cat["matrices"]]
        self.assertEqual(len(names), len(set(names)))
        for m in cat["matrices"]:
            self.assertIn(m["source"], cat["sources"])
            self.assertIn(m["format"], fm.CONVERTERS)
            self.assertEqual(len(m["mtx_sha256"]), 64, m["name"])
        for s in cat["sources"].values():
            self.assertEqual(len(s["sha256"]), 64)


if __name__ == "__main__":
    unittest.main()
