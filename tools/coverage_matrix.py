#!/usr/bin/env python3
"""Check docs/coverage-matrix.md against the KUnit cases under kunit/.

A KUnit case is a function listed as KUNIT_CASE(name) or
KUNIT_CASE_PARAM(name, gen) (or another KUNIT_CASE* macro whose first
argument is the case) inside a `struct kunit_case NAME[] = { ... }` array
of any kunit/**/*.c. It is qualified by its suite: the .name of the
`struct kunit_suite` whose .test_cases is that array, giving `suite.case`.
Comments are ignored; preprocessor conditionals are not evaluated, so a
case inside #ifdef counts.

The matrix refers to a case as `suite.case`, in backticks, anywhere in the
file (tables, lists, the "Not yet covered" section). Every backticked
token of the form `identifier.identifier` counts as a reference, except
file names such as `gup_kunit.c` or `kunit.py` (the part after the dot is
a file extension: c, h, py, md, ...).

Problems, one line each, then a count line; exit status 1:
  - a reference in the matrix that names no case of the sources;
  - a case of the sources that the matrix does not mention;
  - a case array that no suite uses, or a suite whose .test_cases array
    does not exist (the check could not qualify its cases).
On success prints one line 'coverage-matrix: N cases, all mapped' and
exits 0. `make check` (tools/check.py) runs this with no arguments.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = 'coverage-matrix'
DEFAULT_MATRIX = os.path.join(ROOT, 'docs', 'coverage-matrix.md')
DEFAULT_KUNIT = os.path.join(ROOT, 'kunit')

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


def strip_comments(text):
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


def parse_source(path, text):
    """Return (arrays, suites) of one C file.

    arrays: {array name: [(case, line), ...]}
    suites: [(suite name, array name, line), ...]
    """
    code = strip_comments(text)

    def line_of(pos):
        return code.count('\n', 0, pos) + 1

    arrays, suites = {}, []
    for m in _ARRAY.finditer(code):
        end = _body(code, m.end() - 1)
        body = code[m.end():end]
        arrays[m.group(1)] = [(c.group(1), line_of(m.end() + c.start()))
                              for c in _CASE.finditer(body)]
    for m in _SUITE.finditer(code):
        end = _body(code, m.end() - 1)
        body = code[m.end():end]
        name = _NAME.search(body)
        cases = _TEST_CASES.search(body)
        suites.append((name.group(1) if name else None,
                       cases.group(1) if cases else None,
                       line_of(m.start())))
    return arrays, suites


def c_files(kunit_dir):
    out = []
    for dirpath, dirs, files in os.walk(kunit_dir):
        dirs.sort()
        for name in sorted(files):
            if name.endswith('.c'):
                out.append(os.path.join(dirpath, name))
    return out


def display(path):
    """Path relative to the repository (or cwd) for messages."""
    path = os.path.abspath(path)
    for base in (ROOT, os.getcwd()):
        rel = os.path.relpath(path, base)
        if not rel.startswith('..'):
            return rel
    return path


def source_cases(kunit_dir, problems):
    """Return {'suite.case': 'file:line'} for every case under kunit_dir."""
    cases = {}
    for path in c_files(kunit_dir):
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


def matrix_refs(text):
    """Return [(ref, line)] for every `suite.case` reference."""
    refs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in _REF.finditer(line):
            if m.group(2) in FILE_EXTENSIONS:
                continue
            refs.append(('%s.%s' % (m.group(1), m.group(2)), lineno))
    return refs


def check(matrix, kunit_dir):
    """Return (number of cases, list of problem lines)."""
    problems = []
    cases = source_cases(kunit_dir, problems)
    if not cases and not problems:
        problems.append('%s: no KUnit cases found' % display(kunit_dir))
    try:
        with open(matrix, encoding='utf-8', errors='replace') as f:
            text = f.read()
    except OSError as e:
        problems.append('%s: cannot read: %s' % (display(matrix),
                                                 e.strerror))
        return len(cases), problems
    refs = matrix_refs(text)
    seen = set()
    for ref, line in refs:
        if ref not in cases:
            problems.append('%s:%d: `%s` names no KUnit case in %s'
                            % (display(matrix), line, ref,
                               display(kunit_dir)))
        seen.add(ref)
    for case, where in sorted(cases.items(), key=lambda kv: kv[1]):
        if case not in seen:
            problems.append('%s: %s is not in %s'
                            % (where, case, display(matrix)))
    return len(cases), problems


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--matrix', default=DEFAULT_MATRIX,
                    help='the matrix (default docs/coverage-matrix.md)')
    ap.add_argument('--kunit', default=DEFAULT_KUNIT, metavar='DIR',
                    help='directory searched for *.c (default kunit/)')
    ap.add_argument('--list', action='store_true',
                    help='print every suite.case with its location and '
                    'exit')
    args = ap.parse_args(argv)
    if args.list:
        problems = []
        for case, where in sorted(source_cases(args.kunit, problems).items(),
                                  key=lambda kv: kv[1]):
            print('%s %s' % (case, where))
        for p in problems:
            print(p)
        return 1 if problems else 0
    n, problems = check(args.matrix, args.kunit)
    if problems:
        for p in problems:
            print(p)
        print('%s: %d problem%s' % (TOOL, len(problems),
                                    '' if len(problems) == 1 else 's'))
        return 1
    print('%s: %d cases, all mapped' % (TOOL, n))
    return 0


if __name__ == '__main__':
    sys.exit(main())
