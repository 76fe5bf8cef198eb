#!/usr/bin/env python3
"""Mutation testing of the gup-pin-kunit suites: does the suite kill bugs?

This is `make mutants`. Each tree (--tree, repeatable; default every tree
of kunit/trees) has one catalogue of mutants, kunit/mutants/TREE/catalogue.
Each MUTANT given on the command line is the name of one of it, a prefix
of names ending before a '-' (060 for 060-vmscan-reclaims-pinned) or a
shell pattern ('05*'), run on each selected tree whose catalogue has it,
or the path of a patch file in the same format without its Mutant: line
(a mutant being written, before it joins the catalogue), which needs one
tree. Without MUTANTs, the whole catalogue of each tree runs; a tree
without mutants is skipped with one line. --list prints the names.

The catalogue holds, after '#' comment lines, one entry per mutant, from
its line

  Mutant: NNN-name-in-lower-case

to the next such line: header lines

  Subject: <one line: the bug it models>
  Models: <bug class; upstream commit sha + subject if it models a fix>
  Equivalent: <only for an equivalent mutant: why no test can kill it>

then a unified diff (a/ and b/ paths relative to the kernel tree) that
plants one bug in the pin core. One file per tree keeps the catalogue
whole in one place to read and review.

For every mutant, in order, under build/.lock (taken per mutant, so that
another run can use the tree between two mutants):
  1. build/TREE/linux must be clean (git status --porcelain
     --untracked-files=no empty), else one-line error and exit 1;
  2. git apply --check, then git apply of the entry's text (status
     noapply if it does not apply);
  3. tools/run_suite.py --no-prepare: incremental build, then the suites in
     QEMU with a short timeout (--timeout, default 40 s), results in
     RESULTS/mutants/<name>/ (RESULTS: --results, default results/TREE/);
     a failing case, a crash or a hang kills the mutant; a build failure
     is status nocompile (never killed);
  4. in a finally (also on Ctrl-C) the files the diff touched are restored
     with git checkout, and the tree is checked clean again.
A mutant of a header (a touched *.h) makes the kernel rebuild most of
itself, and restoring the header would make the next build do it again.
So before such a mutant the build directory is copied aside (cp -a,
about 220 MB, seconds), and afterwards the copy replaces it and the
restored header gets its original mtime back: the tree and the build are
then exactly as before, and the next build is incremental again.
tools/prepare_tree.py runs once, before the first mutant, followed by a
baseline run of the unmutated tree (RESULTS/mutants/_baseline/): it must
not crash; cases that already fail there, and suites that did not run there
(listed in kunit/suites by work in progress but not yet in the tree's test
sources), do not count as kills. A crash or hang always kills. Each entry
records the sha256 of the tree's kernel sources it ran against
(tests_sha256), since another run may sync a newer one between mutants.

Statuses: killed, survived, noapply, nocompile, equivalent (a mutant marked
Equivalent that survived). A mutant marked Equivalent is still run; if it
is killed, that is a catalogue error (status killed, equivalent_claimed
true, counted as failed).

Writes RESULTS/mutants.json (a list of {name, file, status, cases, seconds,
description, ...}) and RESULTS/mutants.md (a table and the line
'killed K / total T (equivalent E)'). The last line printed is
'N passed, N failed, N skipped' (after one such line per tree,
'mutate: TREE: ...'): passed = killed + equivalent that survived; failed =
survived + noapply + nocompile + equivalent that was killed, and a tree
that could not be prepared or run counts as one failure. The exit status
is 1 if any failed.

--mode schema (what make check runs on its CI subset): a mutant that is
one hunk of one .c file, inside one function, joins a mutant schema
(tools/_schemata.py, as tools/genmut.py runs its generated mutants): each
function it changes gets a copy per mutant, the kernel is built once and
booted once per mutant with gup_mutant=N on its command line, under the
same kill rules, against a baseline boot of that kernel with gup_mutant=0.
A mutant then costs a boot, not an incremental build and a boot. The other
mutants (headers, several hunks or files) run from their patches as above.

--rescore builds nothing: it recomputes the statuses of an earlier run
from RESULTS/mutants.json and RESULTS/mutants/*/summary.json (after a
change of the kill rules or of a mutant's Equivalent header).
"""
import argparse
import fnmatch
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (ROOT, BuildLock, ToolError,  # noqa: E402
                     add_tree_argument, die, display, enclosing_function,
                     interrupt_on_sigterm, kernel_sources, selected_trees)

