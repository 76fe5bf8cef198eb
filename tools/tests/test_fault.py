"""Tests for tools/fault.py (`make fault`); run from the repository root
with

    python3 -m unittest discover -s tools/tests -t .

The sweeps are read from a real console log of the full sweep on the
normal 6.1 kernel (fixtures/ktap/6.1-fault.log, see the README there);
the failures are made from it by editing the lines a failing kernel
would print differently.
"""

import contextlib
import io
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import fault  # noqa: E402
import ktap_report  # noqa: E402

from tests import fakes  # noqa: E402

FIXTURE = fakes.ktap_fixtures() / '6.1-fault.log'
ANON = 'pin_user_pages, anon'


def log_text():
    return FIXTURE.read_text(encoding='utf-8', errors='replace')


def run_of(text):
    """One kernel's section of a report, as run_one() makes it."""
    result = ktap_report.parse_log(text, 'kunit.log')
    return {'results': 'r', 'crashed': result.crashed,
            'crash_reason': result.crash_reason,
            'sweeps': fault.sweeps(result),
            'final': {leaf.name: leaf.status for leaf in result.leaves()
                      if leaf.suite == fault.FINAL}}


def report_of(text):
    return {'tree': '6.1', 'kernels': {'normal': run_of(text)}}


def last_step_line(text, key):
    """The console line of the last step of the sweep @key."""
    call, kind = key.split(', ', 1)
    lines = [ln for ln in text.splitlines()
             if 'fault: %s %s n=' % (call, kind) in ln]
    return lines[-1]


class RealSweep(unittest.TestCase):
    """What the report says of a clean full sweep."""

    @classmethod
    def setUpClass(cls):
        cls.clean = run_of(log_text())

    def test_every_call_of_the_suite_is_swept(self):
        calls = {key.split(', ')[0] for key in self.clean['sweeps']}
        self.assertEqual(calls, {
            'pin_user_pages', 'pin_user_pages_fast', 'pin_user_pages_remote',
            'pin_user_pages_unlocked', 'get_user_pages',
            'get_user_pages_fast', 'fork'})

    def test_every_sweep_ends_at_a_point_it_did_not_reach(self):
        for key, sweep in self.clean['sweeps'].items():
            with self.subTest(key):
                self.assertTrue(sweep['complete'])
                self.assertFalse(sweep['steps'][-1]['injected'])
                self.assertEqual(sweep['points'],
                                 len(sweep['steps']) - 1)

    def test_each_point_has_one_outcome(self):
        for key, sweep in self.clean['sweeps'].items():
            with self.subTest(key):
                self.assertEqual(sum(sweep['outcomes'].values()),
                                 sweep['points'])

    def test_the_anonymous_pin_fails_first_in_the_page_tables(self):
        steps = self.clean['sweeps'][ANON]['steps']
        self.assertEqual(steps[0]['outcome'], 'error')
        self.assertEqual(steps[-1]['outcome'], 'complete')

    def test_gup_pin_final_ran_after_the_sweeps(self):
        self.assertIn('suites_leave_no_pins_behind', self.clean['final'])

    def test_a_clean_sweep_passes(self):
        passed, failed, lines = fault.verdicts('6.1', report_of(log_text()))
        self.assertEqual((passed, failed),
                         (len(self.clean['sweeps']), 0))
        self.assertIn('0 failed', lines[0])


class Failures(unittest.TestCase):
    """A sweep that fails, stops early or differs is never a pass."""

    def test_a_failed_step_is_a_violation_with_its_n(self):
        text = log_text()
        line = [ln for ln in text.splitlines()
                if 'fault: pin_user_pages anon n=3 ' in ln][0]
        # the step's result line follows its diagnostics: fail it
        head, tail = text.split(line, 1)
        tail = tail.replace('ok 3 anon, n=3', 'not ok 3 anon, n=3', 1)
        run = run_of(head + line + tail)
        sweep = run['sweeps'][ANON]
        self.assertEqual([v['n'] for v in sweep['violations']], [3])
        passed, failed, lines = fault.verdicts(
            '6.1', {'tree': '6.1', 'kernels': {'normal': run}})
        self.assertEqual(failed, 1)
        self.assertTrue(lines[1].startswith('  %s: n=3: ' % ANON), lines)

    def test_a_sweep_cut_short_is_incomplete(self):
        text = log_text()
        last = last_step_line(text, ANON)
        cut = last.replace('not-reached', 'injected')
        run = run_of(text.replace(last, cut))
        self.assertFalse(run['sweeps'][ANON]['complete'])
        passed, failed, lines = fault.verdicts(
            '6.1', {'tree': '6.1', 'kernels': {'normal': run}})
        self.assertEqual(failed, 1)
        self.assertIn('  %s: incomplete' % ANON, lines)

    def test_a_failed_final_check_fails_the_run(self):
        text = log_text().replace('ok 1 suites_leave_no_pins_behind',
                                  'not ok 1 suites_leave_no_pins_behind')
        passed, failed, lines = fault.verdicts('6.1', report_of(text))
        self.assertEqual(failed, 1)
        self.assertIn('  gup_pin_final.suites_leave_no_pins_behind failed '
                      'after the sweeps', lines)

    def test_two_runs_that_differ_at_one_n_are_named(self):
        text = log_text()
        a = run_of(text)['sweeps']
        line = [ln for ln in text.splitlines()
                if 'fault: pin_user_pages anon n=7 ' in ln][0]
        other = line.rsplit(' ', 2)[0] + ' ret=-12 error'
        b = run_of(text.replace(line, other))['sweeps']
        self.assertEqual(fault.differences(a, a), [])
        diff = fault.differences(a, b)
        self.assertEqual(len(diff), 1)
        self.assertTrue(diff[0].startswith(ANON + ':'), diff)
        self.assertIn('(7, True,', diff[0])
        report = report_of(text)
        report['determinism'] = {'differences': diff}
        self.assertEqual(fault.verdicts('6.1', report)[1], 1)


class Report(unittest.TestCase):

    def test_the_markdown_has_a_row_per_sweep_and_the_final_verdicts(self):
        report = report_of(log_text())
        md = fault.markdown('6.1', report)
        for key in report['kernels']['normal']['sweeps']:
            self.assertIn('| %s | ' % key, md)
        self.assertIn('gup_pin_final after the sweeps: ', md)

    def test_the_debug_kernel_args_are_read_from_debug_config(self):
        args = fault.debug_kernel_args()
        self.assertTrue(args)
        self.assertTrue(all('=' in a for a in args), args)

    def test_a_config_without_kernel_args_is_one_line_of_error(self):
        with self.assertRaises(fault.ToolError):
            fault.debug_kernel_args(str(FIXTURE))


class Cli(unittest.TestCase):

    def test_help(self):
        out = subprocess.run([sys.executable, str(HERE.parent / 'fault.py'),
                              '--help'], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0)
        self.assertIn('make fault', out.stdout)

    def test_an_unknown_tree_is_one_line_of_error(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), \
                self.assertRaises(SystemExit) as cm:
            fault.main(['--tree', 'no-such-tree'])
        self.assertNotEqual(cm.exception.code, 0)
        self.assertEqual(len(err.getvalue().strip().splitlines()), 1,
                         err.getvalue())


if __name__ == '__main__':
    unittest.main()
