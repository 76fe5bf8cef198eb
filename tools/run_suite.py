#!/usr/bin/env python3
"""Build the KUnit kernel and run the gup-pin-kunit suites in QEMU.

This is `make test`. For each tree (--tree, repeatable; default every tree
of kunit/trees, in order) it prepares build/TREE/linux
(tools/prepare_tree.py), then runs the two halves of
`kunit.py run --arch=x86_64` separately so that each has its own bounded
time:

  kunit.py build --build_dir=build/TREE/kunit-x86_64 --kunitconfig=mm/tests
                 --kunitconfig=kunitconfig --qemu_config=kunit/qemu_x86_64.py
  kunit.py exec  ... --timeout=T --json=results/TREE/kunit.json [FILTER]

and writes to the tree's results directory (default results/TREE/):
  kunit.log     the QEMU console (boot, KTAP, any oops or panic)
  kunit.ktap    the KTAP, closed with 'not ok' lines if the kernel died
  kunit.json    kunit.py's JSON
  junit.xml     JUnit XML, one testcase per case and parameter
  summary.json  counts and per-case status (tools/ktap_report.py)
  build.log     output of kunit.py build
  meta.json     tree, package version, kernelversion, series head

Before the first QEMU run, the disk of gup_pin_ext4_dma: tools/mkdisk.py makes
build/gup-kunit-ext4.img afresh (or checks the image that GUP_KUNIT_DISK
names; GUP_KUNIT_DISK= empty attaches none) and sets GUP_KUNIT_DISK for
kunit/qemu_x86_64.py. meta.json records it.

Console reports (WARNING, BUG, KASAN, ...) fail the case during which
they appear unless kunit/expected-splats, or the tree's own
kunit/TREE/expected-splats, declares them.

Then, over the trees of this run, results/junit.xml (testsuites named
TREE/SUITE) and results/summary.json (a section per tree, summed counts);
with --results given, only if --combined says where.

--results and --build_dir may name {tree}, {build} (build/TREE) and
{results} (results/); with several trees they must, so that the trees do
not share a directory. FILTER and --kernel_args apply to every tree.

--checkout DIR builds from DIR instead of build/TREE/linux: a git worktree
of its HEAD with the kernel sources of kunit/ copied in
(prepare_tree.checkout()), which a mutant applied to build/TREE/linux does
not reach. make test-debug builds so, and make check builds the debug
kernel so in the background while its mutant steps run.

--no-prepare skips tools/prepare_tree.py and only builds build/TREE/linux
as it is and runs it. It is for tools/mutate.py, which prepares the tree
once, applies a mutant and must not have prepare_tree refuse its local
change; a normal run never needs it.

Prints one line per tree, 'run_suite: TREE: N passed, N failed, N skipped
(...)', a tree that could not be built or run counting as one failure;
the last line sums them: 'N passed, N failed, N skipped'. The exit status
is 0 only if, in every tree, every case passed or was skipped, the kernel
neither crashed nor hung, and every suite of kunit/suites that the tree
has and FILTER matches ran.
"""
import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktap_report  # noqa: E402
import mkdisk  # noqa: E402
import prepare_tree  # noqa: E402
import _testenv  # noqa: E402
from _common import (KUNIT, KUNITCONFIG, RESULTS, BuildLock,  # noqa: E402
                     ToolError, Tree, add_tree_argument, die, display,
                     interrupt_on_sigterm, load_state, read_names,
                     selected_trees)

TOOL = 'run_suite'
QEMU_CONFIG = os.path.join(KUNIT, 'qemu_x86_64.py')
SUITES = os.path.join(KUNIT, 'suites')
SPLATS = os.path.join(KUNIT, 'expected-splats')
DEFAULT_FILTER = 'gup_pin*'
DEFAULT_RESULTS = '{results}/{tree}'
DEFAULT_BUILD_DIR = '{build}/kunit-x86_64'
RESULT_FILES = ('kunit.log', 'kunit.ktap', 'kunit.json', 'junit.xml',
                'summary.json', 'meta.json')


