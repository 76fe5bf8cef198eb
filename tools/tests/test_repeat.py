"""Tests of tools/repeat.py's pure parts: reading and comparing runs.

A run's statuses are those of its summary.json, the verdict of
tools/ktap_report.py, not kunit.py's JSON.
"""
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    'repeat', os.path.join(HERE, '..', 'repeat.py'))
repeat = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(repeat)
sys.path.insert(0, os.path.join(HERE, '..'))
import ktap_report  # noqa: E402
from tools.tests.test_ktap_report import KTAP_FIXTURES  # noqa: E402


def run_summary(status='passed', param_status='passed'):
    return {'passed': 2, 'failed': 0, 'skipped': 0, 'crashed': False,
            'suites': [{'name': 'gup_pin', 'cases': [
                {'name': 'plain_case', 'status': status, 'count': 1},
                {'name': 'param_case/order 0', 'status': 'passed',
                 'count': 1},
                {'name': 'param_case/order 9', 'status': param_status,
                 'count': 1}]}]}


def summary_of(fixture):
    """The summary.json document that make test writes for a fixture."""
    text = (KTAP_FIXTURES / fixture).read_text(encoding='utf-8')
    return ktap_report.summary(ktap_report.parse_log(text, fixture))


class Flatten(unittest.TestCase):
    def test_names_cases_and_parameters(self):
        self.assertEqual(repeat.flatten(run_summary()), {
            'gup_pin.plain_case': 'passed',
            'gup_pin.param_case/order 0': 'passed',
            'gup_pin.param_case/order 9': 'passed'})

    def test_empty_run_has_no_cases(self):
        self.assertEqual(repeat.flatten({'suites': []}), {})

    def test_real_run_has_one_entry_per_leaf(self):
        doc = summary_of('6.12-grab-params.log')
        flat = repeat.flatten(doc)
        self.assertEqual(len(flat), doc['passed'] + doc['skipped'])
        self.assertEqual(set(flat.values()), {'passed'})
        self.assertTrue(any('/' in key for key in flat), flat)

    def test_crashed_run_keeps_crash_and_count(self):
        flat = repeat.flatten(summary_of('6.12-mutant-crash-in-param.log'))
        self.assertIn('crashed', flat.values())
        self.assertTrue(any(v.startswith('not_run x') for v in
                            flat.values()), flat)


class Compare(unittest.TestCase):
    def test_identical_runs_do_not_differ(self):
        a = repeat.flatten(run_summary())
        self.assertEqual(repeat.compare(a, dict(a)), [])

    def test_changed_status_is_named(self):
        a = repeat.flatten(run_summary())
        b = repeat.flatten(run_summary(param_status='failed'))
        self.assertEqual(repeat.compare(a, b),
                         ['gup_pin.param_case/order 9: passed -> failed'])

    def test_missing_case_is_named(self):
        a = repeat.flatten(run_summary())
        b = dict(a)
        del b['gup_pin.plain_case']
        self.assertEqual(repeat.compare(a, b),
                         ['gup_pin.plain_case: passed -> absent'])


FAKE_RUN_SUITE = '''import json, os, sys
res = sys.argv[sys.argv.index('--results') + 1]
os.makedirs(res, exist_ok=True)
json.dump({'sub_groups': [{'name': 'gup_pin', 'test_cases': [
    {'name': 'plain_case', 'status': 'PASS'}]}]},
    open(os.path.join(res, 'kunit.json'), 'w'))
if 'nosummary' not in res:
    json.dump(%r, open(os.path.join(res, 'summary.json'), 'w'))
sys.exit(1)
'''


class OneRun(unittest.TestCase):
    """one_run() reads the run's summary.json, never kunit.json."""

    def test_statuses_come_from_summary_json(self):
        doc = run_summary(status='failed')
        with tempfile.TemporaryDirectory() as d:
            fake = Path(d, 'run_suite.py')
            fake.write_text(FAKE_RUN_SUITE % (doc,))
            old, repeat.RUN_SUITE = repeat.RUN_SUITE, str(fake)
            tree = type('Tree', (), {'name': '6.1'})()
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    got = repeat.one_run(tree, 'run-00', [], d, '')
                    none = repeat.one_run(tree, 'nosummary', [], d, '')
            finally:
                repeat.RUN_SUITE = old
        self.assertEqual(got, (repeat.flatten(doc), 1))
        self.assertEqual(got[0]['gup_pin.plain_case'], 'failed')
        self.assertEqual(none, (None, 1))


if __name__ == '__main__':
    unittest.main()
