#!/usr/bin/env python3
"""Sweep every failure point of every pin path (`make fault`).

For each tree (--tree, repeatable; default every tree of kunit/trees),
runs the suites gup_pin_fault* with the full sweep (gup_kunit_fault.full=1
on the kernel command line: every kind of memory, not only the short
sweep of make test), then gup_pin_final (no pin, no folio left; on the
debug kernel, kmemleak's scan), on the normal kernel and, unless
--no-debug, on the debug kernel (KASAN, lockdep, kmemleak: the flavour of
make test-debug, kunit/debug.config), each as tools/run_suite.py runs
make test, into results/TREE/fault/normal/ and results/TREE/fault/debug/.
--runs 2 runs the normal kernel twice, to show that the sweep is
deterministic: the same failure points, the same outcome at each n.

Then, from the cases' "fault: CALL KIND n=N injected|not-reached ret=R
OUTCOME" lines (tools/ktap_report.py's parser: the one verdict), writes
results/TREE/fault.json and results/TREE/fault.md: per call and kind of
memory, the failure points reached (the last n injected; a sweep is
complete when its last step reached no point), how many returned an
error, a partial count or everything, and every violation (a failed
step, with its n and message), per kernel; and gup_pin_final's verdicts. A sweep that never reached a
not-reached step is incomplete, and counts as a failure.

Prints one line per tree and kernel; the last line is 'N passed,
N failed, N skipped', counting sweeps. Exit status 1 if a sweep failed,
was incomplete, or if two runs disagree.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktap_report  # noqa: E402
from _common import (KUNIT, ROOT, ToolError, Tree,  # noqa: E402
                     add_tree_argument,
                     die, display, selected_trees)

TOOL = 'fault'
# The fault suites, and gup_pin_final after them: its checks that no pin
# and no folio is left, and its kmemleak scan on the debug kernel.
FILTER = 'gup_pin_f[ai][un]*'
FINAL = 'gup_pin_final'
FULL_ARG = 'gup_kunit_fault.full=1'
DEBUG_CONFIG = os.path.join(KUNIT, 'debug.config')
LINE_RE = re.compile(r'fault: (\S+) (.+) n=(\d+) (injected|not-reached) '
                     r'ret=(-?\d+) (complete|partial|error)$')


def debug_kernel_args(path: str = DEBUG_CONFIG) -> list[str]:
    """The debug kernel's boot arguments: the '# kernel_args:' line of
    kunit/debug.config, which the Makefile's test-debug reads too."""
    with open(path) as f:
        for line in f:
            if line.startswith('# kernel_args:'):
                return line.split(':', 1)[1].split()
    raise ToolError('%s has no "# kernel_args:" line' % display(path))


def run_command(tree: Tree, flavour: str, results: str) -> list[str]:
    """The run_suite.py command of one sweep of @tree."""
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'run_suite.py'),
           '--tree', tree.name, '--results', results,
           '--kernel_args=' + FULL_ARG, FILTER]
    if flavour == 'debug':
        cmd += ['--kunitconfig_add', DEBUG_CONFIG,
                '--checkout', '{build}/linux-debug',
                '--build_dir', '{build}/kunit-debug-x86_64',
                '--timeout', '1800']
        cmd += ['--kernel_args=' + a for a in debug_kernel_args()]
    return cmd


