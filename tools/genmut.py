#!/usr/bin/env python3
"""Mutants that nobody chose: standard mutation operators applied to every
line of the pin core (`make mutants-generated`).

The catalogue kunit/mutants/TREE/catalogue was written by the people who
wrote the tests. This tool generates mutants mechanically, from the text
of the tree's source (build/TREE/linux, read only) and the line ranges of
the functions of its pin core (kunit/TREE/pin-core, the functions that
`make coverage` measures; the ranges come from source_extents() of
tools/_cscan.py, the tools' C scanner), so that the score measures the
suite. The operators are in tools/_generator.py.

Subcommands (each takes --tree, repeatable; default every tree of
kunit/trees):
  list          every generated mutant: NAME, FILE:LINE and what it changes
  stats         how many per function, per operator, and in headers
  write DIR     the patches, DIR/TREE/NAME.patch (a catalogue entry's
                format, without its Mutant: line)
  sample        the names of the CI sample (--seed, --count)
  run [NAME..]  run the mutants (all, the NAMEs or shell patterns given,
                or with --sample the CI sample) through the engine and
                the kill rules of tools/mutate.py (tools/_mutation.py,
                tools/_schemata.py); reports in RESULTS/mutants-generated.
                {json,md} (the sample: RESULTS/mutants-generated-ci.*)
  agree OTHER   compare the report in RESULTS with the one in OTHER (say
                a --mode patch run of some mutants beside the schema run
                of all): the mutants both ran on the same kernel code,
                and those whose outcome (killed or not) differs; exit 1
                if one does

Operators, applied to each line of each function (name: what):
  negate   a condition of if/while/for/do-while: `if (x)` -> `if (!x)`,
           `if (!x)` -> `if (x)`, otherwise `if (!(a && b))`
  lt2le le2lt gt2ge ge2gt eq2ne ne2eq
           a relational operator: `<` <-> `<=`, `>` <-> `>=`, `==` <-> `!=`
  and2or or2and
           a logical connector: `&&` <-> `||`
  add2sub sub2add
           binary `+` <-> `-`, and `+=` <-> `-=`, `++` <-> `--`
  inc dec  an integer literal N -> N+1, N -> N-1
  bias     GUP_PIN_COUNTING_BIAS -> (GUP_PIN_COUNTING_BIAS - 1)
  del      delete a statement that is a call or an assignment (a put, a
           putback, a stat update, a list_add, a WARN, ...); the body of an
           if/else/for/while without braces becomes `;`
  ret      an early return (any return but the function's last statement)
           returns the other outcome: true <-> false; in a function
           returning a pointer NULL -> the identifier that its other
           returns give (if one does) and anything else -> NULL; in one
           returning a number 0 -> the -E... constant it returns elsewhere
           (else -EINVAL) and anything else -> 0; a bool expression X ->
           !X; in a void function the early `return;` is deleted
  getpin   FOLL_GET <-> FOLL_PIN (in a flag test or a flag argument)

Exclusions (no mutant is generated for these):
  - comments, string and character literals, and preprocessor lines
    (#if, #ifdef, #define, ... with their continuation lines); the code
    between them is mutated as any other;
  - the function's signature: operators apply from its opening brace on;
  - when the source has several definitions of a function (#ifdef
    alternatives: the real one and a stub), only the first is mutated, as
    the pin core's stubs belong to configurations the project does not
    build (CONFIG_MIGRATION=n, ...);
  - statements that are assertions: VM_BUG_ON*, VM_WARN_ON*, BUILD_BUG_ON*,
    lockdep_assert*, might_sleep(), might_fault(); deleting one cannot fail
    a suite that never provokes it, and mutating its condition only makes
    the debugging check fire, which tests CONFIG_DEBUG_VM, not pinning
    (WARN*() statements are mutated: the suites check which WARNs fire);
  - declaration macros (LIST_HEAD, DEFINE_*, DECLARE_*, *_STATE) are never
    deleted, as the code after them would not compile;
  - an integer literal used as a truth value (the whole condition of an
    if/while, or the only argument of WARN*(), likely(), unlikely()) gets
    only the mutant that flips its truth: 0 -> 1 (inc), 1 -> 0 (dec)
    (WARN_ON_ONCE(1) -> WARN_ON_ONCE(0), not -> WARN_ON_ONCE(2), which is
    equivalent);
  - the condition of `?:`, bitwise operators, `*`, `/` and `%` are not
    mutated (a `*` is often a pointer declarator, and these operators do
    not occur in flag tests the listed operators miss).

Names: FUNCTION+OFFSET-OPERATOR[-K], OFFSET the line of the site counted
from the function's first line (so that an edit elsewhere in the file does
not rename a mutant), K (1, 2, ...) only when one line has several sites
of the same operator, in the order of the line. Output is in pin-core
order, then source order, then operator order above.

Each patch: `Subject: NAME: what it does: 'old' -> 'new'`, `Models:
generated: OPERATOR`, `Equivalent: REASON` for a mutant that the tree's
kunit/mutants/TREE/generated-equivalent declares equivalent, then a
unified diff with a/ b/ paths relative to the kernel tree.

The equivalents file: `NAME  reasoning` a line, '#' starts a comment; a
name without reasoning (or with less than four words of it), a name
listed twice, or a name that the generator no longer produces (stale) is
an error, one line naming file and line: list, stats, write and sample
stop; run counts the tree as one failure and goes on with the next.

run: first brings the tree up to date (tools/prepare_tree.py), then runs
the mutants under the kill rules of the catalogue (tools/_mutation.py, as
tools/mutate.py does), in one of two modes (--mode, as in mutate.py):

  --mode schema (default): the mutants of .c files (with
    --header-rebuild targeted, those of headers too) are written into one
    mutant schema (tools/_schemata.py: each mutated function becomes a
    copy per mutant and a dispatcher on the boot parameter gup_mutant),
    its objects compiled (a mutant that the compiler names is dropped as
    nocompile if its own patch does not compile either, else it runs
    from its patch), the kernel built once and run once with
    gup_mutant=0 (the baseline of these runs), then once per mutant with
    gup_mutant=N and no build: a few seconds a mutant instead of an
    incremental build. The tree is restored at the end. The other header
    mutants, and those of a function that cannot be put in a schema,
    then run as in patch mode. Each entry says its mode.
  --mode patch: each mutant like a catalogue mutant (clean tree, git
    apply, incremental build, suites in QEMU, restore; a header mutant
    uses the build copy), after one baseline run.

The patches go
to RESULTS/mutants-generated/patches/, the suite runs to
RESULTS/mutants-generated/NAME/ (the CI sample's to
RESULTS/mutants-generated-ci/). A mutant that does not build is dropped
and counted (nocompile). The reports are cumulative: an entry of an
earlier run is kept while the tree's HEAD (its kernel code) and the
mutant's diff are the same, so that a full run can be done in chunks
(run 'try_grab_folio+*', ...). --resume skips the selected mutants that
have such an entry, unless it survived (or was equivalent) with test
sources older than today's (the sha256 of the kernel sources under
kunit/): after new tests, RESUME=1 runs only the survivors again. The
reports say how many entries ran with older tests. Per function, per
operator and in total the reports give generated, compiled (generated -
nocompile - noapply - not run), killed, equivalent, survived, nocompile,
noapply, not run, and the score (killed + equivalent) / compiled.

--header-rebuild targeted (default full): a mutant of a header function
rebuilds only the objects of the .c files that can contain its code,
those that name it or a header inline function or function-like macro
that calls it (the closure over include/, arch/x86/include/ and mm/*.h;
the suites' sources too), whose objects are in the build directory: the
header keeps its old mtime and those files get a new one (see run_one()
in tools/_mutation.py). Every other object compiles to the same code. An
object reached another way (an object-like macro, a #included .c) would
keep the unmutated code, which can only turn a kill into a survivor.

The CI sample (--sample; `make check`'s genmut step): COUNT mutants of
.c files (header mutants rebuild most of the kernel) that are not
declared equivalent, those with the smallest sha256(SEED:NAME); the
choice of one mutant does not depend on the others, so a new mutant
elsewhere changes the sample by at most one. SEED defaults to
SAMPLE_SEED in this file (the one place it is set), COUNT to 20.

The last line of run is 'N passed, N failed, N skipped' over the selected
mutants: passed = killed + equivalent, failed = survived + noapply +
killed-but-declared-equivalent, skipped = nocompile (dropped). Exit
status 1 if any failed; bad input is one line on stderr and exit 1 (an
unknown tree: 2).
"""
from __future__ import annotations

