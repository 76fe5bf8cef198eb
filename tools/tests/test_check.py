# SPDX-License-Identifier: GPL-2.0
"""check.py's tools step: the unittest suite runs in check.py's process."""

import contextlib
import io
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests import fakes  # noqa: E402


check = fakes.load_tool('check')

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
                check.step_tools(t, start=tmp, top=tmp)
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
            with mock.patch.object(check, 'cached_mutant_run',
                                   lambda *a: ran.append(a)), \
                    mock.patch.object(check, 'mutants_key',
                                      lambda *a: 'key'), \
                    contextlib.redirect_stdout(io.StringIO()):
                check.step_mutants(t, tree, {})
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


if __name__ == '__main__':
    unittest.main()
