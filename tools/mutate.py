#!/usr/bin/env python3
"""Mutation testing of the gup-pin-kunit suites: does the suite kill bugs?

This is `make mutants`. Each PATCH is a mutant of the kernel tree: a
unified diff (a/ and b/ paths relative to the kernel tree) that plants one
bug in the pin core, preceded by header lines

  Subject: <one line: the bug it models>
  Models: <bug class; upstream commit sha + subject if it models a fix>
  Equivalent: <only for an equivalent mutant: why no test can kill it>

For every patch, in order, under build/.lock (taken per mutant, so that
another run can use the tree between two mutants):
  1. build/linux must be clean (git status --porcelain --untracked-files=no
     empty), else one-line error and exit 1;
  2. git apply --check, then git apply (status noapply if it does not);
  3. tools/run_suite.py --no-prepare: incremental build, then the suites in
     QEMU with a short timeout (--timeout, default 60 s), results in
     RESULTS/mutants/<name>/; a failing case, a crash or a hang kills the
     mutant; a build failure is status nocompile (never killed);
  4. in a finally (also on Ctrl-C) the files the patch touched are restored
     with git checkout, and the tree is checked clean again.
tools/prepare_tree.py runs once, before the first mutant.

Statuses: killed, survived, noapply, nocompile, equivalent (a mutant marked
Equivalent that survived). A mutant marked Equivalent is still run; if it
is killed, that is a catalogue error (status killed, equivalent_claimed
true, counted as failed).

Writes RESULTS/mutants.json (a list of {name, file, status, cases, seconds,
description, ...}) and RESULTS/mutants.md (a table and the line
'killed K / total T (equivalent E)'). The last line printed is
'N passed, N failed, N skipped': passed = killed + equivalent that
survived; failed = survived + noapply + nocompile + equivalent that was
killed. The exit status is 1 if any failed.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (BuildLock, RESULTS, ROOT, TREE, ToolError,  # noqa: E402
                     die)

TOOL = 'mutate'
RUN_SUITE = os.path.join(ROOT, 'tools', 'run_suite.py')
STATUSES = ('killed', 'survived', 'noapply', 'nocompile', 'equivalent')
HEADER_KEYS = ('subject', 'models', 'equivalent')


# ------------------------------------------------------------------ pure

def mutant_name(path):
    """'kunit/mutants/001-foo.patch' -> '001-foo'."""
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


def failing_cases(summary):
    """'suite.case' names of the failing cases of a summary.json dict."""
    cases = []
    for suite in summary.get('suites', []):
        for case in suite.get('cases', []):
            if case.get('status') not in ('passed', 'skipped'):
                cases.append('%s.%s' % (suite['name'], case['name']))
    return cases


def outcome_of_run(summary, run_rc):
    """killed/survived and the evidence, from a finished suite run.

    summary is the summary.json dict (None if the run wrote none).
    """
    if summary is None:
        return 'killed', ['(no summary.json: run_suite exit %s)' % run_rc]
    cases = failing_cases(summary)
    if summary.get('crashed'):
        cases.append('(crashed: %s)' % (summary.get('crash_reason') or '?'))
    for s in summary.get('missing_suites') or []:
        cases.append('(suite %s did not run)' % s)
    if cases or summary.get('failed'):
        return 'killed', cases or ['(%d failed)' % summary['failed']]
    if run_rc not in (0, None):
        return 'killed', ['(run_suite exit %s)' % run_rc]
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


def markdown(entries):
    """results/mutants.md: a table and the totals line."""
    out = ['# Mutants', '',
           '| mutant | file | status | seconds | description | cases |',
           '|---|---|---|---:|---|---|']
    for e in entries:
        cases = e.get('cases') or []
        shown = '; '.join(cases[:3]) + (' (+%d more)' % (len(cases) - 3)
                                        if len(cases) > 3 else '')
        status = e['status']
        if status == 'killed' and e.get('equivalent_claimed'):
            status = 'killed (marked equivalent: catalogue error)'
        out.append('| %s | %s | %s | %.1f | %s | %s |' % (
            _md_cell(e['name']), _md_cell(e['file']), _md_cell(status),
            e.get('seconds') or 0.0, _md_cell(e.get('description', '')),
            _md_cell(shown)))
    out += ['', totals_line(entries), '']
    return '\n'.join(out)


def write_reports(entries, results):
    """Write RESULTS/mutants.json and RESULTS/mutants.md atomically."""
    os.makedirs(results, exist_ok=True)
    for name, text in (('mutants.json', json.dumps(entries, indent=1) + '\n'),
                       ('mutants.md', markdown(entries))):
        path = os.path.join(results, name)
        tmp = path + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, path)


def load_mutant(path):
    """Read a patch: return dict name, path, text, header, files."""
    try:
        with open(path, errors='replace') as f:
            text = f.read()
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (path, e.strerror))
    files = touched_files(text)
    if not files:
        raise ToolError('%s holds no unified diff' % path)
    return {'name': mutant_name(path), 'path': path, 'text': text,
            'header': parse_header(text), 'files': files}


# ------------------------------------------------------------------ tree

def git(tree, *args, check=False):
    return subprocess.run(['git', '-C', tree] + list(args), text=True,
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


def try_apply(tree, patch_path):
    """git apply --check, then git apply. Return None or the error line."""
    chk = git(tree, 'apply', '--check', os.path.abspath(patch_path))
    if chk.returncode != 0:
        lines = chk.stdout.strip().splitlines()
        return lines[0] if lines else 'git apply --check failed'
    app = git(tree, 'apply', os.path.abspath(patch_path))
    if app.returncode != 0:
        lines = app.stdout.strip().splitlines()
        return lines[0] if lines else 'git apply failed'
    return None


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
        raise ToolError('could not restore build/linux after a mutant: %s '
                        'still modified' % ', '.join(left[:3]))


def run_suite(results_dir, timeout, jobs):
    """tools/run_suite.py --no-prepare; return (rc, stdout+stderr text).

    The child shares the lock (GPK_LOCK_HELD). On Ctrl-C it is given the
    SIGINT too and waited for, so that no build goes on in the tree after
    we restore it.
    """
    cmd = [sys.executable, RUN_SUITE, '--no-prepare', '--results',
           results_dir, '--timeout', str(timeout)]
    if jobs:
        cmd.append('--jobs=%d' % jobs)
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


def read_summary(results_dir):
    try:
        with open(os.path.join(results_dir, 'summary.json')) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run_one(m, results, timeout, jobs):
    """Apply, build, run and restore one mutant; return its entry."""
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
    rdir = os.path.join(results, 'mutants', m['name'])
    require_clean(TREE)
    err = try_apply(TREE, m['path'])
    if err is not None:
        entry['status'] = 'noapply'
        entry['detail'] = err
        entry['seconds'] = round(time.monotonic() - t0, 1)
        return entry
    try:
        os.makedirs(rdir, exist_ok=True)
        for stale in ('summary.json', 'meta.json'):
            try:
                os.unlink(os.path.join(rdir, stale))
            except FileNotFoundError:
                pass
        rc, out = run_suite(rdir, timeout, jobs)
    finally:
        restore(TREE, m['files'])
    summary = read_summary(rdir)
    if summary is None and 'kernel build failed' in out:
        entry['status'] = 'nocompile'
        entry['detail'] = next((ln for ln in out.splitlines()
                                if 'kernel build failed' in ln), '')
    elif summary is None and 'not found' in out:
        raise ToolError('run_suite could not run: %s'
                        % out.strip().splitlines()[-1])
    else:
        outcome, cases = outcome_of_run(summary, rc)
        entry['status'] = final_status(outcome, equivalent)
        entry['cases'] = cases
    entry['seconds'] = round(time.monotonic() - t0, 1)
    return entry


def prepare_once(series):
    import prepare_tree
    with BuildLock(TOOL):
        prepare_tree.prepare(series, quiet=True)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog='tools/mutate.py', description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('patches', nargs='+', metavar='PATCH',
                    help='mutant patches (kunit/mutants/*.patch)')
    ap.add_argument('--timeout', type=int, default=60,
                    help='seconds QEMU may run per mutant (default 60)')
    ap.add_argument('--results', default=RESULTS,
                    help='results directory (default results/)')
    ap.add_argument('--jobs', type=int, default=0,
                    help='build jobs (default: run_suite default)')
    ap.add_argument('--series', default=os.environ.get('GPK_SERIES', '6.1'))
    args = ap.parse_args(argv)
    results = os.path.abspath(args.results)
    try:
        mutants = [load_mutant(p) for p in args.patches]
    except ToolError as e:
        die(TOOL, str(e))
    entries = []
    try:
        prepare_once(args.series)
        for i, m in enumerate(mutants, 1):
            print('%s: [%d/%d] %s (%s)' % (TOOL, i, len(mutants), m['name'],
                                          m['header']['subject']), flush=True)
            with BuildLock(TOOL):
                entry = run_one(m, results, args.timeout, args.jobs)
            entries.append(entry)
            print('%s:   %s %s  %.1fs' % (TOOL, m['name'],
                                          console_verdict(entry),
                                          entry['seconds']), flush=True)
            write_reports(entries, results)
    except ToolError as e:
        if entries:
            write_reports(entries, results)
        die(TOOL, str(e))
    except KeyboardInterrupt:
        if entries:
            write_reports(entries, results)
        die(TOOL, 'interrupted; build/linux was restored', 130)
    write_reports(entries, results)
    print('%s: %s; reports in %s' % (
        TOOL, totals_line(entries),
        os.path.relpath(os.path.join(results, 'mutants.md'))))
    print(summary_line(entries))
    return 1 if totals(entries)['failed'] else 0


if __name__ == '__main__':
    sys.exit(main())
