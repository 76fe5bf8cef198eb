#!/usr/bin/env python3
"""Build the KUnit kernel and run the gup-pin-kunit suites in QEMU.

This is `make test`. It prepares build/linux (tools/prepare_tree.py), then
runs the two halves of `kunit.py run --arch=x86_64` separately so that each
has its own bounded time:

  kunit.py build --build_dir=build/kunit-x86_64 --kunitconfig=kunitconfig
                 --qemu_config=kunit/qemu_x86_64.py
  kunit.py exec  ... --timeout=T --json=results/kunit.json [FILTER]

and writes to the results directory (default results/):
  kunit.log     the QEMU console (boot, KTAP, any oops or panic)
  kunit.ktap    the KTAP, closed with 'not ok' lines if the kernel died
  kunit.json    kunit.py's JSON
  junit.xml     JUnit XML, one testcase per case and parameter
  summary.json  counts and per-case status (tools/ktap_report.py)
  build.log     output of kunit.py build
  meta.json     linux-source package version, kernelversion, series head

--no-prepare skips tools/prepare_tree.py and only builds build/linux as it
is and runs it. It is for tools/mutate.py, which prepares the tree once,
applies a mutant and must not have prepare_tree refuse its local change;
a normal run never needs it.

The last line printed is 'N passed, N failed, N skipped'. The exit status
is 0 only if every case passed or was skipped, the kernel neither crashed
nor hung, and every suite in kunit/suites that matches FILTER ran.
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
import prepare_tree  # noqa: E402
from _common import (BuildLock, KBUILD_DIR, RESULTS, ROOT, TREE,  # noqa: E402
                     ToolError, die, interrupt_on_sigterm)

TOOL = 'run_suite'
KUNITCONFIG = os.path.join(ROOT, 'kunitconfig')
QEMU_CONFIG = os.path.join(ROOT, 'kunit', 'qemu_x86_64.py')
SUITES = os.path.join(ROOT, 'kunit', 'suites')
DEFAULT_FILTER = 'gup_pin*'


def expected_suites(glob):
    """Suites of kunit/suites that the filter glob selects."""
    suite_glob = glob.split('.', 1)[0]
    out = []
    with open(SUITES) as f:
        for line in f:
            name = line.split('#', 1)[0].strip()
            if name and fnmatch.fnmatchcase(name, suite_glob):
                out.append(name)
    return out


def kunit_cmd(verb, args):
    cmd = [sys.executable, 'tools/testing/kunit/kunit.py', verb,
           '--arch=x86_64', '--build_dir=' + args.build_dir,
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


def run_logged(cmd, log, timeout, echo=False):
    """Run cmd in the tree, output to log; return (rc, text). rc None on
    timeout. A log that cannot be written (disk full) stops the child and
    is a ToolError."""
    try:
        return _run_logged(cmd, log, timeout, echo)
    except OSError as e:
        raise ToolError('cannot write %s: %s' % (log, e.strerror))


def _run_logged(cmd, log, timeout, echo):
    with open(log, 'w', buffering=1) as out:
        proc = subprocess.Popen(cmd, cwd=TREE, stdout=subprocess.PIPE,
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


def check_results_dir(path):
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, '.write-probe')
        with open(probe, 'w') as f:
            f.write('x')
        os.unlink(probe)
    except OSError as e:
        raise ToolError('results directory %s is not writable: %s'
                        % (path, e.strerror))


def summary_lines(kunit_out):
    """The tail of kunit.py's own summary, for the console."""
    keep = [ln for ln in kunit_out.splitlines()
            if 'Testing complete' in ln or 'Elapsed time' in ln or
            'CRASHED' in ln or 'FAILED' in ln or '[ERROR]' in ln]
    return keep[-12:]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('filter', nargs='?',
                    default=os.environ.get('FILTER') or DEFAULT_FILTER,
                    help='kunit.py filter glob, suite[.case] (default %s)'
                    % DEFAULT_FILTER)
    ap.add_argument('--kernel_args', action='append', default=[],
                    help='extra kernel command-line argument (repeatable)')
    ap.add_argument('--kunitconfig_add', action='append', default=[],
                    metavar='FILE', help='another kunitconfig fragment, '
                    'on top of kunitconfig (repeatable)')
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
    ap.add_argument('--results', default=RESULTS)
    ap.add_argument('--build_dir', default=KBUILD_DIR)
    ap.add_argument('--run_isolated', choices=['suite', 'test'])
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--series', default=os.environ.get('GPK_SERIES', '6.1'))
    ap.add_argument('--no-prepare', dest='prepare', action='store_false',
                    help='build the tree as it is, without prepare_tree '
                    '(for tools/mutate.py; the tree must be prepared)')
    ap.add_argument('--no-build', dest='build', action='store_false',
                    help='boot the kernel already built in --build_dir, '
                    'without preparing or building (tools/repeat.py)')
    args = ap.parse_args()
    interrupt_on_sigterm()
    args.build_dir = os.path.abspath(args.build_dir)
    results = os.path.abspath(args.results)
    try:
        with BuildLock(TOOL):
            return run(args, results)
    except ToolError as e:
        die(TOOL, str(e))
    except KeyboardInterrupt:
        die(TOOL, 'interrupted; the next run recovers', 130)
    except OSError as e:
        die(TOOL, 'cannot write %s: %s' % (e.filename or 'results',
                                           e.strerror))


