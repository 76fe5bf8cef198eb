#!/usr/bin/env python3
"""The evidence a reviewer looks at: `make report` (TREE=... for some).

From the results that the other targets left under results/TREE/ (it
builds and boots nothing), for each tree (--tree, repeatable; default
every tree of kunit/trees that has mutant results):

  mutation-report.json  the catalogue run (mutants.json) and the generated
                run (mutants-generated.json) in the format of the
                mutation-testing-report-schema package (tools/_mreport.py):
                every mutant on its line and columns of the file at the
                series head, its mutator, replacement, status, killers
  report.html   one page that opens from disk with no network: the
                headline figures, the mutation-testing-elements web
                component (inlined) showing that report, the KUnit
                results per suite (summary.json), links to the lcov
                coverage (coverage/index.html), docs/coverage-matrix.md
                and docs/bugs.md
  mutants.md, mutants-generated.md  the Markdown tables, rendered again

then results/index.html (the trees side by side, each linking to its
page) and results/figures.md (the same figures as a Markdown table).

Every figure comes from one computation: tools/_scores.py's outcomes() of
the entries and their tally(), with the tree's lcov coverage telling a
survivor that no test runs (NoCoverage); the Markdown tables, the JSON
and the pages render nothing else.

--check (what make check's report and page steps run): validate each
mutation-report.json against the installed package's JSON schema, and
open each report.html in headless Chromium: the component must render
and show the counts of mutants.json and mutants-generated.json (killed,
survived, no coverage, ignored = equivalent); its screenshot goes to
results/TREE/report.png. The JavaScript comes from build/npm, installed
by tools/deps from tools/js/package-lock.json.

Exit status: 0; 1 on a tool error (one line: a missing or broken input)
or a failed check; 2 for an unknown tree.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mreport  # noqa: E402
import _scores  # noqa: E402
import genmut  # noqa: E402
import mutate  # noqa: E402
from _common import (RESULTS, ROOT, ToolError, add_tree_argument,  # noqa: E402
                     die, display, read_trees, selected_trees)
from _mutation import write_atomically  # noqa: E402
from _report_html import index_html, page_html  # noqa: E402

TOOL = 'report'
CATALOGUE, GENERATED = 'mutants.json', 'mutants-generated.json'
# Where each run's results are, in order of preference: the full run of
# make mutants (mutants-generated), else make check's CI subset (sample).
CATALOGUE_FILES = (CATALOGUE, os.path.join('mutants-ci', 'mutants.json'))
GENERATED_FILES = (GENERATED, 'mutants-generated-ci.json')
GROUPS = ('catalogue', 'generated', 'all')


class Results(NamedTuple):
    """What make report reads of one tree."""
    tree: Any
    catalogue: Optional[List[Dict[str, Any]]]     # mutants.json
    generated: Optional[Dict[str, Any]]           # recounted
    coverage: Optional[_scores.Coverage]
    summary: Optional[Dict[str, Any]]             # KUnit summary.json
    outcomes: Dict[str, List[_scores.Outcome]]    # per group
    sources: Dict[str, str]                       # per group: its file


def read_json(path: str) -> Any:
    """The JSON of path; None if it does not exist; ToolError if it is
    not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ToolError('%s: %s' % (display(path), getattr(e, 'strerror',
                                                           None) or e))


def source(res: str, names: Tuple[str, ...]) -> str:
    """The first of names (CATALOGUE_FILES or GENERATED_FILES) that
    exists under the results directory res, else the first."""
    for name in names:
        if os.path.isfile(os.path.join(res, name)):
            return os.path.join(res, name)
    return os.path.join(res, names[0])


def has_results(tree: Any) -> bool:
    """Has the tree a mutant run to report (a full one or CI's)?"""
    return any(os.path.isfile(os.path.join(tree.results, n))
               for n in CATALOGUE_FILES + GENERATED_FILES)


def load(tree: Any) -> Results:
    """The Results of a tree; ToolError if it has no mutant run or one
    that is not a report of tools/mutate.py or tools/genmut.py."""
    res = tree.results
    if not has_results(tree):
        raise ToolError('%s has neither %s nor %s: run make mutants or make '
                        'mutants-generated TREE=%s first'
                        % (display(res), CATALOGUE, GENERATED, tree.name))
    coverage = _scores.read_coverage(res)
    cat_path = source(res, CATALOGUE_FILES)
    gen_path = source(res, GENERATED_FILES)
    cat = read_json(cat_path)
    where = display(cat_path)
    if cat is not None and not isinstance(cat, list):
        raise ToolError('%s is not a list of mutants' % where)
    gen = read_json(gen_path)
    if gen is not None:
        gen = genmut.recount(gen, coverage, display(gen_path))
    outs = {'catalogue': _scores.outcomes(cat or [], coverage, where=where),
            'generated': _scores.outcomes(
                gen['mutants'] if gen else [], coverage,
                where=display(gen_path))}
    outs['all'] = outs['catalogue'] + outs['generated']
    summary = read_json(os.path.join(res, 'summary.json'))
    sources = {'catalogue': os.path.relpath(cat_path, res),
               'generated': os.path.relpath(gen_path, res)}
    return Results(tree, cat, gen, coverage, summary, outs, sources)


