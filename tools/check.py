#!/usr/bin/env python3
"""The project's test command (`make check`; .ci/run runs it).

Steps, each counted as tests in the closing line:
  tools     the tools' own unittest suite (tools/tests)
  apply     patches/ applies with git am to a fresh checkout of the
            pristine tree (one test per patch)
  checkpatch  scripts/checkpatch.pl --strict on every patch and every
            kunit/ source (one test per file; exceptions need an entry in
            docs/checkpatch-exceptions.md)
  w1        a W=1 build of the objects the series and kunit/ touch, with no
            warning on a line they add (one test per object)
  matrix    docs/coverage-matrix.md names exactly the KUnit cases that exist
  mutants   the mutants of kunit/mutants/ci-subset are all killed (one per
            pin-core function; `make mutants` runs the whole catalogue)
  kunit     `make test` (tools/run_suite.py): every KUnit case in QEMU
  debug     `make test-debug`: every KUnit case again, on the KASAN /
            lockdep / kmemleak / DEBUG_PAGEALLOC kernel (one test per case)
  coverage  `make coverage`: gcov of the pin core; one test, failed by an
            unexecuted line that docs/coverage.md does not explain, or by
            a tool error

The last line is 'N passed, N failed, N skipped'; it is also written to
results/check-summary.txt. Exit status 0 only if nothing failed.
"""
import argparse
import fnmatch
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prepare_tree  # noqa: E402
from _common import (BUILD, BuildLock, KBUILD_DIR, RESULTS, ROOT,  # noqa
                     TREE, ToolError, interrupt_on_sigterm, run)

TOOL = 'check'
W1_DIR = os.path.join(BUILD, 'w1-x86_64')
AM_DIR = os.path.join(BUILD, 'am-check')


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []

    def add(self, step, name, ok, why=''):
        if ok is None:
            self.skipped += 1
            print('  SKIP %s: %s %s' % (step, name, why))
        elif ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append('%s: %s: %s' % (step, name, why))
            print('  FAIL %s: %s: %s' % (step, name, why), flush=True)

    def line(self):
        return '%d passed, %d failed, %d skipped' % (
            self.passed, self.failed, self.skipped)


def step_tools(t):
    """Run the tools' own unittest suite in-process."""
    loader = unittest.TestLoader()
    suite = loader.discover(os.path.join(ROOT, 'tools', 'tests'),
                            top_level_dir=ROOT)
    buf = io.StringIO()
    res = unittest.TextTestRunner(stream=buf, verbosity=1).run(suite)
    bad = {str(c): m for c, m in res.failures + res.errors}
    n_bad = len(res.failures) + len(res.errors)
    for name, msg in bad.items():
        t.add('tools', name, False, msg.strip().splitlines()[-1])
    t.passed += res.testsRun - n_bad - len(res.skipped)
    t.skipped += len(res.skipped)
    print('tools: %d unittest cases, %d failed, %d skipped'
          % (res.testsRun, n_bad, len(res.skipped)))


def step_apply(t, state, patches):
    """git am patches/ on a fresh worktree at the pristine base commit."""
    git = ['git', '-C', TREE] + prepare_tree.GIT_ID
    run(git + ['worktree', 'prune'], check=False)
    if os.path.exists(AM_DIR):
        run(git + ['worktree', 'remove', '--force', AM_DIR], check=False)
        shutil.rmtree(AM_DIR, ignore_errors=True)
    run(git + ['worktree', 'add', '-q', '--detach', AM_DIR, state['base']],
        timeout=600)
    try:
        am = ['git', '-C', AM_DIR] + prepare_tree.GIT_ID
        for p in patches:
            proc = run(am + ['am', '-q', p], check=False)
            name = os.path.basename(p)
            if proc.returncode:
                t.add('apply', name, False, 'git am failed: ' +
                      (proc.stdout.strip().splitlines() or ['?'])[0])
                run(am + ['am', '--abort'], check=False)
                break
            t.add('apply', name, True)
    finally:
        run(git + ['worktree', 'remove', '--force', AM_DIR], check=False)
    print('apply: %d patches on a fresh checkout of %s'
          % (len(patches), state['version']))


