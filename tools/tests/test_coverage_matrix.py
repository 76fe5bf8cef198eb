"""Tests for tools/coverage_matrix.py; run from the repository root with

    python3 -m unittest discover -s tools/tests -t .

The fixture kunit/ (fixtures/coverage/kunit) has two trees, 6.1 and 6.12:
common/mm/two_suites.c (alpha, beta) in both, a suite gamma whose cases
differ (6.1/mm/gamma_61.c: gamma_old_api, gamma_both; 6.12/mm/
gamma_612.c: gamma_new_api, gamma_both), a harness suite
(harness/mm/selftest.c) and a per-tree configuration file
(6.1/kunitconfig) that is no source.
"""

import importlib.util
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / 'fixtures' / 'coverage'
KUNIT = FIXTURES / 'kunit'
SRC = KUNIT / 'common'
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


def check(matrix, *extra):
    return run_tool('--matrix', str(FIXTURES / matrix), '--kunit',
                    str(KUNIT), *extra)


class ParseTest(unittest.TestCase):
    def test_cases_qualified_by_suite(self):
        problems = []
        cases = cm.source_cases(str(SRC), problems)
        self.assertEqual(problems, [])
        self.assertEqual(sorted(cases), ['alpha.alpha_adds_one',
                                         'alpha.alpha_by_order',
                                         'beta.beta_refuses_zero'])

    def test_tree_cases_are_common_tree_and_harness(self):
        trees = cm.read_trees(str(KUNIT / 'trees'))
        got = {t.name: sorted(cm.tree_cases(t, str(KUNIT), []))
               for t in trees}
        shared = ['alpha.alpha_adds_one', 'alpha.alpha_by_order',
                  'beta.beta_refuses_zero', 'gamma.gamma_both',
                  'selftest.selftest_runs']
        self.assertEqual(got['6.1'], sorted(shared + ['gamma.gamma_old_api']))
        self.assertEqual(got['6.12'],
                         sorted(shared + ['gamma.gamma_new_api']))

    def test_comments_ignored_lines_kept(self):
        text = ('/* KUNIT_CASE(a) */\nstatic struct kunit_case x[] = {\n'
                '\t// KUNIT_CASE(b),\n\tKUNIT_CASE(c),\n\t{}\n};\n'
                'static struct kunit_suite s = {\n\t.name = "s",\n'
                '\t.test_cases = x,\n};\n')
        arrays, suites = cm.parse_source('x.c', text)
        self.assertEqual(arrays, {'x': [('c', 4)]})
        self.assertEqual(suites, [('s', 'x', 7)])

    def test_both_branches_of_a_conditional_count(self):
        text = ('#ifdef CONFIG_X\nstatic struct kunit_case c[] = {\n'
                '\tKUNIT_CASE(real),\n\t{}\n};\n'
                'static struct kunit_suite s = {\n\t.name = "s",\n'
                '\t.test_cases = c,\n};\n#else\n'
                'static struct kunit_case c[] = {\n'
                '\tKUNIT_CASE(needs_x),\n\t{}\n};\n'
                'static struct kunit_suite s = {\n\t.name = "s",\n'
                '\t.test_cases = c,\n};\n#endif\n')
        arrays, suites = cm.parse_source('x.c', text)
        self.assertEqual(arrays, {'c': [('real', 3), ('needs_x', 12)]})
        with tempfile.TemporaryDirectory() as d:
            Path(d, 'x.c').write_text(text)
            problems = []
            self.assertEqual(sorted(cm.source_cases(d, problems)),
                             ['s.needs_x', 's.real'])
            self.assertEqual(problems, [])

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

    def test_columns_prose_and_escaped_pipes(self):
        text = ('`p.q` in prose\n\n| Behaviour | 6.1 | 6.12 |\n|---|---|---|\n'
                '| a \\| `b.d` | `s.x`, `s.y` | n/a: gone |\n'
                '| d | - | `s.z` |\n\n| Behaviour | Cases |\n|---|---|\n'
                '| e | `s.w` |\n')
        columns, prose, problems = cm.parse_matrix(text, ['6.1', '6.12'])
        self.assertEqual(problems, [])
        self.assertEqual(columns, {'6.1': [('s.x', 5), ('s.y', 5)],
                                   '6.12': [('s.z', 6)]})
        self.assertEqual(prose, [('p.q', 1), ('b.d', 5), ('s.w', 10)])

    def test_bad_header_row_count_and_empty_cell(self):
        text = ('| Behaviour | 6.1 |\n|---|---|\n| a | `s.x` |\n\n'
                '| Behaviour | 6.1 | 6.12 |\n|---|---|---|\n'
                '| b | `s.x` |\n| c | `s.x` | |\n| d | `s.x` | n/a |\n')
        _c, _p, problems = cm.parse_matrix(text, ['6.1', '6.12'])
        lines = [line for line, _why in problems]
        self.assertEqual(lines, [1, 7, 8, 9])
        self.assertIn('`| Behaviour | 6.1 | 6.12 |`', problems[0][1])
        self.assertIn('2 cells, its header 3', problems[1][1])
        self.assertIn('cell of 6.12 names no case', problems[2][1])


