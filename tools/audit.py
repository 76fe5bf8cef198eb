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
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (ROOT, BuildLock, ToolError,  # noqa: E402
                     add_tree_argument, die, display, load_state, run,
                     selected_trees)
from _cscan import function_span  # noqa: E402

TOOL = 'audit'
COCCI_DIR = os.path.join(ROOT, 'tools', 'cocci')
COCCI = ('sites.cocci', 'flow.cocci', 'structures.cocci')
PLANTED = os.path.join(COCCI_DIR, 'planted')
REVIEW = os.path.join(ROOT, 'docs', '{tree}', 'audit-review.md')
PIN_CALLS = ('pin_user_pages', 'pin_user_pages_fast',
             'pin_user_pages_fast_only', 'pin_user_pages_remote',
             'pin_user_pages_unlocked', 'memfd_pin_folios')
UNPIN = ('unpin_user_page', 'unpin_user_pages', 'unpin_user_pages_dirty_lock',
         'unpin_user_page_range_dirty_lock', 'unpin_folio', 'unpin_folios',
         'unpin_user_folio')
# What sites.cocci reports as a release and is not an unpin: it drops a
# reference (FOLL_GET), not a pin.
PUT = ('put_page', 'put_user_page', 'put_user_pages',
       'put_user_pages_dirty_lock', 'release_pages', 'folio_put',
       'folios_put', 'folio_put_refs', 'put_pages_list',
       'put_devmap_managed_page')
# The pre-filter: a file is parsed only if it names one of these.
PREFILTER = (r'\b(pin_user_pages\w*|memfd_pin_folios|get_user_pages\w*|'
             r'unpin_user_\w+|unpin_folios?|BIO_PAGE_PINNED|io_mapped_ubuf)\b')
# ... and, in the directories of the files that call the pin API, the
# files that drop references: a driver may keep pinned pages in a
# structure and release them in another of its files.
PIN_RE = r'\b(pin_user_pages\w*|memfd_pin_folios)\s*\('
PUT_RE = r'\b(put_page|put_user_pages?|release_pages|folios?_put\w*)\s*\('
# Functions that keep a page array or page they are given (an sg table,
# a mapping, a bio, a bvec): a pin site passing its pages to one of
# them hands them on.
CAPTURE = ('sg_alloc_table_from_pages', 'sg_alloc_table_from_pages_segment',
           'sg_alloc_append_table_from_pages', '__sg_alloc_table_from_pages',
           'sg_set_page', 'vmap', 'vm_map_ram', 'bio_add_page',
           '__bio_add_page', 'bio_add_pc_page', 'bvec_set_page',
           'bio_add_folio', 'iov_iter_bvec', 'frame_vector_to_pages',
           'xa_store', 'list_add', 'list_add_tail')
# Functions that use a page without keeping it (a page handed to any other
# function counts as leaving the function that pinned it).
HARMLESS = ('page_address', 'kmap', 'kmap_local_page', 'kmap_atomic',
            'kunmap', 'flush_dcache_page', 'set_page_dirty',
            'set_page_dirty_lock', 'SetPageDirty', 'page_to_phys',
            'page_to_virt', 'page_folio', 'is_zero_pfn', 'PageReserved',
            'PageCompound', 'compound_head', 'PageHuge', 'put_user_page',
            'memcpy_to_page', 'memcpy_from_page', 'copy_page',
            'clear_page', 'WARN_ON', 'WARN_ON_ONCE', 'BUG_ON', 'unlikely',
            'likely', 'pr_debug', 'dev_dbg', 'offset_in_page',
            'min', 'max', 'min_t', 'max_t', 'folio_size', 'page_size')
SPATCH_OPTS = ['--very-quiet', '--no-show-diff', '--no-includes',
               '--include-headers', '--timeout', '120']
CLASSES = ('matched', 'mismatched', 'unresolved')
ROW_RE = re.compile(r'^\|\s*`([^`]+)`\s*\|\s*`([0-9a-f]{12})`\s*\|\s*'
                    r'(ok|bug)\s*\|([^|]*)\|(.*)\|\s*$')
