"""The steps of `make check` (tools/check.py) that run a tool of the
project on a tree and count what it reports: the suites in QEMU
(run_suite.py), the reviewer's bare boot, the debug kernel in the
background, the mutants (mutate.py, genmut.py), coverage and the audit.

Each step adds its tests to check.py's tally t: one per case or mutant
from the tool's last line 'N passed, N failed, N skipped', or with
t.add(step, name, ok, why).
"""
import argparse
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _check_static import Tally  # noqa: E402
from _common import (KUNIT, KUNITCONFIG, ROOT, ToolError, Tree,  # noqa: E402
                     display, kernel_sources, read_names, run)

COUNTS_RE = re.compile(r'(\d+) passed, (\d+) failed, (\d+) skipped$')


def mutants_key(tree: Tree, state: dict, paths: list[str]) -> str:
    """Hash of everything that can change a mutant's verdict on a tree;
    paths: the mutants (or what makes them) and their other inputs."""
    h = hashlib.sha256(('%s\0%s' % (tree.name, state['head'])).encode())
    files = [src for _rel, src in sorted(kernel_sources(tree).items())]
    files += paths + [KUNITCONFIG] + \
        [f for f in (tree.expected_splats,) if f] + \
        [os.path.join(KUNIT, f) for f in ('qemu_x86_64.py', 'expected-splats',
                                          'suites')] + \
        [os.path.join(ROOT, 'tools', f) for f in (
            'mutate.py', 'run_suite.py', 'ktap_report.py', '_common.py',
            '_testenv.py')]
    for f in files:
        h.update(display(f).encode())
        with open(f, 'rb') as fh:
            h.update(fh.read())
    return h.hexdigest()


# The modules of the mutation engine and of its C scanner: a change of
# one of them can change any mutant's verdict.
MUTATION_ENGINE = ('_mutation.py', '_schemata.py', '_cscan.py')


def step_mutants(t: Tally, tree: Tree, state: dict) -> None:
    """Run the CI subset of the tree's mutants; each mutant is a test.

    The verdict is cached (build/TREE/mutants-ci.cache) under a hash of
    the series head, the kernel sources, the harness and the mutants:
    with nothing changed, nothing is rebuilt.
    """
    step = 'mutants ' + tree.name
    subset = os.path.join(tree.mutants, 'ci-subset')
    if not os.path.isfile(subset):
        print('%s: skipped: no %s' % (step, display(subset)))
        return
    import _mutation
    import mutate
    cat = mutate.catalogue_path(tree)
    names = read_names(subset)
    try:
        mutants = mutate.load_catalogue(cat)
    except ToolError as e:
        t.add(step, 'catalogue', False, str(e))
        return
    known = {m['name'] for m in mutants}
    stale = [m['name'] for m in mutants
             if _mutation.apply_error(tree.linux, m['text'],
                                      check_only=True)]
    t.add(step, 'catalogue applies', not stale,
          '%d of %d entries of %s no longer apply to the tree: %s'
          % (len(stale), len(mutants), display(cat), ', '.join(stale[:5])))
    missing = [n for n in names if n not in known]
    if missing:
        t.add(step, 'ci-subset', False, '%s names %s, which %s does not '
              'hold' % (display(subset), missing[0], display(cat)))
        return
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'mutate.py'),
           '--tree', tree.name, '--mode', 'schema', '--results',
           os.path.join(tree.results, 'mutants-ci')] + names
    paths = [cat, subset] + [os.path.join(ROOT, 'tools', f)
                             for f in MUTATION_ENGINE]
    cached_mutant_run(t, step, tree, mutants_key(tree, state, paths),
                      'mutants-ci.cache', cmd, 'mutate',
                      'CI subset of %d' % len(names))


def step_genmut(t: Tally, tree: Tree, state: dict) -> None:
    """Run the CI sample of the tree's generated mutants (tools/genmut.py
    run --sample); each mutant is a test. Cached like step_mutants(),
    under the generator, the pin core and the equivalents file too. A
    tree without kunit/mutants/TREE/generated-equivalent (the file that
    takes the survivors of its full run into account) is skipped with one
    line, not counted."""
    import genmut
    step = 'genmut ' + tree.name
    eq = genmut.equivalents_path(tree)
    if not os.path.isfile(eq):
        print('%s: skipped: no %s' % (step, display(eq)))
        return
    inputs = [os.path.join(ROOT, 'tools', f) for f in
              ('genmut.py', '_generator.py') + MUTATION_ENGINE] + \
        [tree.pin_core, eq]
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'genmut.py'), 'run',
           '--sample', '--tree', tree.name]
    cached_mutant_run(t, step, tree, mutants_key(tree, state, inputs),
                      'genmut-ci.cache', cmd, 'genmut',
                      'CI sample of %d' % genmut.SAMPLE_COUNT)