def expected_suites(glob: str, tree: str,
                    path: str | None = None) -> list[str]:
    """Suites of kunit/suites (or @path) that tree @tree (a name) has and
    the filter glob selects.

    Each line of the file is a suite name, alone when every tree has the
    suite, or followed by the trees that have it ("gup_pin_memfd 6.12").
    """
    suite_glob = glob.split('.', 1)[0]
    out = []
    for entry in read_names(path or SUITES):
        name, *trees = entry.split()
        if trees and tree not in trees:
            continue
        if fnmatch.fnmatchcase(name, suite_glob):
            out.append(name)
    return out


def kunit_cmd(verb: str, args: argparse.Namespace, tree: Tree,
              build_dir: str) -> list[str]:
    cmd = [sys.executable, 'tools/testing/kunit/kunit.py', verb,
           '--arch=x86_64', '--build_dir=' + build_dir,
           '--kunitconfig=' + _testenv.KUNITCONFIG_DIR,
           '--kunitconfig=' + KUNITCONFIG, '--qemu_config=' + QEMU_CONFIG]
    for frag in args.kunitconfig_add:
        cmd.append('--kunitconfig=' + os.path.abspath(frag))
    for opt in args.kconfig_add:
        cmd.append('--kconfig_add=' + opt)
    for opt in getattr(args, 'make_options', None) or []:
        cmd.append('--make_options=' + opt)
    if verb == 'build':
        cmd.append('--jobs=%d' % args.jobs)
    return cmd


def run_logged(cmd: list[str], cwd: str, log: str, timeout: float,
               echo: bool = False) -> tuple[int | None, str]:
    """Run cmd in cwd (the kernel tree), output to log; return (rc, text).
    rc None on timeout. A log that cannot be written (disk full) stops the
    child and is a ToolError."""
    try:
        return _run_logged(cmd, cwd, log, timeout, echo)
    except OSError as e:
        raise ToolError('cannot write %s: %s' % (log, e.strerror))


def _run_logged(cmd, cwd, log, timeout, echo):
    with open(log, 'w', buffering=1) as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True,
                                errors='backslashreplace',
                                start_new_session=True)
        deadline = time.monotonic() + timeout
        text = []
        try:
            for line in proc.stdout:
                out.write(line)
                text.append(line)
                if echo:
                    sys.stdout.write(line)
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(cmd, timeout)
            out.flush()
            proc.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return None, ''.join(text)
        except BaseException:
            # Ctrl-C, or a log that cannot be written: the child runs in
            # its own session and would go on building in the tree after
            # we return; stop it first.
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait()
            raise
    return proc.returncode, ''.join(text)


def check_results_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, '.write-probe')
        with open(probe, 'w') as f:
            f.write('x')
        os.unlink(probe)
    except OSError as e:
        raise ToolError('results directory %s is not writable: %s'
                        % (path, e.strerror))


