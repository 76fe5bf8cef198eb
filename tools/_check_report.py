"""The steps of `make check` (tools/check.py) that look at the evidence
the other steps left: the standard mutation report against its schema,
and the HTML page in a real browser (tools/report.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
from _check_static import Tally  # noqa: E402
from _common import Tree, display  # noqa: E402


def step_report(t: Tally, tree: Tree) -> None:
    """make report of the tree, then its JSON against the schema."""
    step = 'report ' + tree.name
    if not report.has_results(tree):
        print('%s: skipped: no mutant results in %s' % (
            step, display(tree.results)))
        return
    report.write_tree(tree)
    report.write_index_all()
    problems = report.check_schema(tree)
    t.add(step, 'mutation-report.json', not problems, '; '.join(problems[:3]))
    print('%s: mutation-report.json %s' % (
        step, 'is valid' if not problems else 'is not valid'))


def step_page(t: Tally, tree: Tree) -> None:
    """report.html in headless Chromium: the counts it shows."""
    step = 'page ' + tree.name
    if not os.path.isfile(os.path.join(tree.results, 'report.html')):
        print('%s: skipped: no report.html' % step)
        return
    problems = report.check_page(tree)
    t.add(step, 'report.html', not problems, '; '.join(problems[:3]))
    print('%s: report.html %s; screenshot %s' % (
        step, 'shows the results' if not problems else 'is wrong',
        display(os.path.join(tree.results, 'report.png'))))
