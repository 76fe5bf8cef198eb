"""One tree's mutants in the standard format of mutation testing: the JSON
of the mutation-testing-report-schema package (what Stryker, Infection and
the PIT plugins write, and what the mutation-testing-elements web
component shows). tools/report.py writes it to
results/TREE/mutation-report.json.

Every mutant of mutants.json (the catalogue) and mutants-generated.json
(the generated run) becomes one MutantResult, in the file its diff
changes first:
  id           its name
  mutatorName  the catalogue's bug class (its Models: line up to the first
               ';', ': ' or ' ('), or the generated
               operator as 'generated: OP'
  location     the lines and columns that the diff replaces, in the file
               as it is at the tree's series head (a hunk that the file no
               longer has where it says is looked for nearby, as patch
               does; one not found keeps its line and the report says so)
  replacement  what the diff puts there ('' for a deletion)
  status       _scores.Outcome.schema_status
  killedBy     the killing cases (suite.case[/param]); what else killed it
               (a crash, a suite that did not run) goes to statusReason
  description  the entry's description (and, for the catalogue, Models)
The source of each such file is the file at the series head
(build/TREE/linux, git show SERIES_HEAD:PATH), so that a mutant that the
lead engineer's tree carries at the moment never shows in it.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from _common import ROOT, ToolError, display, load_state, run
from _mutation import HUNK_RE, parse_header
import _scores

NPM = os.environ.get('GPK_NPM', os.path.join(ROOT, 'build', 'npm'))
SCHEMA_PKG = 'mutation-testing-report-schema'
ELEMENTS_PKG = 'mutation-testing-elements'
SCHEMA_FILE = os.path.join('src', 'mutation-testing-report-schema.json')
ELEMENTS_FILE = os.path.join('dist', 'mutation-test-elements.js')
THRESHOLDS = {'high': 90, 'low': 75}
SEARCH = 200        # lines around a hunk's stated place where it is sought

Hunk = Tuple[str, int, List[str]]          # path, old start, body lines
Location = Dict[str, Dict[str, int]]


# --------------------------------------------------------------------------
# The installed packages (tools/deps: npm ci into build/npm)
# --------------------------------------------------------------------------

def package_file(pkg: str, rel: str) -> str:
    """The path of rel inside the installed npm package pkg; ToolError
    naming tools/deps if it is not installed."""
    path = os.path.join(NPM, 'node_modules', pkg, rel)
    if not os.path.isfile(path):
        raise ToolError('%s is not installed (no %s; run sh tools/deps)'
                        % (pkg, display(path)))
    return path


def package_version(pkg: str) -> str:
    """The version of the installed npm package pkg."""
    with open(package_file(pkg, 'package.json')) as f:
        return json.load(f)['version']


def load_schema() -> Dict[str, Any]:
    """The JSON schema of the installed mutation-testing-report-schema."""
    path = package_file(SCHEMA_PKG, SCHEMA_FILE)
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        raise ToolError('%s: not JSON: %s' % (display(path), e))


def schema_version(schema: Dict[str, Any]) -> str:
    """The newest schemaVersion that the schema accepts: the upper bound
    of the major version its pattern allows (^([1-2])... gives '2')."""
    pattern = schema['properties']['schemaVersion'].get('pattern', '')
    m = re.match(r'^\^\(\[(\d)-(\d)\]\)', pattern) or \
        re.match(r'^\^\((\d)\)', pattern)
    if not m:
        raise ToolError('%s: cannot tell the schema version from the '
                        'pattern %r' % (SCHEMA_PKG, pattern))
    return m.groups()[-1]


# --------------------------------------------------------------------------
# Diffs: where a mutant is, and what it puts there
# --------------------------------------------------------------------------

def hunks(diff: str) -> List[Hunk]:
    """The hunks of a unified diff, each with its file's tree path."""
    out: List[Hunk] = []
    path: Optional[str] = None
    body: Optional[List[str]] = None
    for ln in diff.split('\n'):
        if ln.startswith('+++ '):
            p = ln[4:].split('\t', 1)[0].strip()
            path = p[2:] if p.startswith(('a/', 'b/')) else p
            body = None
            continue
        m = HUNK_RE.match(ln)
        if m and path:
            body = []
            out.append((path, int(m.group(1)), body))
        elif body is not None and ln[:1] in (' ', '-', '+', ''):
            body.append(ln)
        else:
            body = None
    for _p, _s, b in out:
        while b and b[-1] == '':
            b.pop()
    return out


