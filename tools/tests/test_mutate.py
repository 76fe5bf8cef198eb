"""Tests of tools/mutate.py, the front end of the mutant catalogue (no
kernel builds): the catalogue and the CI subsets, which mutants a run
covers, the reports, --rescore, the options, and a run in schema mode
with the engine faked. (The engine: test_mutation.py, test_schemata.py.)
Run from the repository root with

    python3 -m unittest discover -s tools/tests -t .
"""

import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
MUTANTS = TOOLS.parent / 'kunit' / 'mutants'
sys.path.insert(0, str(TOOLS))

import _mutation  # noqa: E402
import _schemata  # noqa: E402
from tests import fakes  # noqa: E402
from tests.test_mutation import PATCH, GitTree, entry, summary  # noqa: E402


def _load_tool():
    spec = importlib.util.spec_from_file_location('mutate',
                                                  TOOLS / 'mutate.py')
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mu = _load_tool()
common = sys.modules['_common']


class CatalogueFiles(unittest.TestCase):
    """The catalogue of each tree, kunit/mutants/TREE/catalogue, and its
    CI subset."""

    def test_catalogue_headers(self):
        """Every tree's catalogue kunit/mutants/TREE/catalogue parses, and
        holds nothing else: no loose patch files beside it."""
        cats = sorted(MUTANTS.glob('*/catalogue'))
        self.assertEqual(len(cats), 2)
        self.assertEqual(list(MUTANTS.glob('**/*.patch')), [],
                         'mutants belong in kunit/mutants/TREE/catalogue')
        total = 0
        for cat in cats:
            ms = mu.load_catalogue(str(cat))
            total += len(ms)
            self.assertEqual([m['name'] for m in ms],
                             sorted(m['name'] for m in ms), cat)
            for m in ms:
                self.assertTrue(m['header']['subject'], m['name'])
                self.assertTrue(m['header']['models'], m['name'])
                for path, kind in m['files']:
                    self.assertEqual(kind, 'modify', m['name'])
                    self.assertFalse(path.startswith(('a/', 'b/', '/')))
        self.assertGreaterEqual(total, 200)

    def test_ci_subsets_name_mutants_of_their_tree(self):
        for subset in sorted(MUTANTS.glob('*/ci-subset')):
            names = common.read_names(str(subset))
            self.assertTrue(names, subset)
            known = {m['name'] for m in
                     mu.load_catalogue(str(subset.parent / 'catalogue'))}
            for name in names:
                self.assertIn(name, known, '%s names %s' % (subset, name))


    def test_every_ci_subset_mutant_of_the_catalogues_fits_a_schema(self):
        # The entries themselves, parsed: one hunk of one .c file each.
        for tree in ('6.1', '6.12'):
            cat = {m['name']: m for m in mu.load_catalogue(
                str(MUTANTS / tree / 'catalogue'))}
            for name in common.read_names(str(MUTANTS / tree /
                                              'ci-subset')):
                hunks = _mutation.diff_hunks(cat[name]['text'])
                self.assertEqual(len(hunks), 1, name)
                self.assertTrue(hunks[0][0].endswith('.c'), name)


class CatalogueTest(unittest.TestCase):
    """One file of mutants: entries from 'Mutant: NAME' to the next."""

    def parse(self, text):
        return mu.parse_catalogue(text, 'cat')

    def test_entries_in_file_order_with_their_text(self):
        text = ('# comment\n\nMutant: 002-b\n' + PATCH + '\n\n'
                'Mutant: 001-a\n' + PATCH.replace('+c', '+e'))
        ms = self.parse(text)
        self.assertEqual([m['name'] for m in ms], ['002-b', '001-a'])
        self.assertEqual(ms[0]['text'], PATCH + '\n\n')
        self.assertEqual(ms[1]['text'], PATCH.replace('+c', '+e'))
        self.assertEqual(ms[0]['header']['models'], 'off-by-one in the bias')
        self.assertEqual(ms[0]['files'], [('mm/gup.c', 'modify')])
        self.assertEqual(ms[0]['path'], 'cat')
        self.assertEqual(self.parse('# nothing yet\n'), [])

    def test_bad_catalogues_name_the_line(self):
        for text, why in (
                ('Subject: x\nMutant: 001-a\n' + PATCH, 'cat:1: text before'),
                ('Mutant: 001-a\n' + PATCH + 'Mutant: 001-a\n' + PATCH,
                 r'cat:14: mutant 001-a again \(first on line 1\)'),
                ('Mutant: 1-A\n' + PATCH, "cat:1: '1-A' is not a mutant"),
                ('Mutant: 001-a\nSubject: x\n', r'cat:1 \(001-a\) holds no'),
        ):
            with self.assertRaisesRegex(mu.ToolError, why):
                self.parse(text)

    def test_missing_file_is_empty(self):
        self.assertEqual(mu.load_catalogue('/nonexistent/catalogue'), [])

    def test_selects(self):
        name = '060-vmscan-reclaims-pinned'
        for arg in (name, '060', '060-vmscan', '06*', '*pinned'):
            self.assertTrue(mu.selects(arg, name), arg)
        for arg in ('06', '060-vm', '061', 'vmscan'):
            self.assertFalse(mu.selects(arg, name), arg)


