# SPDX-License-Identifier: GPL-2.0
"""check.py's tools step: the unittest suite runs in check.py's process."""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests import fakes  # noqa: E402


check = fakes.load_tool('check')
static = fakes.load_tool('_check_static')
runs = fakes.load_tool('_check_runs')
evidence = fakes.load_tool('_check_report')

# A test that does what test_genmut once did: it drops the GPK_LOCK_HELD
# that check.py set for its own build/.lock.
LEAKY = '''import os, unittest
class T(unittest.TestCase):
    def test_pops(self):
        os.environ.pop('GPK_LOCK_HELD', None)
        os.environ['GPK_LEAKED_BY_TEST'] = '1'
'''
CLEAN = '''import unittest
class T(unittest.TestCase):
    def test_nothing(self):
        pass
'''


class StepToolsEnvironment(unittest.TestCase):
    def run_step(self, name, body):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, name + '.py').write_text(body)
            t = check.Tally()
            with mock.patch.dict(os.environ, GPK_LOCK_HELD='inherit'), \
                    contextlib.redirect_stdout(io.StringIO()) as out:
                static.step_tools(t, start=tmp, top=tmp)
                held = os.environ.get('GPK_LOCK_HELD')
                leaked = os.environ.get('GPK_LEAKED_BY_TEST')
            sys.modules.pop(name, None)
        return t, out.getvalue(), held, leaked

    def test_a_test_that_changes_the_environment_fails_the_step(self):
        t, out, held, leaked = self.run_step('test_gpk_leaky', LEAKY)
        self.assertEqual(t.failed, 1)
        self.assertIn('tools: environment: the unittest suite left '
                      'os.environ changed: GPK_LEAKED_BY_TEST added, '
                      'GPK_LOCK_HELD removed', t.failures)
        self.assertIn('1 unittest cases, 1 failed', out)

    def test_the_environment_is_put_back_after_the_suite(self):
        t, out, held, leaked = self.run_step('test_gpk_leaky2', LEAKY)
        self.assertEqual((held, leaked), ('inherit', None))

    def test_a_clean_suite_passes(self):
        planted = os.environ.get('GPK_AUDIT_PLANTED')
        t, out, held, leaked = self.run_step('test_gpk_clean', CLEAN)
        self.assertEqual((t.passed, t.failed, t.failures), (1, 0, []))
        self.assertEqual(held, 'inherit')
        self.assertEqual(os.environ.get('GPK_AUDIT_PLANTED'), planted)


TYPED = 'def half(n: int) -> int:\n    return n // 2\n'
MISTYPED = 'def half(n: int) -> int:\n    return str(n)\n'


def have_mypy():
    try:
        return subprocess.run([static.mypy_python(), '-m', 'mypy',
                               '--version'], capture_output=True,
                              timeout=60).returncode == 0
    except OSError:
        return False


@unittest.skipUnless(have_mypy(), 'mypy is not installed (python3-mypy)')
class StepMypy(unittest.TestCase):
    def run_step(self, body):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, 'gpk_typed.py')
            path.write_text(body)
            t = check.Tally()
            with contextlib.redirect_stdout(io.StringIO()) as out:
                static.step_mypy(t, files=[str(path)],
                                 cache=str(Path(tmp, 'cache')))
        return t, out.getvalue()

    def test_a_type_error_fails_its_file(self):
        t, out = self.run_step(MISTYPED)
        self.assertEqual((t.passed, t.failed), (0, 1), t.failures)
        self.assertIn('Incompatible return value type', t.failures[0])
        self.assertIn('mypy: 1 files, 1 errors', out)

    def test_a_typed_file_passes(self):
        t, out = self.run_step(TYPED)
        self.assertEqual((t.passed, t.failed, t.failures), (1, 0, []))

    def test_a_mypy_that_cannot_run_fails_the_step(self):
        with mock.patch.object(static, 'mypy_python',
                               lambda: sys.executable + '-missing'):
            t, out = self.run_step(TYPED)
        self.assertEqual((t.passed, t.failed), (0, 1))
        self.assertTrue(t.failures[0].startswith('mypy: run: '),
                        t.failures)


