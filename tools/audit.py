#!/usr/bin/env python3
"""Tree-wide audit of the callers of the pin API (`make audit`).

Is every page pinned by pin_user_pages*(), pin_user_pages_fast*(),
pin_user_pages_remote(), pin_user_pages_unlocked() or memfd_pin_folios()
released as a pin? For each tree (--tree, repeatable; default every tree
of kunit/trees):
  1. prepare build/TREE/linux (tools/prepare_tree.py) and take the tree at
     its series head: Debian's tree with patches/TREE/ applied, without
     the project's tests and harness;
  2. pre-filter: `git grep -l` for the names the rules look at (the pin
     and get_user_pages families, the unpin family, BIO_PAGE_PINNED,
     io_mapped_ubuf), as coccicheck's --use-gitgrep does; only those
     files are copied to a temporary directory and parsed. A file that
     never names them cannot hold a pin call nor a release the rules see;
  3. run the semantic patches of tools/cocci/ with spatch (nice -n 10,
     --jobs 2 at most) on that copy; each prints one "AUDIT {json}" line
     per fact: sites.cocci the pin and get calls with their page array,
     and every release call; flow.cocci FOLL_GET passed to the pin
     family, FOLL_PIN to the get family, and a pin call's return passed
     as an unpin count with no sign test; structures.cocci the structures
     followed (infiniband's ib_umem, vfio's pfns, io_uring's registered
     buffers, the block layer's BIO_PAGE_PINNED);
  4. classify every pin call site (below), check the unresolved ones
     against the review, docs/TREE/audit-review.md, and write
     results/TREE/audit.md and results/TREE/audit.json.

Classes of a pin call site:
  matched     the page array stays in the function (a local, neither
              returned nor stored), and every release of it there is an
              unpin; or it goes into a followed structure in the same
              function whose releases are all unpins
  mismatched  a bug: a release of the array in the function, or of a
              structure it goes into, drops a reference (put_page(),
              folio_put(), release_pages(), put_user_page(), ...); FOLL_GET
              in its flags; its return passed as an unpin count unchecked
  unresolved  the pages leave the function (returned, stored in a
              structure or an out parameter, the caller's array) or no
              release was found: someone must read the code. Each needs a
              verdict in the review (below)
Outside the pin sites, a get_user_pages*() array released with an unpin
in the same function, FOLL_PIN passed to the get family, and a put
release in a structure's release function are mismatches too.

The review, docs/TREE/audit-review.md: a table row per unresolved site
and per mismatch that is a known bug,
keyed by `file:function:call` (`#2` for the second call of the same API
in one function) - never a line number - with the first 12 hex digits of
the sha256 of the enclosing function's text, the verdict (`ok`: every
release is an unpin; `bug`: a known bug, in docs/bugs.md, until its
fix is in the tree's series), the file:line of
the release(s) and why. When the function's text changes, the hash no
longer matches and the verdict is stale: the site must be read again.

Each tree prints one line per problem and 'audit: TREE: N sites:
N matched, N mismatched, N unresolved (N with a verdict); N other
mismatches; N problems'; the last line counts the trees as tests, 'N
passed, N failed, 0 skipped'. Exit status 0 only if every unresolved
site has a current verdict and every mismatch is a known bug (a `bug`
verdict); 1 otherwise; 2 for an unknown tree or bad options.

The pre-filter also takes, in the directories of the files that call the
pin API, the files that drop references (put_page(), folio_put(), ...):
a structure field is followed through the release calls of the whole
directory (a driver), so that a pin kept in a field and put_page()d in
another file of the driver is a mismatch. mm/gup.c passing FOLL_PIN to
its own get_user_pages_unlocked() is the pin API's implementation, not
a caller, and is not reported.

--source DIR audits a directory instead of a tree (a copy of some files
of one tree, as the planted-mutant tests make); --planted plants each
mutant of tools/cocci/planted/TREE/ into a copy of the files it names and
checks that the audit flags it (one test each; last line 'N passed,
N failed, N skipped').
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _audit_classify import CLASSES, classify  # noqa: E402
from _audit_spatch import (COCCI_DIR, coccicheck_scripts,  # noqa: E402
                           export_tree, prefilter_dir, read_files,
                           run_spatch, spatch_version)
from _common import (ROOT, BuildLock, ToolError, Tree,  # noqa: E402
                     add_tree_argument, die, display, load_state,
                     selected_trees)

TOOL = 'audit'
PLANTED = os.path.join(COCCI_DIR, 'planted')
REVIEW = os.path.join(ROOT, 'docs', '{tree}', 'audit-review.md')
ROW_RE = re.compile(r'^\|\s*`([^`]+)`\s*\|\s*`([0-9a-f]{12})`\s*\|\s*'
                    r'(ok|bug)\s*\|([^|]*)\|(.*)\|\s*$')
LOC_RE = re.compile(r'`([\w./+-]+):(\d+)`')


# --------------------------------------------------------------------------
# The review
# --------------------------------------------------------------------------

def read_review(path: str) -> dict[str, dict]:
    """{key: {hash, verdict, releases: [(file, line)], reason, line}} of a
    review file; a missing file is {}. Rows that look like verdicts but do
    not parse are a ToolError."""
    try:
        with open(path, encoding='utf-8') as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (display(path), e.strerror))
    out: dict[str, dict] = {}
    for n, line in enumerate(lines, 1):
        if not line.startswith('| `'):
            continue
        m = ROW_RE.match(line)
        if not m:
            raise ToolError('%s:%d: expected "| `file:function:call` | '
                            '`hash12` | ok or bug | `file:line` ... | why |"'
                            % (display(path), n))
        key = m.group(1)
        if key in out:
            raise ToolError('%s:%d: %s reviewed twice (first at line %d)'
                            % (display(path), n, key, out[key]['line']))
        rels = [(p, int(ln)) for p, ln in LOC_RE.findall(m.group(4))]
        if not rels:
            raise ToolError('%s:%d: %s: no `file:line` of the release'
                            % (display(path), n, key))
        out[key] = dict(hash=m.group(2), verdict=m.group(3), releases=rels,
                        reason=m.group(5).strip(), line=n)
    return out


def check_review(sites: list[dict], extra: list[dict],
                 review: dict[str, dict], files: dict[str, list[str]],
                 whole: bool = True) -> list[str]:
    """Apply the review to the sites: set each site's 'verdict' and
    'review' ('current', 'stale', 'missing' or None when not needed) and
    return the problems, one line each."""
    problems = []
    used = set()
    for s in sites:
        r = review.get(s['key'])
        s['verdict'] = None
        s['review'] = None
        need = s['class'] in ('unresolved', 'mismatched')
        if r:
            used.add(s['key'])
        if not need:
            continue
        if not r:
            s['review'] = 'missing'
            if s['class'] == 'unresolved':
                problems.append('%s:%d: unresolved %s() in %s() has no '
                                'verdict in the review (key `%s`, hash `%s`)'
                                % (s['file'], s['line'], s['call'],
                                   s['function'], s['key'], s['hash']))
            else:
                problems.append('%s:%d: MISMATCH: %s() in %s(): %s'
                                % (s['file'], s['line'], s['call'],
                                   s['function'], s['why']))
            continue
        if r['hash'] != s['hash']:
            s['review'] = 'stale'
            problems.append('%s:%d: the verdict on `%s` is stale: %s() '
                            'changed (hash %s, reviewed %s); read it again'
                            % (s['file'], s['line'], s['key'], s['function'],
                               s['hash'], r['hash']))
            continue
        s['review'] = 'current'
        s['verdict'] = r['verdict']
        s['review_releases'] = ['%s:%d' % rl for rl in r['releases']]
        s['reason'] = r['reason']
        if s['class'] == 'mismatched' and r['verdict'] != 'bug':
            problems.append('%s:%d: MISMATCH: %s() in %s(): %s (the review '
                            'says ok; only a known bug may stay)'
                            % (s['file'], s['line'], s['call'],
                               s['function'], s['why']))
        for path, ln in r['releases']:
            lines = files.get(path)
            if lines is None:
                if whole:
                    problems.append('%s: the release %s:%d named for `%s` '
                                    'is in no audited file' % (
                                        s['file'], path, ln, s['key']))
                continue
            text = lines[ln - 1] if 0 < ln <= len(lines) else ''
            want = 'unpin' if r['verdict'] == 'ok' else ''
            if want not in text or not text.strip():
                problems.append('%s:%d: the release named for `%s` is no '
                                'unpin call now: %r' % (path, ln, s['key'],
                                                        text.strip()))
    for x in extra:
        problems.append('%s:%d: MISMATCH: %s() in %s(): %s'
                        % (x['file'], x['line'], x['call'], x['function'],
                           x['why']))
    if whole:
        for key in sorted(set(review) - used):
            problems.append('review line %d: `%s` is no pin site of the '
                            'tree any more: remove it'
                            % (review[key]['line'], key))
    return problems


# --------------------------------------------------------------------------
# One audit
# --------------------------------------------------------------------------

def audit(src: str, paths: list[str], review: dict[str, dict], jobs: int,
          whole: bool = True) -> dict:
    """Audit the files paths under src. Returns the result dict."""
    t0 = time.monotonic()
    facts = run_spatch(src, jobs)
    files = read_files(src, paths)
    sites, extra = classify(facts, files)
    problems = check_review(sites, extra, review, files, whole)
    counts = {c: sum(1 for s in sites if s['class'] == c) for c in CLASSES}
    counts['sites'] = len(sites)
    counts['unresolved_with_verdict'] = sum(
        1 for s in sites if s['class'] == 'unresolved' and
        s['review'] == 'current')
    counts['mismatches'] = counts['mismatched'] + len(extra)
    counts['known_bugs'] = sum(1 for s in sites if s.get('verdict') == 'bug')
    counts['problems'] = len(problems)
    counts['files_parsed'] = len(paths)
    return dict(counts=counts, sites=sites, other_mismatches=extra,
                problems=problems, facts=len(facts),
                seconds=round(time.monotonic() - t0, 1))


def summary_line(tree: str, c: dict) -> str:
    return ('%s: %d sites: %d matched, %d mismatched, %d unresolved (%d '
            'with a verdict); %d other mismatches; %d problems'
            % (tree, c['sites'], c['matched'], c['mismatched'],
               c['unresolved'], c['unresolved_with_verdict'],
               c['mismatches'] - c['mismatched'], c['problems']))


def write_report(res: dict, out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, 'audit.json'), 'w') as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write('\n')
    c = res['counts']
    md = ['# Pin API audit: %s' % res['tree'], '',
          '%s, at %s; spatch: %s; %d files parsed (pre-filtered), %.0f s.'
          % (res.get('package', ''), res.get('rev', '')[:12],
             res.get('spatch', ''), c['files_parsed'], res['seconds']), '',
          '| pin call sites | matched | mismatched | unresolved | '
          'unresolved with a verdict | other mismatches | problems |',
          '|---|---|---|---|---|---|---|',
          '| %d | %d | %d | %d | %d | %d | %d |' % (
              c['sites'], c['matched'], c['mismatched'], c['unresolved'],
              c['unresolved_with_verdict'], c['mismatches'] - c['mismatched'],
              c['problems']), '']
    if res['problems']:
        md += ['## Problems (the audit fails)', '']
        md += ['- %s' % p for p in res['problems']] + ['']
    if res.get('coccicheck') is not None:
        n, named = res['coccicheck']
        md += ['## coccicheck', '',
               'The tree\'s scripts/coccinelle/ has %d semantic patches; %s'
               % (n, 'those naming this API: ' + ', '.join(named) if named
                  else 'none names get_user_pages, pin_user_pages, '
                  'unpin_user_*, put_page, release_pages, folio_put, '
                  'FOLL_PIN or FOLL_GET: `make coccicheck` flags nothing '
                  'about it.'), '']
    for cls in CLASSES:
        rows = [s for s in res['sites'] if s['class'] == cls]
        md += ['## %s (%d)' % (cls, len(rows)), '',
               '| site | call | pages | why | review |',
               '|---|---|---|---|---|']
        for s in rows:
            rv = s['review'] or ''
            if s.get('verdict'):
                rv = '%s: %s (%s)' % (s['verdict'], ', '.join(
                    s.get('review_releases', [])), s.get('reason', ''))
            md.append('| `%s:%d` %s() | %s() | `%s` | %s | %s |' % (
                s['file'], s['line'], s['function'], s['call'], s['pages'],
                s['why'].replace('|', '\\|'), rv.replace('|', '\\|')))
        md.append('')
    md += ['## Other mismatches (%d)' % len(res['other_mismatches']), '']
    md += ['- `%s:%d` %s(): %s' % (x['file'], x['line'], x['function'],
                                   x['why'])
           for x in res['other_mismatches']] or ['none']
    with open(os.path.join(out_dir, 'audit.md'), 'w') as f:
        f.write('\n'.join(md) + '\n')


def audit_tree(tree: Tree, args: argparse.Namespace) -> dict:
    """Audit one tree; write its report; return the result."""
    if args.source:
        src = os.path.abspath(args.source)
        if not os.path.isdir(src):
            raise ToolError('--source %s: no such directory' % args.source)
        paths = prefilter_dir(src)
        res = audit(src, paths, read_review(args.review_path), args.jobs,
                    whole=False)
        res.update(tree=tree.name, source=src)
    else:
        if args.prepare:
            import prepare_tree
            state = prepare_tree.prepare(tree, quiet=True)
        else:
            loaded = load_state(tree)
            if not loaded or not os.path.isdir(tree.linux):
                raise ToolError('%s is not prepared: run make tree TREE=%s'
                                % (display(tree.linux), tree.name))
            state = loaded
        rev = state['series_head']
        tmp = tempfile.mkdtemp(prefix='gpk-audit-')
        try:
            t0 = time.monotonic()
            paths = export_tree(tree.linux, rev, tmp)
            t_grep = time.monotonic() - t0
            res = audit(tmp, paths, read_review(args.review_path),
                        args.jobs)
            res['seconds'] = round(time.monotonic() - t0, 1)
            res['prefilter_seconds'] = round(t_grep, 1)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        res.update(tree=tree.name, rev=rev, package='%s %s' % (
            state['package'], state['version']),
            coccicheck=coccicheck_scripts(tree.linux, rev))
    res['spatch'] = spatch_version()
    res['review'] = display(args.review_path)
    write_report(res, args.out_dir)
    return res


# --------------------------------------------------------------------------
# Planted mutants
# --------------------------------------------------------------------------

def planted_mutants(tree: Tree
                    ) -> list[tuple[str, str, list[str], str]]:
    """[(name, path, files, expect)] of tools/cocci/planted/TREE/*.patch.
    Each patch's header names the files to copy ('Files: a.c b.h') and
    what the audit must say ('Expect: MISMATCH path')."""
    d = os.path.join(PLANTED, tree.name)
    out: list[tuple[str, str, list[str], str]] = []
    if not os.path.isdir(d):
        return out
    for name in sorted(os.listdir(d)):
        if not name.endswith('.patch'):
            continue
        path = os.path.join(d, name)
        with open(path) as f:
            text = f.read()
        files = re.search(r'^Files:\s*(.+)$', text, re.M)
        expect = re.search(r'^Expect:\s*(.+)$', text, re.M)
        if not files or not expect:
            raise ToolError('%s: needs a "Files:" and an "Expect:" line'
                            % display(path))
        out.append((name[:-6], path, files.group(1).split(),
                    expect.group(1).strip()))
    return out


def copy_files(linux: str, rev: str, files: Iterable[str],
               dest: str) -> None:
    for rel in files:
        proc = subprocess.run(['git', '-C', linux, 'show', '%s:%s'
                               % (rev, rel)], stdout=subprocess.PIPE)
        if proc.returncode:
            raise ToolError('%s has no %s at %s' % (display(linux), rel,
                                                    rev[:12]))
        os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest,
                    exist_ok=True)
        with open(os.path.join(dest, rel), 'wb') as f:
            f.write(proc.stdout)


def run_planted(tree: Tree, linux: str, rev: str,
                mutant: tuple[str, str, list[str], str],
                jobs: int) -> tuple[bool, str]:
    """Plant one mutant in a copy of its files; return (ok, why)."""
    name, patch, files, expect = mutant
    tmp = tempfile.mkdtemp(prefix='gpk-audit-planted-')
    try:
        copy_files(linux, rev, files, tmp)
        before = audit(tmp, prefilter_dir(tmp), {}, jobs, whole=False)
        proc = subprocess.run(['git', 'apply', '--unsafe-paths', patch],
                              cwd=tmp, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        if proc.returncode:
            return False, 'does not apply: %s' % (
                proc.stdout.strip().splitlines() or ['?'])[0]
        after = audit(tmp, prefilter_dir(tmp), {}, jobs, whole=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    m = re.match(r'MISMATCH\s+(\S+)$', expect)
    if not m:
        return False, 'Expect: %r is not "MISMATCH path"' % expect
    where = m.group(1)

    def flagged(res):
        return [s for s in res['sites'] if s['class'] == 'mismatched' and
                where in s['why'] + ' ' + s['file']] + \
            [x for x in res['other_mismatches']
             if where in x['why'] + ' ' + x['file']]
    if flagged(before):
        return False, 'the unmutated copy is already flagged'
    hits = flagged(after)
    if not hits:
        return False, 'not flagged: %s' % summary_line(
            tree.name, after['counts'])
    return True, hits[0]['why']


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_tree_argument(ap)
    ap.add_argument('--source', metavar='DIR', help='audit DIR (a copy of '
                    'some files of one tree) instead of build/TREE/linux')
    ap.add_argument('--planted', action='store_true',
                    help='plant the mutants of tools/cocci/planted/TREE/ '
                    'and check that each is flagged')
    ap.add_argument('--no-prepare', dest='prepare', action='store_false',
                    help='use build/TREE/linux as it is (no lock, no '
                    'prepare_tree)')
    ap.add_argument('--review', default=REVIEW, help='the review of the '
                    'unresolved sites (default docs/{tree}/audit-review.md)')
    ap.add_argument('--out', default=os.path.join('{results}', '{tree}'),
                    help='directory of audit.md and audit.json (default '
                    'results/{tree})')
    ap.add_argument('--jobs', type=int, default=2,
                    help='spatch jobs (at most 2; default 2)')
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    if args.source and len(trees) != 1:
        die(TOOL, '--source needs exactly one --tree (whose review it '
            'uses)', 2)
    if args.jobs < 1:
        die(TOOL, '--jobs %d: must be at least 1' % args.jobs, 2)
    if not spatch_version():
        die(TOOL, 'spatch not found: make deps, or apt-get install '
            'coccinelle')
    failed = 0
    passed = 0
    try:
        lock = BuildLock(TOOL) if args.prepare and not args.source else None
        if lock:
            lock.__enter__()
        try:
            for tree in trees:
                args.review_path = args.review.replace('{tree}', tree.name)
                if args.planted:
                    import prepare_tree
                    state = prepare_tree.prepare(tree, quiet=True) \
                        if args.prepare else load_state(tree)
                    if not state:
                        raise ToolError('%s is not prepared' % display(
                            tree.linux))
                    for mutant in planted_mutants(tree):
                        ok, why = run_planted(tree, tree.linux,
                                              state['series_head'], mutant,
                                              args.jobs)
                        print('%s: %s: planted %s: %s: %s' % (
                            TOOL, tree.name, mutant[0],
                            'flagged' if ok else 'FAILED', why), flush=True)
                        passed += ok
                        failed += not ok
                    continue
                args.out_dir = tree.expand(args.out)
                res = audit_tree(tree, args)
                for p in res['problems']:
                    print('%s: %s: %s' % (TOOL, tree.name, p))
                print('%s: %s (%.0f s; %s)' % (
                    TOOL, summary_line(tree.name, res['counts']),
                    res['seconds'], display(os.path.join(
                        args.out_dir, 'audit.md'))), flush=True)
                if res['problems']:
                    failed += 1
                else:
                    passed += 1
        finally:
            if lock:
                lock.__exit__(None, None, None)
    except ToolError as e:
        die(TOOL, str(e), e.status)
    except KeyboardInterrupt:
        die(TOOL, 'interrupted', 130)
    print('%d passed, %d failed, 0 skipped' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
