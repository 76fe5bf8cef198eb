"""Tests of the pure parts of tools/mutate.py (no kernel builds); run from
the repository root with

    python3 -m unittest discover -s tools/tests
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


def _load_tool():
    spec = importlib.util.spec_from_file_location('mutate',
                                                  TOOLS / 'mutate.py')
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mu = _load_tool()
common = sys.modules['_common']

PATCH = """Subject: gup_put_folio() drops the bias minus one
Models: off-by-one in the bias
Equivalent: it is not, but this checks
  a continuation line

--- a/mm/gup.c
+++ b/mm/gup.c
@@ -1,3 +1,3 @@
 a
-b
+c
 d
"""


def summary(cases, crashed=False, missing=()):
    """A summary.json dict with one suite of (name, status) cases."""
    return {'passed': sum(1 for _n, s in cases if s == 'passed'),
            'failed': sum(1 for _n, s in cases if s != 'passed'),
            'skipped': 0, 'crashed': crashed,
            'crash_reason': 'Kernel panic' if crashed else None,
            'missing_suites': list(missing),
            'suites': [{'name': 'gup_pin', 'cases': [
                {'name': n, 'status': s} for n, s in cases]}]}


def entry(status, eq=False, name='m'):
    return {'name': name, 'file': 'mm/gup.c', 'status': status,
            'cases': ['gup_pin.a'] if status == 'killed' else [],
            'seconds': 1.0, 'description': 'd', 'equivalent_claimed': eq}


class HeaderTest(unittest.TestCase):
    def test_fields(self):
        h = mu.parse_header(PATCH)
        self.assertEqual(h['subject'], 'gup_put_folio() drops the bias '
                         'minus one')
        self.assertEqual(h['models'], 'off-by-one in the bias')
        self.assertEqual(h['equivalent'],
                         'it is not, but this checks a continuation line')

    def test_missing_equivalent_is_empty(self):
        h = mu.parse_header('Subject: x\nModels: y\n\n--- a/f\n+++ b/f\n')
        self.assertEqual(h['equivalent'], '')

    def test_header_stops_at_diff(self):
        text = 'Subject: x\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-Models: no\n'
        self.assertEqual(mu.parse_header(text)['models'], '')

    def test_name(self):
        self.assertEqual(mu.mutant_name('/tmp/007-x-y.patch'), '007-x-y')

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


class TouchedFilesTest(unittest.TestCase):
    def test_modify(self):
        self.assertEqual(mu.touched_files(PATCH), [('mm/gup.c', 'modify')])

    def test_git_diff_create_delete_and_timestamps(self):
        text = ('diff --git a/x.c b/x.c\nindex 1..2 100644\n'
                '--- a/x.c\t2024-01-01 00:00:00\n'
                '+++ b/x.c\t2024-01-01 00:00:01\n@@ -1 +1 @@\n-a\n+b\n'
                '--- /dev/null\n+++ b/new.h\n@@ -0,0 +1 @@\n+x\n'
                '--- a/old.h\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n'
                '--- a/x.c\n+++ b/x.c\n@@ -9 +9 @@\n-c\n+d\n')
        self.assertEqual(mu.touched_files(text),
                         [('x.c', 'modify'), ('new.h', 'create'),
                          ('old.h', 'delete')])

    def test_removed_line_looking_like_header(self):
        # A removed line '-- x' shows as '--- x' but is not followed by +++.
        text = '--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n--- x\n a\n'
        self.assertEqual(mu.touched_files(text), [('f', 'modify')])

    def test_no_diff_is_an_error(self):
        with tempfile.NamedTemporaryFile('w', suffix='.patch') as f:
            f.write('Subject: x\n')
            f.flush()
            with self.assertRaises(mu.ToolError):
                mu.load_mutant(f.name)


class StatusTest(unittest.TestCase):
    def test_failing_cases(self):
        s = summary([('a', 'passed'), ('b/order 0', 'failed'),
                     ('c', 'skipped'), ('d', 'crashed')])
        self.assertEqual(mu.failing_cases(s),
                         ['gup_pin.b/order 0', 'gup_pin.d'])

    def test_killed_by_failure(self):
        st, cases = mu.outcome_of_run(summary([('a', 'failed')]))
        self.assertEqual((st, cases), ('killed', ['gup_pin.a']))

    def test_killed_by_crash(self):
        st, cases = mu.outcome_of_run(summary([('a', 'passed')], True))
        self.assertEqual(st, 'killed')
        self.assertIn('crashed', cases[0])

    def test_survived(self):
        self.assertEqual(mu.outcome_of_run(summary([('a', 'passed')])),
                         ('survived', []))

    def test_baseline_failures_do_not_kill(self):
        base = mu.Baseline(summary([('a', 'failed'), ('b', 'passed')],
                                   missing=['gup_x']))
        self.assertEqual(base.failures, {'gup_pin.a'})
        self.assertEqual(base.suites, {'gup_pin'})
        run = summary([('a', 'failed'), ('b', 'passed')], missing=['gup_x'])
        self.assertEqual(mu.outcome_of_run(run, base), ('survived', []))
        run = summary([('a', 'failed'), ('b', 'failed')])
        self.assertEqual(mu.outcome_of_run(run, base),
                         ('killed', ['gup_pin.b']))

    def test_suites_missing_in_baseline_do_not_kill(self):
        base = mu.Baseline(summary([('a', 'passed')]))
        run = summary([('a', 'passed')], missing=['gup_new'])
        run['suites'].append({'name': 'gup_new', 'cases': [
            {'name': '<not run>', 'status': 'not_run'}]})
        self.assertEqual(mu.outcome_of_run(run, base), ('survived', []))
        # ... but a suite of the baseline that vanishes does.
        run = summary([], missing=['gup_pin'])
        self.assertEqual(mu.outcome_of_run(run, base),
                         ('killed', ['(suite gup_pin did not run)']))

    def test_crash_kills_despite_baseline(self):
        base = mu.Baseline(summary([('a', 'failed')]))
        st, cases = mu.outcome_of_run(summary([('a', 'failed')], True), base)
        self.assertEqual(st, 'killed')
        self.assertEqual(len(cases), 1)

    def test_crashed_baseline_is_an_error(self):
        with self.assertRaises(mu.ToolError):
            mu.Baseline(summary([], crashed=True))

    def test_final_status(self):
        self.assertEqual(mu.final_status('survived', True), 'equivalent')
        self.assertEqual(mu.final_status('survived', False), 'survived')
        self.assertEqual(mu.final_status('killed', True), 'killed')

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

    def test_console_verdict(self):
        e = entry('killed')
        e['cases'] = ['c%d' % i for i in range(6)]
        self.assertEqual(mu.console_verdict(e),
                         'KILLED (c0, c1, c2, c3, +2 more)')
        self.assertEqual(mu.console_verdict(entry('survived')), 'SURVIVED')
        self.assertIn('catalogue error',
                      mu.console_verdict(entry('killed', eq=True)))
        self.assertEqual(mu.console_verdict(entry('equivalent', True)),
                         'EQUIVALENT')


class ReportTest(unittest.TestCase):
    def test_json_and_markdown(self):
        es = [entry('killed', name='001-a'), entry('survived', name='002-b'),
              entry('equivalent', True, name='003-c')]
        es[1]['description'] = 'pipe | in text'
        with tempfile.TemporaryDirectory() as d:
            mu.write_reports(es, d, mu.Baseline(summary([('x', 'failed')])))
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
            self.assertIn(e['status'], mu.STATUSES)
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
                ms.append(mu.load_mutant(path))
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


class RunMutantsTest(unittest.TestCase):
    """run_mutants(), the loop that make mutants and tools/genmut.py
    share, with the tree's preparation and the suite runs faked."""

    def setUp(self):
        self.calls = []
        saved = (mu.prepare_once, mu.run_one, mu.BuildLock)

        def prepare_once(tree, results, timeout, jobs, runs, tool):
            self.calls.append(('prepare', runs, tool))
            return mu.Baseline(summary([('a', 'passed')]))

        def run_one(m, tree, results, timeout, jobs, baseline, runs):
            if m['name'] == 'boom':
                raise mu.ToolError('run_suite failed')
            self.calls.append(('run', m['name'], runs))
            return entry('killed', name=m['name'])

        class Lock:
            def __init__(self, tool):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False
        mu.prepare_once, mu.run_one, mu.BuildLock = prepare_once, run_one, \
            Lock
        self.addCleanup(self.restore, saved)

    @staticmethod
    def restore(saved):
        mu.prepare_once, mu.run_one, mu.BuildLock = saved

    def run_them(self, names, kept=()):
        written = []
        tree = types.SimpleNamespace(name='6.1')
        ms = [{'name': n, 'header': {'subject': n}} for n in names]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                got = mu.run_mutants(tree, ms, '/nonexistent', 40, 0,
                                     runs='gen', kept=kept, tool='genmut',
                                     write=lambda es, b: written.append(
                                         [e['name'] for e in es]))
            except mu.ToolError:
                got = None
        return got, written, out.getvalue()

    def test_kept_first_and_written_after_each(self):
        got, written, out = self.run_them(['b', 'c'],
                                          kept=[entry('killed', name='a')])
        self.assertEqual([e['name'] for e in got], ['a', 'b', 'c'])
        self.assertEqual(written, [['a', 'b'], ['a', 'b', 'c'],
                                   ['a', 'b', 'c']])
        self.assertEqual(self.calls, [('prepare', 'gen', 'genmut'),
                                      ('run', 'b', 'gen'),
                                      ('run', 'c', 'gen')])
        self.assertIn('genmut: 6.1: [1/2] b (b)', out)

    def test_nothing_to_run_builds_nothing(self):
        got, written, _out = self.run_them([], kept=[entry('killed')])
        self.assertEqual(len(got), 1)
        self.assertEqual(self.calls, [])
        self.assertEqual(written, [['m']])

    def test_a_failure_writes_what_ran(self):
        got, written, _out = self.run_them(['b', 'boom', 'c'])
        self.assertIsNone(got)
        self.assertEqual(written[-1], ['b'])


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


