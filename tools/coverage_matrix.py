#!/usr/bin/env python3
"""Check docs/coverage-matrix.md against the KUnit cases of every tree.

A KUnit case is a function listed as KUNIT_CASE(name) or
KUNIT_CASE_PARAM(name, gen) (or another KUNIT_CASE* macro whose first
argument is the case) inside a `struct kunit_case NAME[] = { ... }` array
of a C file. It is qualified by its suite: the .name of the
`struct kunit_suite` whose .test_cases is that array, giving `suite.case`.
Comments are ignored; preprocessor conditionals are not evaluated, so a
case inside #ifdef counts. The cases of a tree are those of the .c files
among its kernel sources (tools/_common.py kernel_sources(tree): kunit/
common/, the subdirectories of kunit/TREE/ and kunit/harness/).

The matrix has one column per tree: a table whose header row is
`| Behaviour | 6.1 | 6.12 |` (the trees of kunit/trees, in order) is a
tree table. A cell of a tree's column names the cases of that tree that
test the row's behaviour as `suite.case` in backticks, or is `-` or
`n/a — reason` (also `n/a - reason`, `n/a: reason`). Every backticked
token of the form `identifier.identifier` counts as a reference, except
file names such as `gup_kunit.c` or `kunit.py` (the part after the dot is
a file extension: c, h, py, md, ...). References anywhere else (prose,
other tables such as "Not yet covered", the Behaviour column) must name
a case of at least one tree.

Problems, one line each, then a count line; exit status 1:
  - a reference in a tree's column that names no case of that tree;
  - a case of a tree that its column does not name;
  - a reference outside the tree columns that names no case of any tree;
  - a tree table whose header is not exactly the trees of kunit/trees,
    a row with another number of cells than its header, an empty cell;
  - a case array that no suite uses, or a suite whose .test_cases array
    does not exist (the check could not qualify its cases), or a tree
    without cases.
On success prints one line 'coverage-matrix: TREE: N cases, ... all
mapped' and exits 0. --tree narrows the per-tree checks (the references
outside the tree columns are always checked against every tree). `make
check` (tools/check.py) runs this once per tree with --tree TREE.
"""
import argparse
import os
import re
import sys
from collections.abc import Iterable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (KUNIT, ROOT, ToolError, Tree,  # noqa: E402
                     kernel_sources, read_trees, select_trees)

TOOL = 'coverage-matrix'
DEFAULT_MATRIX = os.path.join(ROOT, 'docs', 'coverage-matrix.md')
DEFAULT_KUNIT = KUNIT
BEHAVIOUR = 'Behaviour'

# Backticked `a.b` tokens that are file names, not cases.
FILE_EXTENSIONS = {'c', 'h', 'py', 'pl', 'sh', 'md', 'rst', 'txt', 'json',
                   'xml', 'log', 'ktap', 'msg', 'patch', 'o', 'ko', 'S',
                   'config', 'yml', 'yaml'}

_C_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"'
                       r"|'(?:\\.|[^'\\\n])*'", re.S)
_ARRAY = re.compile(r'\bstruct\s+kunit_case\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*\{')
_SUITE = re.compile(r'\bstruct\s+kunit_suite\s+(\w+)\s*=\s*\{')
_CASE = re.compile(r'\bKUNIT_CASE\w*\s*\(\s*(\w+)')
_NAME = re.compile(r'\.name\s*=\s*"((?:\\.|[^"\\])*)"')
_TEST_CASES = re.compile(r'\.test_cases\s*=\s*&?\s*(\w+)')
_REF = re.compile(r'`([A-Za-z_]\w*)\.([A-Za-z_]\w*)`')
_CELL_SPLIT = re.compile(r'(?<!\\)\|')
_SEPARATOR = re.compile(r'^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$')
_NOT_APPLICABLE = re.compile(r'^n/a\s*(?:—|–|-|:)\s*\S', re.I)


def strip_comments(text: str) -> str:
    """Blank out C comments, keeping strings and every newline."""
    def repl(m):
        tok = m.group(0)
        if tok.startswith(('//', '/*')):
            return re.sub(r'[^\n]', ' ', tok)
        return tok
    return _C_TOKENS.sub(repl, text)


def _body(text, open_brace):
    """Return the index just past the brace matching text[open_brace]."""
    depth = 0
    for i in range(open_brace, len(text)):
        if text[i] == '{':
            depth += 1
        elif text[i] == '}':
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def parse_source(path: str, text: str) -> tuple[
        dict[str, list[tuple[str, int]]],
        list[tuple[str | None, str | None, int]]]:
    """Return (arrays, suites) of one C file.

    arrays: {array name: [(case, line), ...]}
    suites: [(suite name, array name, line), ...]
    """
    code = strip_comments(text)

    def line_of(pos):
        return code.count('\n', 0, pos) + 1

    arrays: dict[str, list[tuple[str, int]]] = {}
    suites: list[tuple[str | None, str | None, int]] = []
    for m in _ARRAY.finditer(code):
        end = _body(code, m.end() - 1)
        body = code[m.end():end]
        # An array defined twice (#ifdef / #else) has the cases of both.
        arrays.setdefault(m.group(1), []).extend(
            (c.group(1), line_of(m.end() + c.start()))
            for c in _CASE.finditer(body))
    for m in _SUITE.finditer(code):
        end = _body(code, m.end() - 1)
        body = code[m.end():end]
        name = _NAME.search(body)
        cases = _TEST_CASES.search(body)
        suites.append((name.group(1) if name else None,
                       cases.group(1) if cases else None,
                       line_of(m.start())))
    return arrays, suites