TOOL = 'mutate'
RUN_SUITE = os.path.join(ROOT, 'tools', 'run_suite.py')
STATUSES = ('killed', 'survived', 'noapply', 'nocompile', 'equivalent')
CATALOGUE = 'catalogue'
MUTANT_LINE = re.compile(r'Mutant:(.*)$')
NAME_RE = re.compile(r'\d{3}-[a-z0-9]+(-[a-z0-9]+)*$')
HEADER_KEYS = ('subject', 'models', 'equivalent')
HUNK_RE = re.compile(r'^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@')


# ------------------------------------------------------------------ pure

def mutant_name(path):
    """'/tmp/001-foo.patch' -> '001-foo'."""
    base = os.path.basename(path)
    return base[:-len('.patch')] if base.endswith('.patch') else base


def parse_header(text):
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


def _strip_prefix(path):
    path = path.split('\t', 1)[0].strip()
    if path == '/dev/null':
        return None
    if path.startswith(('a/', 'b/')):
        path = path[2:]
    return path


def touched_files(text):
    """Tree paths that the unified diff in text touches, in order.

    Returns a list of (path, kind) with kind 'modify', 'create' or
    'delete'.
    """
    out = []
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


def diff_hunks(text):
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


def schema_mutant(m, read):
    """The catalogue mutant m as a mutant that a mutant schema can hold
    (tools/genmut.py run_schemata(): name, function, file, line, old,
    new, header), and ''; or None and why it must run from its patch.
    It must be one hunk of one .c file whose change lies inside one
    function of the file as read(path) gives it (the tree's HEAD)."""
    files = m['files']
    if len(files) != 1 or files[0][1] != 'modify' or \
       not files[0][0].endswith('.c'):
        return None, 'it does not change exactly one .c file'
    hunks = diff_hunks(m['text'])
    if len(hunks) != 1:
        return None, 'its diff has %d hunks' % len(hunks)
    path, start, body = hunks[0]
    changed = [i for i, (tag, _ln) in enumerate(body) if tag != ' ']
    if not changed:
        return None, 'its hunk changes nothing'
    a, b = changed[0], changed[-1]
    old_side = [ln for tag, ln in body if tag != '+']
    lines = read(path).split('\n')
    at = start - 1
    if lines[at:at + len(old_side)] != old_side:
        # As git apply: the match nearest to where the hunk says.
        hits = sorted((abs(k - at), k) for k in range(len(lines))
                      if lines[k:k + len(old_side)] == old_side)
        if not hits or (len(hits) > 1 and hits[0][0] == hits[1][0]):
            return None, 'its hunk does not match %s as the tree has it' % path
        at = hits[0][1]
    first = at + 1 + sum(1 for tag, _ln in body[:a] if tag != '+')
    old = [ln for tag, ln in body[a:b + 1] if tag != '+']
    new = [ln for tag, ln in body[a:b + 1] if tag != '-']
    text = '\n'.join(lines)
    # The lines it changes, or the two an insertion goes between.
    ends = (first, first + len(old) - 1) if old else (first - 1, first)
    funcs = set(enclosing_function(text, n) for n in ends)
    if len(funcs) != 1 or None in funcs:
        return None, 'its change is not inside one function'
    return types.SimpleNamespace(name=m['name'], function=funcs.pop(),
                                 file=path, line=first, old=old, new=new,
                                 header=False), ''


def failing_cases(summary):
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

    def __init__(self, summary=None):
        self.suites = None          # None: no baseline, count everything
        self.failures = frozenset()
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

    def counts(self, case):
        if case in self.failures:
            return False
        if self.suites is None:
            return True
        if case.startswith('(suite '):
            return case.split()[1] in self.suites
        return case.split('.', 1)[0] in self.suites

    def describe(self):
        out = sorted(self.failures)
        return out


def outcome_of_run(summary, baseline=None):
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


def final_status(outcome, equivalent_claimed):
    """The status of a mutant from its run outcome and its header."""
    if outcome == 'survived' and equivalent_claimed:
        return 'equivalent'
    return outcome