def cached_mutant_run(t: Tally, step: str, tree: Tree, key: str,
                      cache_name: str, cmd: list[str], tool: str,
                      what: str) -> None:
    """Run a mutant tool (mutate.py, genmut.py) whose last line is
    'N passed, N failed, N skipped' and add its counts, unless the verdict
    is cached in build/TREE/<cache_name> under key (a clean earlier run
    of the same inputs). Only the verdicts that fail and the tool's own
    lines about the tree (errors, baseline failures) are shown."""
    cache = os.path.join(tree.build, cache_name)
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
            print('%s: %s (%s, unchanged since the last run: not rerun)'
                  % (step, cached_line, what))
            return
    proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    # The verdicts that fail, and mutate's own lines about the tree
    # (errors, baseline failures), not its progress.
    own = re.compile(r'^%s: %s: (?!\[\d+/\d+\] |baseline run |'
                     r'\d+ passed, )' % (tool, re.escape(tree.name)))
    for ln in lines:
        if 'SURVIVED' in ln or 'NOAPPLY' in ln or 'NOCOMPILE' in ln or \
           own.match(ln):
            print(ln)
    m = COUNTS_RE.match(lines[-1] if lines else '')
    if not m:
        t.add(step, 'run', False, (lines[-1] if lines else 'no output'))
        return
    t.passed += int(m.group(1))
    t.failed += int(m.group(2))
    t.skipped += int(m.group(3))
    if int(m.group(2)):
        t.failures.append('%s: %s of the %s not killed'
                          % (step, m.group(2), what))
    print('%s: %s (%s)' % (step, lines[-1], what))
    if not int(m.group(2)) and proc.returncode == 0:
        with open(cache, 'w') as f:
            f.write('%s\n%s\n' % (key, lines[-1]))


def run_counted(t: Tally, step: str, what: str, cmd: list[str]) -> None:
    """Run a tool whose last line is 'N passed, N failed, N skipped' and
    add its counts (add_counted())."""
    proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    add_counted(t, step, what, proc.returncode, proc.stdout)


def add_counted(t: Tally, step: str, what: str, returncode: int,
                output: str) -> None:
    """Print the output of a tool whose last line is 'N passed, N failed,
    N skipped' and add its counts; a tool that does not report them, or
    exits non-zero with nothing failed, is one failure of its own."""
    lines = output.rstrip('\n').splitlines()
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
    if returncode and not int(m.group(2)):
        t.add(step, 'run', False, '%s exited %d' % (what, returncode))
    print('%s: %s' % (step, lines[-1]))


def step_kunit(t: Tally, tree: Tree, args: argparse.Namespace) -> None:
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'run_suite.py'),
           '--tree', tree.name]
    if args.filter:
        cmd.append(args.filter)
    run_counted(t, 'kunit ' + tree.name, 'make test TREE=%s' % tree.name,
                cmd)


def step_reviewer(t: Tally, tree: Tree) -> None:
    """The reviewer's two outcomes on the make test kernel: a bare boot
    (results/TREE/bare/), and make test's own skips."""
    import json
    import reviewer
    import _testenv
    step = 'reviewer ' + tree.name
    out = os.path.join(tree.results, 'bare')
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, 'kunit.log')
    test_log = os.path.join(tree.kunit_build, 'test.log')
    if os.path.exists(test_log):
        os.unlink(test_log)
    proc = run([sys.executable, 'tools/testing/kunit/kunit.py', 'exec',
                '--arch=x86_64', '--build_dir=' + tree.kunit_build,
                '--timeout=300'], cwd=tree.linux, check=False, timeout=420)
    with open(os.path.join(out, 'kunit.out'), 'w') as f:
        f.write(proc.stdout or '')
    if os.path.exists(test_log):
        shutil.copyfile(test_log, log)
    else:
        open(log, 'w').close()
    documented = _testenv.read_documented(tree.linux)
    outcome = reviewer.evaluate(
        reviewer.parse_console(log, (reviewer.SPLATS, tree.expected_splats)),
        documented, harness=_testenv.HARNESS_KERNEL_ARGS)
    with open(os.path.join(out, 'outcome.json'), 'w') as f:
        json.dump(outcome, f, indent=1, sort_keys=True)
    t.add(step, 'bare boot', not outcome['problems'],
          '; '.join(outcome['problems'][:3]))
    print('%s: bare boot: %d passed, %d skipped, %d failed%s'
          % (step, outcome['passed'], outcome['skipped'], outcome['failed'],
             ', crashed' if outcome['crashed'] else ''))
    try:
        with open(os.path.join(tree.results, 'summary.json')) as f:
            skipped = json.load(f)['skipped']
    except (OSError, ValueError, KeyError):
        skipped = None
    t.add(step, 'documented run', skipped == 0,
          'make test skipped %s cases (results/%s/summary.json)'
          % (skipped, tree.name))