PATCH = 'Subject: s\nModels: m\n\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n'


class StepMutantsSubset(unittest.TestCase):
    """The CI subset names mutants of the tree's catalogue; what runs is
    those names, on that tree."""

    def run_step(self, catalogue, subset):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, 'catalogue').write_text(catalogue)
            Path(tmp, 'ci-subset').write_text(subset)
            linux = Path(tmp, 'linux')
            linux.mkdir()
            Path(linux, 'f').write_text('a\n')
            fakes.git(linux, 'init', '-q')
            tree = mock.Mock(mutants=tmp, results='/r/6.1', linux=str(linux))
            tree.name = '6.1'
            t = check.Tally()
            ran = []
            with mock.patch.object(runs, 'cached_mutant_run',
                                   lambda *a: ran.append(a)), \
                    mock.patch.object(runs, 'mutants_key',
                                      lambda *a: 'key'), \
                    contextlib.redirect_stdout(io.StringIO()):
                runs.step_mutants(t, tree, {})
        return t, ran

    def test_runs_the_names_of_the_subset(self):
        t, ran = self.run_step('Mutant: 001-a\n' + PATCH +
                               'Mutant: 002-b\n' + PATCH, '002-b\n')
        self.assertEqual((t.failures, t.passed), ([], 1))
        cmd = ran[0][5]
        self.assertEqual(cmd[-1], '002-b')
        self.assertIn('--tree', cmd)
        self.assertEqual(ran[0][-1], 'CI subset of 1')

    def test_an_entry_that_no_longer_applies_fails_one_test(self):
        t, ran = self.run_step('Mutant: 001-a\n' + PATCH + 'Mutant: 002-b\n' +
                               PATCH.replace('-a', '-z'), '001-a\n')
        self.assertEqual((t.passed, t.failed), (0, 1))
        self.assertIn('catalogue applies: 1 of 2 entries', t.failures[0])
        self.assertIn(': 002-b', t.failures[0])
        self.assertEqual(len(ran), 1)

    def test_a_name_not_in_the_catalogue_fails_the_step(self):
        t, ran = self.run_step('Mutant: 001-a\n' + PATCH, '001-a\n009-z\n')
        self.assertEqual(ran, [])
        self.assertEqual(t.failed, 1)
        self.assertIn('009-z, which', t.failures[0])

    def test_a_broken_catalogue_fails_the_step(self):
        t, ran = self.run_step('Mutant: 001-a\n', '001-a\n')
        self.assertEqual((t.failed, ran), (1, []))
        self.assertIn('holds no unified diff', t.failures[0])


class MutantCacheKeys(unittest.TestCase):
    """The cached verdicts of the mutants and genmut steps are keyed by
    the modules that can change them: the mutation engine, its C scanner,
    and for generated mutants the generator too."""

    def keyed_paths(self, step):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, 'catalogue').write_text('Mutant: 001-a\n' + PATCH)
            Path(tmp, 'ci-subset').write_text('001-a\n')
            Path(tmp, 'generated-equivalent').write_text('')
            linux = Path(tmp, 'linux')
            linux.mkdir()
            Path(linux, 'f').write_text('a\n')
            fakes.git(linux, 'init', '-q')
            tree = mock.Mock(mutants=tmp, results='/r/6.1', linux=str(linux),
                             pin_core=os.path.join(tmp, 'pin-core'))
            tree.name = '6.1'
            keys = []
            with mock.patch.object(runs, 'cached_mutant_run',
                                   lambda *a: None), \
                    mock.patch.object(runs, 'mutants_key',
                                      lambda t, st, paths: keys.append(
                                          paths)), \
                    contextlib.redirect_stdout(io.StringIO()):
                step(check.Tally(), tree, {})
        return [os.path.basename(p) for p in keys[0]]

    def test_the_engine_is_in_the_keys(self):
        engine = ['_mutation.py', '_schemata.py', '_cscan.py']
        got = self.keyed_paths(runs.step_mutants)
        self.assertTrue(set(engine) <= set(got), got)
        got = self.keyed_paths(runs.step_genmut)
        self.assertTrue(set(engine + ['genmut.py', '_generator.py'])
                        <= set(got), got)


