"""Tests of tools/_scores.py, the one tally of mutant outcomes behind
mutants.md, mutants-generated.md and tools/report.py: the statuses and
their schema terms, the counts, the survivors that no test reaches (lcov
coverage), and genmut.recount() giving what genmut.report() gave."""

import os
import shutil
import sys
import tempfile
import types
import unittest
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

import _generator as gen  # noqa: E402
import _scores as sc  # noqa: E402
from _common import ToolError  # noqa: E402
from tests import fakes  # noqa: E402

gm = fakes.load_tool('genmut')

DIFF = '''--- a/mm/gup.c
+++ b/mm/gup.c
@@ -10,4 +10,4 @@ int f(void)
 {
 	int x = 1;
-	return x;
+	return !x;
 }
'''
LCOV = '''TN:
SF:/somewhere/build/6.1/linux/mm/gup.c
DA:11,4
DA:12,0
DA:13,3
end_of_record
'''


def entry(name, status, eq=False, **kw):
    e = dict(name=name, file='mm/gup.c', status=status,
             cases=['gup_pin.a', 'gup_pin.b', 'gup_pin.c', 'gup_pin.d']
             if status == 'killed' else [], seconds=1.0,
             description='d', equivalent_claimed=eq)
    e.update(kw)
    return e


class Tally(unittest.TestCase):
    def test_statuses_counts_and_failures(self):
        es = [entry('a', 'killed'), entry('b', 'killed', True),
              entry('c', 'survived'), entry('d', 'equivalent', True),
              entry('e', 'nocompile'), entry('f', 'noapply')]
        outs = sc.outcomes(es)
        self.assertEqual([o.schema_status for o in outs],
                         ['Killed', 'Killed', 'Survived', 'Ignored',
                          'CompileError', 'CompileError'])
        t = sc.tally(outs, generated=8)
        self.assertEqual((t['killed'], t['survived'], t['equivalent'],
                          t['catalogue_errors'], t['ran'], t['not_run'],
                          t['compiled'], t['failed'], t['passed']),
                         (2, 1, 1, 1, 6, 2, 4, 4, 2))
        self.assertEqual(t['score'], 75.0)
        self.assertEqual(outs[0].shown_cases(),
                         'gup_pin.a; gup_pin.b; gup_pin.c (+1 more)')
        self.assertEqual(outs[1].status_text('x'), 'killed (x)')
        self.assertEqual(sc.schema_counts(outs)['CompileError'], 2)
        self.assertIsNone(sc.tally([])['score'])

    def test_a_bad_entry_is_a_tool_error(self):
        with self.assertRaisesRegex(ToolError, 'f.json: mutant a has status'):
            sc.outcomes([entry('a', 'dead')], where='f.json')
        with self.assertRaisesRegex(ToolError, 'without a name'):
            sc.outcomes([{'status': 'killed'}])


class NoCoverage(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='scores-')
        os.makedirs(os.path.join(self.tmp, 'coverage'))
        with open(os.path.join(self.tmp, sc.LCOV), 'w') as f:
            f.write(LCOV)
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_the_line_of_a_diff(self):
        self.assertEqual(sc.first_changed_line(DIFF), ('mm/gup.c', 12))
        self.assertIsNone(sc.first_changed_line('no diff'))

    def test_a_survivor_on_an_unexecuted_line(self):
        cov = sc.read_coverage(self.tmp)
        self.assertEqual(cov.hits('mm/gup.c', 11), 4)
        self.assertIsNone(cov.hits('mm/gup.c', 99))
        outs = sc.outcomes([entry('a', 'survived'),
                            entry('b', 'survived', line=13),
                            entry('c', 'killed', line=12)], cov,
                           diff=lambda e: DIFF)
        self.assertEqual([o.schema_status for o in outs],
                         ['NoCoverage', 'Survived', 'Killed'])
        self.assertEqual(sc.tally(outs)['no_coverage'], 1)
        self.assertIn('no coverage', outs[0].status_text('x'))
        self.assertIsNone(sc.read_coverage(os.path.join(self.tmp, 'none')))

    def test_a_broken_tracefile(self):
        with open(os.path.join(self.tmp, sc.LCOV), 'a') as f:
            f.write('SF:x.c\nDA:one,two\n')
        with self.assertRaisesRegex(ToolError, 'not an lcov DA'):
            sc.read_coverage(self.tmp)


class Recount(unittest.TestCase):
    def test_recount_gives_what_report_gave(self):
        ms = [gen.Mutant(name='f+%d-del' % i, function='f' if i < 4 else 'g',
                         file='mm/x.c', op='del' if i % 2 else 'negate',
                         line=i, offset=i) for i in range(7)]
        sts = ['killed', 'survived', 'equivalent', 'nocompile', 'killed']
        es = [entry(m.name, s, function=m.function, operator=m.op)
              for m, s in zip(ms, sts)]
        rep = gm.report(types.SimpleNamespace(name='6.1'), ms, es, {})
        self.assertEqual(gm.recount(rep), rep)
        es[1]['status'] = 'killed'
        again = gm.recount(rep)
        self.assertEqual(again['total']['killed'], 3)
        self.assertNotEqual(gm.markdown(again), gm.markdown(rep))
        with self.assertRaisesRegex(ToolError, 'x.json is not a report'):
            gm.recount({'mutants': []}, where='x.json')


if __name__ == '__main__':
    unittest.main()