def _find(block: List[str], lines: List[str], at: int) -> Optional[int]:
    """The 0-based index nearest to at where block starts in lines."""
    if not block:
        return at if 0 <= at <= len(lines) else None
    for d in range(0, SEARCH + 1):
        for i in ((at,) if d == 0 else (at - d, at + d)):
            if 0 <= i <= len(lines) - len(block) and \
                    lines[i:i + len(block)] == block:
                return i
    return None


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def place(hunk: Hunk, source: List[str]) -> Tuple[Location, str, str]:
    """(location, replacement, note) of a hunk's first change in source
    (the file's lines at the series head); note says when the hunk is not
    in the file and only its line number places it."""
    _path, start, body = hunk
    old = [b[1:] for b in body if b[:1] != '+']
    found = _find(old, source, start - 1)
    note = ''
    if found is None:
        found = max(min(start - 1, len(source) - 1), 0)
        note = ('the hunk is not in the series head\'s file: placed by its '
                'line number only')
    line = found + 1
    removed: List[Tuple[int, str]] = []
    added: List[str] = []
    for b in body:
        if b[:1] == '-':
            removed.append((line, b[1:]))
            line += 1
        elif b[:1] == '+':
            added.append(b[1:])
        elif removed or added:
            break
        else:
            line += 1
    return _span(removed, added, line, source) + (note,)


def _span(removed: List[Tuple[int, str]], added: List[str], at: int,
          source: List[str]) -> Tuple[Location, str]:
    """The location and replacement of one change: removed lines (with
    their numbers) replaced by added ones; at is the line after them."""
    def loc(l1: int, c1: int, l2: int, c2: int) -> Location:
        return {'start': {'line': l1, 'column': c1},
                'end': {'line': l2, 'column': c2}}

    if len(removed) == 1 and len(added) == 1:
        r, a = removed[0][1], added[0]
        p = 0
        while p < min(len(r), len(a)) and r[p] == a[p]:
            p += 1
        s = 0
        while s < min(len(r), len(a)) - p and r[-1 - s] == a[-1 - s]:
            s += 1
        if len(r) - s == p and p:
            p -= 1          # an insertion: shown replacing the char before
        if len(r) - s > p:
            n = removed[0][0]
            return loc(n, p + 1, n, len(r) - s + 1), a[p:len(a) - s]
    if removed:
        (n1, first), (n2, last) = removed[0], removed[-1]
        text = '\n'.join(added)
        return (loc(n1, _indent(first) + 1, n2, len(last) + 1),
                text[_indent(text):])
    # An insertion: shown as a change of the line before it.
    n = max(at - 1, 1)
    prev = source[n - 1] if n - 1 < len(source) else ''
    return (loc(n, _indent(prev) + 1, n, len(prev) + 1),
            '\n'.join([prev.strip()] + added))


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------

def series_source(tree: Any, path: str) -> str:
    """The text of a tree path at the tree's series head (its state's
    series_head in build/TREE/linux). ToolError if the tree is not
    prepared or has no such file there."""
    state = load_state(tree)
    if not state or not state.get('series_head'):
        raise ToolError('%s is not prepared (no series head): run make '
                        'tree TREE=%s' % (display(tree.linux), tree.name))
    proc = run(['git', '-C', tree.linux, 'show',
                '%s:%s' % (state['series_head'], path)], check=False)
    if proc.returncode:
        raise ToolError('%s has no %s at its series head %s'
                        % (display(tree.linux), path,
                           state['series_head'][:12]))
    return proc.stdout


def mutator(entry: Dict[str, Any]) -> str:
    """The mutator name of an entry: 'generated: OP', or the bug class
    of a catalogue mutant."""
    if entry.get('operator'):
        return 'generated: ' + entry['operator']
    models = (entry.get('models') or '').split(';')[0]
    models = re.split(r' \(|: ', models)[0].strip()
    return models or 'catalogue'


def mutant_result(o: _scores.Outcome, hunk: Optional[Hunk],
                  source: List[str]) -> Dict[str, Any]:
    """The MutantResult of an outcome whose first hunk (None: its diff is
    gone) is in the file of lines source."""
    e = o.entry
    notes = []
    if hunk is None:
        n = int(e.get('line') or 1)
        text = source[n - 1] if n - 1 < len(source) else ''
        location = {'start': {'line': n, 'column': 1},
                    'end': {'line': n, 'column': len(text) + 1}}
        replacement = ''
        notes.append('its diff (%s) is gone: placed by its line number'
                     % e.get('patch'))
    else:
        location, replacement, note = place(hunk, source)
        notes += [note] if note else []
    killers = [k for k in o.killers if not k.startswith('(') and
               not k.endswith('.<not run>')]
    other = [k for k in o.killers if k not in killers]
    desc = e.get('description') or e['name']
    if e.get('models') and not e.get('operator'):
        desc += ' (models: %s)' % e['models']
    out = {'id': e['name'], 'mutatorName': mutator(e),
           'location': location, 'replacement': replacement,
           'status': o.schema_status, 'description': desc,
           'duration': round(float(e.get('seconds') or 0) * 1000)}
    if o.status == 'killed':
        out['killedBy'] = killers
    reason = status_reason(o, other)
    if reason or notes:
        out['statusReason'] = '; '.join([reason] + notes if reason
                                        else notes)
    return out


