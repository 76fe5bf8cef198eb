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
sys.path.insert(0, str(HERE.parent))
from tests import fakes  # noqa: E402

# Real console logs of both trees, named TREE-WHAT.log: see the README
# of fixtures/ktap/ for how each was captured.
KTAP_FIXTURES = fakes.ktap_fixtures()
SCRIPT = HERE.parent / 'ktap_report.py'
PROVE = shutil.which('prove')
TREES = ('6.1', '6.12')


def _load_tool():
    spec = importlib.util.spec_from_file_location('ktap_report', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


kr = _load_tool()


def fixture_text(name):
    return (KTAP_FIXTURES / name).read_text(encoding='utf-8',
                                            errors='replace')


def parse(name):
    return kr.parse_log(fixture_text(name), name)


def statuses(result):
    return {f'{leaf.suite}.{leaf.name}': leaf.status
            for leaf in result.leaves()}


def leaf(result, full_name):
    return next(item for item in result.leaves()
                if f'{item.suite}.{item.name}' == full_name)


def tree_leaves(what, full_name):
    """(tree, the leaf full_name of TREE-what.log) for each tree."""
    return [(tree, leaf(parse(f'{tree}-{what}.log'), full_name))
            for tree in TREES]


def counted(result):
    counts = result.counts()
    return counts.passed, counts.failed, counts.skipped


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
    """TREE-grab-params.log: gup_pin_grab alone, every case passing,
    parameterised cases, WARNs inside parameters."""

    def test_counts_and_statuses(self):
        for tree, passed in (('6.1', 61), ('6.12', 67)):
            result = parse(f'{tree}-grab-params.log')
            with self.subTest(tree=tree):
                self.assertEqual(
                    (counted(result), result.crashed, result.exit_status(),
                     set(statuses(result).values())),
                    ((passed, 0, 0), False, 0, {kr.PASSED}))

    def test_parameter_leaves(self):
        names = [item.name for item in parse('6.1-grab-params.log').leaves()
                 if item.name.startswith('try_grab_page_get_adds_one_')]
        self.assertEqual(names, [
            f'try_grab_page_get_adds_one_reference/order {order}'
            for order in (0, 1, 2, 9, 10)])
        names = [item.name for item in parse('6.12-grab-params.log').leaves()
                 if item.name.startswith('try_grab_folio_get_adds_refs/')]
        self.assertEqual(names[:2], [
            'try_grab_folio_get_adds_refs/order 0 refs 1 via head page',
            'try_grab_folio_get_adds_refs/order 0 refs 3 via head page'])
        self.assertEqual(len(names), 9)

    def test_ktap_extracted_verbatim(self):
        for tree in TREES:
            with self.subTest(tree=tree):
                lines = parse(f'{tree}-grab-params.log').ktap_lines
                self.assertEqual(lines[:4], [
                    'KTAP version 1', '1..1', '    KTAP version 1',
                    '    # Subtest: gup_pin_grab'])
                self.assertEqual(lines[-1], 'ok 1 gup_pin_grab')
                self.assertIn('        # Subtest: try_grab_folio_get_adds_'
                              'refs', lines)
                self.assertFalse(any(
                    'reboot' in line or 'Linux version' in line
                    or line.startswith(('WARNING:', 'RIP:', ' <TASK>'))
                    for line in lines))

    def test_crlf_console(self):
        text = fixture_text('6.1-grab-params.log').replace('\n', '\r\n')
        self.assertEqual(kr.parse_log(text).ktap_lines,
                         parse('6.1-grab-params.log').ktap_lines)


class ParseSkipTest(unittest.TestCase):
    """TREE-bare-skips.log: the kernel booted by kunit.py without the
    project's command line, so that many cases skip, saying why."""

    COUNTS = {'6.1': (164, 0, 33), '6.12': (228, 0, 63)}

    def test_counts(self):
        for tree in TREES:
            with self.subTest(tree=tree):
                result = parse(f'{tree}-bare-skips.log')
                self.assertEqual(counted(result), self.COUNTS[tree])
                self.assertEqual(result.exit_status(), 0)

    def test_skip_reason(self):
        for tree, skipped in tree_leaves(
                'bare-skips', 'gup_selftest.selftest_crashes_kernel_on_'
                'request'):
            with self.subTest(tree=tree):
                self.assertEqual((skipped.status, skipped.message), (
                    kr.SKIPPED, 'needs gup.kunit_selftest=panic|oops|hang '
                    '(off by default)'))

    def test_skipped_parameter(self):
        skipped = leaf(parse('6.1-bare-skips.log'),
                       'gup_pin_secretmem.pin_user_pages_of_secret_memory_'
                       'is_refused/slow path')
        self.assertEqual((skipped.status, skipped.message), (
            kr.SKIPPED, 'needs secretmem: pass --kernel_args='
            'secretmem.enable=1 (memfd_secret(): -38)'))


class ParseFailTest(unittest.TestCase):
    """Mutant runs: TREE-mutant-060-fails.log (mutate.py --mode patch 060)
    and 6.12-mutant-148-fails-params.log (failing parameters)."""

    def test_counts(self):
        for tree, passed in (('6.1', 194), ('6.12', 288)):
            result = parse(f'{tree}-mutant-060-fails.log')
            with self.subTest(tree=tree):
                self.assertEqual(
                    (counted(result), result.crashed, result.exit_status()),
                    ((passed, 2, 0), False, 1))
                self.assertEqual(
                    sorted(k for k, s in statuses(result).items()
                           if s == kr.FAILED),
                    ['gup_pin.reclaim_keeps_pinned_file_folio_and_its_'
                     'private_data', 'gup_pin_ext4_dma.pin_user_pages_keeps_'
                     'dma_across_reclaim'])

    def test_file_and_line(self):
        for tree, plain in tree_leaves(
                'mutant-060-fails', 'gup_pin_ext4_dma.pin_user_pages_keeps_'
                'dma_across_reclaim'):
            with self.subTest(tree=tree):
                self.assertEqual((plain.file, plain.line),
                                 ('mm/tests/gup_pin_ext4_dma_kunit.c', 179))
                self.assertEqual(plain.message, 'EXPECTATION FAILED at '
                                 'mm/tests/gup_pin_ext4_dma_kunit.c:179')
                self.assertIn('    Expected gup_kunit_dma_on_disk(test, &d)'
                              " == 'C', but", plain.diagnostics)

    def test_failed_parameter(self):
        result = parse('6.12-mutant-148-fails-params.log')
        case = 'gup_pin_memfd.memfd_pin_folios_hugetlb_out_of_pages_leaks_' \
            'nothing/'
        param = leaf(result, case + 'memfd, its last folio allocated first')
        self.assertEqual(param.status, kr.FAILED)
        self.assertEqual((param.file, param.line),
                         ('mm/tests/gup_pin_memfd_kunit.c', 509))
        self.assertEqual(param.message, 'ASSERTION FAILED at '
                         'mm/tests/gup_pin_memfd_kunit.c:509')
        self.assertEqual(statuses(result)[case + 'memfd, no reservation'],
                         kr.FAILED)
        self.assertEqual(counted(result), (281, 9, 0))


class ParseCrashTest(unittest.TestCase):
    """6.12-mutant-crash-in-param.log: a generated mutant's NULL pointer
    dereference in the sixth parameter of a case, with suites to go."""

    NAME = '6.12-mutant-crash-in-param.log'
    CASE = 'gup_pin_memfd.memfd_pin_folios_pins_each_folio_of_range_once'

    def setUp(self):
        self.result = parse(self.NAME)

    def test_crash_and_counts(self):
        self.assertTrue(self.result.crashed)
        self.assertEqual(self.result.crash_reason, 'BUG: kernel NULL pointer '
                         'dereference, address: 0000000000000034')
        self.assertEqual(counted(self.result), (226, 16, 0))

    def test_leaf_statuses(self):
        found = statuses(self.result)
        self.assertEqual(found[self.CASE + '/shmem, max_folios 3 of 5'],
                         kr.PASSED)
        self.assertEqual(found[self.CASE + '/<param 6>'], kr.CRASHED)
        self.assertEqual(found['gup_pin_memfd.<not run>'], kr.NOT_RUN)
        self.assertEqual(found['<not run>.<not run>'], kr.NOT_RUN)
        self.assertEqual([item.count for item in self.result.leaves()
                          if item.status == kr.NOT_RUN], [11, 4])

    def test_synthesized_closing_lines(self):
        note = ('BUG: kernel NULL pointer dereference, address: '
                f'0000000000000034; see {self.NAME}')
        lines = self.result.ktap_lines
        at = lines.index(f'        not ok 6 <param 6> # CRASHED: {note}')
        self.assertEqual(lines[at:at + 4], [
            f'        not ok 6 <param 6> # CRASHED: {note}',
            '    not ok 1 memfd_pin_folios_pins_each_folio_of_range_once '
            f'# CRASHED: {note}',
            f'    not ok 2 <not run> # not run: {note}',
            f'    not ok 3 <not run> # not run: {note}'])
        self.assertEqual(lines[-5:], [
            f'not ok 8 gup_pin_memfd # CRASHED: {note}'] + [
            f'not ok {n} <not run> # not run: {note}' for n in (9, 10, 11,
                                                               12)])
        self.assertFalse(any(line.startswith('ok ') and 'CRASH' in line
                             for line in lines))

    def test_kernel_lines_kept_out_of_ktap(self):
        for name in (self.NAME, '6.1-selftest-oops.log',
                     '6.12-selftest-panic.log'):
            with self.subTest(fixture=name):
                self.assertFalse(any(
                    re.search(r'BUG:|Oops|Call Trace|#PF|RIP:', line)
                    and 'CRASHED' not in line and 'not run' not in line
                    for line in parse(name).ktap_lines))

    def test_written_ktap_reparses_to_same_counts(self):
        again = kr.parse_log('\n'.join(self.result.ktap_lines))
        self.assertEqual(again.counts(), self.result.counts())
        self.assertFalse(again.crashed)

    def test_selftest_crashes_name_the_running_case(self):
        reasons = {
            'panic': 'Kernel panic - not syncing: gup_kunit: panic requested '
                     'by gup.kunit_selftest',
            'oops': 'BUG: kernel NULL pointer dereference, address: '
                    '0000000000000000'}
        for tree in TREES:
            for kind, reason in reasons.items():
                with self.subTest(tree=tree, kind=kind):
                    result = parse(f'{tree}-selftest-{kind}.log')
                    self.assertEqual(result.crash_reason, reason)
                    self.assertEqual(statuses(result), {
                        'gup_selftest.selftest_crashes_kernel_on_request':
                        kr.CRASHED})


class ParseHangTest(unittest.TestCase):
    """TREE-selftest-hang.log: the case sleeps for ever; kunit.py's timeout
    ends QEMU and the log."""

    def test_running_case_named_from_its_diagnostic(self):
        for tree in TREES:
            result = parse(f'{tree}-selftest-hang.log')
            with self.subTest(tree=tree):
                self.assertEqual(
                    (statuses(result), result.crash_reason, counted(result)),
                    ({'gup_selftest.selftest_crashes_kernel_on_request':
                      kr.CRASHED}, kr.LOG_ENDED, (0, 1, 0)))

    def test_closing_lines(self):
        note = f'{kr.LOG_ENDED}; see 6.1-selftest-hang.log'
        self.assertEqual(parse('6.1-selftest-hang.log').ktap_lines[-3:], [
            '    # selftest_crashes_kernel_on_request: start',
            '    not ok 1 selftest_crashes_kernel_on_request # CRASHED: '
            + note,
            f'not ok 1 gup_selftest # CRASHED: {note}'])

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


class ParseWarnTest(unittest.TestCase):
    """TREE-warn-pass.log: gup_pin_warn alone; its cases WARN on purpose."""

    def test_all_pass(self):
        for tree in TREES:
            with self.subTest(tree=tree):
                result = parse(f'{tree}-warn-pass.log')
                self.assertEqual(counted(result), (4, 0, 0))
                self.assertFalse(result.crashed)

    def test_splat_not_in_ktap(self):
        for tree in TREES:
            with self.subTest(tree=tree):
                lines = parse(f'{tree}-warn-pass.log').ktap_lines
                text = '\n'.join(lines)
                for marker in ('cut here', '\nWARNING:', '<TASK>', 'RIP:'):
                    self.assertNotIn(marker, text)
                self.assertIn('    # grab_after_wrap_is_refused: expected '
                              'report: WARNING:', lines)

    def test_splat_attached_to_running_case(self):
        for tree in TREES:
            with self.subTest(tree=tree):
                result = parse(f'{tree}-warn-pass.log')
                warned = leaf(result, 'gup_pin_warn.grab_after_wrap_is_'
                              'refused')
                self.assertTrue(any(line.startswith('WARNING: CPU: ')
                                    for line in warned.diagnostics))
                first = leaf(result, 'gup_pin_warn.pin_crossing_sign_bit_'
                             'wraps_once')
                self.assertFalse(any('WARNING' in line
                                     for line in first.diagnostics))


class OtherGrammarTest(unittest.TestCase):
    def test_no_ktap(self):
        """TREE-boot-cut-no-ktap.log: kunit.py's timeout (1 s) ended QEMU
        during the boot, before KUnit."""
        for tree in TREES:
            with self.subTest(tree=tree):
                result = parse(f'{tree}-boot-cut-no-ktap.log')
                self.assertFalse(result.found)
                self.assertEqual(result.leaves(), [])
                self.assertEqual(result.console_tail[-1][:36],
                                 'qemu-system-x86_64: terminating on s')

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
        text = fixture_text('6.1-grab-params.log')
        text = text[:text.index('\nok 1 gup_pin_grab\n') + 19]
        longer = kr.parse_log(text + 'ok 2 bogus_after_end\n')
        self.assertEqual(parse('6.1-grab-params.log').counts(),
                         longer.counts())
        self.assertEqual(longer.ktap_lines[-1], 'ok 1 gup_pin_grab')


class CliTest(CliCase):
    def test_pass(self):
        status, out, err = self.run_cli(KTAP_FIXTURES / '6.1-grab-params.log')
        self.assertEqual((status, out, err), (0, '61 passed, 0 failed, '
                                              '0 skipped\n', ''))
        self.assertEqual(self.ktap(), parse('6.1-grab-params.log').ktap_lines)

    def test_fail_stdout(self):
        status, out, _ = self.run_cli(KTAP_FIXTURES /
                                      '6.12-mutant-148-fails-params.log')
        lines = out.splitlines()
        self.assertEqual(status, 1)
        self.assertRegex(lines[-1], r'^\d+ passed, \d+ failed, \d+ skipped$')
        self.assertEqual(lines[-1], '281 passed, 9 failed, 0 skipped')
        self.assertIn('FAILED gup_pin_memfd.memfd_pin_folios_hugetlb_out_of_'
                      'pages_leaks_nothing/memfd, its last folio allocated '
                      'first: ASSERTION FAILED at mm/tests/gup_pin_memfd_'
                      'kunit.c:509', lines)
        self.assertEqual(len(lines), 10)

    def test_crash_exit_and_summary(self):
        status, out, _ = self.run_cli(KTAP_FIXTURES /
                                      '6.12-mutant-crash-in-param.log')
        self.assertEqual(status, 1)
        self.assertEqual(out.splitlines()[-1],
                         '226 passed, 16 failed, 0 skipped')
        data = self.summary()
        self.assertEqual((data['passed'], data['failed'], data['skipped'],
                          data['crashed'], data['missing_suites']),
                         (226, 16, 0, True, []))
        memfd = next(s for s in data['suites']
                     if s['name'] == 'gup_pin_memfd')
        self.assertEqual([(c['status'], c['count']) for c in memfd['cases']],
                         [('passed', 1)] * 5 + [('crashed', 1),
                                                ('not_run', 11)])

    def test_summary_file_line(self):
        self.run_cli(KTAP_FIXTURES / '6.1-mutant-060-fails.log')
        cases = [case for suite in self.summary()['suites']
                 for case in suite['cases'] if case['status'] != 'passed']
        self.assertEqual([(c['file'], c['line'], c['status'])
                          for c in cases],
                         [('mm/tests/gup_pin_kunit.c', 779, 'failed'),
                          ('mm/tests/gup_pin_ext4_dma_kunit.c', 179,
                           'failed')])

    def test_no_ktap(self):
        log = KTAP_FIXTURES / '6.12-boot-cut-no-ktap.log'
        status, out, err = self.run_cli(log)
        self.assertEqual((status, out), (2, ''))
        self.assertEqual(err, f'ktap_report: no KTAP output found in {log} '
                         '(kernel did not reach KUnit?)\n')
        self.assertFalse((self.dir / 'out.xml').exists())

    def test_no_ktap_with_expected_suites(self):
        status, out, err = self.run_cli(
            KTAP_FIXTURES / '6.1-boot-cut-no-ktap.log', '--expect-suites',
            self.expect_file('gup_pin_grab', 'gup_pin_warn'))
        self.assertEqual(status, 1)
        self.assertEqual(out.splitlines()[-1], '0 passed, 2 failed, 0 skipped')
        self.assertIn('expected suite gup_pin_warn did not run', err)
        suites = self.junit().findall('testsuite')
        self.assertEqual([s.get('name') for s in suites],
                         ['gup_pin_grab', 'gup_pin_warn'])
        self.assertEqual(suites[0].find('testcase/error').get('message'),
                         'suite did not run')
        self.assertEqual(self.ktap()[1:3], [
            '1..2', 'not ok 1 gup_pin_grab # not run: no KTAP output '
            'found in 6.1-boot-cut-no-ktap.log'])

    def test_missing_expected_suite(self):
        status, out, err = self.run_cli(
            KTAP_FIXTURES / '6.12-warn-pass.log', '--expect-suites',
            self.expect_file('gup_pin_warn  # WARNs', 'gup_pin_longterm'))
        self.assertEqual(status, 1)
        self.assertEqual(err, 'ktap_report: expected suite gup_pin_longterm '
                         'did not run\n')
        self.assertEqual(out.splitlines()[-1], '4 passed, 1 failed, 0 skipped')
        suite = self.junit().find("testsuite[@name='gup_pin_longterm']")
        self.assertEqual(len(suite.findall('testcase')), 1)
        self.assertEqual(suite.find('testcase/error').get('message'),
                         'suite did not run')
        self.assertEqual(self.summary()['missing_suites'],
                         ['gup_pin_longterm'])

    def test_all_expected_suites_present(self):
        status, _, err = self.run_cli(
            KTAP_FIXTURES / '6.12-warn-pass.log', '--expect-suites',
            self.expect_file('gup_pin_warn'))
        self.assertEqual((status, err), (0, ''))

    def test_missing_suite_replaces_unnamed_not_run(self):
        self.run_cli(KTAP_FIXTURES / '6.12-mutant-crash-in-param.log',
                     '--expect-suites', self.expect_file('gup_pin_longterm'))
        data = self.summary()
        self.assertEqual(data['failed'], 16)
        self.assertEqual(data['missing_suites'], ['gup_pin_longterm'])
        unnamed = next(s for s in data['suites'] if s['name'] == '<not run>')
        self.assertEqual(unnamed['cases'][0]['count'], 3)

    def test_bad_input_is_one_line(self):
        for path in (self.dir / 'absent.log', self.dir):
            status, out, err = self.run_cli(path)
            self.assertEqual((status, out), (2, ''))
            self.assertEqual(len(err.splitlines()), 1)
            self.assertTrue(err.startswith('ktap_report: '))
            self.assertNotIn('Traceback', err)


class JunitTest(CliCase):
    def test_totals_and_suite_attributes(self):
        self.run_cli(KTAP_FIXTURES / '6.12-bare-skips.log')
        root = self.junit()
        self.assertEqual(root.tag, 'testsuites')
        self.assertEqual(
            {k: root.get(k) for k in ('tests', 'failures', 'errors',
                                      'skipped')},
            {'tests': '291', 'failures': '0', 'errors': '0',
             'skipped': '63'})
        suite = root.find("testsuite[@name='gup_pin_grab']")
        self.assertEqual((suite.get('tests'), suite.get('skipped')),
                         ('67', '2'))
        skipped = suite.find("testcase[@name='folio_is_longterm_pinnable_"
                             "movable_zone']/skipped")
        self.assertEqual(skipped.get('message'), 'needs a ZONE_MOVABLE: '
                         'pass --kernel_args=movablecore=512M')
        names = [case.get('name') for case in suite.findall('testcase')]
        self.assertIn('try_grab_folio_get_adds_refs/order 10 refs 7 via '
                      'head page', names)
        self.assertEqual({case.get('classname')
                          for case in suite.findall('testcase')},
                         {'gup_pin_grab'})

    def test_failure_elements(self):
        self.run_cli(KTAP_FIXTURES / '6.12-mutant-148-fails-params.log')
        root = self.junit()
        self.assertEqual((root.get('failures'), root.get('errors')),
                         ('9', '0'))
        case = root.find(".//testcase[@name='memfd_pin_folios_hugetlb_out_of_"
                         "pages_leaks_nothing/memfd, its last folio allocated "
                         "first']")
        self.assertEqual((case.get('file'), case.get('line')),
                         ('mm/tests/gup_pin_memfd_kunit.c', '509'))
        failure = case.find('failure')
        self.assertEqual(failure.get('message'), 'ASSERTION FAILED at '
                         'mm/tests/gup_pin_memfd_kunit.c:509')
        self.assertIn('ASSERTION FAILED at mm/tests/gup_pin_memfd_kunit.c:509',
                      failure.text)
        passed = root.find(".//testcase[@name='memfd_pin_folios_hugetlb_out_"
                           "of_pages_leaks_nothing/hugetlbfs file, reserved']")
        self.assertIsNone(passed.find('failure'))

    def test_crash_elements(self):
        self.run_cli(KTAP_FIXTURES / '6.12-mutant-crash-in-param.log')
        error = self.junit().find(
            ".//testcase[@name='memfd_pin_folios_pins_each_folio_of_range_"
            "once/<param 6>']/error")
        self.assertEqual(error.get('message'),
                         'kernel crashed or hung while running this case')
        self.assertIn('Kernel panic - not syncing: Fatal exception',
                      error.text)
        not_run = self.junit().find(".//testsuite[@name='gup_pin_memfd']"
                                    "/testcase[@name='<not run>']/error")
        self.assertTrue(not_run.get('message').startswith(
            'not run: kernel crashed earlier in the suite (11 of 12'))
        self.assertEqual([self.junit().get(k) for k in ('tests', 'errors')],
                         ['242', '16'])

    def test_warning_in_system_out(self):
        self.run_cli(KTAP_FIXTURES / '6.1-warn-pass.log')
        out = self.junit().find(
            ".//testcase[@name='grab_after_wrap_is_refused']/system-out")
        self.assertRegex(out.text, r'\nWARNING: CPU: \d+ PID: \d+ at '
                         r'mm/gup.c:\d+ try_grab_page')

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
        self.run_cli(KTAP_FIXTURES / fixture)
        return subprocess.run(
            [PROVE, '--exec', 'cat', str(self.dir / 'out.ktap')],
            capture_output=True, text=True, check=False)

    def test_pass_is_success(self):
        for fixture in ('6.1-grab-params.log', '6.12-bare-skips.log'):
            with self.subTest(fixture=fixture):
                proc = self.prove(fixture)
                self.assertEqual(proc.returncode, 0, proc.stdout)
                self.assertIn('Result: PASS', proc.stdout)

    def test_failures_are_failures(self):
        for fixture in ('6.1-mutant-060-fails.log',
                        '6.12-mutant-crash-in-param.log',
                        '6.1-selftest-oops.log', '6.12-selftest-hang.log'):
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
                               str(KTAP_FIXTURES / '6.1-selftest-hang.log')],
                              capture_output=True, text=True, check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout.splitlines()[-1],
                         '0 passed, 1 failed, 0 skipped')


class CombinedTest(CliCase):
    """results/junit.xml and results/summary.json over two trees."""

    def tree_results(self, tree, log):
        out = self.dir / tree
        out.mkdir()
        with contextlib.redirect_stdout(io.StringIO()):
            kr.main([str(KTAP_FIXTURES / log),
                     '--junit', str(out / 'junit.xml'),
                     '--summary-json', str(out / 'summary.json')])
        return str(out)

    def test_two_tree_result_dirs(self):
        runs = [('6.1', self.tree_results('6.1', '6.1-grab-params.log'),
                 None),
                ('6.12', self.tree_results(
                    '6.12', '6.12-mutant-060-fails.log'), None)]
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
        runs = [('6.1', self.tree_results('6.1', '6.1-warn-pass.log'),
                 None),
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
