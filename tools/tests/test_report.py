"""Tests of tools/report.py (make report) and its modules _mreport.py (the
mutation-testing-report-schema JSON) and _report_html.py: where a diff
puts a mutant, the report of a fake tree against the installed schema, a
broken report failing the check, one status changed in the results
changing every output, the page in headless Chromium, and the command
line's errors. Nothing is built; the fake tree is a git repository in a
temporary directory."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path
from unittest import mock

TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

import _mreport as mr  # noqa: E402
from _common import ToolError  # noqa: E402
from tests import fakes  # noqa: E402

rp = fakes.load_tool('report')

SOURCE = ''.join('int line%d;\n' % i for i in range(1, 10)) + '''\
int f(int x)
{
	if (x > 1)
		return 1;
	x++;
	return 0;
}
'''
CATALOGUE = '''# a catalogue
Mutant: 001-condition
Subject: the condition is off by one
Models: an off-by-one bug class; the class of abc (6.1 catalogue 001)

--- a/mm/gup.c
+++ b/mm/gup.c
@@ -11,3 +11,3 @@ int f(int x)
 {
-	if (x > 1)
+	if (x >= 1)
 		return 1;
Mutant: 002-equivalent
Subject: an increment that nothing reads
Models: dead store
Equivalent: x is not read after the increment

--- a/mm/gup.c
+++ b/mm/gup.c
@@ -13,3 +13,2 @@ int f(int x)
 		return 1;
-	x++;
 	return 0;
'''
GENERATED = '''Subject: f+3-ret: return the other value
Models: generated: ret

--- a/mm/gup.c
+++ b/mm/gup.c
@@ -13,1 +13,1 @@
-		return 1;
+		return 0;
'''
LCOV = 'SF:/x/linux/mm/gup.c\nDA:12,5\nDA:13,0\nDA:14,5\nend_of_record\n'
HAVE_JS = os.path.isfile(os.path.join(mr.NPM, 'node_modules', mr.SCHEMA_PKG,
                                      mr.SCHEMA_FILE))
HAVE_ELEMENTS = os.path.isfile(os.path.join(
    mr.NPM, 'node_modules', mr.ELEMENTS_PKG, mr.ELEMENTS_FILE))


def git(cwd, *args):
    return subprocess.run(['git', '-C', str(cwd)] + fakes.GIT_ID +
                          list(args), check=True, text=True,
                          stdout=subprocess.PIPE).stdout.strip()


class Place(unittest.TestCase):
    lines = SOURCE.split('\n')

    def placed(self, diff):
        return mr.place(mr.hunks(diff)[0], self.lines)

    def test_a_changed_operator_is_its_columns(self):
        loc, repl, note = self.placed(CATALOGUE.split('Mutant: 002')[0])
        self.assertEqual(loc, {'start': {'line': 12, 'column': 8},
                               'end': {'line': 12, 'column': 9}})
        self.assertEqual((repl, note), ('>=', ''))

    def test_a_deleted_line(self):
        loc, repl, _n = self.placed(CATALOGUE.split('Mutant: 002')[1])
        self.assertEqual(loc['start'], {'line': 14, 'column': 2})
        self.assertEqual(loc['end'], {'line': 14, 'column': 6})
        self.assertEqual(repl, '')

    def test_an_insertion_shows_on_the_line_before(self):
        diff = ('+++ b/mm/gup.c\n@@ -14,2 +14,3 @@\n \tx++;\n'
                '+\tx--;\n \treturn 0;\n')
        loc, repl, _n = self.placed(diff)
        self.assertEqual(loc['start']['line'], 14)
        self.assertEqual(repl, 'x++;\n\tx--;')

    def test_a_moved_hunk_is_found_and_a_lost_one_says_so(self):
        moved = GENERATED.replace('@@ -13,1', '@@ -16,1')
        loc, _r, note = self.placed(moved)
        self.assertEqual((loc['start']['line'], note), (13, ''))
        lost = moved.replace('return 1;', 'return 7;')
        loc, _r, note = self.placed(lost)
        self.assertEqual(loc['start']['line'], 16)
        self.assertIn('placed by its line number', note)

    def test_schema_version_and_mutator(self):
        schema = {'properties': {'schemaVersion': {
            'pattern': '^([1-2])(\\.(([1-9]\\d*)|0)){0,2}$'}}}
        self.assertEqual(mr.schema_version(schema), '2')
        with self.assertRaisesRegex(ToolError, 'schema version'):
            mr.schema_version({'properties': {'schemaVersion': {}}})
        self.assertEqual(mr.mutator({'models': 'an off-by-one bug class; '
                                     'the class of abc'}),
                         'an off-by-one bug class')
        self.assertEqual(mr.mutator({'operator': 'ret'}), 'generated: ret')


class FakeTree(unittest.TestCase):
    """A prepared tree with mm/gup.c at its series head, and the results
    of a catalogue run and a generated run."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-report-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        linux = self.tmp / 'build' / '6.1' / 'linux'
        (linux / 'mm').mkdir(parents=True)
        (linux / 'mm' / 'gup.c').write_text(SOURCE)
        git(linux, 'init', '-q')
        git(linux, 'add', '-A')
        git(linux, 'commit', '-q', '-m', 'series')
        head = git(linux, 'rev-parse', 'HEAD')
        # A mutant the tree carries now never shows in the report.
        (linux / 'mm' / 'gup.c').write_text(SOURCE.replace('x++', 'x--'))
        state = linux / '.git' / 'gup-pin-kunit.json'
        state.write_text(json.dumps({'series_head': head, 'head': head}))
        self.results = self.tmp / 'results'
        res = self.results / '6.1'
        (res / 'coverage').mkdir(parents=True)
        (res / 'coverage' / 'lcov.info').write_text(LCOV)
        cat = self.tmp / 'catalogue'
        cat.write_text(CATALOGUE)
        gen = self.tmp / 'f+3-ret.patch'
        gen.write_text(GENERATED)
        entry = dict(file='mm/gup.c', seconds=2.0, description='d',
                     equivalent_claimed=False, patch=str(cat),
                     models='an off-by-one bug class; x')
        self.write(res / 'mutants.json', [
            dict(entry, name='001-condition', status='killed',
                 cases=['gup_pin.a/p1', '(crashed: oops)']),
            dict(entry, name='002-equivalent', status='equivalent',
                 cases=[], equivalent_claimed=True)])
        gen_entry = dict(entry, name='f+3-ret', status='survived', cases=[],
                         patch=str(gen), function='f', operator='ret',
                         line=13)
        self.write(res / 'mutants-generated.json', {
            'tree': '6.1', 'total': {'generated': 5}, 'mutants': [gen_entry],
            'functions': [{'function': 'f', 'file': 'mm/gup.c',
                           'generated': 5}],
            'operators': [{'operator': 'ret', 'generated': 5}],
            'older_tests': 0, 'modes': {}, 'tree_head': head,
            'tests_sha256': 'x', 'sample': None})
        self.write(res / 'summary.json', {
            'passed': 2, 'failed': 0, 'skipped': 1, 'crashed': False,
            'suites': [{'name': 'gup_pin', 'cases': [
                {'name': 'a/p1', 'status': 'passed'},
                {'name': 'b', 'status': 'passed'},
                {'name': 'c', 'status': 'skipped'}]}]})
        self.tree = types.SimpleNamespace(
            name='6.1', linux=str(linux), state=str(state),
            results=str(res))
        patch = mock.patch.object(rp, 'RESULTS', str(self.results))
        patch.start()
        self.addCleanup(patch.stop)

    @staticmethod
    def write(path, obj):
        path.write_text(json.dumps(obj, indent=1))

    def outputs(self):
        res = Path(self.tree.results)
        names = ['mutants.md', 'mutants-generated.md',
                 'mutation-report.json', 'report.html']
        out = {n: (res / n).read_text() for n in names}
        for n in ('index.html', 'figures.md'):
            out[n] = (self.results / n).read_text()
        return out

    def write_all(self):
        figs = rp.write_tree(self.tree)
        rp.write_index([figs])
        return figs