def exceptions():
    """Files exempted from checkpatch, from docs/checkpatch-exceptions.md."""
    path = os.path.join(ROOT, 'docs', 'checkpatch-exceptions.md')
    out = {}
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r'\|\s*`([^`]+)`\s*\|\s*`([A-Z_]+)`\s*\|', line)
            if m:
                out.setdefault(m.group(1), set()).add(m.group(2))
    return out


def step_checkpatch(t, patches):
    exc = exceptions()
    cp = [os.path.join(TREE, 'scripts', 'checkpatch.pl'), '--strict',
          '--no-tree', '--show-types', '--terse']
    files = [(p, False) for p in patches]
    for rel in sorted(prepare_tree.kunit_sources()):
        if rel.endswith(('.c', '.h')):
            files.append((os.path.join(ROOT, 'kunit', rel), True))
    for path, is_src in files:
        cmd = cp + (['-f', path] if is_src else [path])
        proc = run(cmd, check=False, cwd=TREE)
        rel = os.path.relpath(path, ROOT)
        allowed = set()
        for pattern, types in exc.items():
            if fnmatch.fnmatchcase(rel, pattern):
                allowed |= types
        issues = [ln for ln in proc.stdout.splitlines()
                  if re.search(r':\s*(ERROR|WARNING|CHECK):', ln)]
        issues = [ln for ln in issues
                  if not any(':%s:' % a in ln for a in allowed)]
        t.add('checkpatch', rel, not issues,
              '%d issues, first: %s' % (len(issues), issues[0])
              if issues else '')
    print('checkpatch: %d files' % len(files))


def added_lines(state):
    """Map tree path -> set of line numbers that the series adds."""
    diff = run(['git', '-C', TREE, 'diff', '-U0', state['base'],
                state['head']]).stdout
    out, cur = {}, None
    for line in diff.splitlines():
        if line.startswith('+++ '):
            cur = line[6:] if line.startswith('+++ b/') else None
        m = re.match(r'@@ -\S+ \+(\d+)(?:,(\d+))? @@', line)
        if m and cur:
            start, n = int(m.group(1)), int(m.group(2) or 1)
            out.setdefault(cur, set()).update(range(start, start + n))
    return out


def step_w1(t, state):
    added = added_lines(state)
    objs = sorted(p[:-2] + '.o' for p in added if p.endswith('.c'))
    kunit_files = set(prepare_tree.kunit_sources())
    os.makedirs(W1_DIR, exist_ok=True)
    cfg = os.path.join(KBUILD_DIR, '.config')
    if not os.path.exists(cfg):
        t.add('w1', 'config', False, 'no %s: run make test first' % cfg)
        return
    dst = os.path.join(W1_DIR, '.config')
    if not os.path.exists(dst) or open(cfg).read() != open(dst).read():
        shutil.copyfile(cfg, dst)
    make = ['make', '-C', TREE, 'ARCH=x86_64', 'O=' + W1_DIR,
            '-j%d' % (os.cpu_count() or 2)]
    run(make + ['-s', 'olddefconfig'], timeout=600)
    for obj in objs:
        proc = run(make + ['W=1', obj], check=False, timeout=3600)
        if proc.returncode:
            err = [ln for ln in proc.stdout.splitlines() if 'error' in ln]
            t.add('w1', obj, False, 'build failed: %s' % (err[:1] or '?'))
            continue
        new = []
        for ln in proc.stdout.splitlines():
            m = re.match(r'(?:\S*/)?((?:[\w.-]+/)*[\w.-]+\.[ch]):(\d+):'
                         r'\d+: warning:', ln)
            if not m:
                continue
            path = os.path.relpath(
                os.path.join(TREE, ln.split(':', 1)[0]), TREE) \
                if not ln.startswith('/') else \
                os.path.relpath(ln.split(':', 1)[0], TREE)
            if path in kunit_files or \
               int(m.group(2)) in added.get(path, ()):
                new.append(ln)
        t.add('w1', obj, not new, '%d new warnings, first: %s'
              % (len(new), new[0]) if new else '')
    print('w1: %d objects built with W=1' % len(objs))