import argparse
import collections
import fnmatch
import hashlib
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _mutation  # noqa: E402
import _schemata  # noqa: E402
import _scores  # noqa: E402
from _common import (ToolError, add_tree_argument,  # noqa: E402
                     die, display, interrupt_on_sigterm, selected_trees)
from _generator import (NAME_RE, OP_ORDER, OPERATORS,  # noqa: E402
                        Mutant, generate)
from _mutation import Baseline, Entry  # noqa: E402

TOOL = 'genmut'
# The CI sample: the one place its seed and size are set.
SAMPLE_SEED = 19
SAMPLE_COUNT = 20
EQUIVALENT_FILE = 'generated-equivalent'
REPORT = 'mutants-generated'
TIMEOUT = 20
CI_REPORT = 'mutants-generated-ci'


# --------------------------------------------------------------------------
# The equivalents file and the sample
# --------------------------------------------------------------------------

def equivalents_path(tree: Any) -> str:
    """kunit/mutants/TREE/generated-equivalent."""
    return os.path.join(tree.mutants, EQUIVALENT_FILE)


def parse_equivalents(text: str, where: str,
                      names: Optional[set] = None) -> Dict[str, str]:
    """{name: reasoning} from an equivalents file's text. where names the
    file in messages; names, if given, are the names the generator
    produces (a name not among them is stale). ToolError for a line
    without reasoning, a reasoning under four words, a bad or repeated
    name, a stale name."""
    out: Dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        fields = line.split(None, 1)
        name = fields[0]
        reason = fields[1].strip() if len(fields) > 1 else ''
        at = '%s:%d' % (where, n)
        if not NAME_RE.match(name):
            raise ToolError('%s: %r is not a generated mutant name '
                            '(FUNCTION+OFFSET-OPERATOR[-K])' % (at, name))
        if not reason:
            raise ToolError('%s: %s has no reasoning; say why no test can '
                            'kill it' % (at, name))
        if len(reason.split()) < 4:
            raise ToolError('%s: %s: reasoning %r is too short; say why no '
                            'test can kill this mutant' % (at, name, reason))
        if name in out:
            raise ToolError('%s: %s is listed twice' % (at, name))
        if names is not None and name not in names:
            raise ToolError('%s: %s is stale: the generator no longer '
                            'produces it' % (at, name))
        out[name] = reason
    return out


