"""Tests of tools/run_suite.py's pure parts: which suites a run expects."""
import importlib.util
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
SPEC = importlib.util.spec_from_file_location(
    'run_suite', os.path.join(HERE, '..', 'run_suite.py'))
run_suite = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(run_suite)

SUITES = """# comment
gup_pin_grab
gup_pin
gup_pin_memfd 6.12   # only 6.12 has memfd_pin_folios()
gup_pin_old 6.1 5.10
gup_pin_final
"""


class ExpectedSuites(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp()
        with os.fdopen(fd, 'w') as f:
            f.write(SUITES)

    def tearDown(self):
        os.unlink(self.path)

    def test_suite_without_trees_is_in_every_tree(self):
        self.assertEqual(run_suite.expected_suites('gup_pin*', '6.1',
                                                   self.path),
                         ['gup_pin_grab', 'gup_pin', 'gup_pin_old',
                          'gup_pin_final'])

    def test_suite_with_trees_is_only_in_those(self):
        self.assertEqual(run_suite.expected_suites('gup_pin*', '6.12',
                                                   self.path),
                         ['gup_pin_grab', 'gup_pin', 'gup_pin_memfd',
                          'gup_pin_final'])

    def test_filter_selects_by_suite_part_of_glob(self):
        self.assertEqual(run_suite.expected_suites('gup_pin_memfd.*', '6.12',
                                                   self.path),
                         ['gup_pin_memfd'])
        self.assertEqual(run_suite.expected_suites('gup_pin_memfd', '6.1',
                                                   self.path), [])

    def test_project_list_names_every_suite_once(self):
        names = [e.split()[0] for e in
                 run_suite.read_names(run_suite.SUITES)]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(names[-1], 'gup_pin_final')


if __name__ == '__main__':
    unittest.main()