def summary_lines(kunit_out: str) -> list[str]:
    """The tail of kunit.py's own summary, for the console."""
    keep = [ln for ln in kunit_out.splitlines()
            if 'Testing complete' in ln or 'Elapsed time' in ln or
            'CRASHED' in ln or 'FAILED' in ln or '[ERROR]' in ln]
    return keep[-12:]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('filter', nargs='?',
                    default=os.environ.get('FILTER') or DEFAULT_FILTER,
                    help='kunit.py filter glob, suite[.case] (default %s)'
                    % DEFAULT_FILTER)
    add_tree_argument(ap)
    ap.add_argument('--kernel_args', action='append', default=[],
                    help='extra kernel command-line argument (repeatable)')
    ap.add_argument('--kunitconfig_add', action='append', default=[],
                    metavar='FILE', help='another kunitconfig fragment, '
                    'on top of mm/tests/.kunitconfig and kunitconfig '
                    '(repeatable)')
    ap.add_argument('--kconfig_add', action='append', default=[],
                    help='extra Kconfig option for kunit.py (repeatable)')
    ap.add_argument('--make_options', action='append', default=[],
                    metavar='X=Y',
                    help='extra make option for kunit.py build and exec, '
                    'e.g. GCOV_PROFILE_gup.o=y (repeatable)')
    ap.add_argument('--timeout', type=int, default=int(
                    os.environ.get('KUNIT_TIMEOUT', '180')),
                    help='seconds the QEMU run may take (default 180)')
    ap.add_argument('--build_timeout', type=int, default=3600)
    ap.add_argument('--results', metavar='DIR',
                    help='results directory of a tree (default %s)'
                    % DEFAULT_RESULTS)
    ap.add_argument('--combined', metavar='DIR',
                    help='where junit.xml and summary.json of all the trees '
                    'of the run go (default: results/ if --results is not '
                    'given, else nowhere)')
    ap.add_argument('--build_dir', default=DEFAULT_BUILD_DIR, metavar='DIR',
                    help='kunit.py build directory of a tree (default %s)'
                    % DEFAULT_BUILD_DIR)
    ap.add_argument('--run_isolated', choices=['suite', 'test'])
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--no-prepare', dest='prepare', action='store_false',
                    help='build the tree as it is, without prepare_tree '
                    '(for tools/mutate.py; the tree must be prepared)')
    ap.add_argument('--checkout', metavar='DIR',
                    help='build from DIR (may name {build}), a git worktree '
                    'of build/TREE/linux at its HEAD with the kernel '
                    'sources of kunit/ copied in, made or brought up to '
                    'date first: a kernel that builds while a mutant run '
                    'changes build/TREE/linux (make test-debug)')
    ap.add_argument('--no-build', dest='build', action='store_false',
                    help='boot the kernel already built in --build_dir, '
                    'without preparing or building (tools/repeat.py)')
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    combined = args.combined
    if args.results is None:
        args.results = DEFAULT_RESULTS
        combined = combined or RESULTS
    if len(trees) > 1:
        for opt in ('results', 'build_dir'):
            if not any(p in getattr(args, opt) for p in ('{tree}',
                                                         '{build}')):
                die(TOOL, '--%s %s: with several trees it must name {tree} '
                    'or {build}' % (opt, getattr(args, opt)), 2)
    interrupt_on_sigterm()
    try:
        with BuildLock(TOOL):
            args.disk = None
            return run_trees(args, trees, combined)
    except ToolError as e:
        die(TOOL, str(e), e.status)
    except KeyboardInterrupt:
        die(TOOL, 'interrupted; the next run recovers', 130)
    except OSError as e:
        die(TOOL, 'cannot write %s: %s' % (e.filename or 'results',
                                           e.strerror))


def run_trees(args: argparse.Namespace, trees: list[Tree],
              combined: str | None) -> int:
    """Run every tree; print one line each and the sum; return the exit
    status."""
    if not shutil.which('qemu-system-x86_64'):
        raise ToolError('qemu-system-x86_64 not found; run tools/deps '
                        '(package qemu-system-x86)')
    if combined:
        combined = os.path.abspath(combined)
        check_results_dir(combined)
        ktap_report.remove_combined(combined)
    total = [0, 0, 0]
    status = 0
    runs = []
    for tree in trees:
        results = tree.expand(args.results)
        try:
            counts, rc, line = run(args, tree, results)
            error = None
        except ToolError as e:
            counts, rc, error = (0, 1, 0), 1, str(e)
            line = '0 passed, 1 failed, 0 skipped (not run: %s)' % e
            print('%s: %s: %s' % (TOOL, tree.name, e), file=sys.stderr,
                  flush=True)
        runs.append((tree.name, results, error))
        total = [a + b for a, b in zip(total, counts)]
        status = status or rc
        print('%s: %s: %s' % (TOOL, tree.name, line), flush=True)
    if combined:
        ktap_report.write_combined(runs, combined)
    print('%d passed, %d failed, %d skipped' % tuple(total))
    return 1 if status else 0