def read_equivalents(tree: Any, names: List[str]) -> Dict[str, str]:
    """parse_equivalents() of the tree's file ({} if there is none)."""
    path = equivalents_path(tree)
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (display(path), e.strerror))
    return parse_equivalents(text, display(path), set(names))


def sample_key(seed: Any, name: str) -> str:
    """sha256('SEED:NAME'): the order of the sample."""
    return hashlib.sha256(('%s:%s' % (seed, name)).encode()).hexdigest()


def sample(mutants: List[Mutant], equivalents: Dict[str, str],
           seed: Any = SAMPLE_SEED, count: int = SAMPLE_COUNT
           ) -> List[Mutant]:
    """The CI sample: count mutants of .c files not declared equivalent,
    those with the smallest sha256('SEED:NAME'), in generator order."""
    pool = [m for m in mutants if not m.header and m.name not in equivalents]
    chosen = set(m.name for m in sorted(
        pool, key=lambda m: sample_key(seed, m.name))[:count])
    return [m for m in mutants if m.name in chosen]


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------

COUNT_KEYS = _scores.COUNT_KEYS


def counts(mutants: List[Mutant], entries: Dict[str, Entry],
           coverage: Optional[_scores.Coverage] = None) -> Dict[str, Any]:
    """Counts of a group of mutants given {name: entry} of their runs:
    _scores.tally() of their outcomes, the group's size as generated."""
    ran = [entries[m.name] for m in mutants if m.name in entries]
    return _count_dict(_scores.tally(_scores.outcomes(ran, coverage),
                                     len(mutants)))


def _count_dict(t: Dict[str, Any]) -> Dict[str, Any]:
    """The keys of a tally() that the report keeps, in its order."""
    return {k: t[k] for k in COUNT_KEYS + ('catalogue_errors',
                                           'no_coverage', 'score')}