def is_failure(entry):
    """Does this mutant count as a failure of the suite (or catalogue)?"""
    if entry['status'] == 'killed':
        return bool(entry.get('equivalent_claimed'))
    return entry['status'] != 'equivalent'


def totals(entries):
    """Counts per status plus passed/failed, for the report."""
    t = {s: 0 for s in STATUSES}
    for e in entries:
        t[e['status']] += 1
    t['total'] = len(entries)
    t['catalogue_errors'] = sum(1 for e in entries if e['status'] == 'killed'
                                and e.get('equivalent_claimed'))
    t['failed'] = sum(1 for e in entries if is_failure(e))
    t['passed'] = t['total'] - t['failed']
    return t


def summary_line(entries):
    t = totals(entries)
    return '%d passed, %d failed, 0 skipped' % (t['passed'], t['failed'])


def totals_line(entries):
    t = totals(entries)
    line = 'killed %d / total %d (equivalent %d)' % (
        t['killed'], t['total'], t['equivalent'])
    extra = ['%s %d' % (s, t[s]) for s in ('survived', 'noapply', 'nocompile')
             if t[s]]
    if t['catalogue_errors']:
        extra.append('killed-but-marked-equivalent %d'
                     % t['catalogue_errors'])
    return line + ('; ' + ', '.join(extra) if extra else '')


def console_verdict(entry, max_cases=4):
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


def _md_cell(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


def shown_cases(entry):
    """The first three cases that killed a mutant, and how many more."""
    cases = entry.get('cases') or []
    return '; '.join(cases[:3]) + (' (+%d more)' % (len(cases) - 3)
                                   if len(cases) > 3 else '')


def status_text(entry, claimed):
    """A mutant's status for a report; a killed mutant that was declared
    equivalent says so, with @claimed."""
    if entry['status'] == 'killed' and entry.get('equivalent_claimed'):
        return 'killed (%s)' % claimed
    return entry['status']


def markdown(entries, baseline=None):
    """results/mutants.md: a table and the totals line."""
    out = ['# Mutants', '']
    if baseline is not None and baseline.failures:
        out += ['Failing without a mutant (not counted as kills): %s'
                % ', '.join(baseline.describe()), '']
    out += [
           '| mutant | file | status | seconds | description | cases |',
           '|---|---|---|---:|---|---|']
    for e in entries:
        shown = shown_cases(e)
        status = status_text(e, 'marked equivalent: catalogue error')
        out.append('| %s | %s | %s | %.1f | %s | %s |' % (
            _md_cell(e['name']), _md_cell(e['file']), _md_cell(status),
            e.get('seconds') or 0.0, _md_cell(e.get('description', '')),
            _md_cell(shown)))
    out += ['', totals_line(entries), '']
    return '\n'.join(out)


def write_atomically(path, text):
    """Write text to path through a temporary file and a rename."""
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, path)


def write_reports(entries, results, baseline=None):
    """Write RESULTS/mutants.json and RESULTS/mutants.md atomically."""
    for name, text in (('mutants.json', json.dumps(entries, indent=1) + '\n'),
                       ('mutants.md', markdown(entries, baseline))):
        write_atomically(os.path.join(results, name), text)


def read_text(path):
    try:
        with open(path, errors='replace') as f:
            return f.read()
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (display(path), e.strerror))


def make_mutant(name, path, text, where):
    """The dict of one mutant: name, path (its file), text (what git
    apply reads), header, files; where names it in an error."""
    files = touched_files(text)
    if not files:
        raise ToolError('%s holds no unified diff' % where)
    return {'name': name, 'path': path, 'text': text,
            'header': parse_header(text), 'files': files}


def load_mutant(path):
    """Read a patch file of one mutant (the format of a catalogue entry
    without its Mutant: line): return its dict (make_mutant())."""
    return make_mutant(mutant_name(path), path, read_text(path),
                       display(path))