def figures(r: Results) -> Dict[str, Any]:
    """The headline figures of a tree: per group (catalogue, generated,
    all) its tally() and schema_counts(); the KUnit totals and per suite
    passed, failed, skipped."""
    out: Dict[str, Any] = {'tree': r.tree.name}
    for g in GROUPS:
        size = None
        if g == 'generated' and r.generated:
            size = r.generated['total']['generated']
        elif g == 'all' and r.generated:
            size = len(r.outcomes['catalogue']) + \
                r.generated['total']['generated']
        t = _scores.tally(r.outcomes[g], size)
        t['schema'] = _scores.schema_counts(r.outcomes[g])
        t['present'] = bool(r.catalogue is not None if g == 'catalogue'
                            else r.generated is not None if g == 'generated'
                            else True)
        t['source'] = r.sources.get(g, '')
        out[g] = t
    out['kunit'] = kunit_figures(r.summary)
    return out


def kunit_figures(summary: Optional[Dict[str, Any]]
                  ) -> Optional[Dict[str, Any]]:
    """{passed, failed, skipped, crashed, suites: [{name, passed, failed,
    skipped}]} of a summary.json; None without one."""
    if not isinstance(summary, dict):
        return None
    suites = []
    for s in summary.get('suites') or []:
        c = {'name': s.get('name', '?'), 'passed': 0, 'failed': 0,
             'skipped': 0}
        for case in s.get('cases') or []:
            st = case.get('status')
            c[st if st in ('passed', 'skipped') else 'failed'] += 1
        suites.append(c)
    return {'passed': summary.get('passed', 0),
            'failed': summary.get('failed', 0),
            'skipped': summary.get('skipped', 0),
            'crashed': bool(summary.get('crashed')), 'suites': suites}


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------

def write_markdown(r: Results) -> List[str]:
    """mutants.md and mutants-generated.md again, with the same outcomes
    as everything else; the paths written."""
    res = r.tree.results
    out = []
    if r.catalogue is not None:
        path = os.path.join(res, 'mutants.md')
        write_atomically(path, mutate.markdown(
            r.catalogue, mutate.report_baseline(r.catalogue, res),
            r.coverage))
        out.append(path)
    if r.generated is not None:
        path = os.path.join(res, 'mutants-generated.md')
        base = mutate.report_baseline(r.generated['mutants'], res,
                                      'mutants-generated')
        write_atomically(path, genmut.markdown(r.generated, base,
                                               r.coverage))
        out.append(path)
    return out


def write_tree(tree: Any) -> Dict[str, Any]:
    """Write a tree's mutation-report.json, report.html and Markdown
    tables; return its figures()."""
    r = load(tree)
    figs = figures(r)
    rep, notes = _mreport.build(tree, r.outcomes['all'], r.summary)
    for n in notes:
        print('%s: %s: %s' % (TOOL, tree.name, n))
    text = json.dumps(rep, indent=1) + '\n'
    write_atomically(os.path.join(tree.results, 'mutation-report.json'),
                     text)
    with open(_mreport.package_file(_mreport.ELEMENTS_PKG,
                                    _mreport.ELEMENTS_FILE)) as f:
        elements = f.read()
    links = page_links(tree)
    write_atomically(os.path.join(tree.results, 'report.html'),
                     page_html(figs, rep, elements, links, versions()))
    write_markdown(r)
    return figs


def versions() -> Dict[str, str]:
    """{package: version} of the installed JavaScript."""
    return {p: _mreport.package_version(p)
            for p in (_mreport.ELEMENTS_PKG, _mreport.SCHEMA_PKG)}


