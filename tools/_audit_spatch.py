"""The Coccinelle runner of the audit (tools/audit.py): which files of a
tree to parse (the pre-filter), copying them out of the tree, running
the semantic patches of tools/cocci/ on them with spatch, and reading
the facts they print.
"""
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT, ToolError, display, run  # noqa: E402

COCCI_DIR = os.path.join(ROOT, 'tools', 'cocci')
COCCI = ('sites.cocci', 'flow.cocci', 'structures.cocci')
# The pre-filter: a file is parsed only if it names one of these.
PREFILTER = (r'\b(pin_user_pages\w*|memfd_pin_folios|get_user_pages\w*|'
             r'unpin_user_\w+|unpin_folios?|BIO_PAGE_PINNED|io_mapped_ubuf)\b')
# ... and, in the directories of the files that call the pin API, the
# files that drop references: a driver may keep pinned pages in a
# structure and release them in another of its files.
PIN_RE = r'\b(pin_user_pages\w*|memfd_pin_folios)\s*\('
PUT_RE = r'\b(put_page|put_user_pages?|release_pages|folios?_put\w*)\s*\('
SPATCH_OPTS = ['--very-quiet', '--no-show-diff', '--no-includes',
               '--include-headers', '--timeout', '120']


# --------------------------------------------------------------------------
# The facts that spatch reports
# --------------------------------------------------------------------------

def parse_facts(text: str, root: str = '') -> list[dict]:
    """The "AUDIT {json}" lines of spatch's output: [dict]. file is made
    relative to root (the directory spatch ran on). Other lines are
    ignored; a malformed AUDIT line is a ToolError."""
    out = []
    prefix = os.path.join(root, '') if root else ''
    for line in text.splitlines():
        if not line.startswith('AUDIT '):
            continue
        try:
            fact = json.loads(line[6:])
        except ValueError:
            raise ToolError('spatch printed a malformed fact: %s'
                            % line[:120])
        if not isinstance(fact, dict) or 'kind' not in fact or \
           'file' not in fact or 'line' not in fact:
            raise ToolError('spatch printed a fact without kind, file or '
                            'line: %s' % line[:120])
        f = fact['file']
        if prefix and f.startswith(prefix):
            f = f[len(prefix):]
        while f.startswith('./'):
            f = f[2:]
        fact['file'] = f
        fact['line'] = int(fact['line'])
        out.append(fact)
    # spatch may report a fact twice (two paths, two jobs): once is enough.
    seen, uniq = set(), []
    for fact in out:
        key = json.dumps(fact, sort_keys=True)
        if key not in seen:
            seen.add(key)
            uniq.append(fact)
    return sorted(uniq, key=lambda f: (f['file'], f['line'],
                                       f.get('col', 0), f['kind']))


# --------------------------------------------------------------------------
# Running spatch
# --------------------------------------------------------------------------

def spatch_version() -> str | None:
    try:
        proc = subprocess.run(['spatch', '--version'], text=True,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    except FileNotFoundError:
        return None
    first = (proc.stdout.splitlines() or [''])[0]
    return first.strip() or None


def run_spatch(src: str, jobs: int,
               cocci: Iterable[str] = COCCI) -> list[dict]:
    """Run each semantic patch on the directory src; return the facts."""
    facts = []
    for name in cocci:
        cmd = ['nice', '-n', '10', 'spatch'] + SPATCH_OPTS + [
            '--jobs', str(max(1, min(jobs, 2))), '--sp-file',
            os.path.join(COCCI_DIR, name), '--dir', src]
        try:
            proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, cwd=src,
                                  errors='backslashreplace')
        except FileNotFoundError:
            raise ToolError('spatch not found: apt-get install coccinelle')
        bad = [ln for ln in proc.stdout.splitlines()
               if ln.startswith(('EXN:', 'Fatal error', 'Error in Python'))]
        if proc.returncode or bad:
            raise ToolError('spatch %s failed (exit %d): %s' % (
                name, proc.returncode,
                (bad or proc.stdout.strip().splitlines() or ['?'])[-1]))
        facts += parse_facts(proc.stdout, src)
    return facts


