"""The mutation engine: a mutant applied to a kernel tree, built, run in
QEMU against the suites, judged by the kill rules, and the tree put back.

tools/mutate.py (the catalogue, kunit/mutants/TREE/catalogue) and
tools/genmut.py (the generated mutants) are command-line front ends over
this module and tools/_schemata.py, which runs many mutants in one kernel
(schema mode) and falls back to this module's patch runs for the rest.

A mutant is a dict (make_mutant(), load_mutant()): name; path, its file;
text, what git apply reads (header lines, then a unified diff with a/ b/
paths relative to the kernel tree); header, {subject, models,
equivalent} from the lines before the diff; files, [(tree path, 'modify'
| 'create' | 'delete')]. A front end may add touch (a header mutant's .c
files to rebuild, header_dependents()) and extra (keys for its entry).

run_one() runs one mutant from its patch: under build/.lock, the tree
must be clean; git apply --check, then git apply (status noapply if it
does not apply); tools/run_suite.py --no-prepare builds incrementally and
runs the suites (status nocompile if the kernel does not build); in a
finally, also on Ctrl-C, git checkout restores the files and the tree
must be clean again. A mutant of a header (*.h) would make the kernel
rebuild most of itself twice, for the mutant and for the restored header:
the build directory is copied aside before it (snapshot_build(), cp -a)
and put back after it, and the header gets its old mtime back, so that
the next build is incremental again. run_patches() runs a list of them,
after prepare_once(): tools/prepare_tree.py, then a baseline run of the
unmutated tree.

The kill rules (Baseline, outcome_of_run(), final_status()): a failing
case kills a mutant, unless it already fails in the baseline run or
belongs to a suite that did not run there (work in progress listed in
kunit/suites); a crash or a hang always kills; a baseline that crashes is
an error. A mutant that survives and says why it is equivalent (its
Equivalent: header) is equivalent; one that is killed is killed, even if
it says so, and the front ends count that as an error of the catalogue.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import (Any, Callable, Dict, FrozenSet, Iterable, List,
                    Optional, Sequence, Tuple)

from _common import (ROOT, BuildLock, ToolError, display,
                     kernel_sources)
from _cscan import header_definitions

Mutant = Dict[str, Any]
Entry = Dict[str, Any]
Writer = Callable[[List[Entry], Optional['Baseline']], None]

RUN_SUITE = os.path.join(ROOT, 'tools', 'run_suite.py')
STATUSES = ('killed', 'survived', 'noapply', 'nocompile', 'equivalent')
HEADER_KEYS = ('subject', 'models', 'equivalent')
HUNK_RE = re.compile(r'^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@')


# --------------------------------------------------------------------------
# A mutant: its patch
# --------------------------------------------------------------------------

def mutant_name(path: str) -> str:
    """'/tmp/001-foo.patch' -> '001-foo'."""
    base = os.path.basename(path)
    return base[:-len('.patch')] if base.endswith('.patch') else base


def parse_header(text: str) -> Dict[str, str]:
    """Return {subject, models, equivalent} from the lines before the diff.

    Keys are case-insensitive; an indented line continues the previous
    value. Missing keys are ''. The header ends at the first 'diff ',
    '--- ' or '---' line.
    """
    out = {k: '' for k in HEADER_KEYS}
    last = None
    for line in text.splitlines():
        if line.startswith(('diff ', '--- ', 'Index: ')) or line == '---':
            break
        if line[:1] in (' ', '\t') and last:
            out[last] = (out[last] + ' ' + line.strip()).strip()
            continue
        key, sep, value = line.partition(':')
        key = key.strip().lower()
        if sep and key in out:
            out[key] = value.strip()
            last = key
        else:
            last = None
    return out


def _strip_prefix(path: str) -> Optional[str]:
    path = path.split('\t', 1)[0].strip()
    if path == '/dev/null':
        return None
    if path.startswith(('a/', 'b/')):
        path = path[2:]
    return path


def touched_files(text: str) -> List[Tuple[str, str]]:
    """Tree paths that the unified diff in text touches, in order.

    Returns a list of (path, kind) with kind 'modify', 'create' or
    'delete'.
    """
    out: List[Tuple[str, str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith('--- ') or i + 1 >= len(lines) or \
           not lines[i + 1].startswith('+++ '):
            continue
        old = _strip_prefix(line[4:])
        new = _strip_prefix(lines[i + 1][4:])
        if old is None and new is not None:
            item = (new, 'create')
        elif new is None and old is not None:
            item = (old, 'delete')
        elif new is not None:
            item = (new, 'modify')
        else:
            continue
        if item[0] not in [p for p, _k in out]:
            out.append(item)
    return out


def diff_hunks(text: str) -> List[Tuple[str, int, List[Tuple[str, str]]]]:
    """[(path, old start line, [(tag, line)])] of the hunks of the unified
    diff in text, tag ' ', '-' or '+'. A hunk ends when its line counts
    are met; an empty line in it is an empty context line, and a
    '\\ No newline' marker is passed over."""
    out = []
    lines = text.split('\n')
    path = None
    i = 0
    while i < len(lines):
        ln = lines[i]
        i += 1
        if ln.startswith('+++ '):
            path = _strip_prefix(ln[4:])
            continue
        m = HUNK_RE.match(ln)
        if not m or path is None:
            continue
        n_old = int(m.group(2)) if m.group(2) is not None else 1
        n_new = int(m.group(4)) if m.group(4) is not None else 1
        body = []
        while (n_old > 0 or n_new > 0) and i < len(lines):
            ln = lines[i]
            if ln.startswith('\\'):
                i += 1
                continue
            tag = ln[:1] or ' '
            if tag not in ' -+':
                break
            body.append((tag, ln[1:]))
            n_old -= tag != '+'
            n_new -= tag != '-'
            i += 1
        out.append((path, int(m.group(1)), body))
    return out


def read_text(path: str) -> str:
    """A file's text; ToolError naming it if it cannot be read."""
    try:
        with open(path, errors='replace') as f:
            return f.read()
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (display(path), e.strerror))


