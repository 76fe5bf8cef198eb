"""Tests for tools/coverage_matrix.py; run from the repository root with

    python3 -m unittest discover -s tools/tests
"""

import importlib.util
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / 'fixtures' / 'coverage'
SRC = FIXTURES / 'src'
SCRIPT = HERE.parent / 'coverage_matrix.py'


def _load_tool():
    spec = importlib.util.spec_from_file_location('coverage_matrix', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cm = _load_tool()


def run_tool(*args):
    return subprocess.run([sys.executable, str(SCRIPT)] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


class ParseTest(unittest.TestCase):
    def test_cases_qualified_by_suite(self):
        problems = []
        cases = cm.source_cases(str(SRC), problems)
        self.assertEqual(problems, [])
        self.assertEqual(sorted(cases), ['alpha.alpha_adds_one',
                                         'alpha.alpha_by_order',
                                         'beta.beta_refuses_zero'])

    def test_comments_ignored_lines_kept(self):
        text = ('/* KUNIT_CASE(a) */\nstatic struct kunit_case x[] = {\n'
                '\t// KUNIT_CASE(b),\n\tKUNIT_CASE(c),\n\t{}\n};\n'
                'static struct kunit_suite s = {\n\t.name = "s",\n'
                '\t.test_cases = x,\n};\n')
        arrays, suites = cm.parse_source('x.c', text)
        self.assertEqual(arrays, {'x': [('c', 4)]})
        self.assertEqual(suites, [('s', 'x', 7)])

    def test_orphan_array_is_a_problem(self):
        text = ('static struct kunit_case lost[] = {\n'
                '\tKUNIT_CASE(c),\n\t{}\n};\n')
        arrays, suites = cm.parse_source('x.c', text)
        self.assertEqual(suites, [])
        self.assertIn('lost', arrays)

    def test_file_names_are_not_references(self):
        refs = cm.matrix_refs('see `gup_kunit.c`, `kunit.py` and '
                              '`a.b` or `<suite>.<case>`\n')
        self.assertEqual(refs, [('a.b', 1)])


class CommandTest(unittest.TestCase):
    def test_matching_pair_passes(self):
        proc = run_tool('--matrix', str(FIXTURES / 'matrix-ok.md'),
                        '--kunit', str(SRC))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout,
                         'coverage-matrix: 3 cases, all mapped\n')

    def test_missing_name_and_extra_case_fail(self):
        proc = run_tool('--matrix', str(FIXTURES / 'matrix-bad.md'),
                        '--kunit', str(SRC))
        self.assertEqual(proc.returncode, 1)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 3, proc.stdout)
        self.assertRegex(lines[0], r'matrix-bad\.md:7: `alpha\.alpha_by_ordr`'
                         r' names no KUnit case')
        self.assertRegex(lines[1], r'two_suites\.c:12: alpha\.alpha_by_order'
                         r' is not in .*matrix-bad\.md$')
        self.assertEqual(lines[2], 'coverage-matrix: 2 problems')

    def test_missing_matrix_fails(self):
        proc = run_tool('--matrix', str(FIXTURES / 'no-such.md'),
                        '--kunit', str(SRC))
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout.splitlines()[-1],
                         'coverage-matrix: 1 problem')

    def test_help(self):
        proc = run_tool('--help')
        self.assertEqual(proc.returncode, 0)
        self.assertIn('coverage-matrix.md', proc.stdout)


if __name__ == '__main__':
    unittest.main()