def run(args, results):
    t0 = time.monotonic()
    if not shutil.which('qemu-system-x86_64'):
        raise ToolError('qemu-system-x86_64 not found; run tools/deps '
                        '(package qemu-system-x86)')
    check_results_dir(results)
    for name in ('kunit.log', 'kunit.ktap', 'kunit.json', 'junit.xml',
                 'summary.json', 'meta.json'):
        try:
            os.unlink(os.path.join(results, name))
        except FileNotFoundError:
            pass
    if not args.build:
        state = prepare_tree.load_state()
        if not state or not os.path.exists(os.path.join(
                args.build_dir, 'arch', 'x86', 'boot', 'bzImage')):
            raise ToolError('--no-build: no kernel in %s; run make test '
                            'first' % args.build_dir)
    elif getattr(args, 'prepare', True):
        state = prepare_tree.prepare(args.series)
    else:
        state = prepare_tree.load_state()
        if not state or not os.path.isdir(TREE):
            raise ToolError('build/linux is not prepared; run '
                            'tools/prepare_tree.py first (--no-prepare)')

    build_log = os.path.join(results, 'build.log')
    if args.build:
        print('%s: building (kunit.py build, log %s)' % (TOOL, build_log),
              flush=True)
        rc, out = run_logged(kunit_cmd('build', args), build_log,
                             args.build_timeout)
    else:
        rc, out = 0, ''
    t_build = time.monotonic() - t0
    if rc != 0:
        errs = [ln for ln in out.splitlines() if 'error' in ln.lower()]
        full = [ln for ln in out.splitlines()
                if 'No space left on device' in ln]
        why = 'timed out' if rc is None else (errs[0].strip() if errs else
                                              out.strip().splitlines()[-1:])
        if rc is not None and full:
            why = 'disk full in %s (%s)' % (args.build_dir, full[0].strip())
        raise ToolError('kernel build failed: %s (see %s)' % (why, build_log))

    cmd = kunit_cmd('exec', args)
    cmd += ['--timeout=%d' % args.timeout,
            '--json=' + os.path.join(results, 'kunit.json')]
    for ka in args.kernel_args:
        cmd.append('--kernel_args=' + ka)
    if args.run_isolated:
        cmd.append('--run_isolated=' + args.run_isolated)
    cmd.append(args.filter)
    exec_log = os.path.join(results, 'kunit.out')
    print('%s: running in QEMU: %s' % (TOOL, args.filter), flush=True)
    t1 = time.monotonic()
    rc, out = run_logged(cmd, exec_log, args.timeout + 120)
    t_run = time.monotonic() - t1
    for ln in summary_lines(out):
        print(ln)
    if 'timed out after' in out:
        print('%s: QEMU timed out after %ds: the kernel hung (see %s)'
              % (TOOL, args.timeout, os.path.join(results, 'kunit.log')),
              file=sys.stderr)
    if rc is None:
        print('%s: kunit.py did not finish within %ds; QEMU killed'
              % (TOOL, args.timeout + 120), file=sys.stderr)

    console = os.path.join(results, 'kunit.log')
    test_log = os.path.join(args.build_dir, 'test.log')
    if args.run_isolated:
        shutil.copyfile(exec_log, console)
    elif os.path.exists(test_log):
        shutil.copyfile(test_log, console)
    else:
        open(console, 'w').close()

    meta = {'package': state['package'], 'package_version': state['version'],
            'kernelversion': state['kernelversion'],
            'series_head': state['head'], 'filter': args.filter,
            'kernel_args': args.kernel_args,
            'build_seconds': round(t_build, 1),
            'run_seconds': round(t_run, 1),
            'kunit_exit': rc}
    with open(os.path.join(results, 'meta.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)

    suites_file = os.path.join(results, 'expected-suites')
    with open(suites_file, 'w') as f:
        f.write('\n'.join(expected_suites(args.filter)) + '\n')
    report = [sys.executable, os.path.join(ROOT, 'tools', 'ktap_report.py'),
              console, '--ktap', os.path.join(results, 'kunit.ktap'),
              '--junit', os.path.join(results, 'junit.xml'),
              '--expect-suites', suites_file,
              '--summary-json', os.path.join(results, 'summary.json'),
              '--expect-splats', os.path.join(ROOT, 'kunit',
                                              'expected-splats')]
    rep = subprocess.run(report, text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    lines = rep.stdout.rstrip('\n').splitlines()
    summary = lines.pop() if lines else '0 passed, 1 failed, 0 skipped'
    for ln in lines:
        print(ln)
    status = rep.returncode
    if status == 0 and rc != 0:
        print('%s: kunit.py exited %s although every case passed'
              % (TOOL, rc), file=sys.stderr)
        status = 1
    print('%s: kernel %s (%s %s), build %.0fs, QEMU run %.1fs, results in %s'
          % (TOOL, state['kernelversion'], state['package'],
             state['version'], t_build, t_run, results))
    print(summary)
    return 1 if status else 0


if __name__ == '__main__':
    sys.exit(main())
