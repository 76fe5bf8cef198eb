#!/usr/bin/env python3
"""Run the suite many times, or isolated, and check it gives one answer.

A refcounting suite is only trusted if it is hermetic: the same per-case
results in every run, and the same whether all cases share one boot or
each case boots a kernel of its own.

  tools/repeat.py [--tree TREE] [--runs N] [--isolated test|suite] [FILTER]

For each tree (--tree, repeatable; default every tree of kunit/trees), it
builds once (make test), then boots the same kernel N more times
(run_suite.py --no-build); with --isolated it also boots one kernel per
case (or per suite), filtered to it. Every run's per-case statuses come
from its summary.json, the verdict of tools/ktap_report.py (the parser
of make test, CI and the mutants: console reports and crashes count),
and are compared with the first run's. (kunit.py's own --run_isolated
is not used: in 6.1 its JSON keeps only the last boot.) The build lock
is held throughout, so that no other run rebuilds the kernel between
boots. The runs' results go to results/TREE/repeat/
(RUN/), the verdict to results/TREE/repeat.json. Prints one line per run
that differs and one line per tree, then 'N passed, N failed, N skipped'
over the runs of every tree: a run passes when it matches the first run
of its tree and nothing in it failed; a tree whose first run produced no
results counts as one failed run. Exit 1 if any run differs or fails.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (ROOT, BuildLock, ToolError,  # noqa: E402
                     Tree, add_tree_argument, die, display, selected_trees)

TOOL = 'repeat'
RUN_SUITE = os.path.join(ROOT, 'tools', 'run_suite.py')


def flatten(summary: dict) -> dict[str, str]:
    """Map 'suite.case[/param]' -> status for a run's summary.json.

    The summary (tools/ktap_report.py) lists, per suite, every case
    without parameters and every parameter ('case/param'), with statuses
    passed, failed, skipped, crashed or not_run; an entry that stands
    for several tests ('<not run>', its count) keeps the count.
    """
    out = {}
    for suite in summary.get('suites', []):
        for case in suite.get('cases', []):
            count = case.get('count', 1)
            out['%s.%s' % (suite['name'], case['name'])] = \
                case['status'] if count == 1 else \
                '%s x%d' % (case['status'], count)
    return out


def one_run(tree: Tree, label: str, extra: list[str], results: str,
            filt: str) -> tuple[dict[str, str] | None, int]:
    """Run the suite once; return (statuses or None, exit status)."""
    res = os.path.join(results, label)
    cmd = [sys.executable, RUN_SUITE, '--tree', tree.name,
           '--results', res] + extra
    if filt:
        cmd.append(filt)
    proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    try:
        with open(os.path.join(res, 'summary.json')) as f:
            return flatten(json.load(f)), proc.returncode
    except (OSError, ValueError):
        return None, proc.returncode or 1


def compare(base: dict[str, str], other: dict[str, str]) -> list[str]:
    """Lines describing how @other differs from @base."""
    diff = []
    for key in sorted(set(base) | set(other)):
        if base.get(key) != other.get(key):
            diff.append('%s: %s -> %s' % (key, base.get(key, 'absent'),
                                          other.get(key, 'absent')))
    return diff


def repeat(args: argparse.Namespace, tree: Tree, results: str
           ) -> tuple[list[dict] | None, int]:
    """Run everything of one tree; return (runs, number of cases) or
    (None, 0)."""
    base, rc = one_run(tree, 'run-00', [], results, args.filter)
    if base is None:
        return None, 0
    runs = [{'label': 'run-00', 'exit': rc, 'differs': []}]
    todo: list[tuple[str, str, str | None]] = [
        ('run-%02d' % i, args.filter, None) for i in range(1, args.runs + 1)]
    if args.isolated:
        units = sorted({key.split('/')[0] if args.isolated == 'test'
                        else key.split('.')[0] for key in base})
        todo += [('isolated/' + u, u, u) for u in units]
    for label, filt, unit in todo:
        got, rc = one_run(tree, label, ['--no-build'], results, filt)
        want = base if unit is None else {
            k: v for k, v in base.items()
            if k == unit or k.startswith(unit + '/') or
            k.startswith(unit + '.')}
        differs = ['no results'] if got is None else compare(want, got)
        runs.append({'label': label, 'exit': rc, 'differs': differs})
        for line in differs:
            print('%s: %s: %s differs: %s' % (TOOL, tree.name, label, line),
                  flush=True)
    return runs, len(base)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('filter', nargs='?', default='')
    add_tree_argument(ap)
    ap.add_argument('--runs', type=int, default=20,
                    help='boots of the same kernel after the first '
                    '(default 20)')
    ap.add_argument('--isolated', choices=['test', 'suite'],
                    help='also boot one kernel per case (test) or per suite')
    ap.add_argument('--results', default='{results}/{tree}',
                    help='directory of a tree: the runs go to its repeat/, '
                    'the verdict to its repeat.json; {tree} and {results} '
                    'are replaced (default {results}/{tree})')
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    if len(trees) > 1 and '{tree}' not in args.results:
        die(TOOL, '--results %s: with several trees it must name {tree}'
            % args.results, 2)
    try:
        with BuildLock(TOOL):
            runs = [repeat_tree(args, tree) for tree in trees]
    except ToolError as e:
        die(TOOL, str(e), e.status)
    except KeyboardInterrupt:
        die(TOOL, 'interrupted', 130)
    failed = sum(bad for _ok, bad in runs)
    print('%d passed, %d failed, 0 skipped'
          % (sum(ok for ok, _bad in runs), failed))
    return 1 if failed else 0


def repeat_tree(args: argparse.Namespace,
                tree: Tree) -> tuple[int, int]:
    """The runs of one tree; return (passed, failed) runs."""
    top = tree.expand(args.results)
    results = os.path.join(top, 'repeat')
    try:
        os.makedirs(results, exist_ok=True)
    except OSError as e:
        raise ToolError('cannot create %s: %s' % (display(results),
                                                   e.strerror))
    runs, ncases = repeat(args, tree, results)
    if runs is None:
        print('%s: %s: the first run produced no results (see %s)'
              % (TOOL, tree.name, display(os.path.join(results, 'run-00'))),
              file=sys.stderr, flush=True)
        return 0, 1
    bad = [r for r in runs if r['exit'] or r['differs']]
    with open(os.path.join(top, 'repeat.json'), 'w') as f:
        json.dump({'tree': tree.name, 'cases': ncases, 'runs': runs}, f,
                  indent=1)
    print('%s: %s: %d runs of %d cases; %d identical to the first and '
          'passing' % (TOOL, tree.name, len(runs), ncases,
                       len(runs) - len(bad)), flush=True)
    return len(runs) - len(bad), len(bad)


if __name__ == '__main__':
    sys.exit(main())