def score_line(c: Dict[str, Any]) -> str:
    """The counts in one line; killed mutants that the equivalents file
    declares equivalent (a wrong declaration: they fail the run) are
    named after the kills."""
    errors = c.get('catalogue_errors', 0)
    uncovered = c.get('no_coverage', 0)
    return ('generated %d, compiled %d, killed %d%s, equivalent %d, '
            'survived %d%s; dropped (nocompile) %d, noapply %d, not run %d; '
            'score %s' % (c['generated'], c['compiled'], c['killed'],
                          ' (%d of them declared equivalent: wrongly)'
                          % errors if errors else '',
                          c['equivalent'], c['survived'],
                          ' (%d on lines no test runs)' % uncovered
                          if uncovered else '', c['nocompile'],
                          c['noapply'], c['not_run'],
                          '-' if c['score'] is None else '%.1f%%'
                          % c['score']))


def report(tree: Any, mutants: List[Mutant], entries: List[Entry],
           meta: Dict[str, Any],
           coverage: Optional[_scores.Coverage] = None) -> Dict[str, Any]:
    """The report dict of results/TREE/mutants-generated.json; meta has
    tree_head and tests_sha256 (today's) and sample."""
    by_name = {e['name']: e for e in entries}
    funcs = []
    for func in dict.fromkeys(m.function for m in mutants):
        group = [m for m in mutants if m.function == func]
        funcs.append(dict(function=func, file=group[0].file,
                          **counts(group, by_name, coverage)))
    ops = []
    for op in OPERATORS:
        group = [m for m in mutants if m.op == op]
        if group:
            ops.append(dict(operator=op, **counts(group, by_name, coverage)))
    ordered = [by_name[m.name] for m in mutants if m.name in by_name]
    older = sum(1 for e in ordered
                if e.get('tests_sha256') != meta.get('tests_sha256'))
    modes = collections.Counter(e.get('mode', 'patch') for e in ordered)
    return dict(tree=tree.name, total=counts(mutants, by_name, coverage),
                functions=funcs, operators=ops, older_tests=older,
                modes=dict(sorted(modes.items())), mutants=ordered, **meta)


def recount(rep: Dict[str, Any], coverage: Optional[_scores.Coverage] = None,
            where: str = 'the report') -> Dict[str, Any]:
    """A report (of mutants-generated.json) with every count computed
    again from its entries, as report() computes them, without the
    generator: each row keeps the number of mutants it had (generated),
    and its entries are those of its function or operator. What
    tools/report.py renders."""
    try:
        entries = list(rep['mutants'])
        rows = [(r, 'function') for r in rep['functions']] + \
            [(r, 'operator') for r in rep['operators']]
        total = int(rep['total']['generated'])
        sized = [(r, key, int(r['generated'])) for r, key in rows]
    except (KeyError, TypeError, ValueError):
        raise ToolError('%s is not a report of tools/genmut.py (no total, '
                        'functions, operators or mutants)' % where)
    outs = _scores.outcomes(entries, coverage, where=where)
    new = dict(rep, total=_count_dict(_scores.tally(outs, total)))
    new['functions'], new['operators'] = [], []
    for r, key, size in sized:
        group = [o for o in outs if o.entry.get(key) == r[key]]
        row = {k: v for k, v in r.items() if k not in COUNT_KEYS +
               ('catalogue_errors', 'no_coverage', 'score')}
        row.update(_count_dict(_scores.tally(group, size)))
        new['functions' if key == 'function' else 'operators'].append(row)
    return new