class Sources(FakeTree):
    """Without a full run, make report reads make check's CI subset:
    results/TREE/mutants-ci/mutants.json and mutants-generated-ci.json."""

    def test_ci_results_are_read_when_there_is_no_full_run(self):
        res = Path(self.tree.results)
        full = rp.figures(rp.load(self.tree))
        (res / 'mutants-ci').mkdir()
        (res / 'mutants.json').rename(res / 'mutants-ci' / 'mutants.json')
        (res / 'mutants-generated.json').rename(
            res / 'mutants-generated-ci.json')
        self.assertTrue(rp.has_results(self.tree))
        ci = rp.figures(rp.load(self.tree))
        table = sys.modules['_report_html'].figures_table(ci)
        self.assertIn("catalogue (make check&#x27;s CI subset)", table)
        self.assertIn("generated (make check&#x27;s CI sample)", table)
        self.assertEqual(ci['catalogue'].pop('source'),
                         os.path.join('mutants-ci', 'mutants.json'))
        self.assertEqual(ci['generated'].pop('source'),
                         'mutants-generated-ci.json')
        for g in ('catalogue', 'generated'):
            full[g].pop('source')
        self.assertEqual(ci, full)

    def test_a_full_run_is_preferred(self):
        res = Path(self.tree.results)
        (res / 'mutants-ci').mkdir()
        self.write(res / 'mutants-ci' / 'mutants.json', [])
        self.assertEqual(len(rp.load(self.tree).catalogue), 2)


