#!/usr/bin/env python3
"""The project's test command (`make check`; .ci/run runs it).

Steps, each counted as tests in the closing line, in this order but for
debug (see there). `tools` and `mypy` run once; the others run for each
tree (--tree, repeatable; default every tree of kunit/trees, in order),
and every line they print names the tree:
  tools     the tools' own unittest suite (tools/tests)
  mypy      python3 -m mypy --ignore-missing-imports on tools/*.py, as
            kunit.py's run_checks.py checks kunit.py (one test per file;
            its cache in build/mypy-cache)
  apply     patches/TREE/ applies as git am applies it to the pristine
            tree (git mailinfo, then git apply --cached on an index of the
            base: no checkout), one test per patch, and one that the result
            is the prepared tree's series head
  checkpatch  the tree's scripts/checkpatch.pl --strict on every patch of
            patches/TREE/ and every C source of the tree's kernel sources,
            harness included, and its scripts/kernel-doc on those sources
            (one test per file; checkpatch exceptions need an entry in
            docs/checkpatch-exceptions.md, kernel-doc has none)
  kunit     `make test TREE=TREE` (tools/run_suite.py): every KUnit case
            in QEMU
  reviewer  the series as a reviewer runs it (tools/reviewer.py), on the
            make test kernel, which is built from the series'
            mm/tests/.kunitconfig plus the project's additions: booted as
            a plain kunit.py boots it (kunit.py exec with its own x86_64
            QEMU configuration: one CPU, 1 GiB, no argument, no disk),
            no case fails or crashes and every skip says what it needs,
            asking only for arguments of the documented run (one test);
            and make test, the documented run with the harness, skipped
            nothing (one test). make reviewer does the same from a
            pristine tree with the exported series, in two cold builds
            that do not fit CI's budget
  w1        a W=1 compile of the objects that the series and the kernel
            sources touch (to assembly, in the kunit build directory, in
            one make), with no warning on a line they add (one test per
            object)
  matrix    the tree's column of docs/coverage-matrix.md names exactly the
            KUnit cases of the tree
  mutants   every entry of kunit/mutants/TREE/catalogue still applies
            to the tree (one test: `make mutants` would count one that does
            not as a failure), and the mutants of kunit/mutants/TREE/ci-subset
            are all killed, run in one mutant schema kernel (tools/mutate.py
            --mode schema; `make mutants` runs the whole catalogue, its
            header mutants each built alone); a tree without a ci-subset
            is skipped with one line, not counted
  genmut    the CI sample of the generated mutants (`tools/genmut.py run
            --sample`: 20 mutants of the pin core's .c files, chosen by the
            seed SAMPLE_SEED of tools/genmut.py; `make mutants-generated`
            runs them all): one test per mutant, passed if killed or
            declared equivalent, skipped if it does not build (dropped),
            failed if it survives or does not apply; a tree without
            kunit/mutants/TREE/generated-equivalent is skipped with one
            line, not counted
  debug     `make test-debug TREE=TREE`: every KUnit case again, on the
            KASAN / lockdep / kmemleak / DEBUG_PAGEALLOC kernel (one test
            per case). It starts right after the kunit step and runs in
            the background (niced) beside the steps after it: its kernel
            builds from build/TREE/linux-debug, a checkout of the tree that
            the mutant steps do not touch; its results come after audit
  coverage  `make coverage TREE=TREE`: gcov of the pin core; one test,
            failed by an unexecuted line that docs/TREE/coverage.md does
            not explain, or by a tool error
  audit     tools/audit.py: one test per planted caller mutant of
            tools/cocci/planted/TREE/ (each must be flagged as a
            mismatch), and one for `make audit TREE=TREE` on the whole
            tree (failed by an unresolved site without a current verdict
            in docs/TREE/audit-review.md, or a mismatch that is no known
            bug); the tools step leaves the planted mutants to this step
  kcsan     `make test-kcsan TREE=TREE`: every KUnit case on the KCSAN
            kernel (one test per case), from its own checkout of the tree;
            a data race that no case declares benign fails its case
  report    `make report TREE=TREE` from the results the steps left, then
            results/TREE/mutation-report.json against the JSON schema of
            the installed mutation-testing-report-schema (one test); a
            tree without mutant results is skipped with one line
  page      results/TREE/report.html in headless Chromium: the component
            renders and shows the killed, survived, no-coverage and
            ignored counts of the tree's mutant results, and the page
            asks nothing of the network (one test); its screenshot is
            results/TREE/report.png

After the trees, results/junit.xml and results/summary.json combine the
kunit step of every tree. The last line is 'N passed, N failed,
N skipped'; it is also written to results/check-summary.txt. Exit status
0 only if nothing failed.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktap_report  # noqa: E402
import prepare_tree  # noqa: E402
import _check_report as evidence  # noqa: E402
import _check_runs as runs  # noqa: E402
import _check_static as static  # noqa: E402
from _check_static import Tally  # noqa: E402
from _common import (RESULTS, BuildLock, ToolError, Tree,  # noqa: E402
                     add_tree_argument, interrupt_on_sigterm,
                     selected_trees)

TOOL = 'check'
STEPS = ['tools', 'mypy', 'apply', 'checkpatch', 'kunit', 'reviewer', 'w1',
         'matrix', 'mutants', 'genmut', 'debug', 'coverage', 'audit', 'kcsan',
         'report', 'page']


def check_tree(t: Tally, tree: Tree,
               args: argparse.Namespace) -> str | None:
    """Every step but tools on one tree. Return None if the kunit step was
    skipped, else the error that kept the tree from running ('' if
    none)."""
    skip = set(args.skip)
    print('check: tree %s (%s)' % (tree.name, tree.package), flush=True)
    t0 = time.monotonic()
    try:
        state = prepare_tree.prepare(tree, quiet=True)
    except ToolError as e:
        t.add('check ' + tree.name, 'prepare', False, str(e))
        return None if 'kunit' in skip else str(e)
    finally:
        step_time(tree.name, 'prepare', t0)
    patches = prepare_tree.series_files(tree)
    jobs: dict[str, runs.Background] = {}
    steps = [('apply', lambda: static.step_apply(t, tree, state, patches)),
             ('checkpatch', lambda: static.step_checkpatch(t, tree, patches)),
             ('kunit', lambda: runs.step_kunit(t, tree, args)),
             ('reviewer', lambda: runs.step_reviewer(t, tree)),
             # Two cores: the debug kernel's cold build takes what the
             # mostly single-threaded steps below leave.
             ('debug start', lambda: jobs.update(
                 debug=runs.start_debug(tree, args))),
             ('w1', lambda: static.step_w1(t, tree, state)),
             ('matrix', lambda: static.step_matrix(t, tree)),
             ('mutants', lambda: runs.step_mutants(t, tree, state)),
             ('genmut', lambda: runs.step_genmut(t, tree, state)),
             ('coverage', lambda: runs.step_coverage(t, tree)),
             ('audit', lambda: runs.step_audit(t, tree)),
             ('kcsan', lambda: runs.step_kcsan(t, tree, args)),
             ('debug', lambda: runs.step_debug(t, tree, jobs.pop('debug'))),
             ('report', lambda: evidence.step_report(t, tree)),
             ('page', lambda: evidence.step_page(t, tree))]
    try:
        for name, fn in steps:
            if name.split()[0] in skip:
                continue
            t0 = time.monotonic()
            try:
                fn()
            except ToolError as e:
                t.add('%s %s' % (name, tree.name), 'run', False, str(e))
            if name != 'debug start':
                step_time(tree.name, name, t0)
    finally:
        for job in jobs.values():
            job.stop()
    return None if 'kunit' in skip else ''


def step_time(tree: str | None, step: str, t0: float) -> None:
    """Say how long a step took, so that CI's time can be read per step
    (one line; never counted as a test)."""
    print('check: %s %s took %.0fs' % (tree or '-', step,
                                       time.monotonic() - t0), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--skip', action='append', default=[], choices=STEPS,
                    help='leave out a step (repeatable)')
    add_tree_argument(ap)
    ap.add_argument('--filter', help='kunit.py filter glob for the kunit '
                    'and debug steps')
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    interrupt_on_sigterm()
    t = Tally()
    t0 = time.monotonic()
    ran = []
    try:
        with BuildLock(TOOL):
            if 'tools' not in args.skip:
                t1 = time.monotonic()
                static.step_tools(t)
                step_time(None, 'tools', t1)
            if 'mypy' not in args.skip:
                t1 = time.monotonic()
                static.step_mypy(t)
                step_time(None, 'mypy', t1)
            for tree in trees:
                error = check_tree(t, tree, args)
                if error is not None:
                    ran.append((tree.name, tree.results, error or None))
    except ToolError as e:
        t.add('check', 'setup', False, str(e))
        print('%s: %s' % (TOOL, e), file=sys.stderr)
    except KeyboardInterrupt:
        t.add('check', 'interrupted', False, 'interrupted')
    if ran:
        try:
            ktap_report.write_combined(ran, RESULTS)
        except OSError as e:
            t.add('check', 'combined results', False, str(e))
    print('check: %.0fs' % (time.monotonic() - t0))
    for failure in t.failures:
        print('FAILED %s' % failure)
    try:
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, 'check-summary.txt'), 'w') as f:
            f.write(t.line() + '\n')
    except OSError:
        pass
    print(t.line())
    return 1 if t.failed else 0


if __name__ == '__main__':
    sys.exit(main())