def markdown(rep: Dict[str, Any], baseline: Optional[Baseline] = None,
             coverage: Optional[_scores.Coverage] = None) -> str:
    """RESULTS/mutants-generated.md: the counts and every mutant (the
    counts of rep as report() or recount() computed them, with the same
    coverage)."""
    cell = _mutation.md_cell
    out = ['# Generated mutants (%s)' % rep['tree'], '',
           score_line(rep['total']), '']
    if rep.get('older_tests'):
        out += ['%d of these ran against older test sources (kept: the '
                'kernel code and the mutant are the same; --resume runs '
                'those that were not killed again)' % rep['older_tests'],
                '']
    if rep.get('modes'):
        out += ['Run in: %s (schema: one kernel, the mutant chosen at boot '
                'by gup_mutant=N; patch: built alone; tools/genmut.py '
                '--help)' % ', '.join('%s %d' % kv
                                      for kv in rep['modes'].items()), '']
    if baseline is not None and baseline.failures:
        out += ['Failing without a mutant (not counted as kills): %s'
                % ', '.join(baseline.describe()), '']
    cols = ('generated', 'compiled', 'killed', 'equivalent', 'survived',
            'nocompile', 'noapply', 'not_run')
    for title, key, rows in (('function', 'function', rep['functions']),
                             ('operator', 'operator', rep['operators'])):
        out += ['| %s | %s | score |' % (title, ' | '.join(cols)),
                '|---|%s---:|' % ('---:|' * len(cols))]
        for r in rows + [dict(rep['total'], **{key: '**total**'})]:
            out.append('| %s | %s | %s |' % (
                cell(r[key]), ' | '.join(str(r[c]) for c in cols),
                '-' if r['score'] is None else '%.1f%%' % r['score']))
        out.append('')
    out += ['| mutant | status | mode | seconds | description | cases |',
            '|---|---|---|---:|---|---|']
    for o in _scores.outcomes(rep['mutants'], coverage):
        e = o.entry
        status = o.status_text('declared equivalent: an error')
        out.append('| %s | %s | %s | %.1f | %s | %s |' % (
            cell(e['name']), cell(status), e.get('mode', 'patch'),
            e.get('seconds') or 0.0,
            cell(e.get('description', '')), cell(o.shown_cases())))
    return '\n'.join(out) + '\n'


def summary_counts(c: Dict[str, Any]) -> Tuple[int, int, int]:
    """(passed, failed, skipped) of counts()."""
    passed = c['killed'] + c['equivalent'] - c['catalogue_errors']
    failed = c['survived'] + c['noapply'] + c['catalogue_errors']
    return passed, failed, c['nocompile']


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------

def cmd_list(tree: Any, mutants: List[Mutant], _eq: Dict[str, str],
             _args: Any) -> None:
    """list: NAME FILE:LINE what, a line each."""
    for m in mutants:
        print('%s  %s:%d  %s' % (m.name, m.file, m.line,
                                 m.subject().split(': ', 1)[1]))


def cmd_stats(tree: Any, mutants: List[Mutant], eq: Dict[str, str],
              _args: Any) -> None:
    """stats: how many per function, operator and file."""
    print('%s: %d mutants, %d in headers, %d declared equivalent'
          % (tree.name, len(mutants), sum(m.header for m in mutants),
             len(eq)))
    for title, key in (('function', 'function'), ('operator', 'op'),
                       ('file', 'file')):
        c = collections.Counter(getattr(m, key) for m in mutants)
        print('  per %s:' % title)
        keys = list(dict.fromkeys(getattr(m, key) for m in mutants))
        if key == 'op':
            keys.sort(key=lambda k: OP_ORDER[k])
        for k in keys:
            print('    %-40s %4d' % (k, c[k]))


def cmd_write(tree: Any, mutants: List[Mutant], eq: Dict[str, str],
              args: Any) -> None:
    """write: the patches into DIR/TREE/."""
    d = os.path.join(args.dir, tree.name)
    write_patches(mutants, eq, d)
    print('%s: %s: %d patches in %s' % (TOOL, tree.name, len(mutants),
                                        display(d)))


def write_patches(mutants: List[Mutant], eq: Dict[str, str], d: str
                  ) -> List[str]:
    """DIR/NAME.patch for each mutant; other *.patch files in DIR go."""
    os.makedirs(d, exist_ok=True)
    want = set(m.name + '.patch' for m in mutants)
    for old in os.listdir(d):
        if old.endswith('.patch') and old not in want:
            os.unlink(os.path.join(d, old))
    paths = []
    for m in mutants:
        path = os.path.join(d, m.name + '.patch')
        text = m.patch(eq.get(m.name))
        try:
            with open(path) as f:
                same = f.read() == text
        except OSError:
            same = False
        if not same:
            with open(path, 'w') as f:
                f.write(text)
        paths.append(path)
    return paths