def status_reason(o: _scores.Outcome, other: List[str]) -> str:
    """Why a mutant has its status, in a line: the killers that are not
    cases, the reason given for an equivalent, the kind of compile
    error, a survivor that no test reaches."""
    if o.status == 'killed':
        reason = ', '.join(other[:3]) + (' (+%d more)' % (len(other) - 3)
                                         if len(other) > 3 else '')
        if o.catalogue_error:
            reason = ('declared equivalent, yet killed: an error of the '
                      'catalogue; ' + reason).rstrip('; ')
        return reason
    if o.status == 'equivalent':
        why = o.entry.get('equivalent') or \
            parse_header(_scores.catalogue_diff(o.entry) or '')['equivalent']
        return 'equivalent: ' + (why or 'declared so')
    if o.status == 'noapply':
        return 'the patch no longer applies to the tree'
    if o.status == 'nocompile':
        return 'the mutated kernel does not build'
    if o.no_coverage:
        return 'no test runs its line (make coverage)'
    return ''


def test_files(summary: Optional[Dict[str, Any]],
               killers: List[str]) -> Dict[str, Any]:
    """The testFiles of the report: one per KUnit suite, its cases as
    tests with ids suite.case[/param]: those of summary.json (the make
    test run), and every killer that it does not list (a case of a
    longer run, as the full fault sweep)."""
    out: Dict[str, Any] = {}
    seen = set()

    def add(suite: str, name: str) -> None:
        tid = '%s.%s' % (suite, name)
        if tid not in seen:
            seen.add(tid)
            out.setdefault(suite, {'tests': []})['tests'].append(
                {'id': tid, 'name': name})

    for s in (summary or {}).get('suites') or []:
        for c in s.get('cases') or []:
            add(s['name'], c['name'])
    for k in killers:
        suite, _dot, name = k.partition('.')
        add(suite, name or suite)
    return out


def build(tree: Any, outs: List[_scores.Outcome],
          summary: Optional[Dict[str, Any]] = None
          ) -> Tuple[Dict[str, Any], List[str]]:
    """(the report dict, notes on mutants placed by line number only) of
    a tree's outcomes: the catalogue's, then the generated ones."""
    schema = load_schema()
    files: Dict[str, Dict[str, Any]] = {}
    sources: Dict[str, List[str]] = {}
    notes = []
    for o in outs:
        diff = _scores.catalogue_diff(o.entry)
        hs = hunks(diff) if diff else []
        path = hs[0][0] if hs else o.entry['file'].split(',')[0].strip()
        if path not in sources:
            text = series_source(tree, path)
            sources[path] = text.split('\n')
            files[path] = {'language': 'c', 'source': text, 'mutants': []}
        m = mutant_result(o, hs[0] if hs else None, sources[path])
        if 'placed by' in m.get('statusReason', ''):
            notes.append('%s: %s' % (o.name, m['statusReason']))
        files[path]['mutants'].append(m)
    rep: Dict[str, Any] = {
        'schemaVersion': schema_version(schema),
        'thresholds': dict(THRESHOLDS), 'projectRoot': 'build/%s/linux'
        % tree.name, 'files': dict(sorted(files.items())),
        'framework': {'name': 'gup-pin-kunit (tools/mutate.py, '
                      'tools/genmut.py)', 'dependencies': {
                          SCHEMA_PKG: package_version(SCHEMA_PKG)}},
        'config': {'tree': tree.name,
                   'seriesHead': (load_state(tree) or {}).get('series_head')}}
    rep['testFiles'] = test_files(summary, [
        k for f in files.values() for m in f['mutants']
        for k in m.get('killedBy', [])])
    return rep, notes


def validate(report: Any, schema: Optional[Dict[str, Any]] = None
             ) -> List[str]:
    """What makes report invalid against the installed schema (a line
    each, at most 20; [] if it is valid)."""
    try:
        import jsonschema
    except ImportError:
        raise ToolError('python3-jsonschema is not installed (run sh '
                        'tools/deps)')
    v = jsonschema.Draft7Validator(schema or load_schema())
    out = []
    for err in sorted(v.iter_errors(report), key=lambda e: list(e.path)):
        at = '/'.join(str(p) for p in err.path) or '(top)'
        out.append('%s: %s' % (at, err.message[:200]))
    return out[:20]