def make_mutant(name: str, path: str, text: str, where: str) -> Mutant:
    """The dict of one mutant: name, path (its file), text (what git
    apply reads), header, files; where names it in an error."""
    files = touched_files(text)
    if not files:
        raise ToolError('%s holds no unified diff' % where)
    return {'name': name, 'path': path, 'text': text,
            'header': parse_header(text), 'files': files}


def load_mutant(path: str) -> Mutant:
    """Read a patch file of one mutant (the format of a catalogue entry
    without its Mutant: line): return its dict (make_mutant())."""
    return make_mutant(mutant_name(path), path, read_text(path),
                       display(path))


# --------------------------------------------------------------------------
# The kill rules, and a verdict as the reports show it
# --------------------------------------------------------------------------

def failing_cases(summary: Dict[str, Any]) -> List[str]:
    """'suite.case' names of the failing cases of a summary.json dict."""
    cases = []
    for suite in summary.get('suites', []):
        for case in suite.get('cases', []):
            if case.get('status') not in ('passed', 'skipped'):
                cases.append('%s.%s' % (suite['name'], case['name']))
    return cases


class Baseline:
    """What the unmutated tree does: the suites that ran and the cases
    that already fail there. Neither those failures nor suites that did
    not run without a mutant (listed in kunit/suites by work in progress,
    but not in the tree's test sources) count as kills."""

    def __init__(self, summary: Optional[Dict[str, Any]] = None) -> None:
        # suites None: no baseline, count everything
        self.suites: Optional[FrozenSet[str]] = None
        self.failures: FrozenSet[str] = frozenset()
        if summary is None:
            return
        if summary.get('crashed'):
            raise ToolError('the unmutated kernel crashed or hung (%s); fix '
                            'the suite before running mutants'
                            % (summary.get('crash_reason') or '?'))
        missing = set(summary.get('missing_suites') or [])
        self.suites = frozenset(s['name'] for s in summary.get('suites', [])
                                if s['name'] not in missing)
        self.failures = frozenset(failing_cases(summary))

    def counts(self, case: str) -> bool:
        """Does a failing case (or '(suite S did not run)') kill?"""
        if case in self.failures:
            return False
        if self.suites is None:
            return True
        if case.startswith('(suite '):
            return case.split()[1] in self.suites
        return case.split('.', 1)[0] in self.suites

    def describe(self) -> List[str]:
        """The cases that fail without a mutant, sorted."""
        return sorted(self.failures)


