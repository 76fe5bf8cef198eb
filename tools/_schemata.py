"""Mutant schemata: many mutants of a .c file compiled into one kernel.

A generated mutant changes a few lines of one function. Built one at a
time, each mutant costs an incremental kernel build (about 30 s on two
cores) for a suite run of a few seconds. A mutant schema (Untch, Offutt
and Harrold, "Mutation analysis using mutant schemata", ISSTA 1993; the
"schemata" mode of dextool) puts them all in one build:

  - every function F with mutants becomes copies, F__gupmut_0 (the
    function as it is) and F__gupmut_N (mutant N), each `static` with
    F's body, the one mutant's lines changed;
  - F itself keeps its signature and only dispatches on the kernel
    parameter gup_mutant (core_param, read at boot before any initcall):
    mutant N's copy if gup_mutant is N, else the copy of the original.

A kernel booted with gup_mutant=N then runs mutant N's code in F from
boot on, as the kernel built from mutant N's patch would, and every
other function as it is. The copies keep F's inline and attribute
specifiers, so constant arguments still fold as they did. What differs
from the patch's kernel is layout: line numbers in WARN reports, a
__func__ of a copy, one more call.

This module only writes text; tools/genmut.py builds and runs it.
"""

import re

from _common import ToolError

VAR = 'gup_mutant'
SUFFIX = '__gupmut_'

PREAMBLE_DEFINE = (
    '#include <linux/moduleparam.h>\n'
    '/* gup-pin-kunit mutant schema: the mutant the kernel runs (0: none) '
    '*/\n'
    'extern int %(var)s;\n'
    'int %(var)s;\n'
    'core_param(%(var)s, %(var)s, int, 0444);\n')
PREAMBLE_EXTERN = (
    '/* gup-pin-kunit mutant schema: the mutant the kernel runs */\n'
    'extern int %(var)s;\n')

STRIP_RE = re.compile(r'\b(?:static|extern)\s+')
WORD_RE = re.compile(r'[A-Za-z_]\w*')


class SchemaError(ToolError):
    """A function that cannot be put in a schema (its mutants then run
    from their patches)."""


def region(lines, func, first):
    """The first line (1-based) of func's definition text: the line
    before first when the name starts its line (the return type is
    there), else first."""
    if first > 1 and lines[first - 1].startswith(func):
        return first - 1
    return first


def _split_signature(lines, func, a, last):
    """(signature lines, body lines) of func on lines a..last: the body
    starts at the line that is '{' alone (kernel style)."""
    for i in range(a, last + 1):
        if lines[i - 1].strip() == '{':
            return lines[a - 1:i - 1], lines[i - 1:last]
        if '{' in lines[i - 1]:
            break
    raise SchemaError('%s: its opening brace is not alone on a line'
                      % func)


def _params(sig_text, func):
    """The parameter names of a signature, in order."""
    m = re.search(r'\b%s\s*\(' % re.escape(func), sig_text)
    if not m:
        raise SchemaError('%s: no parameter list in its signature' % func)
    depth, i, start = 1, m.end(), m.end()
    while depth and i < len(sig_text):
        if sig_text[i] == '(':
            depth += 1
        elif sig_text[i] == ')':
            depth -= 1
        i += 1
    if depth:
        raise SchemaError('%s: unbalanced parameter list' % func)
    inner = sig_text[start:i - 1]
    parts, depth, cur = [], 0, ''
    for ch in inner:
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
            continue
        depth += ch in '([' and 1 or 0
        depth -= ch in ')]' and 1 or 0
        cur += ch
    parts.append(cur)
    names = []
    for p in parts:
        p = p.strip()
        if p in ('', 'void'):
            if len(parts) == 1:
                return []
            raise SchemaError('%s: an empty parameter' % func)
        if '...' in p:
            raise SchemaError('%s: variadic' % func)
        fp = re.search(r'\(\s*\*\s*([A-Za-z_]\w*)\s*\)', p)
        if fp:
            names.append(fp.group(1))
            continue
        words = WORD_RE.findall(p.split('[')[0])
        if len(words) < 2:
            raise SchemaError('%s: a parameter without a name: %r'
                              % (func, p))
        names.append(words[-1])
    return names


def _returns_void(sig_text, func):
    before = sig_text[:re.search(r'\b%s\s*\(' % re.escape(func),
                                 sig_text).start()]
    return '*' not in before and re.search(r'\bvoid\b', before) is not None


