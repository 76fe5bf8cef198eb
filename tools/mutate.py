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

Two modes, --mode, as in tools/genmut.py run (the engine of both is
tools/_mutation.py and tools/_schemata.py):

--mode schema (the default; what make check runs on its CI subset): a
mutant that is one hunk of one .c file, inside one function, joins a
mutant schema (tools/_schemata.py): each function it changes gets a copy
per mutant, the kernel is built once and booted once per mutant with
gup_mutant=N on its command line, under the same kill rules, against a
baseline boot of that kernel with gup_mutant=0 (RESULTS/mutants/
_schema_baseline/). A mutant then costs a boot, not an incremental build
and a boot. The other mutants (headers, several hunks or files), and any
that the schema cannot hold, run from their patches as in patch mode.

--mode patch: every mutant from its patch, in order, under build/.lock
(taken per mutant, so that another run can use the tree between two
mutants):
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

--rescore builds nothing: it recomputes the statuses of an earlier run
from RESULTS/mutants.json and RESULTS/mutants/*/summary.json (after a
change of the kill rules or of a mutant's Equivalent header), a mutant
run in a schema against the schema kernel's baseline, any other against
the unmutated tree's.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mutation  # noqa: E402
import _schemata  # noqa: E402
import _scores  # noqa: E402
from _common import (ToolError, add_tree_argument, die,  # noqa: E402
                     display, interrupt_on_sigterm, selected_trees)
from _mutation import Baseline, Entry, Mutant  # noqa: E402

TOOL = 'mutate'
CATALOGUE = 'catalogue'
MUTANT_LINE = re.compile(r'Mutant:(.*)$')
NAME_RE = re.compile(r'\d{3}-[a-z0-9]+(-[a-z0-9]+)*$')


# ------------------------------------------------------------------ catalogue

def parse_catalogue(text: str, path: str = 'catalogue') -> List[Mutant]:
    """The mutants of a catalogue's text, in file order: a dict each
    (make_mutant()). Before the first 'Mutant: NAME' line only '#'
    comments and blank lines may stand; an entry is every line up to the
    next Mutant: line, kept as it is: an empty line at the end of a diff
    may be its last context line (an empty source line whose ' ' an
    editor dropped), and a blank line after a complete hunk is one that
    git apply passes over. ToolError, naming the line, on a bad or
    repeated name, stray text or an entry without a diff."""
    out: List[Mutant] = []
    seen: Dict[str, int] = {}
    name: Optional[str] = None
    start = 0
    body: List[str] = []

    def close() -> None:
        if name is None:
            return
        out.append(_mutation.make_mutant(name, path, ''.join(body),
                                         '%s:%d (%s)' % (display(path),
                                                         start, name)))

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


def load_catalogue(path: str) -> List[Mutant]:
    """parse_catalogue() of a file; [] if there is no such file."""
    if not os.path.exists(path):
        return []
    return parse_catalogue(_mutation.read_text(path), path)


def catalogue_path(tree: Any) -> str:
    """kunit/mutants/TREE/catalogue."""
    return os.path.join(tree.mutants, CATALOGUE)


def catalogue(tree: Any) -> List[Mutant]:
    """The tree's mutants (kunit/mutants/TREE/catalogue), in file order."""
    return load_catalogue(catalogue_path(tree))


def selects(arg: str, name: str) -> bool:
    """Does a MUTANT argument select the mutant called name? Its name, a
    prefix ending before a '-', or a shell pattern."""
    return name == arg or name.startswith(arg + '-') or \
        fnmatch.fnmatchcase(name, arg)


def is_patch_file(arg: str) -> bool:
    """Is a MUTANT argument a patch file, not a name of the catalogue?"""
    return os.sep in arg or arg.endswith('.patch') or os.path.isfile(arg)


def plan(args: Any, trees: List[Any]) -> List[Tuple[Any, List[Mutant]]]:
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
        return [(trees[0], [_mutation.load_mutant(p) for p in files])]
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



# ------------------------------------------------------------------ reports
#
# Every figure comes from tools/_scores.py: outcomes() of the entries,
# tally() of the outcomes (tools/report.py renders the same ones).

def totals(entries: List[Entry], coverage: Optional[_scores.Coverage] = None
           ) -> Dict[str, int]:
    """Counts per status plus total, no_coverage, catalogue_errors,
    passed and failed, for the report."""
    t = _scores.tally(_scores.outcomes(entries, coverage))
    out = {s: t[s] for s in _mutation.STATUSES}
    out.update(total=t['ran'], no_coverage=t['no_coverage'],
               catalogue_errors=t['catalogue_errors'], failed=t['failed'],
               passed=t['passed'])
    return out


def summary_line(entries: List[Entry]) -> str:
    """'N passed, N failed, 0 skipped' of the entries."""
    t = totals(entries)
    return '%d passed, %d failed, 0 skipped' % (t['passed'], t['failed'])


def totals_line(entries: List[Entry],
                coverage: Optional[_scores.Coverage] = None) -> str:
    """'killed K / total T (equivalent E)' and what else there is."""
    t = totals(entries, coverage)
    line = 'killed %d / total %d (equivalent %d)' % (
        t['killed'], t['total'], t['equivalent'])
    extra = ['%s %d' % (s, t[s]) for s in ('survived', 'noapply', 'nocompile')
             if t[s]]
    if t['no_coverage']:
        extra.append('survived on a line no test runs %d' % t['no_coverage'])
    if t['catalogue_errors']:
        extra.append('killed-but-marked-equivalent %d'
                     % t['catalogue_errors'])
    return line + ('; ' + ', '.join(extra) if extra else '')


def markdown(entries: List[Entry], baseline: Optional[Baseline] = None,
             coverage: Optional[_scores.Coverage] = None) -> str:
    """results/mutants.md: a table and the totals line."""
    out = ['# Mutants', '']
    if baseline is not None and baseline.failures:
        out += ['Failing without a mutant (not counted as kills): %s'
                % ', '.join(baseline.describe()), '']
    out += [
           '| mutant | file | status | seconds | description | cases |',
           '|---|---|---|---:|---|---|']
    cell = _mutation.md_cell
    for o in _scores.outcomes(entries, coverage):
        e = o.entry
        status = o.status_text('marked equivalent: catalogue error')
        out.append('| %s | %s | %s | %.1f | %s | %s |' % (
            cell(e['name']), cell(e['file']), cell(status),
            e.get('seconds') or 0.0, cell(e.get('description', '')),
            cell(o.shown_cases())))
    out += ['', totals_line(entries, coverage), '']
    return '\n'.join(out)


def write_reports(entries: List[Entry], results: str,
                  baseline: Optional[Baseline] = None,
                  coverage: Optional[_scores.Coverage] = None) -> None:
    """Write RESULTS/mutants.json and RESULTS/mutants.md atomically;
    coverage: the tree's (_scores.read_coverage(), for the survivors that
    no test reaches)."""
    for name, text in (('mutants.json', json.dumps(entries, indent=1) + '\n'),
                       ('mutants.md', markdown(entries, baseline, coverage))):
        _mutation.write_atomically(os.path.join(results, name), text)


def report_baseline(entries: List[Entry], results: str,
                    runs: str = 'mutants') -> Optional[Baseline]:
    """The baseline whose failures mutants.md names, as a run or a rescore
    gives it to write_reports(): the unmutated tree's if a mutant ran
    from its patch, else the schema kernel's (under RESULTS/runs/); None
    if its summary.json is not there (tools/report.py renders mutants.md
    and, runs mutants-generated, mutants-generated.md again from the
    results)."""
    modes = set(e.get('mode', 'patch') for e in entries)
    for mode, sub in (('patch', '_baseline'),
                      ('schema', _schemata.SCHEMA_BASELINE)):
        if mode in modes:
            summary = _mutation.read_summary(os.path.join(results, runs,
                                                          sub))
            if summary is not None and not summary.get('crashed'):
                return Baseline(summary)
    return None


def _baselines(entries: List[Entry], results: str) -> Dict[str, Baseline]:
    """{mode: Baseline} of the modes of entries of an earlier run: patch,
    RESULTS/mutants/_baseline/ (the unmutated tree); schema,
    RESULTS/mutants/_schema_baseline/ (the schema kernel's)."""
    out = {}
    for mode in dict.fromkeys(e.get('mode', 'patch') for e in entries):
        sub = _schemata.SCHEMA_BASELINE if mode == 'schema' else '_baseline'
        summary = _mutation.read_summary(os.path.join(results, 'mutants',
                                                      sub))
        if summary is None:
            raise ToolError('no baseline summary.json under %s/mutants/%s'
                            % (results, sub))
        out[mode] = Baseline(summary)
    return out


def rescore(mutants: List[Mutant], results: str,
            coverage: Optional[_scores.Coverage] = None) -> List[Entry]:
    """Recompute killed/survived/equivalent of an earlier run from its
    RESULTS/mutants/*/summary.json (noapply/nocompile are kept), each
    mutant against the baseline of the mode it ran in (_baselines());
    coverage as for write_reports()."""
    try:
        with open(os.path.join(results, 'mutants.json')) as f:
            old = {e['name']: e for e in json.load(f)}
    except (OSError, ValueError):
        raise ToolError('no earlier %s to rescore'
                        % os.path.join(results, 'mutants.json'))
    baselines = _baselines([old[m['name']] for m in mutants
                            if m['name'] in old], results)
    entries = []
    for m in mutants:
        e = old.get(m['name'])
        if e is None:
            raise ToolError('%s was not run in %s' % (m['name'], results))
        if e['status'] not in ('noapply', 'nocompile'):
            summary = _mutation.read_summary(os.path.join(results, 'mutants',
                                                          m['name']))
            if summary is None:
                raise ToolError('no summary.json for %s' % m['name'])
            eq = bool(m['header']['equivalent'])
            e['equivalent_claimed'] = eq
            _mutation.judge(e, summary, baselines[e.get('mode', 'patch')])
            e['description'] = m['header']['subject']
            e['models'] = m['header']['models']
            if eq:
                e['equivalent_reason'] = m['header']['equivalent']
        entries.append(e)
        print('%s:   %s %s' % (TOOL, e['name'],
                                _mutation.console_verdict(e)))
    write_reports(entries, results, baselines.get('patch') or
                  baselines.get('schema'), coverage)
    print('%s: %s (rescored)' % (TOOL, totals_line(entries, coverage)))
    return entries


# ------------------------------------------------------------------ a run

def schema_fits(tree: Any, mutants: List[Mutant]) -> List[Any]:
    """--mode schema: prepare the tree (its HEAD is what the mutants are
    matched against), then the mutants that a schema can hold, as
    _schemata.schema_mutant() gives them; a line for each of the others,
    which run from their patches."""
    _mutation.prepare(tree, TOOL)
    fit = []
    for m in mutants:
        sm, why = _schemata.schema_mutant(
            m, lambda p: _mutation.read_source(tree, p))
        if sm is None:
            print('%s: %s: %s runs from its patch: %s'
                  % (TOOL, tree.name, m['name'], why), flush=True)
        else:
            fit.append(sm)
    return fit


def run_tree(tree: Any, mutants: List[Mutant], args: Any, results: str
             ) -> List[Entry]:
    """Run (or rescore) the mutants of one tree in args.mode; return their
    entries. ToolError on a tool failure."""
    coverage = _scores.tree_coverage(tree)
    if args.rescore:
        return rescore(mutants, results, coverage)
    fit = schema_fits(tree, mutants) if args.mode == 'schema' else []

    def write(es: List[Entry], base: Optional[Baseline]) -> None:
        write_reports(es, results, base, coverage)

    return _schemata.run_mutants(tree, mutants, fit, args, results,
                                 'mutants', [], write, TOOL)


def counted(tree: Any, mutants: List[Mutant], args: Any
            ) -> Optional[Tuple[int, int, int]]:
    """Run the mutants of one tree (run_tree()), print its line and return
    (passed, failed, 0); None for a tree without mutants."""
    results = tree.expand(args.results)
    if not mutants:
        print('%s: %s: no mutants in %s; skipped'
              % (TOOL, tree.name, display(catalogue_path(tree))),
              flush=True)
        return None
    entries = run_tree(tree, mutants, args, results)
    t = totals(entries)
    print('%s: %s: %s; %s; reports in %s' % (
        TOOL, tree.name, summary_line(entries), totals_line(entries),
        display(os.path.join(results, 'mutants.md'))), flush=True)
    return t['passed'], t['failed'], 0


def parser() -> argparse.ArgumentParser:
    """The command line (the run options as tools/genmut.py run's)."""
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
    _schemata.add_run_options(ap, 40, 'the suite runs in about 2 s, and a '
                              'hung mutant must still cost under 60 s with '
                              'its build')
    ap.add_argument('--rescore', action='store_true',
                    help='build nothing: recompute the statuses from the '
                    'summary.json files of an earlier run in RESULTS')
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    """The command line; the exit status."""
    args = parser().parse_args(argv)
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
    _schemata.check_results_option(TOOL, len(work), args.results)
    return _schemata.run_trees(TOOL, work, lambda tree, mutants: counted(
        tree, mutants, args))


if __name__ == '__main__':
    sys.exit(main())
