"""Tests of tools/_common.py: the trees of kunit/trees, the list-file
reader, the rule for kernel sources, the per-tree paths and the state of
the single-tree layout."""

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS))
SPEC = importlib.util.spec_from_file_location('_common', TOOLS / '_common.py')
common = sys.modules.get('_common') or importlib.util.module_from_spec(SPEC)
if '_common' not in sys.modules:
    sys.modules['_common'] = common
    SPEC.loader.exec_module(common)


def write(top, files):
    for rel, text in files.items():
        path = Path(top) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


class TmpCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gpk-common-')
        self.addCleanup(shutil.rmtree, self.tmp)

    def path(self, rel):
        return os.path.join(self.tmp, rel)


class ReadList(TmpCase):
    def test_comments_blanks_and_line_numbers(self):
        write(self.tmp, {'l': '# head\n\n a  # tail\nb c\n  #x\nd\n'})
        self.assertEqual(common.read_list(self.path('l')),
                         [(3, 'a'), (4, 'b c'), (6, 'd')])
        self.assertEqual(common.read_names(self.path('l')), ['a', 'b c', 'd'])

    def test_missing_file(self):
        self.assertEqual(common.read_list(self.path('no'), missing_ok=True),
                         [])
        with self.assertRaisesRegex(common.ToolError,
                                    r'^cannot read .*no: no such file$'):
            common.read_list(self.path('no'))


class Trees(TmpCase):
    def trees(self, text):
        write(self.tmp, {'trees': text})
        return common.read_trees(self.path('trees'))

    def test_file_order_and_packages(self):
        got = self.trees('# TREE PACKAGE\n6.12 linux-source-6.12\n'
                         '6.1\tlinux-source-6.1  # LTS\n')
        self.assertEqual([(t.name, t.package) for t in got],
                         [('6.12', 'linux-source-6.12'),
                          ('6.1', 'linux-source-6.1')])

    def test_bad_files(self):
        for text, why in (('6.1\n', r'trees:1: expected "TREE PACKAGE"'),
                          ('6.1 a b\n', 'expected'),
                          ('common pkg\n', "tree 'common' is not MAJOR"),
                          ('6.1 a\n6.1 b\n', 'trees:2: tree 6.1 listed '
                           'twice'),
                          ('# nothing\n', 'lists no tree')):
            with self.subTest(text=text):
                with self.assertRaisesRegex(common.ToolError, why):
                    self.trees(text)

    def test_select(self):
        self.trees('6.1 linux-source-6.1\n6.12 linux-source-6.12\n')
        sel = [t.name for t in common.select_trees(None, self.path('trees'))]
        self.assertEqual(sel, ['6.1', '6.12'])
        for values, want in (([], ['6.1', '6.12']), (['all'], ['6.1', '6.12']),
                             (['6.12'], ['6.12']),
                             (['6.12', '6.1'], ['6.1', '6.12']),
                             (['6.12,6.1'], ['6.1', '6.12']),
                             (['6.1 6.1'], ['6.1'])):
            with self.subTest(values=values):
                self.assertEqual([t.name for t in common.select_trees(
                    values, self.path('trees'))], want)

    def test_unknown_tree(self):
        self.trees('6.1 linux-source-6.1\n6.12 linux-source-6.12\n')
        with self.assertRaises(common.UnknownTree) as cm:
            common.select_trees(['6.1', '6.2'], self.path('trees'))
        self.assertEqual(str(cm.exception), "unknown tree '6.2'; known "
                         "trees: 6.1, 6.12")
        self.assertEqual(cm.exception.status, 2)

    def test_paths(self):
        saved = (common.BUILD, common.RESULTS, common.KUNIT, common.PATCHES)
        self.addCleanup(lambda: setattr_all(saved))

        def setattr_all(values):
            (common.BUILD, common.RESULTS, common.KUNIT,
             common.PATCHES) = values
        setattr_all(('/b', '/r', self.tmp, '/p'))
        t = common.Tree('6.12', 'linux-source-6.12')
        self.assertEqual(t.linux, '/b/6.12/linux')
        self.assertEqual(t.state, '/b/6.12/linux/.git/gup-pin-kunit.json')
        self.assertEqual((t.kunit_build, t.debug_build),
                         ('/b/6.12/kunit-x86_64',
                          '/b/6.12/kunit-debug-x86_64'))
        self.assertEqual((t.results, t.patches), ('/r/6.12', '/p/6.12'))
        self.assertEqual(t.mutants, self.path('mutants/6.12'))
        self.assertEqual(t.pin_core, self.path('6.12/pin-core'))
        self.assertIsNone(t.expected_splats)
        write(self.tmp, {'6.12/expected-splats': 'a.b WARNING:\n'})
        self.assertEqual(t.expected_splats,
                         self.path('6.12/expected-splats'))
        self.assertEqual(t.expand('{results}/{tree}/debug'), '/r/6.12/debug')
        self.assertEqual(t.expand('{build}/kunit-debug-x86_64'),
                         '/b/6.12/kunit-debug-x86_64')