LOC_RE = re.compile(r'`([\w./+-]+):(\d+)`')


# --------------------------------------------------------------------------
# The facts that spatch reports
# --------------------------------------------------------------------------

def parse_facts(text, root=''):
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


def squash(expr):
    """An expression as spatch prints it ('imu -> bvec [ i ]'), without
    blanks."""
    return re.sub(r'\s+', '', expr or '')


def base_of(expr):
    """The array (or page) a pages argument names: '&pages[i]', 'pages + i'
    and '(struct page **)pages' are 'pages'; 'umem->page_list' stays."""
    e = squash(expr)
    e = re.sub(r'^\((?:const)?(?:struct)?\w+\**\)', '', e)
    e = e.lstrip('&*')
    if e.startswith('(') and e.endswith(')'):
        e = e[1:-1].lstrip('&*')
    e = re.split(r'[+\-](?!>)', e, maxsplit=1)[0]
    e = re.sub(r'\[[^\]]*\]$', '', e)
    return e


def mentions(args, base):
    """Whether the squashed argument text names base (not as a field of
    something else, not as part of a longer name)."""
    if not base:
        return False
    return re.search(r'(?<![\w.>])%s(?![\w])' % re.escape(base),
                     squash(args)) is not None


# --------------------------------------------------------------------------
# Function text: the hash of the review, and what the pages do there
# --------------------------------------------------------------------------

def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'),
                  text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def function_text(lines, line):
    span = function_span(lines, line)
    if span is None:
        return None
    return '\n'.join(lines[span[0] - 1:span[1]]) + '\n'


def text_hash(text):
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def escapes(text, base, function):
    """Why the pages named base leave the function (text), or ''."""
    if not base:
        return 'the page array is an expression the audit cannot follow'
    if '->' in base or '.' in base:
        return 'the page array is a field (%s)' % base
    body = strip_comments(text)
    head, _, rest = body.partition('\n{')
    b = re.escape(base)
    if re.search(r'(?<![\w.>])%s(?!\w)' % b, head.split(function, 1)[-1]):
        return 'the page array is a parameter: the caller\'s'
    if re.search(r'\breturn\b[^;]*(?<![\w.>])%s(?!\w)' % b, rest):
        return 'returned'
    if re.search(r'(->|\.)\s*\w+(\s*\[[^\]]*\])*\s*=\s*[^;=]*(?<![\w.>])%s'
                 r'(?!\w)' % b, rest):
        return 'stored in a structure'
    if re.search(r'(^|[;{}(]\s*)\*\s*\w+\s*=\s*(?<![\w.>])%s(?!\w)' % b,
                 rest, flags=re.M):
        return 'stored through an out parameter'
    m = re.search(r'\b(%s)\s*\([^;]*(?<![\w.>])%s(?!\w)'
                  % ('|'.join(CAPTURE), b), rest)
    if m:
        return 'handed to %s()' % m.group(1)
    # a page of the array handed to any other function may be kept there
    for m in re.finditer(r'\b(\w+)\s*\(([^;]*?(?<![\w.>])%s\s*\[[^;]*)'
                         % b, rest):
        if m.group(1) not in HARMLESS + UNPIN + PUT + PIN_CALLS + (
                'sizeof', 'if', 'while', 'for', 'switch', 'return'):
            return 'a page handed to %s()' % m.group(1)
    return ''


def field_of(text, base):
    """The field that holds the pages: base's own last field ('umem->pgs'
    -> 'pgs'), or the field base is stored into ('x->f = base',
    'x->f[i] = base[i]'); None if neither."""
    m = re.search(r'(?:->|\.)(\w+)$', base or '')
    if m:
        return m.group(1)
    if not base:
        return None
    body = strip_comments(text)
    m = re.search(r'(?:->|\.)\s*(\w+)(?:\s*\[[^\]]*\])*\s*=\s*(?:\([^)]*\)\s*)?'
                  r'%s(?!\w)' % re.escape(base), body)
    return m.group(1) if m else None


