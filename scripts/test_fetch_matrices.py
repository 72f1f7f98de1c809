#!/usr/bin/env python3
"""Unit tests of scripts/fetch_matrices.py's converters and catalogue on hand-worked inputs (no
network): a METIS graph and a tiny bundle-adjustment problem, whose J^T J pattern is counted by
hand below. Run: python3 scripts/test_fetch_matrices.py (ctest: fetch_matrices)."""
import json
import os
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