class ReportTest(unittest.TestCase):
    def test_totals_and_summary_line(self):
        es = [entry('killed'), entry('killed', eq=True), entry('survived'),
              entry('noapply'), entry('nocompile'), entry('equivalent', True)]
        t = mu.totals(es)
        self.assertEqual((t['killed'], t['survived'], t['equivalent'],
                          t['catalogue_errors']), (2, 1, 1, 1))
        self.assertEqual((t['passed'], t['failed']), (2, 4))
        self.assertEqual(mu.summary_line(es), '2 passed, 4 failed, 0 skipped')
        self.assertTrue(mu.totals_line(es).startswith(
            'killed 2 / total 6 (equivalent 1)'))

    def test_json_and_markdown(self):
        es = [entry('killed', name='001-a'), entry('survived', name='002-b'),
              entry('equivalent', True, name='003-c')]
        es[1]['description'] = 'pipe | in text'
        with tempfile.TemporaryDirectory() as d:
            mu.write_reports(es, d, _mutation.Baseline(
                summary([('x', 'failed')])))
            with open(os.path.join(d, 'mutants.json')) as f:
                data = json.load(f)
            with open(os.path.join(d, 'mutants.md')) as f:
                md = f.read()
        self.assertEqual([e['name'] for e in data], ['001-a', '002-b',
                                                     '003-c'])
        for e in data:
            for key in ('name', 'file', 'status', 'cases', 'seconds',
                        'description'):
                self.assertIn(key, e)
            self.assertIn(e['status'], _mutation.STATUSES)
        rows = [ln for ln in md.splitlines() if ln.startswith('| 00')]
        self.assertEqual(len(rows), 3)
        self.assertIn('pipe \\| in text', md)
        self.assertIn('gup_pin.x', md)
        self.assertEqual(md.strip().splitlines()[-1],
                         'killed 1 / total 3 (equivalent 1); survived 1')