def field_releases(facts, path, field):
    """The release calls of the files of path's directory (a driver)
    whose arguments name ->field or .field."""
    pat = re.compile(r'(?:->|\.)%s(?!\w)' % re.escape(field))
    d = os.path.dirname(path)
    return [f for f in facts if f['kind'] == 'release' and
            os.path.dirname(f['file']) == d and
            pat.search(squash(f.get('args', '')))]


def callers(files, function):
    """The (file, function) pairs whose text calls function: [(file,
    name)], from the function spans of the files' text (name taken from
    the header)."""
    out = []
    pat = re.compile(r'(?<![\w.>])%s\s*\(' % re.escape(function))
    for path, lines in files.items():
        text = '\n'.join(lines)
        if not pat.search(text):
            continue
        for n, ln in enumerate(lines, 1):
            if not pat.search(ln):
                continue
            span = function_span(lines, n)
            if span is None:
                continue
            header = ' '.join(lines[span[0] - 1:span[1]]).split('{', 1)[0]
            names = re.findall(r'(\w+)\s*\(', header)
            if names and names[0] != function:
                out.append((path, names[0]))
    return sorted(set(out))


# --------------------------------------------------------------------------
# Classification
# --------------------------------------------------------------------------

def rel_kind(call):
    return 'unpin' if call in UNPIN else 'put'


