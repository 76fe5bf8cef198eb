"""The classification of the audit (tools/audit.py): from the facts that
the semantic patches of tools/cocci/ report to the pin call sites,
each matched, mismatched or unresolved, and the mismatches outside them.

What each class means is in audit.py's docstring (audit.py --help).
"""
import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cscan import function_span  # noqa: E402

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
CLASSES = ('matched', 'mismatched', 'unresolved')


def squash(expr: str | None) -> str:
    """An expression as spatch prints it ('imu -> bvec [ i ]'), without
    blanks."""
    return re.sub(r'\s+', '', expr or '')


def base_of(expr: str | None) -> str:
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


def mentions(args: str, base: str | None) -> bool:
    """Whether the squashed argument text names base (not as a field of
    something else, not as part of a longer name)."""
    if not base:
        return False
    return re.search(r'(?<![\w.>])%s(?![\w])' % re.escape(base),
                     squash(args)) is not None


# --------------------------------------------------------------------------
# Function text: the hash of the review, and what the pages do there
# --------------------------------------------------------------------------

def strip_comments(text: str) -> str:
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'),
                  text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


def function_text(lines: list[str], line: int) -> str | None:
    span = function_span(lines, line)
    if span is None:
        return None
    return '\n'.join(lines[span[0] - 1:span[1]]) + '\n'


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def escapes(text: str, base: str | None, function: str) -> str:
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


def field_of(text: str, base: str | None) -> str | None:
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


def field_releases(facts: list[dict], path: str, field: str) -> list[dict]:
    """The release calls of the files of path's directory (a driver)
    whose arguments name ->field or .field."""
    pat = re.compile(r'(?:->|\.)%s(?!\w)' % re.escape(field))
    d = os.path.dirname(path)
    return [f for f in facts if f['kind'] == 'release' and
            os.path.dirname(f['file']) == d and
            pat.search(squash(f.get('args', '')))]


def callers(files: dict[str, list[str]],
            function: str) -> list[tuple[str, str]]:
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

def rel_kind(call: str) -> str:
    return 'unpin' if call in UNPIN else 'put'


def classify(facts: list[dict], files: dict[str, list[str]]
             ) -> tuple[list[dict], list[dict]]:
    """Classify every pin call site.

    facts: parse_facts() of every cocci file; files: {path: [lines]} of
    the audited files. Returns (sites, extra): sites a list of dicts
    (key, file, line, function, call, pages, class, why, releases,
    structures, hash); extra the mismatches outside pin sites (get calls
    released by an unpin, FOLL_PIN to the get family, put releases of a
    followed structure)."""
    known = Facts(facts, files)
    sites: list[dict] = []
    count: dict[str, int] = {}
    for f in facts:
        if f['kind'] != 'pin':
            continue
        # the key of the review: `file:function:call`, `#N` for the N-th
        # call of the same API in one function
        k = '%s:%s:%s' % (f['file'], f.get('function') or '?', f['call'])
        count[k] = count.get(k, 0) + 1
        sites.append(pin_site(known, f, k if count[k] == 1 else
                              '%s#%d' % (k, count[k])))
    return sites, other_mismatches(known)


class Facts:
    """The facts of one audit and the files they are about, indexed for
    classifying its pin sites."""

    def __init__(self, facts: list[dict],
                 files: dict[str, list[str]]) -> None:
        self.files = files
        self.by_fn: dict[tuple[str, str | None], list[dict]] = {}
        for f in facts:
            self.by_fn.setdefault((f['file'], f.get('function')),
                                  []).append(f)
        self.stores = [f for f in facts if f['kind'] == 'store']
        self.srel = [f for f in facts if f['kind'] == 'struct_release']
        # the release calls of a function called under a structure's
        # guard are that structure's releases
        for g in facts:
            if g['kind'] != 'guarded_call' or g['callee'] in UNPIN + PUT:
                continue
            for r in facts:
                if r['kind'] == 'release' and \
                   r.get('function') == g['callee']:
                    self.srel.append(dict(
                        r, kind='struct_release', structure=g['structure'],
                        via='%s:%d' % (g['file'], g['line'])))
        self.all = facts + [r for r in self.srel if r.get('via')]

    def struct_releases(self, name: str, store_file: str) -> list[dict]:
        """The releases of the structure name stored in store_file."""
        out = []
        for r in self.srel:
            if r['structure'] != name:
                continue
            if r.get('scope', 'any') == 'file' and r['file'] != store_file:
                continue
            out.append(r)
        return out