@unittest.skipUnless(shutil.which('git'), 'git not installed')
class GitTreeTest(unittest.TestCase):
    """apply/noapply/restore against a throwaway repository."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='mutate-test-')
        self.tree = os.path.join(self.tmp, 'tree')
        os.makedirs(os.path.join(self.tree, 'mm'))
        with open(os.path.join(self.tree, 'mm', 'gup.c'), 'w') as f:
            f.write('a\nb\nd\n')
        git = ['git', '-C', self.tree, '-c', 'user.name=t',
               '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false']
        for args in (['init', '-q'], ['add', '-A'],
                     ['commit', '-q', '-m', 'base']):
            subprocess.run(git + args, check=True, stdout=subprocess.DEVNULL)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write_patch(self, text):
        path = os.path.join(self.tmp, 'm.patch')
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_apply_and_restore(self):
        self.assertIsNone(mu.try_apply(self.tree, PATCH))
        self.assertEqual(mu.tree_changes(self.tree), ['mm/gup.c'])
        with self.assertRaises(mu.ToolError):
            mu.require_clean(self.tree)
        mu.restore(self.tree, mu.touched_files(PATCH))
        self.assertEqual(mu.tree_changes(self.tree), [])
        with open(os.path.join(self.tree, 'mm', 'gup.c')) as f:
            self.assertEqual(f.read(), 'a\nb\nd\n')

    def test_header_mutant_leaves_tree_and_build_as_before(self):
        """A header mutant: the build directory comes back from its copy
        and the header gets its old mtime, so make sees nothing to do."""
        hdr = os.path.join(self.tree, 'mm', 'gup.c')   # stands for mm.h
        old = os.stat(hdr).st_mtime_ns - 10 ** 9
        os.utime(hdr, ns=(old, old))
        build = os.path.join(self.tmp, 'kunit-x86_64')
        os.makedirs(os.path.join(build, 'mm'))
        obj = os.path.join(build, 'mm', 'gup.o')
        with open(obj, 'w') as f:
            f.write('object')
        os.utime(obj, ns=(old + 5, old + 5))
        files = mu.touched_files(PATCH)
        mtimes = mu.save_mtimes(self.tree, files)
        snap = mu.snapshot_build(build)
        self.assertIsNone(mu.try_apply(self.tree, PATCH))
        with open(obj, 'w') as f:
            f.write('mutant object')
        with open(os.path.join(build, 'new.o'), 'w') as f:
            f.write('x')
        mu.restore(self.tree, files)
        mu.restore_mtimes(self.tree, mtimes)
        mu.restore_build(build, snap)
        self.assertEqual(os.stat(hdr).st_mtime_ns, old)
        with open(obj) as f:
            self.assertEqual(f.read(), 'object')
        self.assertEqual(os.stat(obj).st_mtime_ns, old + 5)
        self.assertEqual(sorted(os.listdir(build)), ['mm'])
        self.assertFalse(os.path.exists(snap))
        self.assertTrue(mu.touches_header([('include/linux/mm.h', 'modify')]))
        self.assertFalse(mu.touches_header(files))

    def test_run_one_of_a_header_mutant_restores_old_mtime(self):
        """run_one() itself: the header's mtime after the mutant is the one
        from before git apply, and the build directory is the copy."""
        hdr = os.path.join(self.tree, 'mm', 'x.h')
        with open(hdr, 'w') as f:
            f.write('a\nb\nd\n')
        subprocess.run(['git', '-C', self.tree, 'add', '-A'], check=True)
        subprocess.run(['git', '-C', self.tree, '-c', 'user.name=t',
                        '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false',
                        'commit', '-q', '-m', 'hdr'], check=True)
        old = os.stat(hdr).st_mtime_ns - 10 ** 9
        os.utime(hdr, ns=(old, old))
        build = os.path.join(self.tmp, 'kunit-x86_64')
        os.makedirs(build)
        with open(os.path.join(build, 'vmlinux'), 'w') as f:
            f.write('good')
        path = self.write_patch(PATCH.replace('mm/gup.c', 'mm/x.h'))

        def fake_run_suite(rdir, timeout, jobs, tree):
            self.assertEqual(tree.name, '6.1')
            with open(os.path.join(build, 'vmlinux'), 'w') as f:
                f.write('mutant')
            raise RuntimeError('stop here')

        tree = types.SimpleNamespace(name='6.1', linux=self.tree,
                                     kunit_build=build)
        saved = (mu.run_suite, mu.tests_sha)
        mu.run_suite, mu.tests_sha = fake_run_suite, lambda _t: 'sha'
        try:
            with self.assertRaises(RuntimeError):
                mu.run_one(mu.load_mutant(path), tree, self.tmp, 60, 0)
        finally:
            mu.run_suite, mu.tests_sha = saved
        self.assertEqual(os.stat(hdr).st_mtime_ns, old)
        with open(os.path.join(build, 'vmlinux')) as f:
            self.assertEqual(f.read(), 'good')
        self.assertEqual(mu.tree_changes(self.tree), [])

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
        for entry in m:
            self.assertIsNone(mu.try_apply(self.tree, entry['text']))
            mu.restore(self.tree, entry['files'])

    def test_noapply_leaves_tree_clean(self):
        err = mu.try_apply(self.tree, PATCH.replace('-b\n', '-zzz\n'))
        self.assertIsNotNone(err)
        self.assertIn('error', err)
        mu.require_clean(self.tree)


SCHEMA_SRC = """#include <x.h>