def page_links(tree: Any) -> List[Any]:
    """[(label, href relative to results/TREE/, exists)] of the page's
    links."""
    rel = os.path.relpath(ROOT, tree.results)
    out = []
    for label, path in (
            ('lcov coverage of the pin core', os.path.join(
                tree.results, 'coverage', 'index.html')),
            ('coverage matrix', os.path.join(ROOT, 'docs',
                                             'coverage-matrix.md')),
            ('bugs the suites model', os.path.join(ROOT, 'docs', 'bugs.md')),
            ('mutants.md', os.path.join(tree.results, 'mutants.md')),
            ('mutants-generated.md', os.path.join(tree.results,
                                                  'mutants-generated.md')),
            ('mutation-report.json', os.path.join(tree.results,
                                                  'mutation-report.json')),
            ('both trees', os.path.join(RESULTS, 'index.html'))):
        href = os.path.relpath(path, tree.results)
        if path.startswith(ROOT + os.sep) and not path.startswith(RESULTS):
            href = os.path.join(rel, os.path.relpath(path, ROOT))
        exists = os.path.exists(path) or label in ('mutation-report.json',
                                                  'both trees')
        out.append((label, href, exists))
    return out


def write_index(figs: List[Dict[str, Any]]) -> None:
    """results/index.html and results/figures.md of the trees' figures."""
    write_atomically(os.path.join(RESULTS, 'index.html'),
                     index_html(figs, RESULTS))
    write_atomically(os.path.join(RESULTS, 'figures.md'), figures_md(figs))


def write_index_all() -> None:
    """write_index() of every tree of kunit/trees with mutant results."""
    write_index([figures(load(t)) for t in read_trees() if has_results(t)])


def _ran_cell(g: str) -> Callable[[Dict[str, Any]], str]:
    """The cell of group @g's run mutants (of those generated)."""
    return lambda f: ('%d (of %d)' % (f[g]['ran'], f[g]['generated'])
                      if f[g]['present'] else '-')


def _count_cell(g: str, key: str) -> Callable[[Dict[str, Any]], str]:
    """The cell of one count of group @g."""
    return lambda f: str(f[g][key]) if f[g]['present'] else '-'


def _score_cell(g: str) -> Callable[[Dict[str, Any]], str]:
    """The cell of group @g's score."""
    return lambda f: ('-' if not f[g]['present'] or f[g]['score'] is None
                      else '%.1f%%' % f[g]['score'])


def figures_md(figs: List[Dict[str, Any]]) -> str:
    """results/figures.md: the headline figures, a column per tree."""
    Row = Tuple[str, Callable[[Dict[str, Any]], str]]
    rows: List[Row] = [('KUnit cases passed / failed / skipped', lambda f: (
        '%d / %d / %d' % (f['kunit']['passed'], f['kunit']['failed'],
                          f['kunit']['skipped'])) if f['kunit'] else '-')]
    for g, label in (('catalogue', 'catalogue mutants'),
                     ('generated', 'generated mutants')):
        rows.append(('%s run (of generated)' % label, _ran_cell(g)))
        for key, what in (('killed', 'killed'), ('survived', 'survived'),
                          ('no_coverage', 'of them on lines no test runs'),
                          ('equivalent', 'equivalent'),
                          ('catalogue_errors', 'killed, declared equivalent'),
                          ('nocompile', 'not building'),
                          ('noapply', 'not applying')):
            rows.append(('%s: %s' % (label, what), _count_cell(g, key)))
        rows.append(('%s: score' % label, _score_cell(g)))
    out = ['# Headline figures', '',
           'Written by `make report` (tools/report.py) from results/; the '
           'same figures as results/index.html and each tree\'s '
           'report.html.', '',
           '| | ' + ' | '.join(f['tree'] for f in figs) + ' |',
           '|---|' + '---:|' * len(figs)]
    for label, fn in rows:
        out.append('| %s | %s |' % (label, ' | '.join(fn(f) for f in figs)))
    return '\n'.join(out) + '\n'


# --------------------------------------------------------------------------
# Checking (make check's report and page steps)
# --------------------------------------------------------------------------

def check_schema(tree: Any) -> List[str]:
    """What makes results/TREE/mutation-report.json invalid against the
    installed schema ([] if valid; a missing or unreadable file is one
    problem)."""
    path = os.path.join(tree.results, 'mutation-report.json')
    try:
        rep = read_json(path)
    except ToolError as e:
        return [str(e)]
    if rep is None:
        return ['%s does not exist (make report)' % display(path)]
    return ['%s: %s' % (display(path), p) for p in _mreport.validate(rep)]