def step_matrix(t):
    path = os.path.join(ROOT, 'tools', 'coverage_matrix.py')
    if not os.path.exists(path):
        return
    proc = run([sys.executable, path], check=False)
    ok = proc.returncode == 0
    t.add('matrix', 'docs/coverage-matrix.md', ok,
          proc.stdout.strip().splitlines()[-1] if not ok and proc.stdout
          else '')
    print('matrix: %s' % (proc.stdout.strip().splitlines() or ['ok'])[-1])


def mutants_key(state, paths):
    """Hash of everything that can change a mutant's verdict."""
    h = hashlib.sha256(state['head'].encode())
    files = [os.path.join(ROOT, 'kunit', rel) for rel in
             sorted(prepare_tree.kunit_sources())]
    files += paths + [os.path.join(ROOT, f) for f in (
        'kunitconfig', 'kunit/qemu_x86_64.py', 'kunit/expected-splats',
        'kunit/suites', 'tools/mutate.py', 'tools/run_suite.py',
        'tools/ktap_report.py')]
    for f in files:
        h.update(f.encode())
        with open(f, 'rb') as fh:
            h.update(fh.read())
    return h.hexdigest()


def step_mutants(t, state):
    """Run the CI subset of the mutant catalogue; each mutant is a test.

    The verdict is cached under a hash of the series head, the test
    sources, the harness and the mutants: with nothing changed, nothing
    is rebuilt.
    """
    subset = os.path.join(ROOT, 'kunit', 'mutants', 'ci-subset')
    names = [ln.split('#', 1)[0].strip() for ln in open(subset)]
    paths = [os.path.join(ROOT, 'kunit', 'mutants', n + '.patch')
             for n in names if n]
    key = mutants_key(state, paths)
    cache = os.path.join(BUILD, 'mutants-ci.cache')
    try:
        with open(cache) as f:
            cached_key, cached_line = f.read().split('\n')[:2]
    except (OSError, ValueError):
        cached_key = cached_line = ''
    if cached_key == key:
        m = re.match(r'(\d+) passed, 0 failed, (\d+) skipped$',
                     cached_line)
        if m:
            t.passed += int(m.group(1))
            t.skipped += int(m.group(2))
            print('mutants: %s (CI subset of %d, unchanged since the last '
                  'run: not rerun)' % (cached_line, len(paths)))
            return
    proc = subprocess.run([sys.executable,
                           os.path.join(ROOT, 'tools', 'mutate.py'),
                           '--results', os.path.join(RESULTS, 'mutants-ci')]
                          + paths, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    for ln in lines:
        if 'SURVIVED' in ln or 'NOAPPLY' in ln or 'NOCOMPILE' in ln:
            print(ln)
    m = re.match(r'(\d+) passed, (\d+) failed, (\d+) skipped$',
                 lines[-1] if lines else '')
    if not m:
        t.add('mutants', 'ci-subset', False,
              (lines[-1] if lines else 'no output'))
        return
    t.passed += int(m.group(1))
    t.failed += int(m.group(2))
    t.skipped += int(m.group(3))
    if int(m.group(2)):
        t.failures.append('mutants: %s of the CI subset not killed'
                          % m.group(2))
    print('mutants: %s (CI subset of %d)' % (lines[-1], len(paths)))
    if not int(m.group(2)) and proc.returncode == 0:
        with open(cache, 'w') as f:
            f.write('%s\n%s\n' % (key, lines[-1]))


def run_counted(t, step, what, cmd):
    """Run a tool whose last line is 'N passed, N failed, N skipped' and
    add its counts; a tool that does not report them, or exits non-zero
    with nothing failed, is one failure of its own."""
    proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    for ln in lines[:-1]:
        print(ln)
    m = re.match(r'(\d+) passed, (\d+) failed, (\d+) skipped$',
                 lines[-1] if lines else '')
    if not m:
        if lines:
            print(lines[-1])
        t.add(step, 'run', False, '%s did not report counts' % what)
        return
    t.passed += int(m.group(1))
    t.failed += int(m.group(2))
    t.skipped += int(m.group(3))
    if int(m.group(2)):
        t.failures.append('%s: %s failed' % (step, m.group(2)))
    if proc.returncode and not int(m.group(2)):
        t.add(step, 'run', False, '%s exited %d' % (what, proc.returncode))
    print('%s: %s' % (step, lines[-1]))


def step_kunit(t, args):
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'run_suite.py')]
    if args.filter:
        cmd.append(args.filter)
    run_counted(t, 'kunit', 'make test', cmd)