static int
add(int a, int b)
{
\tint c = a + b;

\treturn c;
}

int twice(int a)
{
\treturn add(a, a);
}
"""


def schema_entry(hunks, path='mm/f.c'):
    return mu.make_mutant('001-x', 'cat', 'Subject: s\n\n--- a/%s\n'
                              '+++ b/%s\n%s' % (path, path, hunks), 'x')


class SchemaMutant(unittest.TestCase):
    """A catalogue entry as a mutant of a schema: the lines it replaces,
    by what, in which function; or why it runs from its patch."""

    def conv(self, hunks, path='mm/f.c', src=SCHEMA_SRC):
        return mu.schema_mutant(schema_entry(hunks, path),
                                    lambda p: src)

    def test_a_change_in_a_function_is_its_lines_and_function(self):
        sm, why = self.conv('@@ -5,4 +5,4 @@\n {\n-\tint c = a + b;\n'
                            '+\tint c = a - b;\n \n \treturn c;\n')
        self.assertEqual(why, '')
        self.assertEqual((sm.function, sm.file, sm.line, sm.old, sm.new,
                          sm.header),
                         ('add', 'mm/f.c', 6, ['\tint c = a + b;'],
                          ['\tint c = a - b;'], False))

    def test_a_hunk_that_moved_is_found_where_git_apply_finds_it(self):
        sm, _why = self.conv('@@ -1,3 +1,2 @@\n {\n-\treturn add(a, a);'
                             '\n }\n')
        self.assertEqual((sm.function, sm.line, sm.old, sm.new),
                         ('twice', 13, ['\treturn add(a, a);'], []))

    def test_an_insertion_lies_between_two_lines_of_its_function(self):
        sm, _why = self.conv('@@ -7,2 +7,3 @@\n \n+\tc++;\n \treturn c;\n')
        self.assertEqual((sm.function, sm.line, sm.old, sm.new),
                         ('add', 8, [], ['\tc++;']))

    def test_what_a_schema_cannot_hold_runs_from_its_patch(self):
        two = ('@@ -6 +6 @@\n-\tint c = a + b;\n+\tint c = 0;\n'
               '@@ -13 +13 @@\n-\treturn add(a, a);\n+\treturn 0;\n')
        for hunks, path, why in (
                (two, 'mm/f.c', 'its diff has 2 hunks'),
                ('@@ -1 +1 @@\n-#include <x.h>\n+#include <y.h>\n',
                 'mm/f.c', 'its change is not inside one function'),
                ('@@ -9,3 +9,2 @@\n }\n-\n int twice(int a)\n', 'mm/f.c',
                 'its change is not inside one function'),
                ('@@ -6 +6 @@\n-\tint c = a + b;\n+\tint c = 0;\n',
                 'mm/f.h', 'it does not change exactly one .c file'),
                ('@@ -3,2 +3,3 @@\n static int\n+/* x */\n add(int a, int '
                 'b)\n', 'mm/f.c', 'its change is not inside one function'),
                ('@@ -6 +6 @@\n-\tint c = a * b;\n+\tint c = 0;\n',
                 'mm/f.c', 'its hunk does not match mm/f.c as the tree '
                 'has it')):
            sm, got = self.conv(hunks, path)
            self.assertIsNone(sm, hunks)
            self.assertEqual(got, why)

    def test_a_hunk_as_near_to_two_places_matches_neither(self):
        sm, why = self.conv('@@ -3 +3 @@\n-x\n+y\n', src='a\nx\nb\nx\n')
        self.assertIsNone(sm)
        self.assertIn('does not match', why)

    def test_every_ci_subset_mutant_of_the_catalogues_fits_a_schema(self):
        # The entries themselves, parsed: one hunk of one .c file each.
        for tree in ('6.1', '6.12'):
            cat = {m['name']: m for m in mu.load_catalogue(
                str(MUTANTS / tree / 'catalogue'))}
            for name in common.read_names(str(MUTANTS / tree /
                                              'ci-subset')):
                hunks = mu.diff_hunks(cat[name]['text'])
                self.assertEqual(len(hunks), 1, name)
                self.assertTrue(hunks[0][0].endswith('.c'), name)


class DiffHunks(unittest.TestCase):
    def test_counts_end_a_hunk_and_an_empty_line_is_context(self):
        text = ('--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n\n'
                '\n\nstray\n')
        self.assertEqual(mu.diff_hunks(text),
                         [('f.c', 1, [(' ', 'a'), ('-', 'b'), ('+', 'c'),
                                      (' ', '')])])

    def test_no_newline_markers_are_passed_over(self):
        text = ('--- a/f.c\n+++ b/f.c\n@@ -1 +1 @@\n-a\n'
                '\\ No newline at end of file\n+b\n')
        self.assertEqual(mu.diff_hunks(text)[0][2],
                         [('-', 'a'), ('+', 'b')])


if __name__ == '__main__':
    unittest.main()
