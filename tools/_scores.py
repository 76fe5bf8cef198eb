"""What each mutant's run says, and the counts of many: the one computation
behind every mutation report of the project.

results/TREE/mutants.md (tools/mutate.py), mutants-generated.md
(tools/genmut.py), mutation-report.json, report.html, results/index.html
and results/figures.md (tools/report.py) all render the outcomes() and
tally() of this module, and nothing else, so that a figure cannot differ
between two of them.

An outcome is one mutant's entry (as the engine, tools/_mutation.py, wrote
it into mutants.json or mutants-generated.json) read once: its status in
the project's terms (killed, survived, equivalent, nocompile, noapply),
the cases that killed it, whether it was killed though declared
equivalent (an error of the catalogue or of the equivalents file), and,
for a survivor, whether no test ever runs its line: the tree's coverage
run (make coverage, results/TREE/coverage/lcov.info) saw that line
compiled and never executed. The status in the terms of the standard
mutation-testing report (mutation-testing-report-schema) follows:

  killed      Killed
  survived    Survived, or NoCoverage when no test runs its line
  equivalent  Ignored (it survived, and says why no test can kill it)
  nocompile   CompileError
  noapply     CompileError (the patch no longer applies: an invalid
              mutant, as one that does not compile)
"""
from __future__ import annotations

import os
import re
from typing import (Any, Callable, Dict, Iterable, List, NamedTuple,
                    Optional, Tuple)

from _common import ROOT, ToolError, display
from _mutation import HUNK_RE, STATUSES

SCHEMA_STATUS = {'killed': 'Killed', 'survived': 'Survived',
                 'equivalent': 'Ignored', 'nocompile': 'CompileError',
                 'noapply': 'CompileError'}
NO_COVERAGE = 'NoCoverage'
LCOV = os.path.join('coverage', 'lcov.info')
# The counts of tally(), in the order the reports give them.
COUNT_KEYS = ('generated', 'compiled', 'killed', 'equivalent', 'survived',
              'nocompile', 'noapply', 'not_run')


class Outcome(NamedTuple):
    """One mutant's run, as every report shows it."""
    name: str
    status: str                 # one of _mutation.STATUSES
    killers: Tuple[str, ...]    # the cases (or crash) that killed it
    catalogue_error: bool       # killed, though declared equivalent
    no_coverage: bool           # survived on a line no test runs
    entry: Dict[str, Any]

    @property
    def schema_status(self) -> str:
        """The status in the terms of mutation-testing-report-schema."""
        return NO_COVERAGE if self.no_coverage else SCHEMA_STATUS[self.status]

    @property
    def failure(self) -> bool:
        """Does it count against the suite (or the catalogue)? A survivor,
        a killed mutant declared equivalent, one that did not build or
        apply."""
        if self.status == 'killed':
            return self.catalogue_error
        return self.status != 'equivalent'

    def status_text(self, claimed: str) -> str:
        """The status as the Markdown tables show it; a killed mutant that
        was declared equivalent says so, with claimed; a survivor that no
        test reaches says that."""
        if self.catalogue_error:
            return 'killed (%s)' % claimed
        if self.no_coverage:
            return 'survived (no coverage: no test runs its line)'
        return self.status

    def shown_cases(self) -> str:
        """The first three killers, and how many more."""
        k = self.killers
        return '; '.join(k[:3]) + (' (+%d more)' % (len(k) - 3)
                                   if len(k) > 3 else '')


# --------------------------------------------------------------------------
# Coverage: which lines of the tree the coverage run executed
# --------------------------------------------------------------------------

class Coverage:
    """The line counts of an lcov tracefile: {source file: {line: hits}}.
    A file is found by its path in the tree (mm/gup.c matches
    /any/where/linux/mm/gup.c)."""

    def __init__(self, files: Dict[str, Dict[int, int]]) -> None:
        self.files = files

    def hits(self, path: str, line: int) -> Optional[int]:
        """How often the coverage run executed line of path; None when
        the tracefile has no count for it (not compiled code, a comment,
        a file it did not profile)."""
        for sf, lines in self.files.items():
            if sf == path or sf.endswith('/' + path):
                if line in lines:
                    return lines[line]
        return None


def read_coverage(results: str) -> Optional[Coverage]:
    """The Coverage of RESULTS/coverage/lcov.info (make coverage), or None
    if there is none. ToolError for a tracefile that is not one."""
    path = os.path.join(results, LCOV)
    try:
        with open(path, errors='replace') as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (display(path), e.strerror))
    files: Dict[str, Dict[int, int]] = {}
    current: Optional[Dict[int, int]] = None
    for n, ln in enumerate(text.splitlines(), 1):
        if ln.startswith('SF:'):
            current = files.setdefault(ln[3:].strip(), {})
        elif ln.startswith('DA:') and current is not None:
            try:
                line, hits = ln[3:].split(',')[:2]
                current[int(line)] = current.get(int(line), 0) + int(hits)
            except ValueError:
                raise ToolError('%s:%d: not an lcov DA: line: %r'
                                % (display(path), n, ln))
    return Coverage(files)


def tree_coverage(tree: Any) -> Optional[Coverage]:
    """read_coverage() of a tree's results directory (results/TREE/,
    wherever a run writes its own reports), None if it has none."""
    results = getattr(tree, 'results', None)
    return read_coverage(results) if results else None