def pin_site(known: Facts, f: dict, key: str) -> dict:
    """The site of the pin fact f (a dict, as classify() returns them)."""
    fn = f.get('function') or '?'
    text = function_text(known.files.get(f['file'], []), f['line']) or ''
    base = base_of(f.get('pages', ''))
    mine = known.by_fn.get((f['file'], fn), [])
    rels = [r for r in mine if r['kind'] == 'release' and
            mentions(r.get('args', ''), base)]
    why = misuses(f, mine, rels)
    esc = escapes(text, base, fn) if text else \
        'no function text around the call'
    structures = []
    for name, s in sorted(linked_structures(known, f, fn, base,
                                            esc).items()):
        rs = known.struct_releases(name, s['file'])
        structures.append({
            'structure': name, 'store': '%s:%d' % (s['file'], s['line']),
            'direct': s['direct'],
            'releases': ['%s:%d %s()' % (r['file'], r['line'], r['call'])
                         for r in rs]})
        for r in rs:
            if rel_kind(r['call']) == 'put':
                why.append('its pages go into %s (%s:%d), released by '
                           '%s() at %s:%d' % (name, s['file'], s['line'],
                                              r['call'], r['file'],
                                              r['line']))
    cls, more, rels = site_class(known, f, text, base, esc, rels,
                                 structures, why)
    return {
        'key': key, 'file': f['file'], 'line': f['line'],
        'function': fn, 'call': f['call'], 'pages': squash(f['pages']),
        'flags': squash(f.get('flags', '')), 'class': cls,
        'why': '; '.join(why + more),
        'hash': text_hash(text) if text else '',
        'releases': ['%s:%d %s()' % (r['file'], r['line'], r['call'])
                     for r in rels],
        'structures': structures}


def misuses(f: dict, mine: list[dict], rels: list[dict]) -> list[str]:
    """What is wrong with the pin fact f on its own, given the facts of its
    function (mine) and the releases of its pages there (rels): a put
    release, a FOLL_GET, an unchecked count. [reason]"""
    why = []
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
                                             x['file'], x['release_line']))
    return why


def linked_structures(known: Facts, f: dict, fn: str, base: str,
                      esc: str) -> dict[str, dict]:
    """The structures the pages of the pin fact f go into: {name: its
    store fact, with 'direct' True if stored in fn itself}. Stored in fn,
    or, when the pages leave fn (esc), in a caller up to three calls up."""
    linked: dict[str, dict] = {}
    for s in known.stores:
        if (s['file'], s.get('function')) == (f['file'], fn) and \
           (not s.get('pages') or mentions(s['pages'], base) or
                base_of(s['pages']) == base):
            linked.setdefault(s['structure'], dict(s, direct=True))
    if not esc:
        return linked
    frontier, seen = [(f['file'], fn)], {(f['file'], fn)}
    for _depth in range(3):
        nxt = []
        for _path, name in frontier:
            for c in callers(known.files, name):
                if c in seen:
                    continue
                seen.add(c)
                nxt.append(c)
                for s in known.stores:
                    # a structure kept per file (pfns) is the business of
                    # the function that stores it
                    if (s['file'], s.get('function')) == c and \
                       s.get('scope') != 'file':
                        linked.setdefault(s['structure'],
                                          dict(s, direct=False))
        frontier = nxt
    return linked


def site_class(known: Facts, f: dict, text: str, base: str, esc: str,
               rels: list[dict], structures: list[dict],
               why: list[str]) -> tuple[str, list[str], list[dict]]:
    """The class of the pin fact f, whose misuses are why so far: (class,
    the reasons to add to why, the releases to report). esc: why the
    pages leave the function, or ''; rels: their releases there;
    structures: those they go into."""
    fn = f.get('function') or '?'
    if why:
        return 'mismatched', [], rels
    if not esc and rels:
        return 'matched', ['released in %s() by %s' % (fn, ', '.join(
            '%s() at line %d' % (r['call'], r['line']) for r in rels))], rels
    direct = [s for s in structures if s['direct']]
    resolved = [s for s in direct if s['releases']]
    if esc and resolved and len(resolved) == len(direct):
        return 'matched', ['%s; followed into %s' % (esc, ', '.join(
            '%s (released at %s)' % (s['structure'],
                                     ', '.join(s['releases']))
            for s in resolved))], rels
    fld = field_of(text, base) if esc else None
    frel = field_releases(known.all, f['file'], fld) if fld else []
    fput = [r for r in frel if rel_kind(r['call']) == 'put']
    if fput:
        return 'mismatched', ['%s; the field %s is released by %s() at '
                              '%s:%d' % (esc, fld, fput[0]['call'],
                                         fput[0]['file'],
                                         fput[0]['line'])], rels
    if esc and any(r['function'] != fn for r in frel):
        return 'matched', ['%s; followed the field ->%s: released at %s'
                           % (esc, fld, ', '.join(
                               '%s:%d %s() in %s()' % (
                                   r['file'], r['line'], r['call'],
                                   r['function']) for r in frel))], frel
    return 'unresolved', [esc or 'no release of %s found in %s()'
                          % (base or f.get('pages'), fn)], rels


def other_mismatches(known: Facts) -> list[dict]:
    """The mismatches that are no pin site: pages from the get family
    released by an unpin, FOLL_PIN passed to the get family (but by mm/gup.c,
    the pin API itself), a put release of a followed structure."""
    extra = []
    for f in known.all:
        if f['kind'] == 'get':
            base = base_of(f.get('pages', ''))
            mine = known.by_fn.get((f['file'], f.get('function')), [])
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
    return extra
