"""Tests of tools/_mutation.py, the mutation engine (no kernel builds):
the patch of a mutant, the kill rules, the verdicts, the loop of patch
runs, apply and restore in a throwaway tree, the build copy and the
targeted rebuild of a header mutant; and the layering of the engine and
its front ends."""

import ast
import contextlib
import io
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
sys.path.insert(0, str(TOOLS))

import _cscan  # noqa: E402
import _generator  # noqa: E402
import _mutation as mu  # noqa: E402
from tests import fakes  # noqa: E402

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


class RunPatchesTest(unittest.TestCase):
    """run_patches(), the loop of patch runs that make mutants and
    tools/genmut.py share, with the tree's preparation and the suite runs
    faked."""

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
                got = mu.run_patches(tree, ms, '/nonexistent', 40, 0, 'gen',
                                     kept, lambda es, b: written.append(
                                         [e['name'] for e in es]), 'genmut')
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


@unittest.skipUnless(shutil.which('git'), 'git not installed')
class GitTree(unittest.TestCase):
    """A throwaway repository, tree/mm/gup.c 'a b d' (tools/tests/
    test_mutate.py uses it too)."""

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


class GitTreeTest(GitTree):
    """apply/noapply/restore against a throwaway repository."""

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

    def test_noapply_leaves_tree_clean(self):
        err = mu.try_apply(self.tree, PATCH.replace('-b\n', '-zzz\n'))
        self.assertIsNotNone(err)
        self.assertIn('error', err)
        mu.require_clean(self.tree)


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


@unittest.skipUnless(shutil.which('git'), 'git not installed')
class HeaderRebuild(unittest.TestCase):
    """--header-rebuild targeted of tools/genmut.py: which objects a
    header mutant can change, and run_one() rebuilding only those."""

    HEADER = ('static inline bool f(int a)\n{\n\treturn a > 0;\n}\n\n'
              'static __always_inline bool g(int a)\n{\n\treturn f(a);\n}'
              '\n\n#define H(a) \\\n\tg(a)\n\n'
              'static inline int unrelated(void)\n{\n\treturn 0;\n}\n')

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='genmut-hdr-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.linux = self.tmp / 'linux'
        files = {'include/linux/x.h': self.HEADER,
                 'mm/a.c': 'int a(void) { return H(1); }\n',
                 'mm/b.c': 'int b(void) { return unrelated(); }\n',
                 'mm/c.c': 'int c(void) { return f(1); }\n',
                 'mm/d.c': 'int d(void) { return g(1); }\n'}
        for rel, text in files.items():
            (self.linux / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.linux / rel).write_text(text)
        fakes.git(self.linux, 'init', '-q')
        fakes.git(self.linux, 'add', '-A')
        fakes.git(self.linux, 'commit', '-q', '-m', 'base')
        self.build = self.tmp / 'build'
        (self.build / 'mm').mkdir(parents=True)
        for obj in ('a.o', 'b.o', 'd.o'):        # c.c is not built
            (self.build / 'mm' / obj).write_text('object')
        self.tree = types.SimpleNamespace(name='0.0', linux=str(self.linux),
                                          kunit_build=str(self.build))

    def test_dependents_follow_inlines_and_macros(self):
        objs, closure = mu.header_dependents(self.tree, 'f')
        self.assertEqual(closure, ['H', 'f', 'g'])
        self.assertEqual(objs, ['mm/a.c', 'mm/d.c'])

    def test_run_one_rebuilds_only_the_dependents(self):
        old = os.stat(self.linux / 'mm' / 'a.c').st_mtime_ns - 10 ** 9
        for rel in ('include/linux/x.h', 'mm/a.c', 'mm/b.c'):
            os.utime(self.linux / rel, ns=(old, old))
        first, last = _cscan.source_extents(self.HEADER, 'f')[0]
        gen = _generator.function_mutants(_cscan.Source(self.HEADER), 'f',
                                          'include/linux/x.h', first, last)
        path = self.tmp / (gen[0].name + '.patch')
        path.write_text(gen[0].patch())
        m = mu.load_mutant(str(path))
        m['touch'] = ['mm/a.c']
        seen = {}

        def fake_run_suite(rdir, timeout, jobs, tree):
            for rel in ('include/linux/x.h', 'mm/a.c', 'mm/b.c'):
                seen[rel] = os.stat(self.linux / rel).st_mtime_ns
            seen['text'] = (self.linux / 'include/linux/x.h').read_text()
            raise RuntimeError('stop here')

        saved = (mu.run_suite, mu.tests_sha)
        mu.run_suite, mu.tests_sha = fake_run_suite, lambda _t: 'sha'
        try:
            with self.assertRaises(RuntimeError):
                mu.run_one(m, self.tree, str(self.tmp), 60, 0)
        finally:
            mu.run_suite, mu.tests_sha = saved
        self.assertNotEqual(seen['text'], self.HEADER)   # the mutant ran
        self.assertEqual(seen['include/linux/x.h'], old)  # kbuild: unchanged
        self.assertGreater(seen['mm/a.c'], old)           # rebuilt
        self.assertEqual(seen['mm/b.c'], old)
        for rel in ('include/linux/x.h', 'mm/a.c', 'mm/b.c'):
            self.assertEqual(os.stat(self.linux / rel).st_mtime_ns, old)
        self.assertEqual(mu.tree_changes(str(self.linux)), [])
        self.assertEqual((self.build / 'mm' / 'a.o').read_text(), 'object')




def tool_imports():
    """{module of tools/: the modules of tools/ it imports}, the imports
    inside functions included."""
    names = {p.stem for p in TOOLS.glob('*.py')}
    graph = {}
    for p in TOOLS.glob('*.py'):
        deps = set()
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import):
                deps |= {a.name.split('.')[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and \
                    not node.level:
                deps.add(node.module.split('.')[0])
        graph[p.stem] = (deps & names) - {p.stem}
    return graph


class Layering(unittest.TestCase):
    """tools/mutate.py and tools/genmut.py are front ends over one engine:
    neither imports the other, no module of tools/ imports one that
    (through others) imports it back, and the modules of the engine and
    its front ends stay under 800 lines."""

    def test_no_import_cycle(self):
        graph = tool_imports()
        self.assertNotIn('mutate', graph['genmut'])
        self.assertNotIn('genmut', graph['mutate'])
        self.assertIn('_mutation', graph['mutate'] & graph['genmut'])
        done, path = set(), []

        def visit(name):
            if name in path:
                self.fail('import cycle: %s'
                          % ' -> '.join(path[path.index(name):] + [name]))
            if name in done:
                return
            path.append(name)
            for dep in sorted(graph[name]):
                visit(dep)
            path.pop()
            done.add(name)
        for name in sorted(graph):
            visit(name)

    def test_module_sizes(self):
        for name in ('_cscan', '_mutation', '_schemata', '_generator',
                     'genmut', 'mutate'):
            lines = (TOOLS / (name + '.py')).read_text().splitlines()
            self.assertLess(len(lines), 800, name)