@unittest.skipUnless(HAVE_ELEMENTS and HAVE_JS,
                     'the JavaScript of make report is not installed')
class Report(FakeTree):
    def test_the_report_holds_every_mutant_and_is_valid(self):
        figs = self.write_all()
        self.assertEqual(rp.check_schema(self.tree), [])
        rep = json.loads(Path(self.tree.results,
                              'mutation-report.json').read_text())
        f = rep['files']['mm/gup.c']
        self.assertEqual(f['source'], SOURCE)
        by_id = {m['id']: m for m in f['mutants']}
        self.assertEqual([by_id[n]['status'] for n in (
            '001-condition', '002-equivalent', 'f+3-ret')],
            ['Killed', 'Ignored', 'NoCoverage'])
        self.assertEqual(by_id['001-condition']['killedBy'],
                         ['gup_pin.a/p1'])
        self.assertIn('crashed', by_id['001-condition']['statusReason'])
        self.assertIn('x is not read', by_id['002-equivalent']
                      ['statusReason'])
        self.assertEqual(by_id['f+3-ret']['replacement'], '0')
        self.assertEqual(by_id['001-condition']['mutatorName'],
                         'an off-by-one bug class')
        self.assertEqual([t['id'] for t in rep['testFiles']['gup_pin']
                          ['tests']], ['gup_pin.a/p1', 'gup_pin.b',
                                       'gup_pin.c'])
        self.assertEqual((figs['all']['killed'], figs['all']['equivalent'],
                          figs['all']['no_coverage'],
                          figs['generated']['not_run']), (1, 1, 1, 4))
        self.assertEqual(rp.expected_counts(self.tree), {
            'killed': 1, 'survived': 1, 'equivalent': 1, 'no_coverage': 1,
            'compile_error': 0})
        page = Path(self.tree.results, 'report.html').read_text()
        self.assertNotIn('src="http', page)
        self.assertIn('<td data-key="killed">1</td>', page)

    def test_a_broken_report_fails_the_check(self):
        self.write_all()
        path = Path(self.tree.results, 'mutation-report.json')
        rep = json.loads(path.read_text())
        rep['files']['mm/gup.c']['mutants'][0]['status'] = 'Dead'
        del rep['thresholds']
        path.write_text(json.dumps(rep))
        problems = rp.check_schema(self.tree)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("'thresholds' is a required property", problems[0])
        self.assertIn("mutants/0/status: 'Dead' is not one of", problems[1])
        path.write_text('{')
        self.assertIn('mutation-report.json', rp.check_schema(self.tree)[0])
        path.unlink()
        self.assertIn('does not exist', rp.check_schema(self.tree)[0])

    def test_one_status_changed_changes_every_output(self):
        self.write_all()
        before = self.outputs()
        res = Path(self.tree.results)
        gen = json.loads((res / 'mutants-generated.json').read_text())
        gen['mutants'][0]['status'] = 'killed'
        gen['mutants'][0]['cases'] = ['gup_pin.b']
        self.write(res / 'mutants-generated.json', gen)
        figs = self.write_all()
        after = self.outputs()
        unchanged = [n for n in before if n != 'mutants.md'
                     and before[n] == after[n]]
        self.assertEqual(unchanged, [])
        self.assertEqual((figs['all']['killed'], figs['all']['survived']),
                         (2, 0))
        self.assertIn('| f+3-ret | killed |', after['mutants-generated.md'])
        self.assertIn('| generated mutants: killed | 1 |', after['figures.md'])
        cat = json.loads((res / 'mutants.json').read_text())
        cat[0]['status'] = 'survived'
        self.write(res / 'mutants.json', cat)
        self.write_all()
        again = self.outputs()
        self.assertEqual([n for n in again if n != 'mutants-generated.md'
                          and again[n] == after[n]], [])

    @unittest.skipUnless(shutil.which('chromium'), 'chromium not installed')
    def test_the_page_in_chromium(self):
        self.write_all()
        self.assertEqual(rp.check_page(self.tree), [])
        png = Path(self.tree.results, 'report.png').read_bytes()
        self.assertEqual(png[:8], b'\x89PNG\r\n\x1a\n')
        res = Path(self.tree.results)
        cat = json.loads((res / 'mutants.json').read_text())
        cat[0]['status'] = 'survived'
        self.write(res / 'mutants.json', cat)
        problems = rp.check_page(self.tree)
        self.assertIn('the component shows killed 1, the results say 0',
                      problems)