def c_files(kunit_dir: str) -> list[str]:
    out = []
    for dirpath, dirs, files in os.walk(kunit_dir):
        dirs.sort()
        for name in sorted(files):
            if name.endswith('.c'):
                out.append(os.path.join(dirpath, name))
    return out


def display(path: str) -> str:
    """Path relative to the repository (or cwd) for messages."""
    path = os.path.abspath(path)
    for base in (ROOT, os.getcwd()):
        rel = os.path.relpath(path, base)
        if not rel.startswith('..'):
            return rel
    return path


def source_cases(sources: str | Iterable[str],
                 problems: list[str]) -> dict[str, str]:
    """Return {'suite.case': 'file:line'} for every case of sources: a
    directory (every *.c under it) or an iterable of C file paths."""
    cases: dict[str, str] = {}
    paths = c_files(sources) if isinstance(sources, str) else \
        sorted(p for p in sources if p.endswith('.c'))
    for path in paths:
        try:
            with open(path, encoding='utf-8', errors='replace') as f:
                text = f.read()
        except OSError as e:
            problems.append('%s: cannot read: %s' % (display(path),
                                                     e.strerror))
            continue
        arrays, suites = parse_source(path, text)
        used = set()
        for suite, array, line in suites:
            where = '%s:%d' % (display(path), line)
            if suite is None:
                problems.append('%s: struct kunit_suite without .name'
                                % where)
                continue
            if array is None or array not in arrays:
                problems.append('%s: suite %s: .test_cases array %s not '
                                'found in this file' % (where, suite, array))
                continue
            used.add(array)
            for case, cline in arrays[array]:
                cases.setdefault('%s.%s' % (suite, case),
                                 '%s:%d' % (display(path), cline))
        for array in sorted(set(arrays) - used):
            problems.append('%s: kunit_case array %s belongs to no suite'
                            % (display(path), array))
    return cases


def matrix_refs(text: str) -> list[tuple[str, int]]:
    """Return [(ref, line)] for every `suite.case` reference."""
    refs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in _REF.finditer(line):
            if m.group(2) in FILE_EXTENSIONS:
                continue
            refs.append(('%s.%s' % (m.group(1), m.group(2)), lineno))
    return refs