def parse_catalogue(text, path='catalogue'):
    """The mutants of a catalogue's text, in file order: a dict each
    (make_mutant()). Before the first 'Mutant: NAME' line only '#'
    comments and blank lines may stand; an entry is every line up to the
    next Mutant: line, kept as it is: an empty line at the end of a diff
    may be its last context line (an empty source line whose ' ' an
    editor dropped), and a blank line after a complete hunk is one that
    git apply passes over. ToolError, naming the line, on a bad or
    repeated name, stray text or an entry without a diff."""
    out, seen = [], {}
    name = start = None
    body = []

    def close():
        if name is None:
            return
        out.append(make_mutant(name, path, ''.join(body),
                               '%s:%d (%s)' % (display(path), start, name)))

    for n, line in enumerate(text.splitlines(True), 1):
        m = MUTANT_LINE.match(line)
        if m:
            close()
            name, start, body = m.group(1).strip(), n, []
            if not NAME_RE.match(name):
                raise ToolError('%s:%d: %r is not a mutant name (NNN-words, '
                                'lower case)' % (display(path), n, name))
            if name in seen:
                raise ToolError('%s:%d: mutant %s again (first on line %d)'
                                % (display(path), n, name, seen[name]))
            seen[name] = n
        elif name is not None:
            body.append(line)
        elif line.strip() and not line.startswith('#'):
            raise ToolError('%s:%d: text before the first Mutant: line'
                            % (display(path), n))
    close()
    return out


def load_catalogue(path):
    """parse_catalogue() of a file; [] if there is no such file."""
    if not os.path.exists(path):
        return []
    return parse_catalogue(read_text(path), path)


# ------------------------------------------------------------------ tree

def git(tree, *args, check=False, stdin=None):
    return subprocess.run(['git', '-C', tree] + list(args), text=True,
                          input=stdin,
                          stdin=None if stdin is not None else
                          subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          errors='backslashreplace', check=check)


def tree_changes(tree):
    proc = git(tree, 'status', '--porcelain', '--untracked-files=no')
    if proc.returncode != 0:
        raise ToolError('git status failed in %s: %s'
                        % (tree, proc.stdout.strip()[-200:]))
    return [ln[3:] for ln in proc.stdout.splitlines() if ln.strip()]


def require_clean(tree):
    changes = tree_changes(tree)
    if changes:
        raise ToolError('%s has local changes (%s); not applying mutants '
                        'on top of them' % (tree, ', '.join(changes[:3])))


def apply_error(tree, text, check_only=False):
    """git apply (--check with check_only) of a mutant's text in the tree;
    None if it applies, else git's first line."""
    proc = git(tree, 'apply', *(['--check'] if check_only else []), '-',
               stdin=text)
    if proc.returncode == 0:
        return None
    lines = proc.stdout.strip().splitlines()
    return lines[0] if lines else 'git apply failed'


def try_apply(tree, text):
    """git apply --check, then git apply, of a mutant's text. Return None
    or the error line."""
    return apply_error(tree, text, check_only=True) or \
        apply_error(tree, text)


def restore(tree, files):
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


def touches_header(files):
    return any(p.endswith('.h') for p, _kind in files)


def save_mtimes(tree, files):
    """(atime_ns, mtime_ns) of each file a mutant modifies, before it."""
    out = {}
    for p, kind in files:
        if kind != 'create':
            st = os.stat(os.path.join(tree, p))
            out[p] = (st.st_atime_ns, st.st_mtime_ns)
    return out


def restore_mtimes(tree, mtimes):
    for p, ns in mtimes.items():
        os.utime(os.path.join(tree, p), ns=ns)


def snapshot_build(build_dir):
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


def restore_build(build_dir, snap):
    """Put the copy of snapshot_build() back in place of build_dir."""
    if snap is None:
        return
    subprocess.run(['rm', '-rf', build_dir], check=True)
    os.rename(snap, build_dir)


def run_suite(results_dir, timeout, jobs, tree, extra=()):
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


def fresh_run_dir(rdir):
    """Make the results directory of one suite run, without the
    summary.json and meta.json of an earlier run in it (a run that dies
    must not be read as that one)."""
    os.makedirs(rdir, exist_ok=True)
    for stale in ('summary.json', 'meta.json'):
        try:
            os.unlink(os.path.join(rdir, stale))
        except FileNotFoundError:
            pass