class KernelSources(TmpCase):
    def setUp(self):
        super().setUp()
        write(self.tmp, {
            'trees': '6.1 linux-source-6.1\n6.12 linux-source-6.12\n',
            'common/mm/gup_kunit.c': 'c', 'common/mm/gup_kunit.h': 'h',
            'common/lib/x.c': 'x',
            '6.1/mm/gup_kunit_61.c': '61', '6.1/kunitconfig': 'cfg',
            '6.1/pin-core': 'f mm/gup.c', '6.12/mm/gup_kunit_612.c': '612',
            'harness/mm/gup_kunit_gcov.c': 'gcov',
            'mutants/6.1/001-x.patch': 'p', 'mutants/6.1/ci-subset': '001-x',
            'suites': 's', 'expected-splats': 'e', 'qemu_x86_64.py': 'q',
            'debug.config': 'd', 'mm/old_layout.c': 'old',
            'common/mm/.gup_kunit.c.swp': 'swap', 'common/mm/x.c~': 'bak'})

    def sources(self, tree, harness=True):
        return common.kernel_sources(tree, harness, kunit=self.tmp)

    def test_common_tree_and_harness(self):
        self.assertEqual(self.sources('6.1'), {
            'lib/x.c': self.path('common/lib/x.c'),
            'mm/gup_kunit.c': self.path('common/mm/gup_kunit.c'),
            'mm/gup_kunit.h': self.path('common/mm/gup_kunit.h'),
            'mm/gup_kunit_61.c': self.path('6.1/mm/gup_kunit_61.c'),
            'mm/gup_kunit_gcov.c': self.path('harness/mm/gup_kunit_gcov.c')})
        self.assertEqual(sorted(self.sources('6.12')),
                         ['lib/x.c', 'mm/gup_kunit.c', 'mm/gup_kunit.h',
                          'mm/gup_kunit_612.c', 'mm/gup_kunit_gcov.c'])

    def test_exported_set_has_no_harness_file(self):
        for tree in ('6.1', '6.12'):
            exported = self.sources(tree, harness=False)
            self.assertNotIn('mm/gup_kunit_gcov.c', exported)
            self.assertEqual(set(self.sources(tree)) - set(exported),
                             {'mm/gup_kunit_gcov.c'})
        self.assertEqual(common.harness_sources('6.1', kunit=self.tmp),
                         {'mm/gup_kunit_gcov.c':
                          self.path('harness/mm/gup_kunit_gcov.c')})

    def test_tree_root_files_are_configuration(self):
        got = self.sources('6.1')
        for rel in ('kunitconfig', 'pin-core', 'trees', 'suites',
                    '001-x.patch', 'mutants/6.1/001-x.patch', 'mm/old_layout.c',
                    'qemu_x86_64.py', 'debug.config'):
            self.assertNotIn(rel, got)
        self.assertFalse(any('.swp' in r or r.endswith('~') for r in got))

    def test_a_tree_object_works_too(self):
        self.assertEqual(self.sources(common.Tree('6.1', 'x')),
                         self.sources('6.1'))

    def test_same_path_from_two_roots_is_an_error(self):
        write(self.tmp, {'6.12/mm/gup_kunit.h': 'again'})
        with self.assertRaisesRegex(
                common.ToolError, r'^mm/gup_kunit\.h comes from both '
                r'.*common/mm/gup_kunit\.h and .*6\.12/mm/gup_kunit\.h'):
            self.sources('6.12')
        self.assertIn('mm/gup_kunit.h', self.sources('6.1'))
        write(self.tmp, {'harness/lib/x.c': 'again'})
        with self.assertRaisesRegex(common.ToolError, 'lib/x.c comes from'):
            self.sources('6.1')
        # Without the harness, its files clash with nothing.
        self.assertIn('lib/x.c', self.sources('6.1', harness=False))


class State(TmpCase):
    def test_state_of_the_single_tree_layout(self):
        saved = common.BUILD
        common.BUILD = self.tmp
        self.addCleanup(setattr, common, 'BUILD', saved)
        tree = common.Tree('6.1', 'linux-source-6.1')
        self.assertIsNone(common.load_state(tree))
        os.makedirs(os.path.dirname(tree.state))
        with open(tree.state, 'w') as f:
            json.dump({'head': 'abc', 'base': 'b', 'patches': 'd'}, f)
        st = common.load_state(tree)
        self.assertEqual((st['series_head'], st['head'], st['harness']),
                         ('abc', 'abc', []))
        common.save_state(tree, dict(st, harness=None))
        self.assertIsNone(common.load_state(tree)['harness'])


if __name__ == '__main__':
    unittest.main()