def classify(facts, files):
    """Classify every pin call site.

    facts: parse_facts() of every cocci file; files: {path: [lines]} of
    the audited files. Returns (sites, extra): sites a list of dicts
    (key, file, line, function, call, pages, class, why, releases,
    structures, hash); extra the mismatches outside pin sites (get calls
    released by an unpin, FOLL_PIN to the get family, put releases of a
    followed structure)."""
    by_fn = {}
    for f in facts:
        by_fn.setdefault((f['file'], f.get('function')), []).append(f)
    stores = [f for f in facts if f['kind'] == 'store']
    srel = [f for f in facts if f['kind'] == 'struct_release']
    # the release calls of a function called under a structure's guard
    # are that structure's releases
    for g in facts:
        if g['kind'] != 'guarded_call' or g['callee'] in UNPIN + PUT:
            continue
        for r in facts:
            if r['kind'] == 'release' and r.get('function') == g['callee']:
                srel.append(dict(r, kind='struct_release',
                                 structure=g['structure'],
                                 via='%s:%d' % (g['file'], g['line'])))
    facts = facts + [r for r in srel if r.get('via')]

    def struct_releases(name, store_file):
        out = []
        for r in srel:
            if r['structure'] != name:
                continue
            if r.get('scope', 'any') == 'file' and r['file'] != store_file:
                continue
            out.append(r)
        return out

    sites, extra, count = [], [], {}
    for f in facts:
        if f['kind'] != 'pin':
            continue
        lines = files.get(f['file'], [])
        text = function_text(lines, f['line']) or ''
        fn = f.get('function') or '?'
        k = '%s:%s:%s' % (f['file'], fn, f['call'])
        count[k] = count.get(k, 0) + 1
        key = k if count[k] == 1 else '%s#%d' % (k, count[k])
        base = base_of(f.get('pages', ''))
        mine = by_fn.get((f['file'], fn), [])
        rels = [r for r in mine if r['kind'] == 'release' and
                mentions(r.get('args', ''), base)]
        why = []
        cls = None
        puts = [r for r in rels if rel_kind(r['call']) == 'put']
        if puts:
            why.append('released by %s() at %s:%d' % (
                puts[0]['call'], puts[0]['file'], puts[0]['line']))
        for x in mine:
            if x['kind'] == 'flag' and x['line'] == f['line'] and \
               x['call'] == f['call']:
                why.append('%s passed to %s()%s' % (
                    x['flag'], x['call'],
                    ' through %s' % x['via'] if x.get('via') else ''))
            if x['kind'] == 'errcount' and x['line'] == f['line']:
                why.append('its return %s is passed unchecked as the count '
                           'of %s() at %s:%s' % (x['count'], x['unpin'],
                                                 x['file'],
                                                 x['release_line']))
        # structures: stored in this function, or in a caller (up to three
        # calls up) when the pages leave the function
        esc = escapes(text, base, fn) if text else \
            'no function text around the call'
        linked, direct = {}, set()
        for s in stores:
            if (s['file'], s.get('function')) == (f['file'], fn) and \
               (not s.get('pages') or mentions(s['pages'], base) or
                base_of(s['pages']) == base):
                linked.setdefault(s['structure'], s)
                direct.add(s['structure'])
        if esc:
            frontier, seen = [(f['file'], fn)], {(f['file'], fn)}
            for _depth in range(3):
                nxt = []
                for _path, name in frontier:
                    for c in callers(files, name):
                        if c in seen:
                            continue
                        seen.add(c)
                        nxt.append(c)
                        for s in stores:
                            # a structure kept per file (pfns) is the
                            # business of the function that stores it
                            if (s['file'], s.get('function')) == c and \
                               s.get('scope') != 'file':
                                linked.setdefault(s['structure'], s)
                frontier = nxt
        structures = []
        for name, s in sorted(linked.items()):
            rs = struct_releases(name, s['file'])
            structures.append({
                'structure': name, 'store': '%s:%d' % (s['file'], s['line']),
                'direct': name in direct,
                'releases': ['%s:%d %s()' % (r['file'], r['line'], r['call'])
                             for r in rs]})
            for r in rs:
                if rel_kind(r['call']) == 'put':
                    why.append('its pages go into %s (%s:%d), released by '
                               '%s() at %s:%d' % (name, s['file'], s['line'],
                                                  r['call'], r['file'],
                                                  r['line']))
        if why:
            cls = 'mismatched'
        elif not esc and rels:
            cls = 'matched'
            why.append('released in %s() by %s' % (fn, ', '.join(
                '%s() at line %d' % (r['call'], r['line']) for r in rels)))
        else:
            resolved = [s for s in structures if s['direct'] and
                        s['releases']]
            if esc and resolved and len(resolved) == len(
                    [s for s in structures if s['direct']]):
                cls = 'matched'
                why.append('%s; followed into %s' % (esc, ', '.join(
                    '%s (released at %s)' % (s['structure'],
                                             ', '.join(s['releases']))
                    for s in resolved)))
            else:
                fld = field_of(text, base) if esc else None
                frel = field_releases(facts, f['file'], fld) if fld else []
                fput = [r for r in frel if rel_kind(r['call']) == 'put']
                if fput:
                    cls = 'mismatched'
                    why.append('%s; the field %s is released by %s() at '
                               '%s:%d' % (esc, fld, fput[0]['call'],
                                          fput[0]['file'], fput[0]['line']))
                elif esc and any(r['function'] != fn for r in frel):
                    cls = 'matched'
                    why.append('%s; followed the field ->%s: released at %s'
                               % (esc, fld, ', '.join(
                                   '%s:%d %s() in %s()' % (
                                       r['file'], r['line'], r['call'],
                                       r['function']) for r in frel)))
                    rels = frel
                else:
                    cls = 'unresolved'
                    why.append(esc or 'no release of %s found in %s()'
                               % (base or f.get('pages'), fn))
        sites.append({
            'key': key, 'file': f['file'], 'line': f['line'],
            'function': fn, 'call': f['call'], 'pages': squash(f['pages']),
            'flags': squash(f.get('flags', '')), 'class': cls,
            'why': '; '.join(why), 'hash': text_hash(text) if text else '',
            'releases': ['%s:%d %s()' % (r['file'], r['line'], r['call'])
                         for r in rels],
            'structures': structures})
    # mismatches that are no pin site
    for f in facts:
        if f['kind'] == 'get':
            base = base_of(f.get('pages', ''))
            mine = by_fn.get((f['file'], f.get('function')), [])
            # an array that a pin call of the same function fills too is
            # the pin site's business
            if any(x['kind'] == 'pin' and base_of(x.get('pages')) == base
                   for x in mine):
                continue
            for r in mine:
                if r['kind'] == 'release' and rel_kind(r['call']) == \
                   'unpin' and mentions(r.get('args', ''), base):
                    extra.append(dict(
                        kind='get-unpin', file=f['file'], line=f['line'],
                        function=f.get('function'), call=f['call'],
                        why='pages from %s() released by %s() at %s:%d' % (
                            f['call'], r['call'], r['file'], r['line'])))
        elif f['kind'] == 'flag' and f['flag'] == 'FOLL_PIN' and \
                f['file'] != 'mm/gup.c':
            extra.append(dict(
                kind='get-foll-pin', file=f['file'], line=f['line'],
                function=f.get('function'), call=f['call'],
                why='FOLL_PIN passed to %s()%s' % (
                    f['call'], ' through %s' % f['via'] if f.get('via')
                    else '')))
        elif f['kind'] == 'struct_release' and \
                rel_kind(f['call']) == 'put' and f.get('scope') != 'file':
            extra.append(dict(
                kind='struct-put', file=f['file'], line=f['line'],
                function=f.get('function'), call=f['call'],
                why='%s() releases a page of %s, whose pages are pinned'
                % (f['call'], f['structure'])))
    return sites, extra