def read_summary(results_dir):
    try:
        with open(os.path.join(results_dir, 'summary.json')) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tests_sha(tree):
    """sha256 of the kernel sources (kernel_sources(), harness included)
    as they are in the tree."""
    import prepare_tree
    h = hashlib.sha256()
    for rel in sorted(kernel_sources(tree)):
        h.update(rel.encode() + b'\0')
        h.update((prepare_tree.file_sha(os.path.join(tree.linux, rel)) or
                  '').encode())
    return h.hexdigest()


def run_baseline(tree, results, timeout, jobs, runs='mutants'):
    """Build and run the unmutated tree; return its Baseline. Its run
    goes to RESULTS/<runs>/_baseline/."""
    rdir = os.path.join(results, runs, '_baseline')
    fresh_run_dir(rdir)
    require_clean(tree.linux)
    _rc, out = run_suite(rdir, timeout, jobs, tree)
    summary = read_summary(rdir)
    if summary is None:
        last = out.strip().splitlines()[-1:] or ['no output']
        raise ToolError('the unmutated tree does not build or run: %s'
                        % last[0])
    return Baseline(summary)


def run_one(m, tree, results, timeout, jobs, baseline=None, runs='mutants'):
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
    equivalent = bool(m['header']['equivalent'])
    entry = {'name': m['name'], 'file': ', '.join(p for p, _ in m['files']),
             'status': None, 'cases': [], 'seconds': 0.0,
             'description': m['header']['subject'],
             'models': m['header']['models'],
             'equivalent_claimed': equivalent,
             'patch': os.path.relpath(os.path.abspath(m['path']), ROOT)}
    if equivalent:
        entry['equivalent_reason'] = m['header']['equivalent']
    entry.update(m.get('extra') or {})
    rdir = os.path.join(results, runs, m['name'])
    linux, build = tree.linux, tree.kunit_build
    require_clean(linux)
    entry['tests_sha256'] = tests_sha(tree)
    header = touches_header(m['files'])
    # Before git apply: afterwards the files carry the time of the apply,
    # newer than every object, and the next build would redo them all.
    touch = [p for p in (m.get('touch') or []) if header]
    mtimes = save_mtimes(linux, m['files'] + [(p, 'modify') for p in touch
                                              if p not in dict(m['files'])]
                         ) if header else {}
    err = try_apply(linux, m['text'])
    if err is not None:
        entry['status'] = 'noapply'
        entry['detail'] = err
        entry['seconds'] = round(time.monotonic() - t0, 1)
        return entry
    snap = None
    try:
        if touch:
            restore_mtimes(linux, {p: mtimes[p] for p, _k in m['files']
                                   if p in mtimes})
            now = time.time_ns()
            for p in touch:
                os.utime(os.path.join(linux, p), ns=(now, now))
            entry['rebuilt_only'] = touch
        if header:
            snap = snapshot_build(build)
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
        last = out.strip().splitlines()[-1:] or ['no output']
        raise ToolError('run_suite failed for %s: %s' % (m['name'], last[0]))
    else:
        outcome, cases = outcome_of_run(summary, baseline)
        entry['status'] = final_status(outcome, equivalent)
        entry['cases'] = cases
    entry['seconds'] = round(time.monotonic() - t0, 1)
    return entry


def rescore(mutants, results):
    """Recompute killed/survived/equivalent of an earlier run from its
    RESULTS/mutants/*/summary.json (noapply/nocompile are kept)."""
    try:
        with open(os.path.join(results, 'mutants.json')) as f:
            old = {e['name']: e for e in json.load(f)}
    except (OSError, ValueError):
        raise ToolError('no earlier %s to rescore'
                        % os.path.join(results, 'mutants.json'))
    base_summary = read_summary(os.path.join(results, 'mutants',
                                             '_baseline'))
    if base_summary is None:
        raise ToolError('no baseline summary.json under %s/mutants/_baseline'
                        % results)
    baseline = Baseline(base_summary)
    entries = []
    for m in mutants:
        e = old.get(m['name'])
        if e is None:
            raise ToolError('%s was not run in %s' % (m['name'], results))
        if e['status'] not in ('noapply', 'nocompile'):
            summary = read_summary(os.path.join(results, 'mutants',
                                                m['name']))
            if summary is None:
                raise ToolError('no summary.json for %s' % m['name'])
            eq = bool(m['header']['equivalent'])
            outcome, cases = outcome_of_run(summary, baseline)
            e['status'] = final_status(outcome, eq)
            e['cases'] = cases
            e['equivalent_claimed'] = eq
            e['description'] = m['header']['subject']
            e['models'] = m['header']['models']
            if eq:
                e['equivalent_reason'] = m['header']['equivalent']
        entries.append(e)
        print('%s:   %s %s' % (TOOL, e['name'], console_verdict(e)))
    write_reports(entries, results, baseline)
    print('%s: %s (rescored)' % (TOOL, totals_line(entries)))
    return entries