def outcome_of_run(summary: Dict[str, Any],
                   baseline: Optional[Baseline] = None
                   ) -> Tuple[str, List[str]]:
    """killed/survived and the evidence, from a finished suite run.

    summary is the summary.json dict of the mutant's run; baseline a
    Baseline (what does not count as a kill). A crash or hang always
    kills.
    """
    baseline = baseline or Baseline()
    cases = failing_cases(summary)
    for s in summary.get('missing_suites') or []:
        cases.append('(suite %s did not run)' % s)
    cases = [c for c in cases if baseline.counts(c)]
    if summary.get('crashed'):
        cases.append('(crashed: %s)' % (summary.get('crash_reason') or '?'))
    if cases:
        return 'killed', cases
    return 'survived', []


def final_status(outcome: str, equivalent_claimed: bool) -> str:
    """The status of a mutant from its run outcome and its header."""
    if outcome == 'survived' and equivalent_claimed:
        return 'equivalent'
    return outcome


def console_verdict(entry: Entry, max_cases: int = 4) -> str:
    """'KILLED (a, b, +3 more)', 'SURVIVED', ... for one mutant."""
    st = entry['status']
    if st == 'killed':
        cases = entry.get('cases') or []
        shown = ', '.join(cases[:max_cases])
        if len(cases) > max_cases:
            shown += ', +%d more' % (len(cases) - max_cases)
        word = 'KILLED'
        if entry.get('equivalent_claimed'):
            word = 'KILLED (catalogue error: marked Equivalent)'
        return '%s (%s)' % (word, shown) if shown else word
    return st.upper()


def md_cell(text: Any) -> str:
    """A value as a cell of a Markdown table."""
    return str(text).replace('|', '\\|').replace('\n', ' ')


def write_atomically(path: str, text: str) -> None:
    """Write text to path through a temporary file and a rename."""
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# The tree: apply, restore, the build directory of a header mutant
# --------------------------------------------------------------------------