def tree_cases(tree: Tree, kunit_dir: str,
               problems: list[str]) -> dict[str, str]:
    """{'suite.case': 'file:line'} of the kernel sources of a tree."""
    try:
        sources = kernel_sources(tree, harness=True, kunit=kunit_dir)
    except ToolError as e:
        problems.append(str(e))
        return {}
    cases = source_cases(sources.values(), problems)
    if not cases:
        problems.append('tree %s: no KUnit cases in its kernel sources'
                        % tree.name)
    return cases


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row (escaped pipes kept)."""
    parts = _CELL_SPLIT.split(line.strip())
    if parts and not parts[0].strip():
        parts = parts[1:]
    if parts and not parts[-1].strip():
        parts = parts[:-1]
    return [p.strip() for p in parts]


def refs_in(text: str) -> list[str]:
    """`suite.case` references of a piece of text, file names excepted."""
    return ['%s.%s' % (m.group(1), m.group(2)) for m in _REF.finditer(text)
            if m.group(2) not in FILE_EXTENSIONS]


def parse_matrix(text: str, tree_names: Iterable[str]) -> tuple[
        dict[str, list[tuple[str, int]]], list[tuple[str, int]],
        list[tuple[int, str]]]:
    """Split the matrix into the references of each tree's column and
    the others.

    Return (columns, prose, problems): columns {tree: [(ref, line)]},
    prose [(ref, line)], problems [(line, why)].
    """
    lines = text.splitlines()
    columns: dict[str, list[tuple[str, int]]] = {
        name: [] for name in tree_names}
    prose: list[tuple[str, int]] = []
    problems: list[tuple[int, str]] = []
    want = [BEHAVIOUR] + list(tree_names)
    i = 0
    while i < len(lines):
        line = lines[i]
        is_table = (line.lstrip().startswith('|') and i + 1 < len(lines)
                    and _SEPARATOR.match(lines[i + 1].strip()))
        header = cells(line) if is_table else []
        if not header or header[0] != BEHAVIOUR or not any(
                re.match(r'^\d+\.\d+$', h) for h in header[1:]):
            prose += [(ref, i + 1) for ref in refs_in(line)]
            i += 1
            continue
        if header != want:
            problems.append((i + 1, 'a tree table\'s header must be `| %s |` '
                             '(the trees of kunit/trees), not `| %s |`'
                             % (' | '.join(want), ' | '.join(header))))
        i += 2
        while i < len(lines) and lines[i].lstrip().startswith('|'):
            row = cells(lines[i])
            if len(row) != len(header):
                problems.append((i + 1, 'row has %d cells, its header %d'
                                 % (len(row), len(header))))
            prose += [(ref, i + 1) for ref in refs_in(row[0] if row else '')]
            for name, cell in zip(header[1:], row[1:]):
                refs = refs_in(cell)
                if name not in columns:
                    prose += [(ref, i + 1) for ref in refs]
                    continue
                columns[name] += [(ref, i + 1) for ref in refs]
                if not refs and cell != '-' and \
                   not _NOT_APPLICABLE.match(cell):
                    problems.append((i + 1, 'cell of %s names no case: '
                                     'write the cases, `-` or `n/a — '
                                     'reason`, not %r' % (name, cell)))
            i += 1
    return columns, prose, problems


def check(matrix: str, kunit_dir: str, trees: list[Tree] | None = None
          ) -> tuple[dict[str, int], list[str]]:
    """Check the matrix for trees (default every tree of kunit_dir/trees).

    Return ({tree name: number of cases}, list of problem lines).
    """
    problems = []
    try:
        known = read_trees(os.path.join(kunit_dir, 'trees'))
    except ToolError as e:
        return {}, [str(e)]
    trees = trees or known
    selected = {t.name for t in trees}
    cases = {}
    for tree in known:
        found: list[str] = []
        cases[tree.name] = tree_cases(tree, kunit_dir, found)
        if tree.name in selected:
            problems += found
    try:
        with open(matrix, encoding='utf-8', errors='replace') as f:
            text = f.read()
    except OSError as e:
        problems.append('%s: cannot read: %s' % (display(matrix),
                                                 e.strerror))
        return {t.name: len(cases[t.name]) for t in trees}, \
            list(dict.fromkeys(problems))
    where = display(matrix)
    columns, prose, table_problems = parse_matrix(
        text, [t.name for t in known])
    problems += ['%s:%d: %s' % (where, line, why)
                 for line, why in table_problems]
    everywhere = set().union(*cases.values())
    for ref, line in prose:
        if ref not in everywhere:
            problems.append('%s:%d: `%s` names no KUnit case of any tree '
                            '(%s)' % (where, line, ref,
                                      ', '.join(t.name for t in known)))
    for tree in trees:
        mine = cases[tree.name]
        seen = set()
        for ref, line in columns[tree.name]:
            if ref not in mine:
                problems.append('%s:%d: `%s` in the %s column names no '
                                'KUnit case of tree %s'
                                % (where, line, ref, tree.name, tree.name))
            seen.add(ref)
        for case, loc in sorted(mine.items(), key=lambda kv: kv[1]):
            if case not in seen:
                problems.append('%s: %s (tree %s) is not in the %s column '
                                'of %s' % (loc, case, tree.name, tree.name,
                                           where))
    return ({t.name: len(cases[t.name]) for t in trees},
            list(dict.fromkeys(problems)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--matrix', default=DEFAULT_MATRIX,
                    help='the matrix (default docs/coverage-matrix.md)')
    ap.add_argument('--kunit', default=DEFAULT_KUNIT, metavar='DIR',
                    help='the kunit/ directory: trees, common/, TREE/, '
                    'harness/ (default kunit/)')
    ap.add_argument('--tree', action='append', metavar='TREE',
                    help='check this tree\'s column (repeatable; "all" or '
                    'none: every tree)')
    ap.add_argument('--list', action='store_true',
                    help='print every case of the trees, as TREE suite.case '
                    'file:line, and exit')
    args = ap.parse_args(argv)
    try:
        trees = select_trees(args.tree, os.path.join(args.kunit, 'trees'))
    except ToolError as e:
        print('%s: %s' % (TOOL, e), file=sys.stderr)
        return e.status
    if args.list:
        problems: list[str] = []
        for tree in trees:
            found = tree_cases(tree, args.kunit, problems)
            for case, where in sorted(found.items(), key=lambda kv: kv[1]):
                print('%s %s %s' % (tree.name, case, where))
        for p in dict.fromkeys(problems):
            print(p)
        return 1 if problems else 0
    counts, problems = check(args.matrix, args.kunit, trees)
    if problems:
        for p in problems:
            print(p)
        print('%s: %d problem%s' % (TOOL, len(problems),
                                    '' if len(problems) == 1 else 's'))
        return 1
    print('%s: %s, all mapped' % (TOOL, ', '.join(
        '%s: %d cases' % (name, n) for name, n in counts.items())))
    return 0


if __name__ == '__main__':
    sys.exit(main())