def prepare_once(tree, results, timeout, jobs, runs='mutants', tool=TOOL):
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


def catalogue_path(tree):
    return os.path.join(tree.mutants, CATALOGUE)


def catalogue(tree):
    """The tree's mutants (kunit/mutants/TREE/catalogue), in file order."""
    return load_catalogue(catalogue_path(tree))


def selects(arg, name):
    """Does a MUTANT argument select the mutant called name? Its name, a
    prefix ending before a '-', or a shell pattern."""
    return name == arg or name.startswith(arg + '-') or \
        fnmatch.fnmatchcase(name, arg)


def is_patch_file(arg):
    return os.sep in arg or arg.endswith('.patch') or os.path.isfile(arg)


def plan(args, trees):
    """[(tree, [mutant dicts])] that this run covers."""
    if not args.mutants:
        return [(t, catalogue(t)) for t in trees]
    files = [a for a in args.mutants if is_patch_file(a)]
    if files:
        if len(files) != len(args.mutants):
            raise ToolError('give either names of the catalogue or patch '
                            'files, not both')
        if len(trees) != 1:
            raise ToolError('patch files given on the command line are '
                            'mutants of one tree; name it with --tree')
        return [(trees[0], [load_mutant(p) for p in files])]
    work, found = [], set()
    for tree in trees:
        chosen = []
        for m in catalogue(tree):
            hits = [a for a in args.mutants if selects(a, m['name'])]
            if hits:
                chosen.append(m)
                found.update(hits)
        if chosen:
            work.append((tree, chosen))
    missing = [a for a in args.mutants if a not in found]
    if missing:
        raise ToolError('%s: no such mutant in the catalogue of %s'
                        % (missing[0], ', '.join(t.name for t in trees)))
    return work


def run_tree(tree, mutants, args, results):
    """Run (or rescore) the mutants of one tree; return their entries.
    ToolError on a tool failure."""
    if args.rescore:
        return rescore(mutants, results)
    if args.mode == 'schema':
        return run_in_schema(tree, mutants, args, results)
    return run_mutants(tree, mutants, results, args.timeout, args.jobs)


def run_in_schema(tree, mutants, args, results):
    """--mode schema: the mutants that schema_mutant() accepts run in one
    mutant schema kernel (tools/genmut.py run_schemata(): one build, one
    boot per mutant, under this module's kill rules against the schema
    kernel's own baseline run); the others, and any that the schema
    cannot hold, run from their patches as in --mode patch. Return the
    entries, the schema's first."""
    import genmut
    import prepare_tree
    with BuildLock(TOOL):
        prepare_tree.prepare(tree, quiet=True)
    in_schema, alone = [], []
    for m in mutants:
        sm, why = schema_mutant(m, lambda p: genmut.read_source(tree, p))
        if sm is None:
            print('%s: %s: %s runs from its patch: %s'
                  % (TOOL, tree.name, m['name'], why), flush=True)
            alone.append(m['name'])
        else:
            in_schema.append(sm)

    def write(es, base):
        write_reports(es, results, base)

    entries, back = [], []
    if in_schema:
        entries, back = genmut.run_schemata(
            tree, in_schema, {m['name']: m for m in mutants}, results, args,
            'mutants', [], write, tool=TOOL)
    alone += [m.name for m in back]
    return run_mutants(tree, [m for m in mutants if m['name'] in alone],
                       results, args.timeout, args.jobs, kept=entries,
                       write=write)