def git(tree: str, *args: str, check: bool = False,
        stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    """git -C tree ARGS, its output (stderr included) as text."""
    return subprocess.run(['git', '-C', tree] + list(args), text=True,
                          input=stdin,
                          stdin=None if stdin is not None else
                          subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          errors='backslashreplace', check=check)


def tree_changes(tree: str) -> List[str]:
    """The tracked files of a tree that differ from its HEAD."""
    proc = git(tree, 'status', '--porcelain', '--untracked-files=no')
    if proc.returncode != 0:
        raise ToolError('git status failed in %s: %s'
                        % (tree, proc.stdout.strip()[-200:]))
    return [ln[3:] for ln in proc.stdout.splitlines() if ln.strip()]


def require_clean(tree: str) -> None:
    """ToolError unless the tree's tracked files are as its HEAD."""
    changes = tree_changes(tree)
    if changes:
        raise ToolError('%s has local changes (%s); not applying mutants '
                        'on top of them' % (tree, ', '.join(changes[:3])))


def apply_error(tree: str, text: str, check_only: bool = False
                ) -> Optional[str]:
    """git apply (--check with check_only) of a mutant's text in the tree;
    None if it applies, else git's first line."""
    proc = git(tree, 'apply', *(['--check'] if check_only else []), '-',
               stdin=text)
    if proc.returncode == 0:
        return None
    lines = proc.stdout.strip().splitlines()
    return lines[0] if lines else 'git apply failed'


def try_apply(tree: str, text: str) -> Optional[str]:
    """git apply --check, then git apply, of a mutant's text. Return None
    or the error line."""
    return apply_error(tree, text, check_only=True) or \
        apply_error(tree, text)


def restore(tree: str, files: Sequence[Tuple[str, str]]) -> None:
    """Put back exactly the files a mutant touched; check the tree clean."""
    modified = [p for p, kind in files if kind != 'create']
    if modified:
        git(tree, 'checkout', '--', *modified)
    for p, kind in files:
        if kind == 'create':
            try:
                os.unlink(os.path.join(tree, p))
            except FileNotFoundError:
                pass
    left = tree_changes(tree)
    if left:
        raise ToolError('could not restore %s after a mutant: %s still '
                        'modified' % (display(tree), ', '.join(left[:3])))


def touches_header(files: Sequence[Tuple[str, str]]) -> bool:
    """Does a mutant change a header?"""
    return any(p.endswith('.h') for p, _kind in files)


def save_mtimes(tree: str, files: Sequence[Tuple[str, str]]
                ) -> Dict[str, Tuple[int, int]]:
    """(atime_ns, mtime_ns) of each file a mutant modifies, before it."""
    out = {}
    for p, kind in files:
        if kind != 'create':
            st = os.stat(os.path.join(tree, p))
            out[p] = (st.st_atime_ns, st.st_mtime_ns)
    return out


def restore_mtimes(tree: str, mtimes: Dict[str, Tuple[int, int]]) -> None:
    """Give files the times that save_mtimes() saved."""
    for p, ns in mtimes.items():
        os.utime(os.path.join(tree, p), ns=ns)


def snapshot_build(build_dir: str) -> Optional[str]:
    """Copy build_dir aside (cp -a keeps mtimes); return the copy's path."""
    snap = build_dir + '.mutant-snapshot'
    if os.path.exists(snap):
        subprocess.run(['rm', '-rf', snap], check=True)
    if not os.path.isdir(build_dir):
        return None
    proc = subprocess.run(['cp', '-a', build_dir, snap], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode:
        subprocess.run(['rm', '-rf', snap])
        raise ToolError('cannot copy %s aside: %s' % (
            build_dir, (proc.stdout.strip().splitlines() or ['?'])[-1]))
    return snap


def restore_build(build_dir: str, snap: Optional[str]) -> None:
    """Put the copy of snapshot_build() back in place of build_dir."""
    if snap is None:
        return
    subprocess.run(['rm', '-rf', build_dir], check=True)
    os.rename(snap, build_dir)


def read_source(tree: Any, path: str) -> str:
    """A file of build/TREE/linux as its git HEAD (the prepared tree) has
    it: what the working copy holds may be another run's mutant or
    schema, and the mutants are made against the tree as it is."""
    proc = subprocess.run(['git', '-C', tree.linux, 'show', 'HEAD:' + path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        why = proc.stderr.decode(errors='replace').strip().splitlines()
        raise ToolError('cannot read %s at HEAD: %s (is the tree prepared? '
                        'make tree TREE=%s)'
                        % (display(os.path.join(tree.linux, path)),
                           why[-1] if why else 'git show failed',
                           tree.name))
    return proc.stdout.decode('utf-8', errors='surrogateescape')


HEADER_DIRS = ('include', 'arch/x86/include', 'mm')


def git_grep(tree: Any, names: Iterable[str], pathspecs: List[str]
             ) -> List[str]:
    """Files of the tree (tracked) that name one of names as a word."""
    proc = git(tree.linux, 'grep', '-l', '-w', '-E',
               '|'.join(sorted(names)), '--', *pathspecs)
    if proc.returncode not in (0, 1):
        raise ToolError('git grep failed in %s: %s'
                        % (display(tree.linux), proc.stdout.strip()[-200:]))
    return proc.stdout.split()


def _closure(tree: Any, function: str) -> set:
    """function and the inline functions and function-like macros of the
    headers of HEADER_DIRS that call it, directly or through others."""
    closure = {function}
    seen: set = set()
    while True:
        files = [f for f in git_grep(tree, closure,
                                     ['%s/*.h' % d for d in HEADER_DIRS])
                 if f not in seen]
        new = set()
        for f in files:
            seen.add(f)
        for f in sorted(seen):
            try:
                with open(os.path.join(tree.linux, f), errors='replace') as h:
                    text = h.read()
            except OSError:
                continue
            pat = re.compile(r'\b(%s)\b' % '|'.join(sorted(closure)))
            for name, body in header_definitions(text):
                if name not in closure and pat.search(body):
                    new.add(name)
        if not new:
            return closure
        closure |= new


def header_dependents(tree: Any, function: str,
                      build: Optional[str] = None
                      ) -> Tuple[List[str], List[str]]:
    """The .c files of the tree whose objects can contain the code of a
    header function: those that name it, or an inline function or
    function-like macro of a header that (through others) calls it, and
    whose object is in the build directory (default: make test's). Every
    other object compiles to the same code with and without the mutant.
    Return (sorted .c paths, sorted names of the closure)."""
    build = build or tree.kunit_build
    closure = _closure(tree, function)
    files = set(git_grep(tree, closure, ['*.c']))
    pat = re.compile(r'\b(%s)\b' % '|'.join(sorted(closure)))
    for rel in kernel_sources(tree):        # the tests, tracked or not
        if rel.endswith('.c') and rel not in files:
            try:
                with open(os.path.join(tree.linux, rel),
                          errors='replace') as f:
                    if pat.search(f.read()):
                        files.add(rel)
            except OSError:
                pass
    out = [f for f in files
           if os.path.exists(os.path.join(build, f[:-2] + '.o'))]
    return sorted(out), sorted(closure)


# --------------------------------------------------------------------------
# Suite runs
# --------------------------------------------------------------------------

def run_suite(results_dir: str, timeout: int, jobs: int, tree: Any,
              extra: Sequence[str] = ()) -> Tuple[int, str]:
    """tools/run_suite.py --no-prepare --tree TREE [EXTRA...]; return (rc,
    stdout+stderr text).

    The child shares the lock (GPK_LOCK_HELD). On Ctrl-C it is given the
    SIGINT too and waited for, so that no build goes on in the tree after
    we restore it.
    """
    cmd = [sys.executable, RUN_SUITE, '--no-prepare', '--tree', tree.name,
           '--results', results_dir, '--timeout', str(timeout)]
    if jobs:
        cmd.append('--jobs=%d' % jobs)
    cmd += list(extra)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            errors='backslashreplace')
    try:
        out, _ = proc.communicate()
    except BaseException:
        try:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    return proc.returncode, out


def fresh_run_dir(rdir: str) -> None:
    """Make the results directory of one suite run, without the
    summary.json and meta.json of an earlier run in it (a run that dies
    must not be read as that one)."""
    os.makedirs(rdir, exist_ok=True)
    for stale in ('summary.json', 'meta.json'):
        try:
            os.unlink(os.path.join(rdir, stale))
        except FileNotFoundError:
            pass


def read_summary(results_dir: str) -> Optional[Dict[str, Any]]:
    """The summary.json of a suite run, or None."""
    try:
        with open(os.path.join(results_dir, 'summary.json')) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def last_line(out: str, default: str = 'no output') -> str:
    """The last line of a command's output."""
    return (out.strip().splitlines() or [default])[-1]


def tests_sha(tree: Any) -> str:
    """sha256 of the kernel sources (kernel_sources(), harness included)
    as they are in the tree."""
    import prepare_tree
    h = hashlib.sha256()
    for rel in sorted(kernel_sources(tree)):
        h.update(rel.encode() + b'\0')
        h.update((prepare_tree.file_sha(os.path.join(tree.linux, rel)) or
                  '').encode())
    return h.hexdigest()


def prepare(tree: Any, tool: str) -> None:
    """Bring build/TREE/linux up to date (tools/prepare_tree.py), under
    build/.lock."""
    import prepare_tree
    with BuildLock(tool):
        prepare_tree.prepare(tree, quiet=True)


def run_baseline(tree: Any, results: str, timeout: int, jobs: int,
                 runs: str = 'mutants') -> Baseline:
    """Build and run the unmutated tree; return its Baseline. Its run
    goes to RESULTS/<runs>/_baseline/."""
    rdir = os.path.join(results, runs, '_baseline')
    fresh_run_dir(rdir)
    require_clean(tree.linux)
    _rc, out = run_suite(rdir, timeout, jobs, tree)
    summary = read_summary(rdir)
    if summary is None:
        raise ToolError('the unmutated tree does not build or run: %s'
                        % last_line(out))
    return Baseline(summary)


def prepare_once(tree: Any, results: str, timeout: int, jobs: int,
                 runs: str, tool: str) -> Baseline:
    """prepare_tree once, then the baseline run; return the baseline."""
    import prepare_tree
    with BuildLock(tool):
        prepare_tree.prepare(tree, quiet=True)
        print('%s: %s: baseline run without a mutant' % (tool, tree.name),
              flush=True)
        base = run_baseline(tree, results, timeout, jobs, runs)
    if base.failures:
        print('%s: %s: failing without a mutant (not counted as kills): %s'
              % (tool, tree.name, ', '.join(base.describe())), flush=True)
    return base


def new_entry(m: Mutant, sha: Optional[str] = None) -> Entry:
    """The entry of mutant m before it runs: status None; tests_sha256
    sha if given; m['extra'] copied in."""
    equivalent = bool(m['header']['equivalent'])
    entry = {'name': m['name'], 'file': ', '.join(p for p, _ in m['files']),
             'status': None, 'cases': [], 'seconds': 0.0,
             'description': m['header']['subject'],
             'models': m['header']['models'],
             'equivalent_claimed': equivalent,
             'patch': os.path.relpath(os.path.abspath(m['path']), ROOT)}
    if sha is not None:
        entry['tests_sha256'] = sha
    if equivalent:
        entry['equivalent_reason'] = m['header']['equivalent']
    entry.update(m.get('extra') or {})
    return entry


def judge(entry: Entry, summary: Dict[str, Any],
          baseline: Optional[Baseline]) -> None:
    """Set an entry's status and cases from its run's summary.json."""
    outcome, cases = outcome_of_run(summary, baseline)
    entry['status'] = final_status(outcome, entry['equivalent_claimed'])
    entry['cases'] = cases


def _header_build(m: Mutant, touch: List[str], mtimes: Dict[str, Tuple[
        int, int]], tree: Any, entry: Entry) -> Optional[str]:
    """After git apply of a header mutant: with touch (its targeted
    rebuild), the header's old mtime back and the files of touch a new
    one; then the copy of the build directory (snapshot_build())."""
    if touch:
        restore_mtimes(tree.linux, {p: mtimes[p] for p, _k in m['files']
                                    if p in mtimes})
        now = time.time_ns()
        for p in touch:
            os.utime(os.path.join(tree.linux, p), ns=(now, now))
        entry['rebuilt_only'] = touch
    return snapshot_build(tree.kunit_build)


def run_one(m: Mutant, tree: Any, results: str, timeout: int, jobs: int,
            baseline: Optional[Baseline] = None, runs: str = 'mutants'
            ) -> Entry:
    """Apply, build, run and restore one mutant of a Tree (its linux and
    kunit_build are the tree and the build directory); return its
    entry. The suite's results go to RESULTS/<runs>/<name>/; the keys of
    m['extra'] (if any) are copied into the entry.

    m['touch'], for a header mutant only: the tree's .c files whose
    objects can contain the mutated code (tools/genmut.py
    --header-rebuild targeted). The header then gets its old mtime back
    right after git apply and these files a new one, so that kbuild
    rebuilds their objects only, not every includer of the header; their
    mtimes are put back afterwards, with the build copy as for any header
    mutant."""
    t0 = time.monotonic()
    entry = new_entry(m)
    rdir = os.path.join(results, runs, m['name'])
    linux, build = tree.linux, tree.kunit_build
    require_clean(linux)
    entry['tests_sha256'] = tests_sha(tree)
    header = touches_header(m['files'])
    touch = (m.get('touch') or []) if header else []
    # Before git apply: afterwards the files carry the time of the apply,
    # newer than every object, and the next build would redo them all.
    mtimes = save_mtimes(linux, m['files'] + [
        (p, 'modify') for p in touch if p not in dict(m['files'])]
                         ) if header else {}
    err = try_apply(linux, m['text'])
    if err is not None:
        entry.update(status='noapply', detail=err,
                     seconds=round(time.monotonic() - t0, 1))
        return entry
    snap = None
    try:
        if header:
            snap = _header_build(m, touch, mtimes, tree, entry)
        fresh_run_dir(rdir)
        _rc, out = run_suite(rdir, timeout, jobs, tree)
    finally:
        restore(linux, m['files'])
        restore_mtimes(linux, mtimes)
        restore_build(build, snap)
    summary = read_summary(rdir)
    if summary is None and 'kernel build failed' in out:
        entry['status'] = 'nocompile'
        entry['detail'] = next((ln for ln in out.splitlines()
                                if 'kernel build failed' in ln), '')
    elif summary is None:
        raise ToolError('run_suite failed for %s: %s'
                        % (m['name'], last_line(out)))
    else:
        judge(entry, summary, baseline)
    entry['seconds'] = round(time.monotonic() - t0, 1)
    return entry


def record(entry: Entry, entries: List[Entry], baseline: Optional[Baseline],
           write: Writer, tool: str) -> None:
    """Add the entry of a mutant that ran to entries, print its verdict
    and write the reports."""
    entries.append(entry)
    print('%s:   %s %s  %.1fs' % (tool, entry['name'], console_verdict(entry),
                                  entry['seconds']), flush=True)
    write(entries, baseline)


def run_patches(tree: Any, mutants: List[Mutant], results: str,
                timeout: int, jobs: int, runs: str, kept: Sequence[Entry],
                write: Writer, tool: str) -> List[Entry]:
    """Run mutants (load_mutant() dicts) on one tree from their patches:
    prepare_tree once, the baseline run, then each mutant under
    build/.lock (run_one(), the lock taken per mutant, so that another run
    can use the tree between two of them). Every suite run goes to
    RESULTS/<runs>/<name>/ (the baseline's to RESULTS/<runs>/_baseline/).

    kept: entries of an earlier run that are not run again; they come
    first in the list returned. write(entries, baseline) writes the
    reports after each mutant, on an error and at the end. Progress lines
    start with 'tool: TREE: '. Return the entries; ToolError (after
    writing what ran) on a tool failure.
    """
    entries = list(kept)
    baseline = None
    if not mutants:
        write(entries, baseline)
        return entries
    try:
        baseline = prepare_once(tree, results, timeout, jobs, runs, tool)
        for i, m in enumerate(mutants, 1):
            print('%s: %s: [%d/%d] %s (%s)'
                  % (tool, tree.name, i, len(mutants), m['name'],
                     m['header']['subject']), flush=True)
            with BuildLock(tool):
                entry = run_one(m, tree, results, timeout, jobs, baseline,
                                runs)
            record(entry, entries, baseline, write, tool)
    except (ToolError, KeyboardInterrupt):
        if len(entries) > len(kept):
            write(entries, baseline)
        raise
    write(entries, baseline)
    return entries
