#!/usr/bin/env python3
"""Run the series as a reviewer gets it (`make reviewer`).

For each tree (--tree, repeatable; default every tree of kunit/trees):

  1. export the series (`make series`: results/TREE/series/, signed off
     by git config user.name/user.email);
  2. unpack Debian's linux-source tarball of the tree afresh into
     build/TREE/reviewer/linux (not build/TREE/linux), make it a git
     repository and git am results/TREE/series/0*.patch (the cover letter
     aside);
  3. run there, as they are, the commands that the comment of the
     series' mm/tests/.kunitconfig documents:
       bare        ./tools/testing/kunit/kunit.py run --arch=x86_64
                   --kunitconfig=mm/tests   (nothing else)
       documented  its mkfs.ext4 line, then the kunit.py line with its
                   --kernel_args= and --qemu_args=
     Both build into the tree's own .kunit/ (a full olddefconfig kernel:
     the first build is cold, about 8 minutes on 2 cores; the second run
     reuses it);
  4. read each run's console (.kunit/test.log) with tools/ktap_report.py,
     and write results/TREE/reviewer.json: for each run, the command,
     the counts passed, skipped, failed, whether the kernel crashed, every
     skip with its reason, the seconds it took.

A run holds when nothing failed or crashed, every skip reason starts
with "needs " and what it says to pass is an argument of the documented
run, and, for the documented run, nothing skipped but the cases of
DOCUMENTED_SKIPS (what the documented run cannot give: swap space, which
only user space turns on). Prints one line per run, and the last line
'N passed, N failed, N skipped' counts the runs. Exit status 1 if a run
does not hold or cannot be made.

make check does not run this (two cold builds of full kernels, about 17
minutes): its reviewer step checks the same two outcomes on the make test
kernel, which is built from the same mm/tests/.kunitconfig
(check_bare_boot()).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _testenv  # noqa: E402
import export_series  # noqa: E402
import ktap_report  # noqa: E402
import prepare_tree  # noqa: E402
from _common import (KUNIT, BuildLock, ToolError, Tree,  # noqa: E402
                     add_tree_argument, die, display, interrupt_on_sigterm,
                     selected_trees)

TOOL = 'reviewer'
# Cases that the documented run may skip, with why.
DOCUMENTED_SKIPS = {
    'gup_pin_user.pageout_does_not_swap_pinned_anon_page':
        'swap space: a kernel without user space cannot turn it on',
    'gup_pin_race.pin_during_pageout_keeps_device_writes':
        'swap space, as gup_pin_user.pageout_does_not_swap_pinned_anon_page',
}
RUN_TIMEOUT = 3600
SPLATS = os.path.join(KUNIT, 'expected-splats')


def reviewer_dir(tree: Tree) -> str:
    return os.path.join(tree.build, 'reviewer')


def evaluate(result: ktap_report.Result,
             documented_run: _testenv.Documented, documented: bool = False,
             harness: Iterable[str] = ()) -> dict:
    """The outcome of one run from its parsed console (a ktap_report
    Result): a dict of counts, skips and the problems that make it fail.

    documented_run: the _testenv.Documented of the tree; a skip reason
    may only ask for its arguments, or for those of @harness (the
    project's own, for the harness's suites). documented: the run is the
    documented one, where only DOCUMENTED_SKIPS may skip."""
    counts = result.counts()
    skips, problems = [], []
    allowed = documented_run.arguments() | set(harness)
    for leaf in result.leaves():
        name = '%s.%s' % (leaf.suite, leaf.name)
        if leaf.status in ktap_report.FAILING:
            problems.append('%s %s: %s' % (name, leaf.status, leaf.message))
        if leaf.status != ktap_report.SKIPPED:
            continue
        skips.append({'case': name, 'reason': leaf.message})
        if not leaf.message.startswith('needs '):
            problems.append('%s: skip reason does not say what it needs: '
                            '%r' % (name, leaf.message))
        for kind, words in _testenv.skip_arguments(leaf.message):
            extra = [w for w in words if w not in allowed]
            if extra:
                problems.append('%s: skip reason asks for --%s=%s, which '
                                'the documented run does not pass'
                                % (name, kind, ' '.join(extra)))
        case = name.split('/')[0]
        if documented and case not in DOCUMENTED_SKIPS:
            problems.append('%s: skipped in the documented run: %s'
                            % (name, leaf.message))
    if result.crashed:
        problems.append('the kernel crashed: %s' % result.crash_reason)
    if not result.found:
        problems.append('no KTAP in the console')
    return {'passed': counts.passed, 'skipped': counts.skipped,
            'failed': counts.failed, 'crashed': result.crashed,
            'skips': skips, 'problems': problems}


def parse_console(path: str, splats: Iterable[str | None] = (SPLATS,)
                  ) -> ktap_report.Result:
    """Parse a console log and apply the declared splats: a ktap_report
    Result."""
    try:
        with open(path, errors='replace') as f:
            text = f.read()
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (display(path), e.strerror))
    result = ktap_report.parse_log(text, os.path.basename(path))
    declared = []
    for p in splats:
        if p and os.path.exists(p):
            declared += ktap_report.read_splats(p)
    ktap_report.apply_splats(result, text, declared)
    return result


def unpack(tree: Tree, dest: str) -> str:
    """A fresh git tree of the tree's tarball at @dest; return its
    package version."""
    _pkg, version, tarball = prepare_tree.find_tarball(tree)
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    print('%s: %s: unpacking %s into %s' % (TOOL, tree.name, tarball,
                                            display(dest)), flush=True)
    prepare_tree.run(['tar', '-xJf', tarball, '-C', dest,
                      '--strip-components=1'], timeout=1800)
    git = ['git', '-C', dest] + prepare_tree.GIT_ID
    prepare_tree.run(git + ['init', '-q'])
    prepare_tree.run(git + ['add', '-A', '-f', '.'], timeout=1800)
    prepare_tree.run(git + ['commit', '-q', '-m', 'pristine %s' % version],
                     timeout=1800)
    return version


def git_am(tree: Tree, dest: str, series_dir: str) -> list[str]:
    patches = sorted(p for p in glob.glob(os.path.join(series_dir,
                                                       '0*.patch'))
                     if not p.endswith(export_series.COVER_NAME))
    if not patches:
        raise ToolError('no patches in %s: run make series TREE=%s'
                        % (display(series_dir), tree.name))
    for p in patches:
        proc = prepare_tree.run(['git', '-C', dest] + prepare_tree.GIT_ID +
                                ['am', '-q', p], check=False)
        if proc.returncode:
            raise ToolError('%s does not apply with git am: %s'
                            % (display(p), (proc.stdout.strip().splitlines()
                                            or ['?'])[0]))
    return [os.path.basename(p) for p in patches]


def run_documented(tree: Tree, dest: str, name: str, command: str,
                   log_dir: str) -> tuple[int | None, float]:
    """Run one documented command line in the tree (a shell line, as the
    comment gives it); return (exit status or None on timeout, seconds)."""
    log = os.path.join(log_dir, name + '.out')
    t0 = time.monotonic()
    with open(log, 'w') as out:
        proc = subprocess.Popen(command, shell=True, cwd=dest, stdout=out,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            rc = None
    return rc, time.monotonic() - t0


def review_tree(tree: Tree, runner: tuple[str, str]) -> dict:
    """Export, unpack, apply, run both ways; return the report dict."""
    export_series.export_tree(tree, runner)
    work = reviewer_dir(tree)
    dest = os.path.join(work, 'linux')
    version = unpack(tree, dest)
    series_dir = export_series.out_dir(tree)
    applied = git_am(tree, dest, series_dir)
    documented = _testenv.read_documented(dest)
    os.makedirs(tree.results, exist_ok=True)
    log_dir = os.path.join(tree.results, 'reviewer')
    os.makedirs(log_dir, exist_ok=True)
    report: dict = {'tree': tree.name, 'package': tree.package,
              'package_version': version, 'patches': applied, 'runs': {}}
    steps = [('bare', documented.bare, False),
             ('mkfs', documented.mkfs, None),
             ('documented', documented.full, True)]
    for name, command, is_documented in steps:
        print('%s: %s: %s: %s' % (TOOL, tree.name, name, command),
              flush=True)
        rc, seconds = run_documented(tree, dest, name, command, log_dir)
        if is_documented is None:
            if rc != 0:
                raise ToolError('%s failed (exit %s; see %s)'
                                % (command, rc, display(os.path.join(
                                    log_dir, name + '.out'))))
            continue
        console = os.path.join(dest, '.kunit', 'test.log')
        kept = os.path.join(log_dir, name + '.log')
        if os.path.exists(console):
            shutil.copyfile(console, kept)
        else:
            open(kept, 'w').close()
        outcome = evaluate(parse_console(kept, (SPLATS,
                                                tree.expected_splats)),
                           documented, is_documented)
        if rc is None:
            outcome['problems'].append('kunit.py did not finish in %ds'
                                       % RUN_TIMEOUT)
        outcome.update(command=command, exit=rc, seconds=round(seconds))
        report['runs'][name] = outcome
        if is_documented:
            image = os.path.join(dest, _testenv.DOCUMENTED_IMAGE)
            if os.path.exists(image):
                os.unlink(image)
    with open(os.path.join(tree.results, 'reviewer.json'), 'w') as f:
        json.dump(report, f, indent=1, sort_keys=True)
    return report


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_tree_argument(ap)
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    try:
        runner = export_series.runner_identity()
    except ToolError as e:
        die(TOOL, str(e))
    interrupt_on_sigterm()
    ok = bad = 0
    try:
        with BuildLock(TOOL):
            for tree in trees:
                try:
                    report = review_tree(tree, runner)
                except ToolError as e:
                    bad += 1
                    print('%s: %s: %s' % (TOOL, tree.name, e),
                          file=sys.stderr, flush=True)
                    continue
                for name, run in sorted(report['runs'].items()):
                    print('%s: %s: %s run: %d passed, %d skipped, %d '
                          'failed%s (%ds)' % (
                              TOOL, tree.name, name, run['passed'],
                              run['skipped'], run['failed'],
                              ', crashed' if run['crashed'] else '',
                              run['seconds']))
                    for p in run['problems']:
                        print('  %s' % p)
                    if run['problems']:
                        bad += 1
                    else:
                        ok += 1
    except ToolError as e:
        die(TOOL, str(e), e.status)
    except KeyboardInterrupt:
        die(TOOL, 'interrupted', 130)
    print('%d passed, %d failed, 0 skipped' % (ok, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