def cmd_sample(tree: Any, mutants: List[Mutant], eq: Dict[str, str],
               args: Any) -> None:
    """sample: the names of the CI sample."""
    for m in sample(mutants, eq, args.seed, args.count):
        print(m.name)


def cmd_agree(tree: Any, mutants: List[Mutant], _eq: Dict[str, str],
              args: Any) -> int:
    """Compare RESULTS/mutants-generated.json with OTHER's, mutant by
    mutant: those that both ran on the same kernel code with the same diff,
    killed in both or not killed in both (survived and equivalent are one
    outcome). Print each that differs and a total; return how many differ.
    """
    a = load_previous(os.path.join(tree.expand(args.results),
                                   REPORT + '.json'))
    b = load_previous(os.path.join(tree.expand(args.other),
                                   REPORT + '.json'))
    ran = ('killed', 'survived', 'equivalent')
    both = differ = 0
    for m in mutants:
        ea, eb = a.get(m.name), b.get(m.name)
        if not ea or not eb or ea.get('status') not in ran or \
                eb.get('status') not in ran or \
                ea.get('diff_sha256') != eb.get('diff_sha256') or \
                ea.get('tree_head') != eb.get('tree_head'):
            continue
        both += 1
        if (ea['status'] == 'killed') != (eb['status'] == 'killed'):
            differ += 1
            print('%s: %s (%s) / %s (%s)' % (
                m.name, ea['status'], ea.get('mode', 'patch'),
                eb['status'], eb.get('mode', 'patch')))
    print('%s: %s: %d mutants in both reports: %d with the same outcome, '
          '%d differ' % (TOOL, tree.name, both, both - differ, differ))
    return differ


def select(mutants: List[Mutant], eq: Dict[str, str], args: Any
           ) -> List[Mutant]:
    """The mutants run selects: the sample, the NAMEs given, or all."""
    if args.sample:
        return sample(mutants, eq, args.seed, args.count)
    if not args.names:
        return list(mutants)
    out = [m for m in mutants
           if any(fnmatch.fnmatchcase(m.name, p) for p in args.names)]
    if not out:
        raise ToolError('no generated mutant matches %s'
                        % ' '.join(args.names))
    return out


def load_previous(path: str) -> Dict[str, Entry]:
    """{name: entry} of an earlier report ({} if there is none)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        raise ToolError('%s is not a report of this tool; move it away'
                        % display(path))
    if not isinstance(data, dict) or not isinstance(data.get('mutants'),
                                                    list):
        raise ToolError('%s is not a report of this tool; move it away'
                        % display(path))
    return {e['name']: e for e in data['mutants']}


def current(entry: Entry, head: str, m: Mutant) -> bool:
    """Is an earlier entry one of this mutant on this kernel code?"""
    return (entry.get('tree_head') == head and
            entry.get('diff_sha256') == m.diff_sha() and
            entry.get('status') in ('killed', 'survived', 'equivalent',
                                    'nocompile', 'noapply'))


def settled(entry: Entry, sha: str) -> bool:
    """Need --resume not run this current entry again? Not if it ran
    against the test sources of today (sha), nor if it was killed, did
    not build or apply: new tests do not make a mutant live again. A
    survivor (or an equivalent) of older tests runs again: a new test may
    kill it."""
    return entry.get('tests_sha256') == sha or \
        entry['status'] in ('killed', 'nocompile', 'noapply')


def rescore_entry(entry: Entry, reason: Optional[str]) -> Entry:
    """An earlier entry under today's equivalents file."""
    e = dict(entry)
    if e['status'] in ('killed', 'survived', 'equivalent'):
        outcome = 'killed' if e['status'] == 'killed' else 'survived'
        e['status'] = _mutation.final_status(outcome, bool(reason))
    e['equivalent_claimed'] = bool(reason)
    e.pop('equivalent_reason', None)
    if reason:
        e['equivalent_reason'] = reason
    return e


def _kept(mutants: List[Mutant], eq: Dict[str, str], previous: Dict[str,
          Entry], head: str) -> Dict[str, Entry]:
    """{name: entry} of the earlier entries that are current (current()),
    rescored under today's equivalents file."""
    kept = {}
    for m in mutants:
        e = previous.get(m.name)
        if e is not None and current(e, head, m):
            kept[m.name] = rescore_entry(e, eq.get(m.name))
    return kept