class ComparePage(unittest.TestCase):
    def test_differences_are_named(self):
        want = {'killed': 2, 'survived': 1, 'equivalent': 0,
                'no_coverage': 1, 'compile_error': 0}
        shown = {'Killed': '2', 'Survived': '0', 'No coverage': '1',
                 'Ignored': '0', 'Compile errors': '0'}
        head = {'killed': '2', 'survived': '1', 'equivalent': '0',
                'no_coverage': '1'}
        self.assertEqual(rp.compare_page(want, shown, head, ['file:///x'],
                                         []), [])
        shown['Ignored'] = '3'
        got = rp.compare_page(want, shown, head, ['https://unpkg.com/x'],
                              ['TypeError: x'])
        self.assertEqual(got, [
            'the component shows equivalent 3, the results say 0',
            'the page asked the network for https://unpkg.com/x',
            'script error: TypeError: x'])


class CommandLine(FakeTree):
    def run_report(self, *args):
        env = dict(os.environ, GPK_RESULTS=str(self.results),
                   GPK_BUILD=str(self.tmp / 'build'))
        return subprocess.run([sys.executable, str(TOOLS / 'report.py')] +
                              list(args), env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=60)

    def test_help(self):
        proc = self.run_report('--help')
        self.assertEqual(proc.returncode, 0)
        self.assertIn('mutation-report.json', proc.stdout)

    def test_missing_results_is_one_line(self):
        shutil.rmtree(self.results / '6.1')
        proc = self.run_report('--tree', '6.1')
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr.count('\n'), 1, proc.stderr)
        self.assertRegex(proc.stderr, r'^report: .*6\.1 has neither '
                         r'mutants\.json nor mutants-generated\.json')
        self.assertEqual(self.run_report('--tree', '9.9').returncode, 2)

    def test_a_bad_status_is_one_line(self):
        path = self.results / '6.1' / 'mutants.json'
        self.write(path, [{'name': 'x', 'status': 'dead'}])
        proc = self.run_report('--tree', '6.1')
        self.assertEqual(proc.returncode, 1)
        self.assertIn("mutant x has status 'dead'", proc.stderr)
        path.write_text('[')
        proc = self.run_report('--tree', '6.1')
        self.assertEqual((proc.returncode, proc.stderr.count('\n')), (1, 1))


if __name__ == '__main__':
    unittest.main()