def run_mutants(tree, mutants, results, timeout, jobs, runs='mutants',
                kept=(), write=None, tool=TOOL):
    """Run mutants (load_mutant() dicts) on one tree, with the kill rules
    of this module: prepare_tree once, the baseline run, then each mutant
    under build/.lock (run_one()). Every suite run goes to
    RESULTS/<runs>/<name>/ (the baseline's to RESULTS/<runs>/_baseline/).

    kept: entries of an earlier run that are not run again (tools/genmut.py
    --resume); they come first in the list returned. write(entries,
    baseline) writes the reports after each mutant, on an error and at the
    end (default: write_reports(), RESULTS/mutants.{json,md}). Progress
    lines start with 'tool: TREE: '. Return the entries; ToolError (after
    writing what ran) on a tool failure.
    """
    if write is None:
        def write(es, base):
            write_reports(es, results, base)
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
            entries.append(entry)
            print('%s:   %s %s  %.1fs' % (tool, m['name'],
                                          console_verdict(entry),
                                          entry['seconds']), flush=True)
            write(entries, baseline)
    except (ToolError, KeyboardInterrupt):
        if len(entries) > len(kept):
            write(entries, baseline)
        raise
    write(entries, baseline)
    return entries


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog='tools/mutate.py', description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('mutants', nargs='*', metavar='MUTANT',
                    help='names, NNN prefixes or shell patterns of the '
                    'catalogue, or patch files of one tree (default: the '
                    'whole catalogue kunit/mutants/TREE/catalogue of each '
                    'tree)')
    ap.add_argument('--list', action='store_true',
                    help='print NAME and Subject of the mutants selected, '
                    'one a line, tree by tree; run nothing')
    add_tree_argument(ap)
    ap.add_argument('--timeout', type=int, default=40,
                    help='seconds QEMU may run per mutant (default 40: '
                    'the suite runs in about 2 s, and a hung mutant must '
                    'still cost under 60 s with its build)')
    ap.add_argument('--results', default='{results}/{tree}',
                    help='results directory of a tree; {tree} and '
                    '{results} are replaced (default {results}/{tree}, '
                    'i.e. results/TREE/)')
    ap.add_argument('--jobs', type=int, default=0,
                    help='build jobs (default: run_suite default)')
    ap.add_argument('--rescore', action='store_true',
                    help='build nothing: recompute the statuses from the '
                    'summary.json files of an earlier run in RESULTS '
                    '(of --mode patch)')
    ap.add_argument('--mode', choices=('patch', 'schema'), default='patch',
                    help='patch (default): build and boot each mutant '
                    'alone; schema: the mutants of one hunk in one function '
                    'of a .c file in one kernel, chosen at boot '
                    '(tools/_schemata.py), the others alone; what make '
                    'check runs')
    args = ap.parse_args(argv)
    if args.rescore and args.mode == 'schema':
        die(TOOL, '--rescore reads a run of --mode patch; not with --mode '
            'schema', 2)
    trees = selected_trees(TOOL, args.tree)
    interrupt_on_sigterm()
    try:
        work = plan(args, trees)
    except ToolError as e:
        die(TOOL, str(e), e.status)
    if args.list:
        for tree, mutants in work:
            for m in mutants:
                print('%s %s  %s' % (tree.name, m['name'],
                                     m['header']['subject']))
        return 0
    if len(work) > 1 and '{tree}' not in args.results:
        die(TOOL, '--results %s: with several trees it must name {tree}'
            % args.results, 2)
    passed = failed = 0
    for tree, mutants in work:
        results = tree.expand(args.results)
        if not mutants:
            print('%s: %s: no mutants in %s; skipped'
                  % (TOOL, tree.name, display(catalogue_path(tree))),
                  flush=True)
            continue
        try:
            entries = run_tree(tree, mutants, args, results)
        except ToolError as e:
            failed += 1
            print('%s: %s: %s' % (TOOL, tree.name, e), file=sys.stderr,
                  flush=True)
            continue
        except KeyboardInterrupt:
            die(TOOL, 'interrupted; %s was restored'
                % display(tree.linux), 130)
        t = totals(entries)
        passed += t['passed']
        failed += t['failed']
        print('%s: %s: %s; %s; reports in %s' % (
            TOOL, tree.name, summary_line(entries), totals_line(entries),
            display(os.path.join(results, 'mutants.md'))), flush=True)
    print('%d passed, %d failed, 0 skipped' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