def _copy(sig, body, func, n):
    """F's definition renamed F__gupmut_n and made static."""
    text = '\n'.join(sig)
    new, k = re.subn(r'\b%s(\s*\()' % re.escape(func),
                     r'%s%s%d\1' % (func, SUFFIX, n), text, count=1)
    if not k:
        raise SchemaError('%s: its name is not in its signature' % func)
    new = 'static ' + STRIP_RE.sub('', new)
    return new.split('\n') + body


def _wrapper(sig, func, ids, void, params):
    args = ', '.join(params)
    out = list(sig) + ['{', '\tswitch (%s) {' % VAR]
    for n in ids:
        call = '%s%s%d(%s)' % (func, SUFFIX, n, args)
        out.append('\tcase %d:' % n)
        if void:
            out += ['\t\t%s;' % call, '\t\treturn;']
        else:
            out.append('\t\treturn %s;' % call)
    out.append('\t}')
    call = '%s%s0(%s)' % (func, SUFFIX, args)
    out.append('\t%s;' % call if void else '\treturn %s;' % call)
    out.append('}')
    return out


def function_schema(lines, func, first, last, mutants):
    """The text (lines) that replaces lines region()..last of a function
    with mutants [(id, first line, last line, new lines)] (1-based file
    lines, the mutant replacing first..last by new lines), and its spans
    [(offset of first line, offset of last line, id)] relative to the
    returned lines: id 0 for the copy of the original, None for the
    dispatcher."""
    a = region(lines, func, first)
    sig, body = _split_signature(lines, func, a, last)
    sig_text = '\n'.join(sig)
    params = _params(sig_text, func)
    void = _returns_void(sig_text, func)
    out, spans = [], []

    def add(chunk, ident):
        spans.append((len(out), len(out) + len(chunk) - 1, ident))
        out.extend(chunk + [''])

    add(_copy(sig, body, func, 0), 0)
    body_first = a + len(sig)
    for ident, m_first, m_last, new in mutants:
        if m_first < body_first or m_last > last:
            raise SchemaError('%s: a mutant outside its body (line %d)'
                              % (func, m_first))
        i, j = m_first - body_first, m_last - body_first + 1
        add(_copy(sig, body[:i] + list(new) + body[j:], func, ident), ident)
    wrapper = _wrapper(sig, func, [m[0] for m in mutants], void, params)
    spans.append((len(out), len(out) + len(wrapper) - 1, None))
    out.extend(wrapper)
    return out, spans


def file_schema(text, functions, define):
    """The schema of a file: text with each function of functions
    [(func, first, last, mutants)] replaced by its function_schema(),
    right after a preamble that declares gup_mutant (define: the first
    one of this file defines it). The preamble goes before each function,
    not at the top: a header's functions may sit in #ifdef blocks of their
    own, inside its include guard. Return (new text, spans), spans
    [(first, last, func, id)] in lines of the new text (1-based,
    inclusive)."""
    lines = text.split('\n')
    out = []
    spans = []
    pos = 1
    for func, first, last, mutants in sorted(functions,
                                             key=lambda f: f[1]):
        a = region(lines, func, first)
        if a < pos:
            raise SchemaError('%s: overlaps the function before it' % func)
        out += lines[pos - 1:a - 1]
        out += ((PREAMBLE_DEFINE if define else PREAMBLE_EXTERN)
                % {'var': VAR}).rstrip('\n').split('\n')
        define = False
        chunk, sp = function_schema(lines, func, first, last, mutants)
        base = len(out) + 1
        spans += [(base + s, base + e, func, ident) for s, e, ident in sp]
        out += chunk
        pos = last + 1
    out += lines[pos - 1:]
    return '\n'.join(out), spans


ERROR_RE = re.compile(r'(?:^|[\s/])(%s):(\d+):\d+: (?:error|note: in '
                      r'expansion of macro)')


def error_lines(output, path):
    """The lines of path (a tree path such as mm/gup.c) that the
    compiler's output names in an error, or in the macro expansion that
    an error came from."""
    rx = re.compile(ERROR_RE.pattern % re.escape(path), re.M)
    return sorted(set(int(m.group(2)) for m in rx.finditer(output)))


def span_of(spans, line):
    """(func, id) of the span that holds a line, else None."""
    for a, b, func, ident in spans:
        if a <= line <= b:
            return func, ident
    return None