class CommandTest(unittest.TestCase):
    def test_correct_two_tree_matrix_passes(self):
        proc = check('matrix-ok.md')
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout, 'coverage-matrix: 6.1: 6 cases, '
                         '6.12: 6 cases, all mapped\n')

    def test_case_in_61_column_missing_from_61_sources(self):
        proc = check('matrix-61-not-in-sources.md')
        self.assertEqual(proc.returncode, 1)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 2, proc.stdout)
        self.assertRegex(lines[0], r'matrix-61-not-in-sources\.md:12: '
                         r'`gamma\.gamma_new_api` in the 6\.1 column names '
                         r'no KUnit case of tree 6\.1$')
        self.assertEqual(lines[1], 'coverage-matrix: 1 problem')

    def test_612_case_not_in_612_column(self):
        proc = check('matrix-612-unlisted.md')
        self.assertEqual(proc.returncode, 1)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 2, proc.stdout)
        self.assertRegex(lines[0], r'6\.12/mm/gamma_612\.c:9: '
                         r'gamma\.gamma_new_api \(tree 6\.12\) is not in the '
                         r'6\.12 column of .*matrix-612-unlisted\.md$')

    def test_tree_option_narrows_the_columns(self):
        self.assertEqual(check('matrix-612-unlisted.md', '--tree', '6.1')
                         .returncode, 0)
        proc = check('matrix-612-unlisted.md', '--tree', '6.12')
        self.assertEqual(proc.returncode, 1)

    def test_missing_name_and_extra_case_fail(self):
        proc = check('matrix-bad.md')
        self.assertEqual(proc.returncode, 1)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 3, proc.stdout)
        self.assertRegex(lines[0], r'matrix-bad\.md:7: `alpha\.alpha_by_ordr`'
                         r' in the 6\.1 column names no KUnit case')
        self.assertRegex(lines[1], r'two_suites\.c:12: alpha\.alpha_by_order'
                         r' \(tree 6\.1\) is not in the 6\.1 column of '
                         r'.*matrix-bad\.md$')
        self.assertEqual(lines[2], 'coverage-matrix: 2 problems')

    def test_prose_reference_must_exist_in_some_tree(self):
        with tempfile.NamedTemporaryFile('w', suffix='.md') as f:
            f.write((FIXTURES / 'matrix-ok.md').read_text() +
                    '\nSee also `gamma.gamma_gone`.\n')
            f.flush()
            proc = run_tool('--matrix', f.name, '--kunit', str(KUNIT))
        self.assertEqual(proc.returncode, 1)
        self.assertRegex(proc.stdout.splitlines()[0],
                         r':22: `gamma\.gamma_gone` names no KUnit case of '
                         r'any tree \(6\.1, 6\.12\)$')

    def test_missing_matrix_fails(self):
        proc = check('no-such.md')
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout.splitlines()[-1],
                         'coverage-matrix: 1 problem')

    def test_unknown_tree(self):
        proc = check('matrix-ok.md', '--tree', '6.2')
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stderr, "coverage-matrix: unknown tree '6.2'; "
                         "known trees: 6.1, 6.12\n")

    def test_list(self):
        proc = run_tool('--kunit', str(KUNIT), '--list', '--tree', '6.12')
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn('6.12 gamma.gamma_new_api ', proc.stdout)
        self.assertNotIn('gamma_old_api', proc.stdout)

    def test_help(self):
        proc = run_tool('--help')
        self.assertEqual(proc.returncode, 0)
        self.assertIn('coverage-matrix.md', proc.stdout)


if __name__ == '__main__':
    unittest.main()