def run(args: argparse.Namespace, tree: Tree,
        results: str) -> tuple[tuple[int, int, int], int, str]:
    """Prepare, build and run one tree; return ((passed, failed, skipped),
    exit status, the tree's line)."""
    t0 = time.monotonic()
    build_dir = tree.expand(args.build_dir)
    clear_results(results)
    state = tree_state(args, tree, build_dir)
    src = tree.linux
    if args.checkout:
        src = prepare_tree.checkout(tree, tree.expand(args.checkout))
    if args.build:
        build_kernel(args, tree, src, build_dir, results)
    t_build = time.monotonic() - t0

    if args.disk is None:
        args.disk, args.disk_seconds = mkdisk.disk_for_run()
        os.environ[mkdisk.DISK_ENV] = args.disk
    t1 = time.monotonic()
    rc = exec_kernel(args, tree, src, build_dir, results)
    t_run = time.monotonic() - t1
    console = save_console(args, build_dir, results)
    write_meta(args, tree, state, results, rc, t_build, t_run)
    counts, status, summary = report(args, tree, results, console)
    if status == 0 and rc != 0:
        print('%s: %s: kunit.py exited %s although every case passed'
              % (TOOL, tree.name, rc), file=sys.stderr)
        status = 1
    line = ('%s (kernel %s, %s %s, build %.0fs, QEMU run %.1fs, results in '
            '%s)' % (summary, state['kernelversion'], state['package'],
                     state['version'], t_build, t_run, display(results)))
    return counts, 1 if status else 0, line


def clear_results(results: str) -> None:
    """Make sure the results directory is writable and holds no result of
    an earlier run."""
    check_results_dir(results)
    for name in RESULT_FILES:
        try:
            os.unlink(os.path.join(results, name))
        except FileNotFoundError:
            pass


def tree_state(args: argparse.Namespace, tree: Tree,
               build_dir: str) -> dict:
    """Prepare the tree (or, with --no-prepare or --no-build, check that it
    was) and return its prepare_tree state."""
    if args.build and args.prepare:
        return prepare_tree.prepare(tree, quiet=True)
    state = load_state(tree)
    if not args.build:
        if state and os.path.exists(os.path.join(
                build_dir, 'arch', 'x86', 'boot', 'bzImage')):
            return state
        raise ToolError('--no-build: no kernel in %s; run make test '
                        'TREE=%s first' % (display(build_dir), tree.name))
    if state and os.path.isdir(tree.linux):
        return state
    raise ToolError('%s is not prepared; run tools/prepare_tree.py '
                    '--tree %s first (--no-prepare)'
                    % (display(tree.linux), tree.name))


def build_kernel(args: argparse.Namespace, tree: Tree, src: str,
                 build_dir: str, results: str) -> None:
    """kunit.py build from src into build_dir, logged to the results'
    build.log; a build that fails or times out is a ToolError."""
    build_log = os.path.join(results, 'build.log')
    print('%s: %s: building%s (kunit.py build, log %s)'
          % (TOOL, tree.name, ' from ' + display(src)
             if args.checkout else '', display(build_log)), flush=True)
    rc, out = run_logged(kunit_cmd('build', args, tree, build_dir),
                         src, build_log, args.build_timeout)
    if rc != 0:
        raise ToolError('kernel build failed: %s (see %s)'
                        % (build_failure(rc, out, build_dir),
                           display(build_log)))


def build_failure(rc: int | None, out: str, build_dir: str) -> str:
    """Why a build failed, in a few words, from its exit status rc (None:
    timed out) and its output."""
    errs = [ln for ln in out.splitlines() if 'error' in ln.lower()]
    full = [ln for ln in out.splitlines()
            if 'No space left on device' in ln]
    last = out.strip().splitlines()[-1:]
    why = 'timed out' if rc is None else (errs[0].strip() if errs else
                                          (last[0] if last else
                                           'exit %d' % rc))
    if rc is not None and full:
        why = 'disk full in %s (%s)' % (build_dir, full[0].strip())
    return why