def sweeps(result: ktap_report.Result) -> dict:
    """{'CALL, KIND': sweep} of one run: each step's n, whether it was
    injected, its outcome and status; the failure points (the last n
    injected); whether the sweep completed; its violations."""
    out: dict = {}
    for leaf in result.leaves():
        line = next((m for m in (LINE_RE.search(d.strip())
                                 for d in leaf.diagnostics) if m), None)
        if not line:
            if leaf.status in ktap_report.FAILING and leaf.suite != FINAL:
                key = '%s.%s' % (leaf.suite, leaf.name.split('/')[0])
                s = out.setdefault(key, _new_sweep(leaf.suite))
                s['violations'].append({'n': None, 'status': leaf.status,
                                        'message': leaf.message})
            continue
        call, kind, n, reached, ret, outcome = line.groups()
        s = out.setdefault('%s, %s' % (call, kind), _new_sweep(leaf.suite))
        s['steps'].append({'n': int(n), 'injected': reached == 'injected',
                           'ret': int(ret), 'outcome': outcome,
                           'status': leaf.status})
        if leaf.status != ktap_report.SKIPPED:
            s['outcomes'][outcome] += reached == 'injected'
        if leaf.status in ktap_report.FAILING:
            s['violations'].append({'n': int(n), 'status': leaf.status,
                                    'message': leaf.message})
    for s in out.values():
        injected = [st['n'] for st in s['steps'] if st['injected']]
        s['points'] = max(injected, default=0)
        s['complete'] = bool(s['steps']) and not s['steps'][-1]['injected']
    return out


def _new_sweep(suite: str) -> dict:
    return {'suite': suite, 'steps': [],
            'outcomes': {'complete': 0, 'partial': 0, 'error': 0},
            'violations': [], 'points': 0, 'complete': False}


def differences(a: dict, b: dict) -> list[str]:
    """What differs between two runs' sweeps: the points, or the outcome
    at some n."""
    out = []
    for key in sorted(set(a) | set(b)):
        sa, sb = a.get(key), b.get(key)
        if not sa or not sb:
            out.append('%s: in one run only' % key)
            continue
        ta = [(st['n'], st['injected'], st['outcome']) for st in sa['steps']]
        tb = [(st['n'], st['injected'], st['outcome']) for st in sb['steps']]
        if ta != tb:
            first = next((x for x, y in zip(ta, tb) if x != y),
                         ta[len(tb):] or tb[len(ta):])
            out.append('%s: %d and %d points; first difference %s'
                       % (key, sa['points'], sb['points'], first))
    return out


def markdown(tree: str, report: dict) -> str:
    """results/TREE/fault.md: one table per kernel."""
    lines = ['# Fault sweep of tree %s' % tree, '',
             'Every failure point of each call fails once '
             '(gup_kunit_fault.full=1); `make fault` wrote this.', '']
    for flavour, run in report['kernels'].items():
        lines += ['## %s kernel' % flavour, '',
                  '| call, memory | points | complete | error | partial | '
                  'everything | violations |',
                  '|---|---:|---|---:|---:|---:|---|']
        for key, s in sorted(run['sweeps'].items()):
            viol = '; '.join('n=%s: %s' % (v['n'], v['message'])
                             for v in s['violations'][:3]) or 'none'
            lines.append('| %s | %d | %s | %d | %d | %d | %s |' % (
                key, s['points'], 'yes' if s['complete'] else '**no**',
                s['outcomes']['error'], s['outcomes']['partial'],
                s['outcomes']['complete'], viol))
        lines += ['', '%s after the sweeps: %s' % (FINAL, ', '.join(
            '%s %s' % (name, status) for name, status in
            sorted(run.get('final', {}).items()))), '']
    if report.get('determinism'):
        lines += ['Two runs of the normal kernel: %s' % (
            'the same points and outcomes' if not report['determinism']
            ['differences'] else '; '.join(report['determinism']
                                          ['differences'])), '']
    return '\n'.join(lines)


