"""Cross-check tools/ktap_report.py's parser against kunit.py's own.

For each real console log of tools/tests/fixtures/ktap/ (TREE-WHAT.log),
the prepared tree's tools/testing/kunit/kunit_parser.py (build/TREE/linux;
the test skips, saying so, when the tree is not prepared) parses it with
parse_run_tests(), and so does ktap_report.parse_log(). They must agree:

- the same cases and parameters passed, failed and skipped ('suite.case',
  'suite.case/param');
- where kunit.py has a test that crashed or never reported (an unnamed
  TEST_CRASHED subtest for each "missing expected subtest"), our parser has
  as many tests crashed or not run under the same parent;
- the same totals, but for the differences below.

Intended differences, each asserted here:
1. A crash in a parameter: kunit.py marks the parameterised case crashed
   (or, before its first parameter reported, NO_TESTS) and counts no crashed
   test for the parameter that was running; our parser counts it, as
   'case/<param N>', crashed.
2. The case running at a crash: kunit.py does not name it; our parser
   names it after its last "# CASE: ..." diagnostic (<case N> if none).
   Tests never reported are one '<not run>' entry with their count here,
   one unnamed crashed test each in kunit.py.
3. Console reports: both parsers give a WARNING, BUG, ... line to the
   test whose result line follows it (kunit.py in the test's log), but
   kunit.py's verdict ignores it; apply_splats() fails the case unless
   the case (or a file) declares the report.
"""
import contextlib
import importlib
import io
import os
import sys
import unittest
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
import ktap_report as kr  # noqa: E402

from tests import fakes  # noqa: E402

KTAP_FIXTURES = fakes.ktap_fixtures()
BUILD = Path(os.environ.get('GPK_BUILD', ROOT / 'build'))
KUNIT_STATUS = {'SUCCESS': kr.PASSED, 'FAILURE': kr.FAILED,
                'SKIPPED': kr.SKIPPED, 'TEST_CRASHED': kr.CRASHED}
DEFINITE = (kr.PASSED, kr.FAILED, kr.SKIPPED)
_PARSERS: dict = {}


def kunit_parser(tree):
    """The kunit_parser module of build/TREE/linux, its printing silenced,
    or None if the tree is not prepared."""
    if tree not in _PARSERS:
        kdir = BUILD / tree / 'linux' / 'tools' / 'testing' / 'kunit'
        _PARSERS[tree] = None
        if (kdir / 'kunit_parser.py').is_file():
            _PARSERS[tree] = _import(str(kdir))
    return _PARSERS[tree]


def _import(kdir):
    names = ('kunit_parser', 'kunit_printer')
    saved = {name: sys.modules.pop(name, None) for name in names}
    sys.path.insert(0, kdir)
    try:
        printer = importlib.import_module('kunit_printer')
        parser = importlib.import_module('kunit_parser')
    finally:
        sys.path.remove(kdir)
        for name, module in saved.items():
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module
    printer.stdout._output = io.StringIO()
    return parser


def key_of(parts):
    """'suite.case/param' of the names from the suite down."""
    return parts[0] + ''.join(
        ('.' if i == 1 else '/') + p for i, p in enumerate(parts[1:], 1))


class KunitView:
    """What kunit.py's Test tree says, in our parser's names."""

    def __init__(self, main):
        self.leaves = {}          # key -> status of each named leaf
        self.logs = {}            # key -> its log lines
        self.missing = Counter()  # parent key -> unnamed crashed tests
        self.open = set()         # named groups crashed with no crash
        self.counts = main.counts  # counted below them (difference 1)
        self.status = main.status.name
        self._walk(main, [])

    def _walk(self, test, parts):
        for sub in test.subtests:
            if not sub.name:
                self.missing[key_of(parts) if parts else ''] += 1
                continue
            key = key_of(parts + [sub.name])
            status = sub.status.name
            if sub.subtests or status == 'NO_TESTS':
                if status in ('TEST_CRASHED', 'NO_TESTS') \
                        and not sub.counts.crashed:
                    self.open.add(key)
                self._walk(sub, parts + [sub.name])
            else:
                self.leaves[key] = KUNIT_STATUS[status]
                self.logs[key] = sub.log


def parent_of(leaf):
    """Key of the test that holds a leaf of our parser ('' for the run)."""
    if leaf.suite == kr.NOT_RUN_NAME or leaf.name == kr.SUITE_SELF_NAME:
        return ''
    case, _, param = leaf.name.partition('/')
    return f'{leaf.suite}.{case}' if param else leaf.suite


def compare(text, tree, name):
    """(kunit.py's view, our Result) of one log; asserts nothing."""
    main = kunit_parser(tree).parse_run_tests(text.splitlines())
    return KunitView(main), kr.parse_log(text, name)


def fixtures(part=''):
    """The fixture logs whose names contain part."""
    return [path for path in sorted(KTAP_FIXTURES.glob('*.log'))
            if part in path.name]


class FixtureCase(unittest.TestCase):
    def parsed(self, path):
        """(tree, text, kunit.py's view, our Result) of a fixture; skips
        (the subtest it runs in) if its tree is not prepared."""
        tree = path.name.split('-', 1)[0]
        if kunit_parser(tree) is None:
            self.skipTest(f'build/{tree}/linux is not prepared, no '
                          f'kunit_parser.py to compare with (make tree '
                          f'TREE={tree})')
        text = path.read_text(encoding='utf-8', errors='replace')
        return (tree, text) + compare(text, tree, path.name)


