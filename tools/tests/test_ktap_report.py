"""Tests for tools/ktap_report.py; run from the repository root with

    python3 -m unittest discover -s tools/tests -t .
"""

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / 'fixtures'
SCRIPT = HERE.parent / 'ktap_report.py'
PROVE = shutil.which('prove')


def _load_tool():
    spec = importlib.util.spec_from_file_location('ktap_report', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


kr = _load_tool()


def fixture_text(name):
    return (FIXTURES / name).read_text(encoding='utf-8')


def parse(name):
    return kr.parse_log(fixture_text(name), name)


def statuses(result):
    return {f'{leaf.suite}.{leaf.name}': leaf.status
            for leaf in result.leaves()}


def leaf(result, full_name):
    return next(item for item in result.leaves()
                if f'{item.suite}.{item.name}' == full_name)


class CliCase(unittest.TestCase):
    """Runs main() in-process with outputs in a temporary directory."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = Path(self.tmp.name)

    def run_cli(self, log, *extra, outputs=True):
        args = [str(log), *extra]
        if outputs:
            args += ['--ktap', str(self.dir / 'out.ktap'),
                     '--junit', str(self.dir / 'out.xml'),
                     '--summary-json', str(self.dir / 'out.json')]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = kr.main(args)
        return status, out.getvalue(), err.getvalue()

    def expect_file(self, *names):
        path = self.dir / 'expect.txt'
        path.write_text('# suites that must run\n\n'
                        + '\n'.join(names) + '\n', encoding='utf-8')
        return str(path)

    def junit(self):
        return ET.parse(self.dir / 'out.xml').getroot()

    def summary(self):
        return json.loads((self.dir / 'out.json').read_text('utf-8'))

    def ktap(self):
        return (self.dir / 'out.ktap').read_text('utf-8').splitlines()


class ParsePassTest(unittest.TestCase):
    def test_counts_and_statuses(self):
        result = parse('pass.log')
        counts = result.counts()
        self.assertEqual((counts.passed, counts.failed, counts.skipped),
                         (7, 0, 1))
        self.assertFalse(result.crashed)
        self.assertEqual(result.exit_status(), 0)
        self.assertEqual(
            statuses(result)['gup_pin_tracking.pin_longterm_cma'],
            kr.SKIPPED)

    def test_parameter_leaves(self):
        names = [item.name for item in parse('pass.log').leaves()
                 if item.name.startswith('pin_folio_orders')]
        self.assertEqual(names, ['pin_folio_orders/order 0',
                                 'pin_folio_orders/order 1',
                                 'pin_folio_orders/order 2'])

    def test_skip_reason(self):
        skipped = leaf(parse('pass.log'), 'gup_pin_tracking.pin_longterm_cma')
        self.assertEqual(skipped.message, 'CONFIG_CMA is not enabled')

    def test_ktap_extracted_verbatim(self):
        lines = parse('pass.log').ktap_lines
        self.assertEqual(lines[:2], ['KTAP version 1', '1..2'])
        self.assertEqual(lines[-1], 'ok 2 gup_pin_fast')
        self.assertIn('        # Subtest: pin_folio_orders', lines)
        self.assertIn('    ok 4 pin_longterm_cma # SKIP CONFIG_CMA is not '
                      'enabled', lines)
        self.assertFalse(any('reboot' in line or 'Linux version' in line
                             for line in lines))

    def test_crlf_console(self):
        text = fixture_text('pass.log').replace('\n', '\r\n')
        self.assertEqual(kr.parse_log(text).ktap_lines,
                         parse('pass.log').ktap_lines)


class ParseFailTest(unittest.TestCase):
    def setUp(self):
        self.result = parse('fail.log')

    def test_counts(self):
        counts = self.result.counts()
        self.assertEqual((counts.passed, counts.failed, counts.skipped),
                         (3, 3, 0))
        self.assertFalse(self.result.crashed)

    def test_file_and_line(self):
        plain = leaf(self.result,
                     'gup_pin_tracking.pin_single_page_increments_pincount')
        self.assertEqual((plain.file, plain.line), ('mm/gup_kunit.c', 123))
        self.assertEqual(plain.message,
                         'EXPECTATION FAILED at mm/gup_kunit.c:123')
        self.assertIn('    Expected folio_pincount(folio) == 1, but',
                      plain.diagnostics)

    def test_failed_parameter(self):
        param = leaf(self.result, 'gup_pin_tracking.pin_folio_orders/order 1')
        self.assertEqual(param.status, kr.FAILED)
        self.assertEqual((param.file, param.line), ('mm/gup_kunit.c', 207))
        self.assertEqual(
            statuses(self.result)['gup_pin_tracking.pin_folio_orders/order 2'],
            kr.PASSED)

    def test_message_without_location(self):
        other = leaf(self.result, 'gup_pin_fast.pin_user_pages_fast_anon')
        self.assertIsNone(other.file)
        self.assertEqual(other.message,
                         'pin_user_pages_fast_anon: unexpected return value')


class ParseCrashTest(unittest.TestCase):
    def setUp(self):
        self.result = parse('crash.log')

    def test_crash_and_counts(self):
        self.assertTrue(self.result.crashed)
        self.assertEqual(self.result.crash_reason, 'BUG: kernel NULL pointer '
                         'dereference, address: 0000000000000008')
        counts = self.result.counts()
        self.assertEqual((counts.passed, counts.failed, counts.skipped),
                         (4, 3, 0))

    def test_leaf_statuses(self):
        found = statuses(self.result)
        self.assertEqual(found['gup_pin_fast.pin_fast_orders/order 0'],
                         kr.PASSED)
        self.assertEqual(found['gup_pin_fast.pin_fast_orders/<param 2>'],
                         kr.CRASHED)
        self.assertEqual(found['gup_pin_fast.<not run>'], kr.NOT_RUN)
        self.assertEqual(found['<not run>.<not run>'], kr.NOT_RUN)

    def test_synthesized_closing_lines(self):
        note = ('BUG: kernel NULL pointer dereference, address: '
                '0000000000000008; see crash.log')
        self.assertEqual(self.result.ktap_lines[-5:], [
            f'        not ok 2 <param 2> # CRASHED: {note}',
            f'    not ok 2 pin_fast_orders # CRASHED: {note}',
            f'    not ok 3 <not run> # not run: {note}',
            f'not ok 2 gup_pin_fast # CRASHED: {note}',
            f'not ok 3 <not run> # not run: {note}',
        ])
        self.assertFalse(any(line.startswith('ok ') and 'CRASH' in line
                             for line in self.result.ktap_lines))

    def test_kernel_lines_kept_out_of_ktap(self):
        self.assertFalse(any(re.search(r'BUG:|Oops|Call Trace|#PF', line)
                             and 'CRASHED' not in line and 'not run' not in
                             line for line in self.result.ktap_lines))

    def test_written_ktap_reparses_to_same_counts(self):
        again = kr.parse_log('\n'.join(self.result.ktap_lines))
        self.assertEqual(again.counts(), self.result.counts())
        self.assertFalse(again.crashed)


class ParseTruncatedTest(unittest.TestCase):
    def setUp(self):
        self.result = parse('truncated.log')

    def test_running_case_named_from_its_diagnostic(self):
        crashed = leaf(self.result, 'gup_pin_fast.pin_fast_concurrent')
        self.assertEqual(crashed.status, kr.CRASHED)
        self.assertEqual(self.result.crash_reason, kr.LOG_ENDED)

    def test_closing_lines(self):
        self.assertEqual(self.result.ktap_lines[-3:], [
            '    not ok 2 pin_fast_concurrent # CRASHED: log ended (kernel '
            'crashed or hung); see truncated.log',
            '    not ok 3 <not run> # not run: log ended (kernel crashed or '
            'hung); see truncated.log',
            'not ok 2 gup_pin_fast # CRASHED: log ended (kernel crashed or '
            'hung); see truncated.log',
        ])
        counts = self.result.counts()
        self.assertEqual((counts.passed, counts.failed), (2, 2))

    def test_unnamed_running_case(self):
        text = ('KTAP version 1\n1..1\n    # Subtest: s\n    1..2\n'
                '    ok 1 a\n')
        result = kr.parse_log(text)
        self.assertEqual(statuses(result)['s.<case 2>'], kr.CRASHED)

    def test_crash_between_suites(self):
        result = kr.parse_log('KTAP version 1\n1..2\n    # Subtest: s\n'
                              '    1..1\n    ok 1 a\nok 1 s\n')
        self.assertEqual(statuses(result)['<suite 2>.<suite>'], kr.CRASHED)
        self.assertEqual(result.ktap_lines[-1][:20], 'not ok 2 <suite 2> #')


class ParseInterleavedTest(unittest.TestCase):
    def setUp(self):
        self.result = parse('interleaved.log')

    def test_all_pass(self):
        counts = self.result.counts()
        self.assertEqual((counts.passed, counts.failed, counts.skipped),
                         (3, 0, 0))
        self.assertFalse(self.result.crashed)

    def test_splat_not_in_ktap(self):
        text = '\n'.join(self.result.ktap_lines)
        for marker in ('cut here', 'WARNING:', '<TASK>', 'crng init'):
            self.assertNotIn(marker, text)
        self.assertIn('    # pin_overflow_warns: saturation warning seen as '
                      'expected', self.result.ktap_lines)

    def test_splat_attached_to_running_case(self):
        warned = leaf(self.result, 'gup_pin_overflow.pin_overflow_warns')
        self.assertTrue(any(line.startswith('WARNING: CPU: 0 PID: 1 at '
                                            'mm/gup.c:181')
                            for line in warned.diagnostics))
        param = leaf(self.result,
                     'gup_pin_overflow.pin_overflow_orders/order 9')
        self.assertIn('random: crng init done', param.diagnostics)


class OtherGrammarTest(unittest.TestCase):
    def test_no_ktap(self):
        result = parse('noktap.log')
        self.assertFalse(result.found)
        self.assertEqual(result.leaves(), [])

    def test_suite_init_failure_is_a_failed_leaf(self):
        result = kr.parse_log('KTAP version 1\n1..1\n'
                              '    # failed to initialize (-12)\n'
                              'not ok 1 gup_pin_init\n')
        failed = leaf(result, 'gup_pin_init.<suite>')
        self.assertEqual(failed.status, kr.FAILED)
        self.assertEqual(failed.message, 'failed to initialize (-12)')

    def test_tap14_tabs_and_dashes(self):
        result = kr.parse_log('TAP version 14\n1..1\n\t# Subtest: s\n\t1..2\n'
                              '\tok 1 - a\n\tnot ok 2 - b\nnot ok 1 - s\n')
        self.assertEqual(statuses(result), {'s.a': kr.PASSED,
                                            's.b': kr.FAILED})

    def test_two_space_indentation(self):
        result = kr.parse_log('KTAP version 1\n1..1\n  KTAP version 1\n'
                              '  # Subtest: s\n  1..2\n  ok 1 a\n')
        self.assertEqual(statuses(result), {'s.a': kr.PASSED,
                                            's.<case 2>': kr.CRASHED})
        self.assertEqual([line[:22] for line in result.ktap_lines[-2:]],
                         ['  not ok 2 <case 2> # ', 'not ok 1 s # CRASHED: '])

    def test_ktap_ends_at_fulfilled_plan(self):
        text = fixture_text('pass.log') + 'ok 3 bogus_after_end\n'
        self.assertEqual(parse('pass.log').counts(),
                         kr.parse_log(text).counts())


class CliTest(CliCase):
    def test_pass(self):
        status, out, err = self.run_cli(FIXTURES / 'pass.log')
        self.assertEqual((status, out, err), (0, '7 passed, 0 failed, '
                                              '1 skipped\n', ''))
        self.assertEqual(self.ktap(), parse('pass.log').ktap_lines)

    def test_fail_stdout(self):
        status, out, _ = self.run_cli(FIXTURES / 'fail.log')
        lines = out.splitlines()
        self.assertEqual(status, 1)
        self.assertRegex(lines[-1], r'^\d+ passed, \d+ failed, \d+ skipped$')
        self.assertEqual(lines[-1], '3 passed, 3 failed, 0 skipped')
        self.assertIn('FAILED gup_pin_tracking.pin_folio_orders/order 1: '
                      'EXPECTATION FAILED at mm/gup_kunit.c:207', lines)
        self.assertEqual(len(lines), 4)

    def test_crash_exit_and_summary(self):
        status, out, _ = self.run_cli(FIXTURES / 'crash.log')
        self.assertEqual(status, 1)
        self.assertEqual(out.splitlines()[-1], '4 passed, 3 failed, 0 skipped')
        data = self.summary()
        self.assertEqual((data['passed'], data['failed'], data['skipped'],
                          data['crashed'], data['missing_suites']),
                         (4, 3, 0, True, []))
        fast = next(s for s in data['suites'] if s['name'] == 'gup_pin_fast')
        self.assertEqual([c['status'] for c in fast['cases']],
                         ['passed', 'passed', 'crashed', 'not_run'])

    def test_summary_file_line(self):
        self.run_cli(FIXTURES / 'fail.log')
        cases = self.summary()['suites'][0]['cases']
        self.assertEqual((cases[0]['file'], cases[0]['line'],
                          cases[0]['status']),
                         ('mm/gup_kunit.c', 123, 'failed'))

    def test_no_ktap(self):
        status, out, err = self.run_cli(FIXTURES / 'noktap.log')
        self.assertEqual((status, out), (2, ''))
        self.assertEqual(err, 'ktap_report: no KTAP output found in '
                         f'{FIXTURES / "noktap.log"} (kernel did not reach '
                         'KUnit?)\n')
        self.assertFalse((self.dir / 'out.xml').exists())

    def test_no_ktap_with_expected_suites(self):
        status, out, err = self.run_cli(
            FIXTURES / 'noktap.log', '--expect-suites',
            self.expect_file('gup_pin_tracking', 'gup_pin_fast'))
        self.assertEqual(status, 1)
        self.assertEqual(out.splitlines()[-1], '0 passed, 2 failed, 0 skipped')
        self.assertIn('expected suite gup_pin_fast did not run', err)
        suites = self.junit().findall('testsuite')
        self.assertEqual([s.get('name') for s in suites],
                         ['gup_pin_tracking', 'gup_pin_fast'])
        self.assertEqual(suites[0].find('testcase/error').get('message'),
                         'suite did not run')
        self.assertEqual(self.ktap()[1:3], [
            '1..2', 'not ok 1 gup_pin_tracking # not run: no KTAP output '
            'found in noktap.log'])

    def test_missing_expected_suite(self):
        status, out, err = self.run_cli(
            FIXTURES / 'pass.log', '--expect-suites',
            self.expect_file('gup_pin_tracking', 'gup_pin_fast  # fast',
                             'gup_pin_longterm'))
        self.assertEqual(status, 1)
        self.assertEqual(err, 'ktap_report: expected suite gup_pin_longterm '
                         'did not run\n')
        self.assertEqual(out.splitlines()[-1], '7 passed, 1 failed, 1 skipped')
        suite = self.junit().find("testsuite[@name='gup_pin_longterm']")
        self.assertEqual(len(suite.findall('testcase')), 1)
        self.assertEqual(suite.find('testcase/error').get('message'),
                         'suite did not run')
        self.assertEqual(self.summary()['missing_suites'],
                         ['gup_pin_longterm'])

    def test_all_expected_suites_present(self):
        status, _, err = self.run_cli(
            FIXTURES / 'pass.log', '--expect-suites',
            self.expect_file('gup_pin_tracking', 'gup_pin_fast'))
        self.assertEqual((status, err), (0, ''))

    def test_missing_suite_replaces_unnamed_not_run(self):
        self.run_cli(FIXTURES / 'crash.log', '--expect-suites',
                     self.expect_file('gup_pin_longterm'))
        data = self.summary()
        self.assertEqual(data['failed'], 3)
        self.assertNotIn('<not run>', [s['name'] for s in data['suites']])

    def test_bad_input_is_one_line(self):
        for path in (self.dir / 'absent.log', self.dir):
            status, out, err = self.run_cli(path)
            self.assertEqual((status, out), (2, ''))
            self.assertEqual(len(err.splitlines()), 1)
            self.assertTrue(err.startswith('ktap_report: '))
            self.assertNotIn('Traceback', err)


class JunitTest(CliCase):
    def test_totals_and_suite_attributes(self):
        self.run_cli(FIXTURES / 'pass.log')
        root = self.junit()
        self.assertEqual(root.tag, 'testsuites')
        self.assertEqual(
            {k: root.get(k) for k in ('tests', 'failures', 'errors',
                                      'skipped')},
            {'tests': '8', 'failures': '0', 'errors': '0', 'skipped': '1'})
        suite = root.find("testsuite[@name='gup_pin_tracking']")
        self.assertEqual((suite.get('tests'), suite.get('skipped')),
                         ('6', '1'))
        skipped = suite.find("testcase[@name='pin_longterm_cma']/skipped")
        self.assertEqual(skipped.get('message'), 'CONFIG_CMA is not enabled')
        names = [case.get('name') for case in suite.findall('testcase')]
        self.assertIn('pin_folio_orders/order 2', names)
        self.assertEqual({case.get('classname')
                          for case in suite.findall('testcase')},
                         {'gup_pin_tracking'})

    def test_failure_elements(self):
        self.run_cli(FIXTURES / 'fail.log')
        root = self.junit()
        self.assertEqual((root.get('failures'), root.get('errors')),
                         ('3', '0'))
        case = root.find(".//testcase[@name='pin_folio_orders/order 1']")
        self.assertEqual((case.get('file'), case.get('line')),
                         ('mm/gup_kunit.c', '207'))
        failure = case.find('failure')
        self.assertEqual(failure.get('message'),
                         'EXPECTATION FAILED at mm/gup_kunit.c:207')
        self.assertIn('refs == 2', failure.text)
        other = root.find(".//testcase[@name='pin_user_pages_fast_anon']")
        self.assertIsNone(other.get('file'))

    def test_crash_elements(self):
        self.run_cli(FIXTURES / 'crash.log')
        root = self.junit()
        self.assertEqual((root.get('tests'), root.get('errors')), ('7', '3'))
        error = root.find(
            ".//testcase[@name='pin_fast_orders/<param 2>']/error")
        self.assertEqual(error.get('message'),
                         'kernel crashed or hung while running this case')
        self.assertIn('Kernel panic - not syncing: Fatal exception',
                      error.text)
        not_run = root.find(".//testsuite[@name='gup_pin_fast']"
                            "/testcase[@name='<not run>']/error")
        self.assertTrue(not_run.get('message').startswith(
            'not run: kernel crashed earlier in the suite'))

    def test_interleaved_splat_in_system_out(self):
        self.run_cli(FIXTURES / 'interleaved.log')
        out = self.junit().find(
            ".//testcase[@name='pin_overflow_warns']/system-out")
        self.assertIn('WARNING: CPU: 0 PID: 1 at mm/gup.c:181', out.text)

    def test_control_characters_are_sanitised(self):
        log = self.dir / 'ansi.log'
        log.write_text('KTAP version 1\n1..1\n    # Subtest: s\n    1..1\n'
                       '\x1b[31mBUG: bad\x00 thing\x1b[0m\n    not ok 1 a\n'
                       'not ok 1 s\n', encoding='utf-8')
        self.assertEqual(self.run_cli(log)[0], 1)
        text = self.junit().find('.//failure').text
        self.assertIn('BUG: bad\ufffd thing', text)


@unittest.skipUnless(PROVE, 'prove (Perl TAP::Harness) not installed')
class ProveTest(CliCase):
    def prove(self, fixture):
        self.run_cli(FIXTURES / fixture)
        return subprocess.run(
            [PROVE, '--exec', 'cat', str(self.dir / 'out.ktap')],
            capture_output=True, text=True, check=False)

    def test_pass_is_success(self):
        proc = self.prove('pass.log')
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn('Result: PASS', proc.stdout)

    def test_failures_are_failures(self):
        for fixture in ('fail.log', 'crash.log', 'truncated.log'):
            with self.subTest(fixture=fixture):
                proc = self.prove(fixture)
                self.assertNotEqual(proc.returncode, 0, proc.stdout)
                self.assertIn('Result: FAIL', proc.stdout)


class ScriptTest(unittest.TestCase):
    def test_executable_with_help(self):
        self.assertTrue(os.access(SCRIPT, os.X_OK))
        proc = subprocess.run([str(SCRIPT), '--help'], capture_output=True,
                              text=True, check=False)
        self.assertEqual(proc.returncode, 0)
        self.assertIn('--expect-suites', proc.stdout)

    def test_standalone_run(self):
        proc = subprocess.run([sys.executable, str(SCRIPT),
                               str(FIXTURES / 'truncated.log')],
                              capture_output=True, text=True, check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout.splitlines()[-1],
                         '2 passed, 2 failed, 0 skipped')


class CombinedTest(CliCase):
    """results/junit.xml and results/summary.json over two trees."""

    def tree_results(self, tree, log):
        out = self.dir / tree
        out.mkdir()
        with contextlib.redirect_stdout(io.StringIO()):
            kr.main([str(FIXTURES / log), '--junit', str(out / 'junit.xml'),
                     '--summary-json', str(out / 'summary.json')])
        return str(out)

    def test_two_tree_result_dirs(self):
        runs = [('6.1', self.tree_results('6.1', 'pass.log'), None),
                ('6.12', self.tree_results('6.12', 'fail.log'), None)]
        per_tree = [json.loads((Path(d) / 'summary.json').read_text())
                    for _t, d, _e in runs]
        doc = kr.write_combined(runs, str(self.dir))
        self.assertEqual(doc, json.loads((self.dir / 'summary.json')
                                         .read_text()))
        for key in ('passed', 'failed', 'skipped'):
            self.assertEqual(doc[key], sum(t[key] for t in per_tree), key)
        self.assertEqual(list(doc['trees']), ['6.1', '6.12'])
        self.assertEqual(doc['trees']['6.12']['suites'],
                         per_tree[1]['suites'])
        self.assertEqual(doc['crashed'], False)
        root = ET.parse(self.dir / 'junit.xml').getroot()
        names = [s.get('name') for s in root.iter('testsuite')]
        self.assertTrue(names)
        self.assertTrue(all(n.startswith(('6.1/', '6.12/')) for n in names),
                        names)
        for tree, directory, _e in runs:
            own = ET.parse(Path(directory) / 'junit.xml').getroot()
            self.assertEqual(
                [tree + '/' + s.get('name') for s in own.iter('testsuite')],
                [n for n in names if n.startswith(tree + '/')])
        for case in root.iter('testcase'):
            self.assertRegex(case.get('classname'), r'^6\.12?/')
        tests = sum(int(s.get('tests')) for s in root.iter('testsuite'))
        self.assertEqual(root.get('tests'), str(tests))
        self.assertEqual(int(root.get('failures')) +
                         int(root.get('errors')), doc['failed'])

    def test_a_tree_that_did_not_run(self):
        runs = [('6.1', self.tree_results('6.1', 'pass.log'), None),
                ('6.12', str(self.dir / '6.12'), 'kernel build failed: x')]
        doc = kr.write_combined(runs, str(self.dir))
        self.assertEqual(doc['trees']['6.12']['error'],
                         'kernel build failed: x')
        self.assertEqual(doc['failed'], 1)
        suite = [s for s in ET.parse(self.dir / 'junit.xml').getroot()
                 .iter('testsuite') if s.get('name').startswith('6.12/')]
        self.assertEqual(len(suite), 1)
        self.assertEqual(suite[0].find('testcase/error').get('message'),
                         'kernel build failed: x')
        # Results that are missing although no error was given count too.
        doc = kr.combine([('6.1', str(self.dir / 'none'), None)])[0]
        self.assertEqual(doc['failed'], 1)
        self.assertIn('no results in', doc['trees']['6.1']['error'])

    def test_counts_line(self):
        self.assertEqual(kr.parse_counts('3 passed, 1 failed, 0 skipped\n'),
                         (3, 1, 0))
        self.assertIsNone(kr.parse_counts('run_suite: 6.1: 3 passed'))


if __name__ == '__main__':
    unittest.main()
