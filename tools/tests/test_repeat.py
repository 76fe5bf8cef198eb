"""Tests of tools/repeat.py's pure parts: flattening and comparing runs."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    'repeat', os.path.join(HERE, '..', 'repeat.py'))
repeat = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(repeat)


def run_json(status='PASS', param_status='PASS'):
    return {'name': 'KUnit Test Group', 'test_cases': [], 'sub_groups': [
        {'name': 'gup_pin', 'test_cases': [
            {'name': 'plain_case', 'status': status}],
         'sub_groups': [
            {'name': 'param_case', 'sub_groups': [], 'test_cases': [
                {'name': 'order 0', 'status': 'PASS'},
                {'name': 'order 9', 'status': param_status}]}]}]}


class Flatten(unittest.TestCase):
    def test_names_cases_and_parameters(self):
        self.assertEqual(repeat.flatten(run_json()), {
            'gup_pin.plain_case': 'PASS',
            'gup_pin.param_case/order 0': 'PASS',
            'gup_pin.param_case/order 9': 'PASS'})

    def test_empty_run_has_no_cases(self):
        self.assertEqual(repeat.flatten({'sub_groups': []}), {})


class Compare(unittest.TestCase):
    def test_identical_runs_do_not_differ(self):
        a = repeat.flatten(run_json())
        self.assertEqual(repeat.compare(a, dict(a)), [])

    def test_changed_status_is_named(self):
        a = repeat.flatten(run_json())
        b = repeat.flatten(run_json(param_status='FAIL'))
        self.assertEqual(repeat.compare(a, b),
                         ['gup_pin.param_case/order 9: PASS -> FAIL'])

    def test_missing_case_is_named(self):
        a = repeat.flatten(run_json())
        b = dict(a)
        del b['gup_pin.plain_case']
        self.assertEqual(repeat.compare(a, b),
                         ['gup_pin.plain_case: PASS -> absent'])


if __name__ == '__main__':
    unittest.main()