def _header_deps(tree: Any, todo: List[Mutant], args: Any
                 ) -> Dict[str, List[str]]:
    """--header-rebuild targeted: {header function: the .c files that a
    mutant of it rebuilds} (_mutation.header_dependents())."""
    deps: Dict[str, List[str]] = {}
    if args.header_rebuild != 'targeted':
        return deps
    for func in dict.fromkeys(m.function for m in todo if m.header):
        deps[func], closure = _mutation.header_dependents(tree, func)
        if not deps[func]:
            raise ToolError('no object of %s contains %s (is %s '
                            'built?)' % (tree.name, func,
                                         display(tree.kunit_build)))
        print('%s: %s: a mutant of %s rebuilds %d objects: %s (through '
              '%s)' % (TOOL, tree.name, func, len(deps[func]),
                       ' '.join(deps[func]), ', '.join(closure)),
              flush=True)
    return deps


def _loaded(todo: List[Mutant], paths: Dict[str, str],
            deps: Dict[str, List[str]], head: str) -> List[_mutation.Mutant]:
    """The mutants todo as the engine runs them: their patches read back
    (_mutation.load_mutant()), with touch and the keys of their entries."""
    loaded = []
    for m in todo:
        lm = _mutation.load_mutant(paths[m.name])
        if m.function in deps:
            lm['touch'] = deps[m.function]
        lm['extra'] = {'mode': 'patch', 'function': m.function,
                       'operator': m.op,
                       'line': m.line, 'tree_head': head,
                       'diff_sha256': m.diff_sha()}
        loaded.append(lm)
    return loaded


def cmd_run(tree: Any, mutants: List[Mutant], eq: Dict[str, str], args: Any
            ) -> Tuple[int, int, int]:
    """Run the selected mutants; return (passed, failed, skipped)."""
    selected = select(mutants, eq, args)
    results = tree.expand(args.results)
    name = CI_REPORT if args.sample else REPORT
    json_path = os.path.join(results, name + '.json')
    head = _mutation.git(tree.linux, 'rev-parse', 'HEAD').stdout.strip()
    sha = _mutation.tests_sha(tree)
    kept = _kept(mutants, eq, load_previous(json_path), head)
    todo = [m for m in selected
            if not (args.resume and m.name in kept and
                    settled(kept[m.name], sha))]
    # Every current patch, so that each entry's patch is there to read.
    paths = dict(zip([m.name for m in mutants],
                     write_patches(mutants, eq, os.path.join(
                         results, name, 'patches'))))
    loaded = _loaded(todo, paths, _header_deps(tree, todo, args), head)
    scope = mutants if not args.sample else selected
    meta = {'tree_head': head, 'tests_sha256': sha,
            'sample': {'seed': args.seed, 'count': args.count}
            if args.sample else None}
    redo = set(m.name for m in todo)
    keep = [e for n, e in kept.items() if n not in redo and
            any(m.name == n for m in scope)]

    coverage = _scores.tree_coverage(tree)

    def write(es: List[Entry], base: Optional[Baseline]) -> None:
        rep = report(tree, scope, es, meta, coverage)
        _mutation.write_atomically(json_path,
                                   json.dumps(rep, indent=1) + '\n')
        _mutation.write_atomically(os.path.join(results, name + '.md'),
                                   markdown(rep, base, coverage))

    print('%s: %s: %d mutants selected, %d to run (%d of them in headers), '
          '%d kept from earlier runs' % (TOOL, tree.name, len(selected),
                                         len(todo),
                                         sum(m.header for m in todo),
                                         len(keep)), flush=True)
    # A header mutant joins the schema only when its rebuild is targeted:
    # otherwise the schema would rebuild every includer.
    fit = [m for m in todo if not m.header or
           args.header_rebuild == 'targeted']
    entries = _schemata.run_mutants(tree, loaded, fit, args, results, name,
                                    keep, write, TOOL)
    by_name = {e['name']: e for e in entries}
    rep = report(tree, scope, entries, meta, coverage)
    print('%s: %s: %s; reports in %s' % (
        TOOL, tree.name, score_line(rep['total']),
        display(os.path.join(results, name + '.md'))), flush=True)
    return summary_counts(counts(selected, by_name, coverage))