def run_one(tree: Tree, flavour: str, results: str) -> dict:
    """Run one sweep of @tree; return its section of the report."""
    started = time.monotonic()
    proc = subprocess.run(run_command(tree, flavour, results), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seconds = round(time.monotonic() - started, 1)
    log = os.path.join(results, 'kunit.log')
    try:
        with open(log, errors='replace') as f:
            result = ktap_report.parse_log(f.read(), 'kunit.log')
    except OSError:
        raise ToolError('%s: no console log (%s)' % (
            flavour, (proc.stdout.strip().splitlines() or ['?'])[-1]))
    found = sweeps(result)
    if not found:
        raise ToolError('%s: no fault sweep in %s' % (flavour,
                                                      display(log)))
    final = {leaf.name: leaf.status for leaf in result.leaves()
             if leaf.suite == FINAL}
    if not final:
        raise ToolError('%s: %s did not run' % (flavour, FINAL))
    return {'results': display(results), 'crashed': result.crashed,
            'crash_reason': result.crash_reason, 'sweeps': found,
            'final': final, 'seconds': seconds}


def verdicts(tree: str, report: dict) -> tuple[int, int, list[str]]:
    """(passed, failed, lines to print) of one tree's report: a sweep
    passes when it is complete and has no violation; a failed
    gup_pin_final case, a crash and two runs that disagree each count
    as one failure."""
    passed = failed = 0
    lines = []
    for flavour, run in report['kernels'].items():
        bad = [k for k, s in run['sweeps'].items()
               if s['violations'] or not s['complete']]
        final_bad = sorted(name for name, status in run['final'].items()
                           if status in ktap_report.FAILING)
        failed += len(bad) + len(final_bad) + (1 if run['crashed'] else 0)
        passed += len(run['sweeps']) - len(bad)
        lines.append('%s: %s: %s kernel: %d sweeps, %d failure points, '
                     '%d failed%s (%s s, build included)' % (
                         TOOL, tree, flavour, len(run['sweeps']),
                         sum(s['points'] for s in run['sweeps'].values()),
                         len(bad), ', crashed' if run['crashed'] else '',
                         run.get('seconds', '?')))
        for name in final_bad:
            lines.append('  %s.%s failed after the sweeps' % (FINAL, name))
        for key in bad:
            s = run['sweeps'][key]
            lines.append('  %s: %s' % (
                key, 'incomplete' if not s['complete']
                else 'n=%s: %s' % (s['violations'][0]['n'],
                                   s['violations'][0]['message'])))
    for d in report.get('determinism', {}).get('differences', []):
        failed += 1
        lines.append('  not deterministic: %s' % d)
    return passed, failed, lines


def fault_tree(tree: Tree, args: argparse.Namespace) -> tuple[int, int]:
    """Sweep one tree; write its reports; return (passed, failed)."""
    base = os.path.join(tree.results, 'fault')
    report: dict = {'tree': tree.name, 'kernels': {}}
    flavours = ['normal'] + ([] if args.no_debug else ['debug'])
    for flavour in flavours:
        report['kernels'][flavour] = run_one(
            tree, flavour, os.path.join(base, flavour))
    if args.runs > 1:
        again = run_one(tree, 'normal', os.path.join(base, 'normal-2'))
        report['determinism'] = {'differences': differences(
            report['kernels']['normal']['sweeps'], again['sweeps'])}
    passed, failed, lines = verdicts(tree.name, report)
    for line in lines:
        print(line, flush=True)
    with open(os.path.join(tree.results, 'fault.json'), 'w') as f:
        json.dump(report, f, indent=1, sort_keys=True)
    with open(os.path.join(tree.results, 'fault.md'), 'w') as f:
        f.write(markdown(tree.name, report))
    return passed, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_tree_argument(ap)
    ap.add_argument('--no-debug', action='store_true',
                    help='sweep on the normal kernel only')
    ap.add_argument('--runs', type=int, default=1, choices=(1, 2),
                    help='2: run the normal kernel twice and compare')
    args = ap.parse_args(argv)
    trees = selected_trees(TOOL, args.tree)
    passed = failed = 0
    for tree in trees:
        try:
            p, f = fault_tree(tree, args)
        except ToolError as e:
            p, f = 0, 1
            print('%s: %s: %s' % (TOOL, tree.name, e), file=sys.stderr)
        passed += p
        failed += f
    print('%d passed, %d failed, 0 skipped' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        die(TOOL, 'interrupted', 130)