def step_debug(t, args):
    """make test-debug: the suites on the KASAN/lockdep/kmemleak kernel."""
    cmd = ['make', '-s', '-C', ROOT, 'test-debug']
    if args.filter:
        cmd.append('FILTER=' + args.filter)
    run_counted(t, 'debug', 'make test-debug', cmd)


def step_coverage(t):
    """make coverage: gcov of the pin core. Its per-function goal counts
    are information (a documented miss passes the step); the step fails
    on an undocumented miss or a tool error (non-zero exit)."""
    proc = subprocess.run([sys.executable,
                           os.path.join(ROOT, 'tools', 'coverage.py')],
                          text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    total = [ln for ln in lines if ln.startswith('total ')]
    errors = [ln for ln in lines if ln.startswith('coverage: ') and
              'report ' not in ln]
    why = (errors or lines[-1:] or ['no output'])[0]
    t.add('coverage', 'pin core', proc.returncode == 0,
          'exit %d: %s' % (proc.returncode, why))
    print('coverage: lines, branches hit: %s; functions meeting the goal: '
          '%s (exit %d)' % (' '.join(total[0].split()[1:]) if total
                            else '?', lines[-1] if lines else '?',
                            proc.returncode))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--skip', action='append', default=[],
                    choices=['tools', 'apply', 'checkpatch', 'w1', 'matrix',
                             'kunit', 'debug', 'coverage', 'mutants'],
                    help='leave out a step (repeatable)')
    ap.add_argument('--filter', help='kunit.py filter glob for the kunit step')
    args = ap.parse_args()
    interrupt_on_sigterm()
    t = Tally()
    t0 = time.monotonic()
    try:
        with BuildLock(TOOL):
            if 'tools' not in args.skip:
                step_tools(t)
            state = prepare_tree.prepare(
                os.environ.get('GPK_SERIES', '6.1'), quiet=True)
            patches = prepare_tree.series_files()
            if 'apply' not in args.skip:
                step_apply(t, state, patches)
            if 'checkpatch' not in args.skip:
                step_checkpatch(t, patches)
            if 'kunit' not in args.skip:
                step_kunit(t, args)
            if 'w1' not in args.skip:
                step_w1(t, state)
            if 'matrix' not in args.skip:
                step_matrix(t)
            if 'mutants' not in args.skip:
                step_mutants(t, state)
            if 'debug' not in args.skip:
                step_debug(t, args)
            if 'coverage' not in args.skip:
                step_coverage(t)
    except ToolError as e:
        t.add('check', 'setup', False, str(e))
        print('%s: %s' % (TOOL, e), file=sys.stderr)
    except KeyboardInterrupt:
        t.add('check', 'interrupted', False, 'interrupted')
    print('check: %.0fs' % (time.monotonic() - t0))
    for f in t.failures:
        print('FAILED %s' % f)
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
