"""kunit/suites is the one list of suites: the kernel sources define
exactly those suites, in files named after them, linked in its order,
and the series' test patch and cover letter name each exported one."""
import glob
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
import _common  # noqa: E402
from run_suite import expected_suites  # noqa: E402

SUITE_RE = re.compile(r'^\s*\.name\s*=\s*"(gup_pin\w*)"', re.M)
OBJ_RE = re.compile(r'\b(gup_pin\w*)_kunit\.o\b')


def defined_suites(tree):
    """{suite: tree path of the file that defines it}."""
    out = {}
    for rel, path in _common.kernel_sources(tree).items():
        if rel.endswith('.c'):
            with open(path) as f:
                for name in SUITE_RE.findall(f.read()):
                    out[name] = rel
    return out


class Suites(unittest.TestCase):
    def setUp(self):
        self.trees = _common.read_trees()

    def test_the_sources_define_the_listed_suites(self):
        for tree in self.trees:
            listed = expected_suites('*', tree.name)
            defined = defined_suites(tree)
            self.assertEqual(sorted(defined), sorted(listed), tree.name)
            for name, rel in defined.items():
                self.assertEqual(os.path.basename(rel), name + '_kunit.c',
                                 rel)

    def test_the_list_is_the_link_order(self):
        for tree in self.trees:
            harness = set(_common.harness_sources(tree))
            listed = [s for s in expected_suites('*', tree.name)
                      if 'mm/%s_kunit.c' % s not in harness]
            makefile = os.path.join(_common.KUNIT, tree.name, 'mm', 'tests',
                                    'Makefile')
            with open(makefile) as f:
                objs = ' '.join(ln for ln in f if ln.startswith('obj-'))
            linked = OBJ_RE.findall(objs)
            self.assertEqual(linked, listed, makefile)

    def test_the_series_names_every_exported_suite(self):
        for tree in self.trees:
            harness = set(_common.harness_sources(tree))
            names = [s for s in expected_suites('*', tree.name)
                     if 'mm/%s_kunit.c' % s not in harness]
            patch = sorted(glob.glob(os.path.join(
                _common.PATCHES, tree.name, '*add-KUnit-tests*.patch')))
            self.assertEqual(len(patch), 1, tree.name)
            with open(patch[0]) as f:
                message = f.read().split('\n---\n')[0]
            with open(os.path.join(_common.PATCHES, tree.name,
                                   'cover-letter.txt')) as f:
                cover = f.read()
            for name in names:
                self.assertRegex(message, r'\b%s:' % name,
                                 '%s: the test patch does not describe %s'
                                 % (tree.name, name))
                self.assertRegex(cover, r'\b%s\b' % name,
                                 '%s: the cover letter does not name %s'
                                 % (tree.name, name))


if __name__ == '__main__':
    unittest.main()