def first_changed_line(diff: str) -> Optional[Tuple[str, int]]:
    """(tree path, line) of the first line that a unified diff removes or
    inserts before, in the numbering of the file it applies to."""
    path = None
    lines = diff.split('\n')
    for i, ln in enumerate(lines):
        if ln.startswith('+++ '):
            p = ln[4:].split('\t', 1)[0].strip()
            path = p[2:] if p.startswith(('a/', 'b/')) else p
            continue
        m = HUNK_RE.match(ln)
        if not m or path is None:
            continue
        at = int(m.group(1))
        for body in lines[i + 1:]:
            if body[:1] in ('-', '+'):
                return path, at
            if body[:1] not in (' ', ''):
                break
            at += 1
    return None


_TEXTS: Dict[str, str] = {}


def catalogue_diff(entry: Dict[str, Any]) -> Optional[str]:
    """The text of an entry's mutant from the file its 'patch' names (a
    catalogue: the block from its 'Mutant: NAME' line to the next; a
    patch file: all of it), or None if that file is not there."""
    patch = entry.get('patch')
    if not patch:
        return None
    path = patch if os.path.isabs(patch) else os.path.join(ROOT, patch)
    if path not in _TEXTS:
        try:
            with open(path, errors='replace') as f:
                _TEXTS[path] = f.read()
        except OSError:
            _TEXTS[path] = ''
    text = _TEXTS[path]
    m = re.search(r'^Mutant:\s*%s\s*$' % re.escape(entry['name']), text,
                  re.M)
    if m:
        rest = text[m.end():]
        nxt = re.search(r'^Mutant:', rest, re.M)
        return rest[:nxt.start()] if nxt else rest
    if re.search(r'^Mutant:', text, re.M):
        return None
    return text or None


def mutant_line(entry: Dict[str, Any],
                diff: Optional[Callable[[Dict[str, Any]], Optional[str]]]
                = None) -> Optional[Tuple[str, int]]:
    """(tree path, line) of a mutant: the line a generated mutant
    changes, or the first line the diff of a catalogue mutant changes
    (diff(entry) gives its text; default catalogue_diff())."""
    if entry.get('line'):
        return entry['file'].split(',')[0].strip(), int(entry['line'])
    text = (diff or catalogue_diff)(entry)
    return first_changed_line(text) if text else None


# --------------------------------------------------------------------------
# Outcomes and their counts
# --------------------------------------------------------------------------

def outcome(entry: Dict[str, Any], coverage: Optional[Coverage] = None,
            diff: Optional[Callable[[Dict[str, Any]], Optional[str]]] = None,
            where: str = 'the results') -> Outcome:
    """The Outcome of one entry; where names its file in errors. A
    survivor is no_coverage when coverage (read_coverage()) says that no
    test ran its line (mutant_line())."""
    if not isinstance(entry, dict) or not isinstance(entry.get('name'), str):
        raise ToolError('%s: a mutant without a name: %.60r' % (where, entry))
    status = entry.get('status')
    if status not in STATUSES:
        raise ToolError('%s: mutant %s has status %r; expected one of %s'
                        % (where, entry['name'], status, ', '.join(STATUSES)))
    killers = tuple(entry.get('cases') or ()) if status == 'killed' else ()
    uncovered = False
    if status == 'survived' and coverage is not None:
        at = mutant_line(entry, diff)
        uncovered = at is not None and coverage.hits(*at) == 0
    claimed = bool(entry.get('equivalent_claimed'))
    return Outcome(entry['name'], status, killers,
                   status == 'killed' and claimed, uncovered, entry)


def outcomes(entries: Iterable[Dict[str, Any]],
             coverage: Optional[Coverage] = None,
             diff: Optional[Callable[[Dict[str, Any]], Optional[str]]] = None,
             where: str = 'the results') -> List[Outcome]:
    """outcome() of each entry, in order."""
    return [outcome(e, coverage, diff, where) for e in entries]


def tally(outs: Iterable[Outcome], generated: Optional[int] = None
          ) -> Dict[str, Any]:
    """The counts of a group of outcomes: one per status, no_coverage (of
    the survivors), catalogue_errors, ran, failed and passed (failure());
    generated (default: those that ran), not_run, compiled (generated -
    nocompile - noapply - not_run) and score ((killed + equivalent) /
    compiled, in percent, one decimal; None if nothing compiled)."""
    c: Dict[str, Any] = {k: 0 for k in STATUSES}
    c.update(no_coverage=0, catalogue_errors=0, failed=0, ran=0)
    for o in outs:
        c['ran'] += 1
        c[o.status] += 1
        c['no_coverage'] += o.no_coverage
        c['catalogue_errors'] += o.catalogue_error
        c['failed'] += o.failure
    c['passed'] = c['ran'] - c['failed']
    c['generated'] = c['ran'] if generated is None else generated
    c['not_run'] = max(c['generated'] - c['ran'], 0)
    c['compiled'] = (c['generated'] - c['nocompile'] - c['noapply'] -
                     c['not_run'])
    c['score'] = round(100.0 * (c['killed'] + c['equivalent']) /
                       c['compiled'], 1) if c['compiled'] else None
    return c


def schema_counts(outs: Iterable[Outcome]) -> Dict[str, int]:
    """{schema status: how many} of the outcomes."""
    out = {s: 0 for s in sorted(set(SCHEMA_STATUS.values()) |
                                {NO_COVERAGE})}
    for o in outs:
        out[o.schema_status] += 1
    return out