MAIL = """From: A U Thor <author@example.org>
Subject: [PATCH] f: %(subject)s

Why.

---
diff --git a/f b/f
--- a/f
+++ b/f
@@ -1 +1 @@
-%(old)s
+%(new)s
"""


class StepApply(unittest.TestCase):
    """The series is checked as git am reads and applies it, on an index
    of the pristine base, without a checkout."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-apply-'))
        self.linux = self.tmp / 'linux'
        self.linux.mkdir()
        Path(self.linux, 'f').write_text('a\n')
        fakes.git(self.linux, 'init', '-q')
        fakes.git(self.linux, 'add', 'f')
        fakes.git(self.linux, 'commit', '-q', '-m', 'base')
        self.base = fakes.git(self.linux, 'rev-parse', 'HEAD')
        self.patches = []
        self.add_patch('a to b', 'a', 'b')
        self.add_patch('b to c', 'b', 'c')
        # The prepared tree: the series applied with git am.
        for p in self.patches:
            fakes.git(self.linux, 'am', '-q', p)
        self.head = fakes.git(self.linux, 'rev-parse', 'HEAD')

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp)

    def add_patch(self, subject, old, new, text=None):
        p = self.tmp / ('%04d.patch' % (len(self.patches) + 1))
        p.write_text(text or MAIL % {'subject': subject, 'old': old,
                                     'new': new})
        self.patches.append(str(p))
        return str(p)

    def step(self, patches=None, head=None):
        tree = mock.Mock(linux=str(self.linux), build=str(self.tmp))
        tree.name = '6.1'
        state = {'base': self.base, 'series_head': head or self.head,
                 'package': 'linux-source-6.1', 'version': '6.1.192-3'}
        t = check.Tally()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            static.step_apply(t, tree, state, patches or self.patches)
        return t, out.getvalue()

    def test_the_series_applies_and_gives_the_series_head(self):
        t, out = self.step()
        self.assertEqual((t.passed, t.failed), (3, 0))
        self.assertIn('apply 6.1: 2 patches on the pristine base of '
                      'linux-source-6.1 6.1.192-3', out)
        # Neither the tree nor its index was touched; no index is left.
        self.assertEqual(fakes.git(self.linux, 'status', '--porcelain'), '')
        self.assertEqual(Path(self.linux, 'f').read_text(), 'c\n')
        self.assertFalse(Path(self.tmp, 'am-check.index').exists())

    def test_a_patch_that_does_not_apply_fails_and_stops(self):
        bad = self.add_patch('z to y', 'z', 'y')
        t, _out = self.step([self.patches[0], bad, self.patches[1]])
        self.assertEqual((t.passed, t.failed), (1, 1))
        self.assertIn('apply 6.1: 0003.patch: git apply failed',
                      t.failures[0])

    def test_a_patch_out_of_order_fails(self):
        t, _out = self.step(list(reversed(self.patches)))
        self.assertEqual((t.passed, t.failed), (0, 1))

    def test_a_patch_without_a_subject_fails(self):
        bare = self.add_patch('', '', '', text=(MAIL % {
            'subject': 's', 'old': 'a', 'new': 'b'}).split('\n', 2)[2])
        t, _out = self.step([bare])
        self.assertEqual((t.passed, t.failed), (0, 1))
        self.assertIn('git am cannot read it as a mail (no Author, no '
                      'Subject)', t.failures[0])

    def test_a_series_that_gives_another_tree_fails(self):
        t, _out = self.step(head=self.base)
        self.assertEqual((t.passed, t.failed), (2, 1))
        self.assertIn('apply 6.1: series head: the patches give tree',
                      t.failures[0])


W1_OUTPUT = """  GEN     Makefile
  CC      kernel/bounds.s