class CrossCheck(FixtureCase):
    def test_fixtures_of_both_trees(self):
        trees = {path.name.split('-', 1)[0] for path in fixtures()}
        self.assertEqual(trees, {'6.1', '6.12'})

    def test_same_definite_results(self):
        for path in fixtures():
            with self.subTest(fixture=path.name):
                _tree, _text, kunit, ours = self.parsed(path)
                want = {k: s for k, s in kunit.leaves.items()
                        if s in DEFINITE}
                got = {f'{leaf.suite}.{leaf.name}': leaf.status
                       for leaf in ours.leaves() if leaf.status in DEFINITE}
                self.assertEqual(got, want)

    def test_crashed_and_missing_tests_agree(self):
        for path in fixtures():
            with self.subTest(fixture=path.name):
                _tree, _text, kunit, ours = self.parsed(path)
                got = Counter()
                for leaf in ours.leaves():
                    key = f'{leaf.suite}.{leaf.name}'
                    if kunit.leaves.get(key) == kr.CRASHED:
                        self.assertEqual(leaf.status, kr.CRASHED, key)
                    elif leaf.status not in DEFINITE:
                        got[parent_of(leaf)] += leaf.count
                want = kunit.missing + Counter(kunit.open)
                self.assertEqual(dict(got), dict(want))
                self.assertEqual(ours.crashed, bool(want))

    def test_same_totals_but_the_running_parameter(self):
        for path in fixtures():
            with self.subTest(fixture=path.name):
                _tree, _text, kunit, ours = self.parsed(path)
                counts = ours.counts()
                self.assertEqual(
                    (counts.passed, counts.failures, counts.skipped,
                     counts.errors),
                    (kunit.counts.passed, kunit.counts.failed,
                     kunit.counts.skipped,
                     kunit.counts.crashed + len(kunit.open)))

    def test_no_ktap_is_no_result_in_both(self):
        self.assertEqual(len(fixtures('-no-ktap')), 2)
        for path in fixtures('-no-ktap'):
            with self.subTest(fixture=path.name):
                _tree, _text, kunit, ours = self.parsed(path)
                self.assertEqual((kunit.status, ours.found),
                                 ('FAILURE_TO_PARSE_TESTS', False))
                with contextlib.redirect_stderr(io.StringIO()):
                    self.assertEqual(kr.main([str(path)]), 2)

    def test_fixtures_show_what_they_are_named_for(self):
        """Each kind of run is in the fixtures of each tree, as kunit.py
        reads it."""
        seen = Counter()
        for path in fixtures():
            with self.subTest(fixture=path.name):
                tree, _text, kunit, _ours = self.parsed(path)
                statuses = set(kunit.leaves.values())
                seen[tree, 'failed'] += kr.FAILED in statuses
                seen[tree, 'skipped'] += kr.SKIPPED in statuses
                seen[tree, 'crashed'] += bool(kunit.missing)
                seen[tree, 'params'] += any('/' in k for k in kunit.leaves)
                seen[tree, 'all passed'] += statuses == {kr.PASSED}
                seen[tree, 'no KTAP'] += not kunit.leaves and \
                    not kunit.missing
        for tree in {t for t, _what in seen}:
            for what in ('failed', 'skipped', 'crashed', 'params',
                         'all passed', 'no KTAP'):
                self.assertTrue(seen[tree, what], f'{tree}: {what}')


class RunningParameter(FixtureCase):
    """Difference 1 on a real log: a crash inside a parameter."""

    def test_running_parameter_counts_here_only(self):
        opened = 0
        for path in fixtures():
            with self.subTest(fixture=path.name):
                _tree, _text, kunit, ours = self.parsed(path)
                for key in kunit.open:
                    opened += 1
                    running = [leaf for leaf in ours.leaves()
                               if f'{leaf.suite}.{leaf.name}'.startswith(
                                   key + '/')
                               and leaf.status == kr.CRASHED]
                    self.assertEqual(len(running), 1, key)
                    self.assertRegex(running[0].name, r'/<param \d+>$')
        if kunit_parser('6.12'):
            self.assertTrue(opened, '6.12-mutant-crash-in-param.log')


def reports(lines):
    return [line.strip() for line in lines if kr.SPLAT_RE.match(line.strip())]


class ConsoleReports(FixtureCase):
    """Difference 3 on the real logs of gup_pin_warn, whose cases WARN on
    purpose and declare it."""

    def test_both_attribute_reports_to_the_same_case(self):
        self.assertEqual(len(fixtures('-warn-')), 2)
        for path in fixtures('-warn-'):
            with self.subTest(fixture=path.name):
                _tree, _text, kunit, ours = self.parsed(path)
                mine = {f'{leaf.suite}.{leaf.name}': reports(
                    leaf.diagnostics) for leaf in ours.leaves()}
                theirs = {key: reports(log)
                          for key, log in kunit.logs.items()}
                self.assertEqual(mine, theirs)
                self.assertEqual(len([k for k, v in mine.items() if v]), 3)

    def test_only_our_verdict_needs_the_declarations(self):
        for path in fixtures('-warn-'):
            with self.subTest(fixture=path.name):
                tree, text, kunit, ours = self.parsed(path)
                self.assertEqual(kr.apply_splats(ours, text, []), [])
                warned = {f'{leaf.suite}.{leaf.name}'
                          for leaf in ours.leaves()
                          if reports(leaf.diagnostics)}
                bare = '\n'.join(line for line in text.splitlines()
                                 if not kr.DECLARATION_RE.match(line))
                kunit_bare, ours = compare(bare, tree, path.name)
                self.assertEqual(set(kunit_bare.leaves.values()),
                                 {kr.PASSED})
                problems = kr.apply_splats(ours, bare, [])
                self.assertEqual({p.split(':')[0] for p in problems}, warned)
                self.assertEqual({f'{leaf.suite}.{leaf.name}'
                                  for leaf in ours.leaves()
                                  if leaf.status == kr.FAILED}, warned)


if __name__ == '__main__':
    unittest.main()