# --------------------------------------------------------------------------
# The review
# --------------------------------------------------------------------------

def read_review(path):
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
    out = {}
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


def check_review(sites, extra, review, files, whole=True):
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
# Running spatch
# --------------------------------------------------------------------------

def spatch_version():
    try:
        proc = subprocess.run(['spatch', '--version'], text=True,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    except FileNotFoundError:
        return None
    first = (proc.stdout.splitlines() or [''])[0]
    return first.strip() or None


def run_spatch(src, jobs, cocci=COCCI):
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


def read_files(src, rels):
    out = {}
    for rel in rels:
        try:
            with open(os.path.join(src, rel), encoding='utf-8',
                      errors='replace') as f:
                out[rel] = f.read().splitlines()
        except OSError:
            pass
    return out


def prefilter_dir(src):
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


def gitre(regex):
    """A Python regex of this file as git grep -E takes it."""
    return regex.replace(r'\w', '[A-Za-z0-9_]').replace(r'\s', '[[:space:]]')


def export_tree(linux, rev, dest):
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
    arch.stdout.close()
    if arch.wait() or tar.returncode:
        raise ToolError('git archive of %d files of %s failed'
                        % (len(paths), display(linux)))
    return paths


def coccicheck_scripts(linux, rev):
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


# --------------------------------------------------------------------------
# One audit
# --------------------------------------------------------------------------

def audit(src, paths, review, jobs, whole=True):
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


def summary_line(tree, c):
    return ('%s: %d sites: %d matched, %d mismatched, %d unresolved (%d '
            'with a verdict); %d other mismatches; %d problems'
            % (tree, c['sites'], c['matched'], c['mismatched'],
               c['unresolved'], c['unresolved_with_verdict'],
               c['mismatches'] - c['mismatched'], c['problems']))


def write_report(res, out_dir):
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


def audit_tree(tree, args):
    """Audit one tree; write its report; return (result, problems)."""
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
            state = load_state(tree)
            if not state or not os.path.isdir(tree.linux):
                raise ToolError('%s is not prepared: run make tree TREE=%s'
                                % (display(tree.linux), tree.name))
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

def planted_mutants(tree):
    """[(name, path, files, expect)] of tools/cocci/planted/TREE/*.patch.
    Each patch's header names the files to copy ('Files: a.c b.h') and
    what the audit must say ('Expect: MISMATCH path')."""
    d = os.path.join(PLANTED, tree.name)
    out = []
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


def copy_files(linux, rev, files, dest):
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


def run_planted(tree, linux, rev, mutant, jobs):
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


def main():
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