/l/include/linux/x.h:3:1: warning: before any object [-Wfoo]
  CC      mm/gup.s
/l/mm/gup.c:10:5: warning: no previous prototype for 'f'
  CC      mm/gup_kunit.s
mm/gup_kunit.c:7:1: warning: unused [-Wunused]
"""


class StepW1Output(unittest.TestCase):
    """The W=1 step's reading of one make of .s targets."""

    def test_lines_go_to_the_object_whose_cc_line_they_follow(self):
        out = static.w1_output_by_object(W1_OUTPUT)
        self.assertEqual(sorted(out), ['kernel/bounds.o', 'mm/gup.o',
                                       'mm/gup_kunit.o'])
        self.assertEqual(out['mm/gup.o'],
                         ["/l/mm/gup.c:10:5: warning: no previous prototype "
                          "for 'f'"])
        self.assertEqual(len(out['kernel/bounds.o']), 1)
        self.assertNotIn('Makefile', ''.join(sum(out.values(), [])))

    def test_only_added_lines_and_kunit_sources_count(self):
        out = static.w1_output_by_object(W1_OUTPUT)
        added = {'mm/gup.c': {10}}
        self.assertEqual(len(static.w1_new_warnings(
            out['mm/gup.o'], '/l', set(), added)), 1)
        self.assertEqual(static.w1_new_warnings(
            out['mm/gup.o'], '/l', set(), {'mm/gup.c': {11}}), [])
        # A relative path is one in the tree.
        self.assertEqual(len(static.w1_new_warnings(
            out['mm/gup_kunit.o'], '/l', {'mm/gup_kunit.c'}, {})), 1)
        self.assertEqual(static.w1_new_warnings(
            out['kernel/bounds.o'], '/l', {'mm/gup_kunit.c'}, added), [])