class Background:
    """A command that runs beside the steps that follow it, niced, its
    output kept in a file until finish() collects it."""

    def __init__(self, cmd):
        self.log = tempfile.TemporaryFile(mode='w+', errors='replace')
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(['nice', '-n', '10'] + cmd, text=True,
                                     stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def finish(self) -> tuple[int, str, float]:
        """Wait for it; return (exit status, output, seconds it ran)."""
        rc = self.proc.wait()
        self.log.seek(0)
        out = self.log.read()
        self.log.close()
        return rc, out, time.monotonic() - self.t0

    def stop(self) -> None:
        """Kill it and what it started, if it still runs."""
        if self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        self.log.close()


def start_debug(tree: Tree, args: argparse.Namespace) -> Background:
    """make test-debug TREE=TREE in the background: the debug kernel
    builds from its own checkout of the tree (make test-debug's
    --checkout) while the mutant steps change build/TREE/linux; the tree
    is prepared already (NO_PREPARE=1)."""
    cmd = ['make', '-s', '-C', ROOT, 'test-debug', 'TREE=' + tree.name,
           'NO_PREPARE=1']
    if args.filter:
        cmd.append('FILTER=' + args.filter)
    return Background(cmd)


def step_debug(t: Tally, tree: Tree, job: Background) -> None:
    """The debug kernel's results: the suites on the KASAN/lockdep/
    kmemleak kernel that start_debug() started."""
    rc, out, seconds = job.finish()
    add_counted(t, 'debug ' + tree.name, 'make test-debug TREE=%s'
                % tree.name, rc, out)
    print('debug %s: built and run in the background in %.0fs'
          % (tree.name, seconds))


def step_kcsan(t: Tally, tree: Tree, args: argparse.Namespace) -> None:
    """make test-kcsan: every case on the KCSAN kernel (one test per
    case), from its own checkout of the prepared tree (NO_PREPARE=1, as
    the debug kernel's); a data race that no case declares benign fails
    the case it happened in."""
    cmd = ['make', '-s', '-C', ROOT, 'test-kcsan', 'TREE=' + tree.name,
           'NO_PREPARE=1']
    if args.filter:
        cmd.append('FILTER=' + args.filter)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    add_counted(t, 'kcsan ' + tree.name, 'make test-kcsan TREE=%s'
                % tree.name, proc.returncode, proc.stdout)
    print('kcsan %s: built and run in %.0fs'
          % (tree.name, time.monotonic() - t0))


def step_coverage(t: Tally, tree: Tree) -> None:
    """make coverage: gcov of the pin core. Its per-function goal counts
    are information (a documented miss passes the step); the step fails
    on an undocumented miss or a tool error (non-zero exit)."""
    step = 'coverage ' + tree.name
    proc = subprocess.run([sys.executable,
                           os.path.join(ROOT, 'tools', 'coverage.py'),
                           '--tree', tree.name],
                          text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    total = [ln for ln in lines if ln.startswith('total ')]
    errors = [ln for ln in lines if ln.startswith('coverage: ') and
              ': report ' not in ln]
    why = (errors or lines[-1:] or ['no output'])[0]
    t.add(step, 'pin core', proc.returncode == 0,
          'exit %d: %s' % (proc.returncode, why))
    print('%s: lines, branches hit: %s; functions meeting the goal: '
          '%s (exit %d)' % (step, ' '.join(total[0].split()[1:]) if total
                            else '?', lines[-1] if lines else '?',
                            proc.returncode))


def step_audit(t: Tally, tree: Tree) -> None:
    """tools/audit.py: the planted mutants (one test each), then the
    whole tree (one test)."""
    step = 'audit ' + tree.name
    audit = os.path.join(ROOT, 'tools', 'audit.py')
    run_counted(t, step + ' planted', 'audit.py --planted',
                [sys.executable, audit, '--tree', tree.name, '--planted'])
    proc = subprocess.run([sys.executable, audit, '--tree', tree.name],
                          text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    summary = [ln for ln in lines if ln.startswith('audit: %s: ' % tree.name)
               and ' sites: ' in ln]
    for ln in lines[:-1][:20]:
        if ln not in summary:
            print('  ' + ln)
    t.add(step, 'whole tree', proc.returncode == 0,
          (summary or lines[-1:] or ['no output'])[-1])
    print('%s: %s' % (step, (summary or lines[-1:] or ['?'])[-1]))