def parser() -> argparse.ArgumentParser:
    """The command line: a subcommand each, --tree for every one."""
    ap = argparse.ArgumentParser(
        prog='tools/genmut.py', description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest='command', metavar='COMMAND')
    sub.required = True
    cmds = {}
    for name, helptext in (
            ('list', 'every mutant: NAME FILE:LINE what'),
            ('stats', 'counts per function, operator and file'),
            ('write', 'the patches into DIR/TREE/'),
            ('sample', 'the names of the CI sample'),
            ('run', 'run mutants through the engine of tools/_mutation.py'),
            ('agree', 'compare the outcomes of two reports')):
        p = sub.add_parser(name, help=helptext, description=helptext)
        add_tree_argument(p)
        cmds[name] = p
    cmds['write'].add_argument('dir', metavar='DIR')
    cmds['agree'].add_argument('other', metavar='OTHER',
                               help='the other results directory of a tree '
                               '({tree} and {results} as for --results)')
    cmds['agree'].add_argument('--results', default='{results}/{tree}',
                               help='results directory of a tree (default '
                               '{results}/{tree})')
    for name in ('sample', 'run'):
        cmds[name].add_argument('--seed', default=str(SAMPLE_SEED),
                                help='the sample\'s seed (default %d)'
                                % SAMPLE_SEED)
        cmds[name].add_argument('--count', type=int, default=SAMPLE_COUNT,
                                help='the sample\'s size (default %d)'
                                % SAMPLE_COUNT)
    r = cmds['run']
    r.add_argument('names', nargs='*', metavar='NAME',
                   help='mutant names or shell patterns (default: all)')
    r.add_argument('--sample', action='store_true',
                   help='run the CI sample (RESULTS/%s.*)' % CI_REPORT)
    r.add_argument('--resume', action='store_true',
                   help='skip mutants with a current entry in the report')
    r.add_argument('--header-rebuild', choices=('full', 'targeted'),
                   default='full',
                   help='full (default): a header mutant rebuilds every '
                   'includer, as in make mutants; targeted: only the '
                   'objects of the .c files that name the function or a '
                   'header inline/macro that calls it (header_dependents()'
                   '), and it joins the schema; the other objects would '
                   'compile to the same code')
    _schemata.add_run_options(r, TIMEOUT, 'the suites run in about 4 s, '
                              'and one generated mutant in seven hangs and '
                              'costs the whole timeout')
    return ap


def run_tree(tree: Any, args: Any) -> Tuple[int, int, int]:
    """run on one tree: prepare it, generate, run; print its line."""
    _mutation.prepare(tree, TOOL)
    mutants = generate(tree)
    got = cmd_run(tree, mutants, read_equivalents(
        tree, [m.name for m in mutants]), args)
    print('%s: %s: %d passed, %d failed, %d skipped'
          % ((TOOL, tree.name) + got), flush=True)
    return got


def main(argv: Optional[List[str]] = None) -> int:
    """The command line; the exit status."""
    args = parser().parse_args(argv)
    if args.command in ('sample', 'run') and args.count < 1:
        die(TOOL, '--count must be at least 1', 2)
    if args.command == 'run' and args.sample and args.names:
        die(TOOL, 'give either --sample or mutant names, not both', 2)
    trees = selected_trees(TOOL, args.tree)
    if args.command == 'run':
        _schemata.check_results_option(TOOL, len(trees), args.results)
    interrupt_on_sigterm()
    if args.command == 'run':
        return _schemata.run_trees(TOOL, [(t, None) for t in trees],
                                   lambda tree, _w: run_tree(tree, args))
    fn = {'list': cmd_list, 'stats': cmd_stats, 'write': cmd_write,
          'sample': cmd_sample, 'agree': cmd_agree}[args.command]
    differ = 0
    for tree in trees:
        try:
            mutants = generate(tree)
            eq = read_equivalents(tree, [m.name for m in mutants])
            differ += fn(tree, mutants, eq, args) or 0
        except ToolError as e:
            die(TOOL, str(e), e.status)
        except KeyboardInterrupt:
            die(TOOL, 'interrupted; %s was restored'
                % display(tree.linux), 130)
    return 1 if differ else 0


if __name__ == '__main__':
    sys.exit(main())