class DebugInTheBackground(unittest.TestCase):
    """The debug step runs beside the others: its output is kept until
    its turn, and an interrupted check leaves nothing running."""

    def debug_step(self, script, tree_name='6.1'):
        """step_debug() of a background job running sh -c script."""
        job = runs.Background(['sh', '-c', script])
        tree = mock.Mock()
        tree.name = tree_name
        t = check.Tally()
        with contextlib.redirect_stdout(io.StringIO()) as out:
            runs.step_debug(t, tree, job)
        return t, out.getvalue()

    def test_the_output_is_counted_when_the_step_comes(self):
        t, out = self.debug_step('echo booted; '
                                 'echo "3 passed, 1 failed, 0 skipped"; '
                                 'exit 1')
        self.assertEqual((t.passed, t.failed), (3, 1))
        self.assertIn('booted\ndebug 6.1: 3 passed, 1 failed, 0 skipped\n'
                      'debug 6.1: built and run in the background in ', out)

    def test_a_job_without_counts_is_one_failure(self):
        t, _out = self.debug_step('echo oops; exit 2', '6.12')
        self.assertEqual((t.passed, t.failed), (0, 1))
        self.assertIn('did not report counts', t.failures[0])

    def test_a_job_that_fails_with_nothing_failed_is_one_failure(self):
        t, _out = self.debug_step('echo "3 passed, 0 failed, 0 skipped"; '
                                  'exit 1')
        self.assertEqual((t.passed, t.failed), (3, 1))
        self.assertIn('make test-debug TREE=6.1 exited 1', t.failures[0])

    def test_stop_kills_the_job_and_its_children(self):
        with tempfile.TemporaryDirectory() as tmp:
            pidfile = Path(tmp, 'pid')
            job = runs.Background(['sh', '-c', 'sleep 600 & echo $! > %s; '
                                    'wait' % pidfile])
            for _ in range(100):
                if pidfile.exists() and pidfile.read_text().strip():
                    break
                time.sleep(0.05)
            child = int(pidfile.read_text())
            job.stop()
            self.assertIsNotNone(job.proc.poll())
            for _ in range(100):
                try:
                    os.kill(child, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                self.fail('the job\'s child %d still runs' % child)

    def test_the_job_runs_niced(self):
        job = runs.Background(['sh', '-c', 'nice'])
        _rc, out, _s = job.finish()
        self.assertEqual(out.strip(), str(os.nice(0) + 10))


class TreeStepOrder(unittest.TestCase):
    """The debug kernel starts after the kunit step and is collected
    last; an error on the way stops it."""

    def run_tree(self, skip=(), fail=None):
        calls = []
        job = mock.Mock()

        def step(name):
            def fn(*a):
                calls.append(name)
                if name == fail:
                    raise KeyboardInterrupt
            return fn
        patches = [mock.patch.object(static, 'step_' + n, step(n)) for n in
                   ('apply', 'checkpatch', 'w1', 'matrix')]
        patches += [mock.patch.object(runs, 'step_' + n, step(n)) for n in
                    ('kunit', 'reviewer', 'mutants', 'genmut', 'coverage',
                     'audit', 'kcsan', 'debug')]
        patches += [mock.patch.object(evidence, 'step_' + n, step(n))
                    for n in ('report', 'page')]
        patches += [
            mock.patch.object(runs, 'start_debug',
                              lambda *a: calls.append('start') or job),
            mock.patch.object(check.prepare_tree, 'prepare',
                              lambda *a, **k: {}),
            mock.patch.object(check.prepare_tree, 'series_files',
                              lambda *a: [])]
        tree = mock.Mock()
        tree.name = '6.1'
        args = mock.Mock(skip=list(skip), filter=None)
        with contextlib.ExitStack() as stack, \
                contextlib.redirect_stdout(io.StringIO()):
            for p in patches:
                stack.enter_context(p)
            try:
                check.check_tree(check.Tally(), tree, args)
            except KeyboardInterrupt:
                pass
        return calls, job

    def test_debug_runs_beside_the_steps_after_kunit(self):
        calls, job = self.run_tree()
        self.assertEqual(calls, ['apply', 'checkpatch', 'kunit', 'reviewer',
                                 'start', 'w1', 'matrix', 'mutants',
                                 'genmut', 'coverage', 'audit', 'kcsan',
                                 'debug', 'report', 'page'])

    def test_skipping_debug_starts_nothing(self):
        calls, _job = self.run_tree(skip=['debug'])
        self.assertNotIn('start', calls)
        self.assertNotIn('debug', calls)

    def test_an_interrupt_stops_the_background_job(self):
        calls, job = self.run_tree(fail='mutants')
        self.assertEqual(calls[-1], 'mutants')
        job.stop.assert_called_once_with()



class StepReport(unittest.TestCase):
    """The report step fails on a mutation-report.json that the schema
    refuses; a tree without mutant results is skipped, not counted."""

    def run_step(self, report_text):
        with tempfile.TemporaryDirectory() as tmp:
            tree = mock.Mock(results=tmp)
            tree.name = '6.1'
            t = check.Tally()
            with contextlib.redirect_stdout(io.StringIO()), \
                    mock.patch.object(evidence.report, 'write_tree'), \
                    mock.patch.object(evidence.report, 'write_index_all'):
                evidence.step_report(t, tree)
                Path(tmp, 'mutants.json').write_text('[]')
                if report_text is not None:
                    Path(tmp, 'mutation-report.json').write_text(report_text)
                evidence.step_report(t, tree)
        return t

    def test_a_report_the_schema_refuses_fails(self):
        try:
            evidence.report._mreport.load_schema()
        except check.ToolError:
            self.skipTest('mutation-testing-report-schema not installed')
        t = self.run_step('{"schemaVersion": "2", "files": {}}')
        self.assertEqual((t.passed, t.failed, t.skipped), (0, 1, 0))
        self.assertIn("'thresholds' is a required property", t.failures[0])
        t = self.run_step('{"schemaVersion": "2", "files": {}, '
                          '"thresholds": {"high": 80, "low": 60}}')
        self.assertEqual((t.passed, t.failed), (1, 0))
        t = self.run_step(None)
        self.assertIn('does not exist', t.failures[0])


class StepKcsan(unittest.TestCase):
    """The kcsan step: make test-kcsan of the tree, from the prepared
    tree (NO_PREPARE=1), one test per case from its last line."""

    def test_it_runs_make_test_kcsan_and_counts_its_cases(self):
        calls = []

        def fake(cmd, **kw):
            calls.append(cmd)
            return mock.Mock(returncode=1, stdout='FAILED s.c: KCSAN\n'
                             '3 passed, 1 failed, 0 skipped\n')
        tree = mock.Mock()
        tree.name = '6.12'
        t = check.Tally()
        with mock.patch.object(runs.subprocess, 'run', fake), \
                contextlib.redirect_stdout(io.StringIO()):
            runs.step_kcsan(t, tree, mock.Mock(filter='gup_pin_race*'))
        self.assertEqual(calls, [['make', '-s', '-C', str(runs.ROOT),
                                  'test-kcsan', 'TREE=6.12', 'NO_PREPARE=1',
                                  'FILTER=gup_pin_race*']])
        self.assertEqual((t.passed, t.failed, t.skipped), (3, 1, 0))


class StepReviewer(unittest.TestCase):
    """The reviewer step: a bare boot of the make test kernel, judged by
    tools/reviewer.py's verdict, and make test's own skips."""

    KTAP = ('KTAP version 1\n1..1\n    KTAP version 1\n'
            '    # Subtest: gup_pin_user\n    1..2\n    ok 1 a\n'
            '    ok 2 b # SKIP %s\nok 1 gup_pin_user\n')

    def run_step(self, reason, make_test_skipped=0):
        with tempfile.TemporaryDirectory() as tmp:
            tree = mock.Mock()
            tree.name = '6.1'
            tree.linux = os.path.join(tmp, 'linux')
            tree.kunit_build = os.path.join(tmp, 'kunit')
            tree.results = os.path.join(tmp, 'res')
            tree.expected_splats = None
            os.makedirs(os.path.join(tree.linux, 'mm', 'tests'))
            os.makedirs(tree.kunit_build)
            os.makedirs(tree.results)
            src = HERE.parent.parent / 'kunit' / 'common' / 'mm' / 'tests'
            Path(tree.linux, 'mm', 'tests', '.kunitconfig').write_text(
                (src / '.kunitconfig').read_text())
            Path(tree.results, 'summary.json').write_text(
                '{"skipped": %d}' % make_test_skipped)

            def boot(cmd, **kw):
                Path(tree.kunit_build, 'test.log').write_text(
                    self.KTAP % reason)
                return mock.Mock(stdout='', returncode=0)
            t = check.Tally()
            with mock.patch.object(runs, 'run', boot), \
                    contextlib.redirect_stdout(io.StringIO()):
                runs.step_reviewer(t, tree)
            return t

    def test_a_skip_that_names_a_documented_argument_passes(self):
        t = self.run_step('needs a ZONE_MOVABLE: pass '
                          '--kernel_args=movablecore=512M')
        self.assertEqual((t.passed, t.failed), (2, 0))

    def test_a_skip_with_an_undocumented_argument_fails(self):
        t = self.run_step('needs a ZONE_MOVABLE: pass '
                          '--kernel_args=movablecore=1G')
        self.assertEqual((t.passed, t.failed), (1, 1))
        self.assertIn('movablecore=1G', t.failures[0])

    def test_a_skip_in_make_test_fails_the_documented_run(self):
        t = self.run_step('needs x', make_test_skipped=1)
        self.assertEqual((t.passed, t.failed), (1, 1))
        self.assertIn('make test skipped 1', t.failures[0])


if __name__ == '__main__':
    unittest.main()