def read_files(src: str, rels: Iterable[str]) -> dict[str, list[str]]:
    out = {}
    for rel in rels:
        try:
            with open(os.path.join(src, rel), encoding='utf-8',
                      errors='replace') as f:
                out[rel] = f.read().splitlines()
        except OSError:
            pass
    return out


def prefilter_dir(src: str) -> list[str]:
    """The files under src that name what the rules look at (tree paths)."""
    pat, pin, put = (re.compile(r) for r in (PREFILTER, PIN_RE, PUT_RE))
    out, puts, pin_dirs = [], [], set()
    for dirpath, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
        for name in sorted(names):
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            with open(path, encoding='utf-8', errors='replace') as f:
                text = f.read()
            if pat.search(text):
                out.append(rel)
                if pin.search(text):
                    pin_dirs.add(os.path.dirname(rel))
            elif put.search(text):
                puts.append(rel)
    return sorted(out + [p for p in puts
                         if os.path.dirname(p) in pin_dirs])


def gitre(regex: str) -> str:
    """A Python regex of this file as git grep -E takes it."""
    return regex.replace(r'\w', '[A-Za-z0-9_]').replace(r'\s', '[[:space:]]')


def export_tree(linux: str, rev: str, dest: str) -> list[str]:
    """Copy the pre-filtered files of linux at rev into dest: their paths."""
    proc = run(['git', '-C', linux, 'grep', '-l', '-I', '-E',
                gitre(PREFILTER), rev, '--', '*.c', '*.h'], check=False,
               timeout=1800)
    if proc.returncode not in (0, 1):
        raise ToolError('git grep in %s failed: %s' % (
            display(linux), (proc.stdout.strip().splitlines() or ['?'])[-1]))
    paths = sorted(ln.split(':', 1)[1] for ln in proc.stdout.splitlines()
                   if ':' in ln)
    if not paths:
        raise ToolError('%s at %s names no pin API at all' % (
            display(linux), rev[:12]))
    pins = run(['git', '-C', linux, 'grep', '-l', '-E', gitre(PIN_RE), rev,
                '--'] + paths, check=False, timeout=1800)
    dirs = sorted({os.path.dirname(ln.split(':', 1)[1])
                   for ln in pins.stdout.splitlines() if ':' in ln})
    if dirs:
        puts = run(['git', '-C', linux, 'grep', '-l', '-E', gitre(PUT_RE),
                    rev, '--'] + ['%s/*.[ch]' % d if d else '*.[ch]'
                                  for d in dirs],
                   check=False, timeout=1800)
        paths = sorted(set(paths) | {
            p for p in (ln.split(':', 1)[1]
                        for ln in puts.stdout.splitlines() if ':' in ln)
            if os.path.dirname(p) in dirs})
    arch = subprocess.Popen(['git', '-C', linux, 'archive', rev, '--']
                            + paths, stdout=subprocess.PIPE)
    tar = subprocess.run(['tar', '-x', '-C', dest], stdin=arch.stdout)
    if arch.stdout:  # always: stdout=PIPE
        arch.stdout.close()
    if arch.wait() or tar.returncode:
        raise ToolError('git archive of %d files of %s failed'
                        % (len(paths), display(linux)))
    return paths


def coccicheck_scripts(linux: str, rev: str) -> tuple[int, list[str]]:
    """What the tree's own coccicheck scripts say about this API: the
    scripts/coccinelle files that name it."""
    proc = run(['git', '-C', linux, 'grep', '-l', '-E',
                'get_user_pages|pin_user_pages|unpin_user|put_page|'
                'FOLL_PIN|FOLL_GET|release_pages|folio_put', rev, '--',
                'scripts/coccinelle'], check=False)
    total = run(['git', '-C', linux, 'ls-tree', '-r', '--name-only', rev,
                 '--', 'scripts/coccinelle'], check=False)
    n = len([ln for ln in total.stdout.splitlines()
             if ln.endswith('.cocci')])
    return n, sorted(ln.split(':', 1)[1] for ln in proc.stdout.splitlines()
                     if ':' in ln)