def exec_kernel(args: argparse.Namespace, tree: Tree, src: str,
                build_dir: str, results: str) -> int | None:
    """kunit.py exec of the kernel built in build_dir, output to the
    results' kunit.out; print kunit.py's summary and say if QEMU hung.
    Return kunit.py's exit status (None if it did not finish)."""
    cmd = kunit_cmd('exec', args, tree, build_dir)
    cmd += ['--timeout=%d' % args.timeout,
            '--json=' + os.path.join(results, 'kunit.json')]
    for ka in args.kernel_args:
        cmd.append('--kernel_args=' + ka)
    if args.run_isolated:
        cmd.append('--run_isolated=' + args.run_isolated)
    cmd.append(args.filter)
    exec_log = os.path.join(results, 'kunit.out')
    print('%s: %s: running in QEMU: %s' % (TOOL, tree.name, args.filter),
          flush=True)
    rc, out = run_logged(cmd, src, exec_log, args.timeout + 120)
    for ln in summary_lines(out):
        print(ln)
    if 'timed out after' in out:
        print('%s: %s: QEMU timed out after %ds: the kernel hung (see %s)'
              % (TOOL, tree.name, args.timeout,
                 display(os.path.join(results, 'kunit.log'))),
              file=sys.stderr)
    if rc is None:
        print('%s: %s: kunit.py did not finish within %ds; QEMU killed'
              % (TOOL, tree.name, args.timeout + 120), file=sys.stderr)
    return rc


def save_console(args: argparse.Namespace, build_dir: str,
                 results: str) -> str:
    """Copy the QEMU console to the results' kunit.log (empty if there is
    none) and return its path."""
    console = os.path.join(results, 'kunit.log')
    test_log = os.path.join(build_dir, 'test.log')
    if args.run_isolated:
        shutil.copyfile(os.path.join(results, 'kunit.out'), console)
    elif os.path.exists(test_log):
        shutil.copyfile(test_log, console)
    else:
        open(console, 'w').close()
    return console


def write_meta(args: argparse.Namespace, tree: Tree, state: dict,
               results: str, rc: int | None, t_build: float,
               t_run: float) -> None:
    """The results' meta.json: what was run, on what, and how long it
    took."""
    meta = {'tree': tree.name, 'package': state['package'],
            'package_version': state['version'],
            'kernelversion': state['kernelversion'],
            'series_head': state.get('series_head'),
            'head': state.get('head'), 'harness': state.get('harness'),
            'filter': args.filter, 'kernel_args': args.kernel_args,
            'disk': args.disk or None,
            'disk_seconds': round(args.disk_seconds, 1),
            'build_seconds': round(t_build, 1),
            'run_seconds': round(t_run, 1),
            'kunit_exit': rc}
    with open(os.path.join(results, 'meta.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)


def report(args: argparse.Namespace, tree: Tree, results: str,
           console: str) -> tuple[tuple[int, int, int], int, str]:
    """tools/ktap_report.py on the console: write the results' KTAP, JUnit
    and summary.json and print its lines. Return ((passed, failed,
    skipped), its exit status, its summary line)."""
    suites_file = os.path.join(results, 'expected-suites')
    with open(suites_file, 'w') as f:
        f.write('\n'.join(expected_suites(args.filter, tree.name)) + '\n')
    cmd = [sys.executable, os.path.join(os.path.dirname(
           os.path.abspath(__file__)), 'ktap_report.py'),
           console, '--ktap', os.path.join(results, 'kunit.ktap'),
           '--junit', os.path.join(results, 'junit.xml'),
           '--expect-suites', suites_file,
           '--summary-json', os.path.join(results, 'summary.json'),
           '--expect-splats', SPLATS]
    if tree.expected_splats:
        cmd += ['--expect-splats', tree.expected_splats]
    rep = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    lines = rep.stdout.rstrip('\n').splitlines()
    summary = lines.pop() if lines else '0 passed, 1 failed, 0 skipped'
    for ln in lines:
        print(ln)
    counts = ktap_report.parse_counts(summary) or (0, 1, 0)
    return counts, rep.returncode, summary


if __name__ == '__main__':
    sys.exit(main())