class RescoreTest(unittest.TestCase):
    def test_rescore_uses_baseline(self):
        with tempfile.TemporaryDirectory() as d:
            def put(rel, obj):
                path = os.path.join(d, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as f:
                    json.dump(obj, f)
            put('mutants/_baseline/summary.json', summary([('a', 'passed')]))
            run = summary([('a', 'passed')], missing=['gup_new'])
            put('mutants/001-x/summary.json', run)
            put('mutants/002-y/summary.json', summary([('a', 'failed')]))
            put('mutants.json', [dict(entry('killed', name='001-x')),
                                 dict(entry('nocompile', name='002-y'))])
            pdir = os.path.join(d, 'p')
            os.makedirs(pdir)
            ms = []
            for name in ('001-x', '002-y'):
                path = os.path.join(pdir, name + '.patch')
                with open(path, 'w') as f:
                    f.write(PATCH)
                ms.append(_mutation.load_mutant(path))
            with contextlib.redirect_stdout(io.StringIO()) as out:
                entries = mu.rescore(ms, d)
            with open(os.path.join(d, 'mutants.json')) as f:
                data = json.load(f)
        self.assertEqual([e['status'] for e in data],
                         ['equivalent', 'nocompile'])
        self.assertEqual(data, entries)
        self.assertEqual(mu.summary_line(entries),
                         '1 passed, 1 failed, 0 skipped')
        self.assertTrue(out.getvalue().splitlines()[-1].endswith(
            '(rescored)'))


class RescoreModes(unittest.TestCase):
    """--rescore judges a mutant run in a schema against the schema
    kernel's baseline, any other against the unmutated tree's."""

    def test_each_mode_against_its_own_baseline(self):
        with tempfile.TemporaryDirectory() as d:
            def put(rel, obj):
                Path(d, rel).parent.mkdir(parents=True, exist_ok=True)
                Path(d, rel).write_text(json.dumps(obj))
            put('mutants/_baseline/summary.json', summary([('a', 'passed')]))
            put('mutants/_schema_baseline/summary.json',
                summary([('a', 'failed')]))
            failing = summary([('a', 'failed')])
            put('mutants/001-x/summary.json', failing)
            put('mutants/002-y/summary.json', failing)
            put('mutants.json', [entry('survived', name='001-x'),
                                 dict(entry('killed', name='002-y'),
                                      mode='schema')])
            Path(d, 'm.patch').write_text(PATCH.replace('Equivalent', 'X'))
            ms = [dict(_mutation.load_mutant(os.path.join(d, 'm.patch')),
                       name=n) for n in ('001-x', '002-y')]
            with contextlib.redirect_stdout(io.StringIO()):
                got = mu.rescore(ms, d)
            self.assertEqual([e['status'] for e in got],
                             ['killed', 'survived'])
            os.unlink(os.path.join(d, 'mutants', '_schema_baseline',
                                   'summary.json'))
            with self.assertRaisesRegex(mu.ToolError, '_schema_baseline'):
                with contextlib.redirect_stdout(io.StringIO()):
                    mu.rescore(ms, d)


class Options(unittest.TestCase):
    """Both front ends take the same run options, with the same defaults:
    schema mode first of all."""

    def test_the_same_defaults(self):
        gm = fakes.load_tool('genmut')
        a = vars(mu.parser().parse_args([]))
        b = vars(gm.parser().parse_args(['run']))
        for key in ('mode', 'jobs', 'results'):
            self.assertEqual(a[key], b[key], key)
        self.assertEqual(a['mode'], 'schema')
        self.assertEqual((a['timeout'], b['timeout']), (40, 20))
        for argv in (['--mode', 'patch'], ['--mode=patch']):
            self.assertEqual(mu.parser().parse_args(argv).mode, 'patch')


class RunTree(unittest.TestCase):
    """run_tree() in schema mode: the entries that a schema can hold go to
    the engine as schema mutants, the others with a line that says why;
    the reports are mutants.json and mutants.md."""

    def test_schema_mode(self):
        src = 'int f(int a)\n{\n\treturn a;\n}\n'
        one = PATCH.replace('@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n',
                            '@@ -3 +3 @@\n-\treturn a;\n+\treturn 0;\n')
        ms = mu.parse_catalogue('Mutant: 001-a\n' + one + 'Mutant: 002-b\n' +
                                one.replace('mm/gup.c', 'mm/gup.h'))
        calls = []

        def run_mutants(tree, loaded, fit, opts, results, runs, kept, write,
                        tool):
            calls.append(([m['name'] for m in loaded],
                          [(m.name, m.function, m.line) for m in fit],
                          runs, kept, tool))
            write([entry('killed', name='001-a')], None)
            return []
        saved = (_mutation.prepare, _mutation.read_source,
                 _schemata.run_mutants)
        self.addCleanup(self.restore, saved)
        _mutation.prepare = lambda tree, tool: calls.append(('prepare', tool))
        _mutation.read_source = lambda tree, path: src
        _schemata.run_mutants = run_mutants
        args = mu.parser().parse_args([])
        tree = types.SimpleNamespace(name='6.1')
        with tempfile.TemporaryDirectory() as d, \
                contextlib.redirect_stdout(io.StringIO()) as out:
            mu.run_tree(tree, ms, args, d)
            self.assertTrue(os.path.isfile(os.path.join(d, 'mutants.md')))
        self.assertEqual(calls, [('prepare', 'mutate'),
                                 (['001-a', '002-b'], [('001-a', 'f', 3)],
                                  'mutants', [], 'mutate')])
        self.assertIn('mutate: 6.1: 002-b runs from its patch: it does not '
                      'change exactly one .c file', out.getvalue())

    @staticmethod
    def restore(saved):
        (_mutation.prepare, _mutation.read_source,
         _schemata.run_mutants) = saved


class PlanTest(unittest.TestCase):
    """Which mutants of which tree a run covers."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='mutate-plan-')
        self.addCleanup(shutil.rmtree, self.tmp)
        saved = common.KUNIT
        common.KUNIT = self.tmp
        self.addCleanup(setattr, common, 'KUNIT', saved)
        self.trees = [common.Tree('6.1', 'linux-source-6.1'),
                      common.Tree('6.12', 'linux-source-6.12')]
        self.trees_file = os.path.join(self.tmp, 'trees')
        Path(self.trees_file).write_text('6.1 linux-source-6.1\n'
                                         '6.12 linux-source-6.12\n')
        for tree, names in (('6.1', ('001-a', '002-b', '010-c')),
                            ('6.12', ('001-a', '011-d'))):
            os.makedirs(os.path.join(self.tmp, 'mutants', tree))
            Path(self.tmp, 'mutants', tree, 'catalogue').write_text(
                ''.join('Mutant: %s\n%s\n' % (n, PATCH) for n in names))
        self.other = os.path.join(self.tmp, 'x.patch')
        Path(self.other).write_text(PATCH)

    def plan(self, *argv):
        args = types.SimpleNamespace(mutants=[], tree=None)
        for a in argv:
            if a.startswith('--tree='):
                args.tree = (args.tree or []) + [a[7:]]
            else:
                args.mutants.append(a)
        trees = common.select_trees(args.tree, self.trees_file)
        return [(t.name, [m['name'] for m in ms])
                for t, ms in mu.plan(args, trees)]

    def test_catalogue_of_every_tree(self):
        self.assertEqual(self.plan(), [('6.1', ['001-a', '002-b', '010-c']),
                                       ('6.12', ['001-a', '011-d'])])
        self.assertEqual(self.plan('--tree=6.12'),
                         [('6.12', ['001-a', '011-d'])])
        os.unlink(os.path.join(self.tmp, 'mutants', '6.12', 'catalogue'))
        self.assertEqual(self.plan('--tree=6.12'), [('6.12', [])])

    def test_names_prefixes_and_patterns_on_each_tree_that_has_them(self):
        self.assertEqual(self.plan('001'), [('6.1', ['001-a']),
                                            ('6.12', ['001-a'])])
        self.assertEqual(self.plan('--tree=6.1', '001'), [('6.1', ['001-a'])])
        self.assertEqual(self.plan('01*', '002-b'),
                         [('6.1', ['002-b', '010-c']), ('6.12', ['011-d'])])
        with self.assertRaisesRegex(mu.ToolError,
                                    '^011: no such mutant in the catalogue '
                                    'of 6.1$'):
            self.plan('--tree=6.1', '001', '011')

    def test_a_patch_file_needs_one_tree(self):
        self.assertEqual(self.plan('--tree=6.12', self.other),
                         [('6.12', ['x'])])
        with self.assertRaisesRegex(mu.ToolError, 'name it with --tree'):
            self.plan(self.other)
        with self.assertRaisesRegex(mu.ToolError, 'not both'):
            self.plan('--tree=6.1', self.other, '001')


class CatalogueApplies(GitTree):
    """A catalogue entry, parsed, applies as it is."""

    def test_an_entry_ending_in_an_empty_context_line_applies(self):
        """An empty last context line (an empty source line whose ' ' an
        editor dropped) is part of the entry, not a separator: 6.12's
        catalogue mutant 148 is such a diff."""
        path = os.path.join(self.tree, 'mm', 'gup.c')
        with open(path, 'w') as f:
            f.write('a\nb\n\nd\n')
        subprocess.run(['git', '-C', self.tree, '-c', 'user.name=t',
                        '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false',
                        'commit', '-qam', 'blank'], check=True)
        diff = ('Subject: s\nModels: m\n\n--- a/mm/gup.c\n+++ b/mm/gup.c\n'
                '@@ -1,3 +1,3 @@\n a\n-b\n+c\n\n')
        m = mu.parse_catalogue('Mutant: 148-x\n' + diff +
                               '\nMutant: 149-y\n' + diff)
        for e in m:
            self.assertIsNone(_mutation.try_apply(self.tree, e['text']))
            _mutation.restore(self.tree, e['files'])



if __name__ == '__main__':
    unittest.main()