def expected_counts(tree: Any) -> Dict[str, int]:
    """The counts the page must show, counted straight from the status
    fields of mutants.json and mutants-generated.json (killed, survived
    with or without coverage, ignored = equivalent, compile errors =
    nocompile and noapply), and of the survivors, those that the tree's
    coverage says no test reaches."""
    r = load(tree)
    entries = (r.catalogue or []) + (r.generated or {}).get('mutants', [])
    out = {s: sum(1 for e in entries if e.get('status') == s)
           for s in ('killed', 'survived', 'equivalent')}
    out['compile_error'] = sum(1 for e in entries if e.get('status') in
                               ('nocompile', 'noapply'))
    out['no_coverage'] = sum(o.no_coverage for o in r.outcomes['all'])
    return out


def check_page(tree: Any, timeout: float = 60.0) -> List[str]:
    """Open results/TREE/report.html in headless Chromium, wait for the
    component's metrics, compare them with expected_counts(), save
    results/TREE/report.png. The problems found ([] if none)."""
    from _browser import Browser
    import _report_html
    path = os.path.join(tree.results, 'report.html')
    if not os.path.isfile(path):
        return ['%s does not exist (make report)' % display(path)]
    want = expected_counts(tree)
    with Browser(timeout=timeout) as b:
        b.open('file://' + os.path.abspath(path))
        shown = b.wait_for(_report_html.METRICS_JS,
                           'the metrics of mutation-test-report-app',
                           timeout)
        headline = b.evaluate(_report_html.HEADLINE_JS)
        b.screenshot(os.path.join(tree.results, 'report.png'),
                     full_page=True)
        requests, errors = list(b.requests), list(b.errors)
    return compare_page(want, shown, headline, requests, errors)


def compare_page(want: Dict[str, int], shown: Dict[str, str],
                 headline: Dict[str, str], requests: List[str],
                 errors: List[str]) -> List[str]:
    """The differences between the counts expected and those the page
    shows: the component's metrics table (its 'All files' row) and the
    page's own headline; any request off the disk; any script error."""
    def num(d: Dict[str, str], key: str) -> Optional[int]:
        try:
            return int(str(d.get(key, '')).strip())
        except ValueError:
            return None

    got = {'killed': num(shown, 'Killed'),
           'survived': (num(shown, 'Survived') or 0) +
           (num(shown, 'No coverage') or 0),
           'no_coverage': num(shown, 'No coverage'),
           'equivalent': num(shown, 'Ignored'),
           'compile_error': num(shown, 'Compile errors')}
    out = ['the component shows %s %s, the results say %d'
           % (k, got[k], want[k]) for k in want if got.get(k) != want[k]]
    out += ['the headline shows %s %s, the results say %d'
            % (k, headline.get(k), want[k]) for k in want
            if k != 'compile_error' and num(headline, k) != want[k]]
    out += ['the page asked the network for %s' % u for u in requests
            if not u.startswith(('file:', 'data:', 'about:', 'blob:'))]
    out += ['script error: %s' % e[:160] for e in errors]
    return out


# --------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_tree_argument(ap)
    ap.add_argument('--check', action='store_true',
                    help='validate the reports and check the pages in '
                    'headless Chromium (after writing them)')
    ap.add_argument('--no-write', action='store_true',
                    help='with --check: check what is there, write nothing')
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    trees = selected_trees(TOOL, args.tree)
    if not args.tree:
        trees = [t for t in trees if has_results(t)]
        if not trees:
            die(TOOL, 'no tree has mutant results under %s: run make '
                'mutants first' % display(RESULTS))
    t0 = time.monotonic()
    bad = 0
    try:
        if not args.no_write:
            for tree in trees:
                f = write_tree(tree)
                print('%s: %s: %s; %s' % (TOOL, tree.name, line(f), display(
                    os.path.join(tree.results, 'report.html'))))
            write_index_all()
        for tree in trees if args.check else []:
            checks: List[Tuple[str, Callable[[Any], List[str]]]] = [
                ('mutation-report.json', check_schema),
                ('report.html', check_page)]
            for what, fn in checks:
                problems = fn(tree)
                bad += bool(problems)
                print('%s: %s: %s: %s' % (TOOL, tree.name, what,
                                          problems[0] if problems else 'ok'))
                for p in problems[1:]:
                    print('  ' + p)
    except ToolError as e:
        die(TOOL, str(e))
    print('%s: %.1fs' % (TOOL, time.monotonic() - t0))
    return 1 if bad else 0


def line(f: Dict[str, Any]) -> str:
    """One line of a tree's figures."""
    a = f['all']
    return ('%d mutants: killed %d, survived %d (no coverage %d), '
            'equivalent %d, not building/applying %d' % (
                a['ran'], a['killed'], a['survived'], a['no_coverage'],
                a['equivalent'], a['nocompile'] + a['noapply']))


if __name__ == '__main__':
    sys.exit(main())
