#!/usr/bin/env python3
"""Mutants that nobody chose: standard mutation operators applied to every
line of the pin core (`make mutants-generated`).

The catalogue kunit/mutants/TREE/catalogue was written by the people who
wrote the tests. This tool generates mutants mechanically, from the text
of the tree's source (build/TREE/linux, read only) and the line ranges of
the functions of its pin core (kunit/TREE/pin-core, the functions that
`make coverage` measures; the ranges come from source_extents() in
tools/_common.py), so that the score measures the suite.

Subcommands (each takes --tree, repeatable; default every tree of
kunit/trees):
  list          every generated mutant: NAME, FILE:LINE and what it changes
  stats         how many per function, per operator, and in headers
  write DIR     the patches, DIR/TREE/NAME.patch (a catalogue entry's
                format, without its Mutant: line)
  sample        the names of the CI sample (--seed, --count)
  run [NAME..]  run the mutants (all, the NAMEs or shell patterns given,
                or with --sample the CI sample) through tools/mutate.py's
                runner and kill rules; reports in RESULTS/mutants-generated.
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
the mutants under the kill rules of the catalogue (tools/mutate.py), in
one of two modes:

  --mode schema (default): the mutants of .c files are written into one
    mutant schema (tools/_schemata.py: each mutated function becomes a
    copy per mutant and a dispatcher on the boot parameter gup_mutant),
    its objects compiled (a mutant that the compiler names is dropped as
    nocompile if its own patch does not compile either, else it runs
    from its patch), the kernel built once and run once with
    gup_mutant=0 (the baseline of these runs), then once per mutant with
    gup_mutant=N and no build: a few seconds a mutant instead of an
    incremental build. The tree is restored at the end. Header mutants,
    and those of a function that cannot be put in a schema, then run as
    in patch mode. Each entry says its mode.
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
header keeps its old mtime and those files get a new one (see
mutate.run_one()). Every other object compiles to the same code. An
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
import argparse
import bisect
import collections
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutate  # noqa: E402
import _schemata  # noqa: E402
from _common import (ToolError, add_tree_argument,  # noqa: E402
                     die, display, interrupt_on_sigterm, kernel_sources,
                     read_pin_core,
                     selected_trees, source_extents)

TOOL = 'genmut'
# The CI sample: the one place its seed and size are set.
SAMPLE_SEED = 19
SAMPLE_COUNT = 20
EQUIVALENT_FILE = 'generated-equivalent'
REPORT = 'mutants-generated'
TIMEOUT = 20
CI_REPORT = 'mutants-generated-ci'

OPERATORS = collections.OrderedDict([
    ('negate', 'negate a condition'),
    ('lt2le', '< to <='), ('le2lt', '<= to <'),
    ('gt2ge', '> to >='), ('ge2gt', '>= to >'),
    ('eq2ne', '== to !='), ('ne2eq', '!= to =='),
    ('and2or', '&& to ||'), ('or2and', '|| to &&'),
    ('add2sub', '+ to -'), ('sub2add', '- to +'),
    ('inc', 'a constant N to N+1'), ('dec', 'a constant N to N-1'),
    ('bias', 'GUP_PIN_COUNTING_BIAS to GUP_PIN_COUNTING_BIAS - 1'),
    ('del', 'delete a call or assignment'),
    ('ret', 'an early return gives the other outcome'),
    ('getpin', 'swap FOLL_GET and FOLL_PIN'),
])
OP_ORDER = {op: i for i, op in enumerate(OPERATORS)}
RELATIONAL = {'<': ('lt2le', '<='), '<=': ('le2lt', '<'),
              '>': ('gt2ge', '>='), '>=': ('ge2gt', '>'),
              '==': ('eq2ne', '!='), '!=': ('ne2eq', '==')}
LOGICAL = {'&&': ('and2or', '||'), '||': ('or2and', '&&')}
ARITH = {'+': ('add2sub', '-'), '-': ('sub2add', '+'),
         '+=': ('add2sub', '-='), '-=': ('sub2add', '+='),
         '++': ('add2sub', '--'), '--': ('sub2add', '++')}
FLAGS = {'FOLL_GET': 'FOLL_PIN', 'FOLL_PIN': 'FOLL_GET'}
BIAS = 'GUP_PIN_COUNTING_BIAS'
ASSERTION_RE = re.compile(r'^(VM_BUG_ON\w*|VM_WARN_ON\w*|BUILD_BUG_ON\w*|'
                          r'lockdep_assert\w*|might_sleep|might_fault)$')
DECL_MACRO_RE = re.compile(r'^(LIST_HEAD|DEFINE_\w+|DECLARE_\w+|\w+_STATE)$')
TRUTH_CALL_RE = re.compile(r'^(WARN\w*|likely|unlikely)$')
KEYWORDS = frozenset('''auto break case char const continue default do
    double else enum extern float for goto if inline int long register
    return short signed sizeof static struct switch typedef union unsigned
    void volatile while bool typeof __typeof__ _Bool'''.split())
TYPE_WORDS = frozenset('''struct union enum const volatile static unsigned
    signed int long short char bool void register _Bool typeof
    __typeof__'''.split())
NAME_RE = re.compile(r'^[A-Za-z_]\w*\+\d+-[a-z0-9]+(?:-\d+)?$')

# --------------------------------------------------------------------------
# A small C tokenizer: no comments, strings or preprocessor lines come out
# as code.
# --------------------------------------------------------------------------

PUNCTUATORS = sorted('''>>= <<= ... -> ++ -- << >> <= >= == != && || += -=
    *= /= %= &= |= ^= ## { } [ ] ( ) ; : , . ? ~ ! + - * / % < > = & | ^
    #'''.split(), key=len, reverse=True)
TOKEN_RE = re.compile(r'''
    (?P<space>[ \t\r\f\v]+|\\\n)
  | (?P<newline>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<char>'(?:\\.|[^'\\\n])*')
  | (?P<number>(?:0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>%s)
''' % '|'.join(re.escape(p) for p in PUNCTUATORS), re.S | re.X)


class Tok(collections.namedtuple('Tok', 'kind text start end')):
    __slots__ = ()


def tokenize(text, start=0, end=None):
    """The tokens of text[start:end]: [Tok(kind, text, start, end)] with
    kind 'ident', 'number', 'string', 'char' or 'punct'. Comments and
    whitespace give none; a preprocessor line (first non-blank '#', with
    its backslash continuations) gives none either. An unterminated
    comment or an unknown character is a ToolError."""
    end = len(text) if end is None else end
    out = []
    pos = start
    line_start = True
    while pos < end:
        if line_start:
            m = re.compile(r'[ \t]*#').match(text, pos)
            if m:
                while True:
                    nl = text.find('\n', pos)
                    if nl < 0 or nl >= end:
                        pos = end
                        break
                    j = nl - 1
                    if j >= pos and text[j] == '\\':
                        pos = nl + 1
                        continue
                    # a block comment opened on the directive line
                    c = text.find('/*', pos, nl)
                    if c >= 0 and text.find('*/', c, nl) < 0:
                        close = text.find('*/', c)
                        if close < 0:
                            raise ToolError('unterminated comment at offset '
                                            '%d' % c)
                        pos = close + 2
                        continue
                    pos = nl + 1
                    break
                continue
        if text.startswith('/*', pos) and text.find('*/', pos + 2) < 0:
            raise ToolError('unterminated comment at offset %d' % pos)
        m = TOKEN_RE.match(text, pos)
        if not m or m.end() > end:
            raise ToolError('cannot tokenize %r at offset %d'
                            % (text[pos:pos + 10], pos))
        kind = m.lastgroup
        if kind == 'newline':
            line_start = True
        elif kind == 'space' or kind == 'comment':
            if kind == 'comment' and '\n' in m.group():
                line_start = False
        else:
            line_start = False
            out.append(Tok(kind, m.group(), m.start(), m.end()))
        pos = m.end()
    return out


# --------------------------------------------------------------------------
# Statements of a function body
# --------------------------------------------------------------------------

class ParseError(ToolError):
    pass


class Body:
    """The sites of one function body, from its tokens.

    conds:   (first, last) token index ranges (inclusive) of conditions
    exprs:   (first, semicolon, is_body) expression statements
    returns: (return, semicolon, is_body)
    skip:    set of token indices of assertion statements
    truth:   set of token indices of literals used as truth values
    decls:   (first, semicolon) declarations
    last:    (first, end) of the body's last top-level statement
    """

    def __init__(self, toks):
        self.t = toks
        self.conds, self.exprs, self.returns, self.decls = [], [], [], []
        self.skip = set()
        self.truth = set()
        self.last = None
        if not toks or toks[0].text != '{':
            raise ParseError('function body does not start with {')
        self.match = self._matches()
        end = self.block(0, top=True)
        if end != len(toks):
            raise ParseError('tokens after the closing brace')

    def _matches(self):
        pairs = {')': '(', ']': '[', '}': '{'}
        stack, match = [], {}
        for i, tok in enumerate(self.t):
            if tok.kind != 'punct':
                continue
            if tok.text in '([{':
                stack.append(i)
            elif tok.text in pairs:
                if not stack or self.t[stack[-1]].text != pairs[tok.text]:
                    raise ParseError('unbalanced %r at offset %d'
                                     % (tok.text, tok.start))
                j = stack.pop()
                match[i], match[j] = j, i
        if stack:
            raise ParseError('unbalanced %r' % self.t[stack[-1]].text)
        return match

    def text(self, i):
        return self.t[i].text if i < len(self.t) else ''

    def semi(self, i):
        """Index of the ';' that ends the statement starting at i."""
        while i < len(self.t):
            tx = self.t[i].text
            if tx in ('(', '[', '{') and self.t[i].kind == 'punct':
                i = self.match[i] + 1
                continue
            if tx == ';':
                return i
            if tx == '}':
                break
            i += 1
        raise ParseError('no ; after offset %d' % self.t[min(i, len(self.t)
                                                            - 1)].start)

    def block(self, i, top=False):
        close = self.match[i]
        j = i + 1
        while j < close:
            start = j
            j = self.stmt(j)
            if top:
                self.last = (start, j)
        return close + 1

    def is_decl(self, i):
        t0, t1 = self.t[i], self.t[i + 1] if i + 1 < len(self.t) else None
        if t0.kind == 'ident' and t0.text in TYPE_WORDS:
            return True
        if t0.kind == 'ident' and t0.text not in KEYWORDS and t1 and \
                t1.kind == 'ident' and t1.text not in KEYWORDS:
            return True
        if t0.kind == 'ident' and t1 and t1.text == '*' and \
                i + 2 < len(self.t) and self.t[i + 2].kind == 'ident':
            nxt = self.text(i + 3)
            return nxt in ('=', ';', ',', '[')
        return False

    def stmt(self, i, body=False):
        t = self.t[i]
        tx = t.text
        if tx == '{' and t.kind == 'punct':
            return self.block(i)
        if tx == ';':
            return i + 1
        if t.kind == 'ident' and tx in ('if', 'while', 'switch'):
            lpar = i + 1
            rpar = self.match[lpar]
            if tx != 'switch':
                self.conds.append((lpar + 1, rpar - 1))
                self._truth(lpar)
            j = self.stmt(rpar + 1, body=True)
            if tx == 'if' and self.text(j) == 'else':
                j = self.stmt(j + 1, body=True)
            return j
        if t.kind == 'ident' and tx == 'for':
            lpar = i + 1
            rpar = self.match[lpar]
            semis = []
            k = lpar + 1
            while k < rpar:
                if self.t[k].text in ('(', '[', '{'):
                    k = self.match[k]
                elif self.t[k].text == ';':
                    semis.append(k)
                k += 1
            if len(semis) == 2 and semis[1] > semis[0] + 1:
                self.conds.append((semis[0] + 1, semis[1] - 1))
            return self.stmt(rpar + 1, body=True)
        if t.kind == 'ident' and tx == 'do':
            j = self.stmt(i + 1, body=True)
            if self.text(j) != 'while':
                raise ParseError('do without while at offset %d' % t.start)
            rpar = self.match[j + 1]
            self.conds.append((j + 2, rpar - 1))
            return self.semi(rpar) + 1
        if t.kind == 'ident' and tx == 'return':
            semi = self.semi(i)
            self.returns.append((i, semi, body))
            return semi + 1
        if t.kind == 'ident' and tx in ('goto', 'break', 'continue'):
            return self.semi(i) + 1
        if t.kind == 'ident' and tx in ('case', 'default'):
            k = i + 1
            while self.text(k) != ':':
                k += 1
            return k + 1
        if t.kind == 'ident' and self.text(i + 1) == ':' and \
                tx not in KEYWORDS:
            return i + 2           # a label
        if t.kind == 'ident' and self.text(i + 1) == '(':
            rpar = self.match[i + 1]
            nxt = self.t[rpar + 1] if rpar + 1 < len(self.t) else None
            if nxt is not None and (nxt.text == '{' or (
                    nxt.kind == 'ident' and nxt.text != 'else')):
                return self.stmt(rpar + 1, body=True)   # a loop macro
        semi = self.semi(i)
        if self.is_decl(i):
            self.decls.append((i, semi))
            return semi + 1
        if t.kind == 'ident' and ASSERTION_RE.match(tx):
            self.skip.update(range(i, semi + 1))
            return semi + 1
        self.exprs.append((i, semi, body))
        return semi + 1

    def _truth(self, lpar):
        """Note a literal that is the whole of the parenthesis at lpar, or
        (inside a condition) of a WARN*/likely/unlikely call."""
        rpar = self.match[lpar]
        if rpar == lpar + 2 and self.t[lpar + 1].kind == 'number':
            self.truth.add(lpar + 1)


# --------------------------------------------------------------------------
# The operators
# --------------------------------------------------------------------------

Site = collections.namedtuple('Site', 'op start end new')


def parse_int(text):
    digits = text.rstrip('uUlL')
    suffix = text[len(digits):]
    if digits.lower().startswith('0x'):
        return int(digits, 16), suffix, 16
    if len(digits) > 1 and digits.startswith('0'):
        return int(digits, 8), suffix, 8
    return int(digits), suffix, 10


def format_int(value, suffix, base):
    if value < 0:
        return '(-%s)' % format_int(-value, suffix, base)
    if base == 16:
        return '0x%x%s' % (value, suffix)
    if base == 8 and value:
        return '0%o%s' % (value, suffix)
    return '%d%s' % (value, suffix)


def is_primary(toks, a, b):
    """Is toks[a..b] an identifier or a call `f(...)` spanning it all?"""
    if a == b:
        return toks[a].kind in ('ident', 'number')
    if toks[a].kind != 'ident' or toks[a + 1].text != '(':
        return False
    depth = 0
    for k in range(a + 1, b + 1):
        if toks[k].text == '(':
            depth += 1
        elif toks[k].text == ')':
            depth -= 1
            if depth == 0 and k != b:
                return False
    return True


def return_kind(sig_toks, name):
    """'ptr', 'bool', 'void' or 'int' from the tokens of a signature."""
    before = []
    for tok in sig_toks:
        if tok.text == name:
            break
        before.append(tok.text)
    if '*' in before:
        return 'ptr'
    if 'bool' in before:
        return 'bool'
    if 'void' in before:
        return 'void'
    return 'int'


def truth_calls(body):
    """Literal token indices that are the only argument of WARN*(),
    likely() or unlikely()."""
    out = set()
    t = body.t
    for i in range(len(t) - 3):
        if t[i].kind == 'ident' and TRUTH_CALL_RE.match(t[i].text) and \
                t[i + 1].text == '(' and t[i + 2].kind == 'number' and \
                t[i + 3].text == ')':
            out.add(i + 2)
    return out


def sites(text, toks, name, kind=None):
    """The mutation sites of one function: [Site(op, start, end, new)]
    with start/end offsets into text and the replacement. toks: the
    function's tokens, signature included; kind: its return_kind()
    (default: from toks)."""
    lb = next((i for i, tk in enumerate(toks) if tk.text == '{'), None)
    if lb is None:
        raise ParseError('%s has no body' % name)
    kind = kind or return_kind(toks[:lb], name)
    body = Body(toks[lb:])
    t = body.t
    truth = body.truth | truth_calls(body)
    out = []
    skip = body.skip

    def span(a, b):
        return t[a].start, t[b].end

    # negate
    for a, b in body.conds:
        if a in skip:
            continue
        start, end = span(a, b)
        cond = text[start:end]
        if t[a].text == '!' and is_primary(t, a + 1, b):
            new = text[t[a + 1].start:end]
        elif is_primary(t, a, b):
            new = '!' + cond
        else:
            new = '!(' + cond + ')'
        out.append(Site('negate', start, end, new))
    # token operators
    for i, tk in enumerate(t):
        if i in skip:
            continue
        prev = t[i - 1] if i else None
        binary = prev is not None and (
            prev.kind == 'number' or prev.text in (')', ']') or
            (prev.kind == 'ident' and prev.text not in KEYWORDS))
        if tk.kind == 'punct' and tk.text in RELATIONAL:
            op, new = RELATIONAL[tk.text]
            out.append(Site(op, tk.start, tk.end, new))
        elif tk.kind == 'punct' and tk.text in LOGICAL:
            op, new = LOGICAL[tk.text]
            out.append(Site(op, tk.start, tk.end, new))
        elif tk.kind == 'punct' and tk.text in ARITH and \
                (binary or tk.text in ('++', '--')):
            op, new = ARITH[tk.text]
            out.append(Site(op, tk.start, tk.end, new))
        elif tk.kind == 'number':
            value, suffix, base = parse_int(tk.text)
            for op, v in (('inc', value + 1), ('dec', value - 1)):
                if i in truth and (op == 'dec' if value == 0 else v != 0):
                    continue
                out.append(Site(op, tk.start, tk.end,
                                format_int(v, suffix, base)))
        elif tk.kind == 'ident' and tk.text == BIAS:
            out.append(Site('bias', tk.start, tk.end, '(%s - 1)' % BIAS))
        elif tk.kind == 'ident' and tk.text in FLAGS:
            out.append(Site('getpin', tk.start, tk.end, FLAGS[tk.text]))
    # del
    for a, semi, is_body in body.exprs:
        if t[a].kind == 'ident' and DECL_MACRO_RE.match(t[a].text):
            continue
        start, end = span(a, semi)
        out.append(Site('del', start, end, ';' if is_body else ''))
    # ret
    last = body.last
    values = [(r, s) for r, s, _b in body.returns if s > r + 1]
    for r, semi, is_body in body.returns:
        if last and r == last[0]:
            continue
        start, end = span(r, semi)
        expr = text[t[r + 1].start:t[semi - 1].end] if semi > r + 1 else ''
        new = other_outcome(kind, expr, t, r + 1, semi - 1, values, text)
        if new is None and kind == 'void' and not expr:
            out.append(Site('ret', start, end, ';' if is_body else ''))
        elif new is not None:
            out.append(Site('ret', start, end, 'return %s;' % new))
    return out


def other_outcome(kind, expr, t, a, b, values, text):
    """The replacement of an early return's expression, or None."""
    if not expr:
        return None
    others = [text[t[r + 1].start:t[s - 1].end] for r, s in values]
    if expr in ('true', 'false'):
        return 'false' if expr == 'true' else 'true'
    if kind == 'ptr':
        if expr == 'NULL':
            ids = [o for o in others if re.match(r'^[A-Za-z_]\w*$', o)
                   and o != 'NULL']
            return ids[0] if ids else None
        return 'NULL'
    if kind == 'bool':
        return expr[1:].lstrip() if expr.startswith('!') and \
            is_primary(t, a + 1, b) else \
            ('!' + expr if is_primary(t, a, b) else '!(' + expr + ')')
    if kind == 'int':
        if expr == '0':
            errs = [o for o in others if re.match(r'^-E[A-Z0-9]+$', o)]
            return errs[0] if errs else '-EINVAL'
        return '0'
    return None


# --------------------------------------------------------------------------
# Mutants of a tree
# --------------------------------------------------------------------------

class Mutant:
    """One generated mutant: name, function, file (tree path), line (of
    the site in the file), offset (from the function's first line), op,
    old and new (the lines before and after), hunk (the unified diff
    hunk, @@ line included)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def header(self):
        return self.file.endswith('.h')

    def diff(self):
        return '--- a/%s\n+++ b/%s\n%s' % (self.file, self.file, self.hunk)

    def diff_sha(self):
        return hashlib.sha256(self.diff().encode()).hexdigest()

    def subject(self):
        def short(lines):
            s = ' '.join(ln.strip() for ln in lines).strip() or '(nothing)'
            return s if len(s) <= 100 else s[:97] + '...'
        return "%s: %s: '%s' -> '%s'" % (
            self.name, OPERATORS[self.op], short(self.old), short(self.new))

    def patch(self, equivalent=None):
        head = 'Subject: %s\nModels: generated: %s\n' % (self.subject(),
                                                         self.op)
        if equivalent:
            head += 'Equivalent: %s\n' % equivalent
        return head + '\n' + self.diff()


def hunk(lines, first, last, new_lines, context=3):
    """A unified diff hunk replacing lines[first-1:last] (1-based,
    inclusive) by new_lines."""
    a = max(1, first - context)
    b = min(len(lines), last + context)
    before = lines[a - 1:first - 1]
    after = lines[last:b]
    old = lines[first - 1:last]
    n_old = len(before) + len(old) + len(after)
    n_new = len(before) + len(new_lines) + len(after)
    out = ['@@ -%d,%d +%d,%d @@' % (a, n_old, a, n_new)]
    out += [' ' + ln for ln in before]
    out += ['-' + ln for ln in old]
    out += ['+' + ln for ln in new_lines]
    out += [' ' + ln for ln in after]
    return '\n'.join(out) + '\n'


class Source:
    """A source file's text, its lines and line offsets."""

    def __init__(self, text):
        self.text = text
        self.lines = text.split('\n')
        if self.lines and self.lines[-1] == '':
            self.lines.pop()
        self.starts = [0]
        for ln in self.lines:
            self.starts.append(self.starts[-1] + len(ln) + 1)

    def line_of(self, offset):
        return bisect.bisect_right(self.starts, offset)

    def apply(self, site):
        """(first, last, new lines) of a site: the lines it touches and
        what they become; lines left blank by a deletion go."""
        first = self.line_of(site.start)
        last = self.line_of(site.end - 1)
        seg_start = self.starts[first - 1]
        seg_end = self.starts[last - 1] + len(self.lines[last - 1])
        new = (self.text[seg_start:site.start] + site.new +
               self.text[site.end:seg_end])
        new_lines = new.split('\n')
        if not new.strip():
            new_lines = []
        return first, last, new_lines


def function_mutants(src, func, path, first, last):
    """The mutants of one function, defined on lines first..last of src,
    in source and operator order, named."""
    start = src.starts[first - 1]
    end = src.starts[last]
    toks = tokenize(src.text, start, end)
    # The return type on the line before a name in column 0.
    sig_start = src.starts[first - 2] if first > 1 and \
        src.lines[first - 1].startswith(func) else start
    sig = tokenize(src.text, sig_start, end)
    kind = return_kind(sig[:next((i for i, tk in enumerate(sig)
                                  if tk.text == '{'), len(sig))], func)
    found = sites(src.text, toks, func, kind)
    found.sort(key=lambda s: (src.line_of(s.start), s.start,
                              OP_ORDER[s.op], s.end))
    per_line = collections.Counter(
        (src.line_of(s.start), s.op) for s in found)
    seen = collections.Counter()
    out = []
    for s in found:
        line = src.line_of(s.start)
        key = (line, s.op)
        seen[key] += 1
        name = '%s+%d-%s' % (func, line - first, s.op)
        if per_line[key] > 1:
            name += '-%d' % seen[key]
        a, b, new_lines = src.apply(s)
        out.append(Mutant(name=name, function=func, file=path, line=line,
                          offset=line - first, op=s.op,
                          old=src.lines[a - 1:b], new=new_lines,
                          hunk=hunk(src.lines, a, b, new_lines)))
    return out


def read_source(tree, path):
    """A file of build/TREE/linux as its git HEAD (the prepared tree) has
    it: what the working copy holds may be another run's mutant or
    schema, and the mutants are made against the tree as it is."""
    proc = subprocess.run(['git', '-C', tree.linux, 'show', 'HEAD:' + path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        why = proc.stderr.decode(errors='replace').strip().splitlines()
        raise ToolError('cannot read %s at HEAD: %s (is the tree prepared? '
                        'make tree TREE=%s)'
                        % (display(os.path.join(tree.linux, path)),
                           why[-1] if why else 'git show failed',
                           tree.name))
    return proc.stdout.decode('utf-8', errors='surrogateescape')


def generate(tree, read=None):
    """Every mutant of the tree's pin core: [Mutant], in pin-core order.
    read(path) gives a tree file's text (default: build/TREE/linux)."""
    read = read or (lambda p: read_source(tree, p))
    sources = {}
    out = []
    for func, path in read_pin_core(tree):
        if path not in sources:
            sources[path] = Source(read(path))
        src = sources[path]
        extents = source_extents(src.text, func)
        if not extents:
            raise ToolError('%s: function %s not found in %s'
                            % (tree.name, func, path))
        first, last = extents[0]
        try:
            out += function_mutants(src, func, path, first, last)
        except ToolError as e:
            raise ToolError('%s: %s (%s:%d): %s'
                            % (tree.name, func, path, first, e))
    names = collections.Counter(m.name for m in out)
    dup = [n for n, c in names.items() if c > 1]
    if dup:
        raise ToolError('%s: the name %s is given twice (a function listed '
                        'twice in the pin core?)' % (tree.name, dup[0]))
    return out


# --------------------------------------------------------------------------
# What a header mutant can change: --header-rebuild targeted
# --------------------------------------------------------------------------

HEADER_DIRS = ('include', 'arch/x86/include', 'mm')
INLINE_DEF_RE = re.compile(
    r'^(?:static\s+)?(?:inline|__always_inline)\b[^;{=]*?\b(\w+)\s*\(',
    re.M)
MACRO_DEF_RE = re.compile(r'^#\s*define\s+(\w+)\(', re.M)


def header_definitions(text):
    """[(name, body text)] of the inline functions and function-like
    macros that a header defines (kernel style: a function's body ends
    at a '}' alone in column 0, a macro at a line without a trailing
    backslash)."""
    out = []
    for m in INLINE_DEF_RE.finditer(text):
        end = text.find('\n}', m.end())
        out.append((m.group(1), text[m.end():end if end >= 0 else None]))
    for m in MACRO_DEF_RE.finditer(text):
        end = m.end()
        while True:
            nl = text.find('\n', end)
            if nl < 0 or text[nl - 1] != '\\':
                break
            end = nl + 1
        out.append((m.group(1), text[m.end():nl if nl >= 0 else None]))
    return out


def git_grep(tree, names, pathspecs):
    """Files of the tree (tracked) that name one of names as a word."""
    proc = mutate.git(tree.linux, 'grep', '-l', '-w', '-E',
                      '|'.join(sorted(names)), '--', *pathspecs)
    if proc.returncode not in (0, 1):
        raise ToolError('git grep failed in %s: %s'
                        % (display(tree.linux), proc.stdout.strip()[-200:]))
    return proc.stdout.split()


def header_dependents(tree, function, build=None):
    """The .c files of the tree whose objects can contain the code of a
    header function: those that name it, or an inline function or
    function-like macro of a header that (through others) calls it, and
    whose object is in the build directory (default: make test's). Every
    other object compiles to the same code with and without the mutant.
    Return (sorted .c paths, sorted names of the closure)."""
    build = build or tree.kunit_build
    closure = {function}
    seen = set()
    while True:
        files = [f for f in git_grep(tree, closure,
                                     ['%s/*.h' % d for d in HEADER_DIRS])
                 if f not in seen]
        new = set()
        for f in files:
            seen.add(f)
        for f in sorted(seen):
            try:
                with open(os.path.join(tree.linux, f), errors='replace') as h:
                    text = h.read()
            except OSError:
                continue
            pat = re.compile(r'\b(%s)\b' % '|'.join(sorted(closure)))
            for name, body in header_definitions(text):
                if name not in closure and pat.search(body):
                    new.add(name)
        if not new:
            break
        closure |= new
    files = set(git_grep(tree, closure, ['*.c']))
    pat = re.compile(r'\b(%s)\b' % '|'.join(sorted(closure)))
    for rel in kernel_sources(tree):        # the tests, tracked or not
        if rel.endswith('.c') and rel not in files:
            try:
                with open(os.path.join(tree.linux, rel),
                          errors='replace') as f:
                    if pat.search(f.read()):
                        files.add(rel)
            except OSError:
                pass
    out = [f for f in files
           if os.path.exists(os.path.join(build, f[:-2] + '.o'))]
    return sorted(out), sorted(closure)


# --------------------------------------------------------------------------
# The equivalents file and the sample
# --------------------------------------------------------------------------

def equivalents_path(tree):
    return os.path.join(tree.mutants, EQUIVALENT_FILE)


def parse_equivalents(text, where, names=None):
    """{name: reasoning} from an equivalents file's text. where names the
    file in messages; names, if given, are the names the generator
    produces (a name not among them is stale). ToolError for a line
    without reasoning, a reasoning under four words, a bad or repeated
    name, a stale name."""
    out = {}
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


def read_equivalents(tree, names):
    path = equivalents_path(tree)
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (display(path), e.strerror))
    return parse_equivalents(text, display(path), set(names))


def sample_key(seed, name):
    return hashlib.sha256(('%s:%s' % (seed, name)).encode()).hexdigest()


def sample(mutants, equivalents, seed=SAMPLE_SEED, count=SAMPLE_COUNT):
    """The CI sample: count mutants of .c files not declared equivalent,
    those with the smallest sha256('SEED:NAME'), in generator order."""
    pool = [m for m in mutants if not m.header and m.name not in equivalents]
    chosen = set(m.name for m in sorted(
        pool, key=lambda m: sample_key(seed, m.name))[:count])
    return [m for m in mutants if m.name in chosen]


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------

COUNT_KEYS = ('generated', 'compiled', 'killed', 'equivalent', 'survived',
              'nocompile', 'noapply', 'not_run')


def counts(mutants, entries):
    """Counts of a group of mutants given {name: entry} of their runs."""
    c = {k: 0 for k in COUNT_KEYS}
    c['catalogue_errors'] = 0
    for m in mutants:
        c['generated'] += 1
        e = entries.get(m.name)
        if e is None:
            c['not_run'] += 1
            continue
        c[e['status']] += 1
        if e['status'] == 'killed' and e.get('equivalent_claimed'):
            c['catalogue_errors'] += 1
    c['compiled'] = (c['generated'] - c['nocompile'] - c['noapply'] -
                     c['not_run'])
    c['score'] = round(100.0 * (c['killed'] + c['equivalent']) /
                       c['compiled'], 1) if c['compiled'] else None
    return c


def score_line(c):
    """The counts in one line; killed mutants that the equivalents file
    declares equivalent (a wrong declaration: they fail the run) are
    named after the kills."""
    errors = c.get('catalogue_errors', 0)
    return ('generated %d, compiled %d, killed %d%s, equivalent %d, '
            'survived %d; dropped (nocompile) %d, noapply %d, not run %d; '
            'score %s' % (c['generated'], c['compiled'], c['killed'],
                          ' (%d of them declared equivalent: wrongly)'
                          % errors if errors else '',
                          c['equivalent'], c['survived'], c['nocompile'],
                          c['noapply'], c['not_run'],
                          '-' if c['score'] is None else '%.1f%%'
                          % c['score']))


def report(tree, mutants, entries, meta):
    """The report dict of results/TREE/mutants-generated.json; meta has
    tree_head and tests_sha256 (today's) and sample."""
    by_name = {e['name']: e for e in entries}
    funcs = []
    for func in dict.fromkeys(m.function for m in mutants):
        group = [m for m in mutants if m.function == func]
        funcs.append(dict(function=func, file=group[0].file,
                          **counts(group, by_name)))
    ops = []
    for op in OPERATORS:
        group = [m for m in mutants if m.op == op]
        if group:
            ops.append(dict(operator=op, **counts(group, by_name)))
    ordered = [by_name[m.name] for m in mutants if m.name in by_name]
    older = sum(1 for e in ordered
                if e.get('tests_sha256') != meta.get('tests_sha256'))
    modes = collections.Counter(e.get('mode', 'patch') for e in ordered)
    return dict(tree=tree.name, total=counts(mutants, by_name),
                functions=funcs, operators=ops, older_tests=older,
                modes=dict(sorted(modes.items())), mutants=ordered, **meta)


def markdown(rep, baseline=None):
    cell = mutate._md_cell
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
    for e in rep['mutants']:
        shown = mutate.shown_cases(e)
        status = mutate.status_text(e, 'declared equivalent: an error')
        out.append('| %s | %s | %s | %.1f | %s | %s |' % (
            cell(e['name']), cell(status), e.get('mode', 'patch'),
            e.get('seconds') or 0.0,
            cell(e.get('description', '')), cell(shown)))
    return '\n'.join(out) + '\n'


def summary_counts(c):
    passed = c['killed'] + c['equivalent'] - c['catalogue_errors']
    failed = c['survived'] + c['noapply'] + c['catalogue_errors']
    return passed, failed, c['nocompile']


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------

def cmd_list(tree, mutants, _eq, _args):
    for m in mutants:
        print('%s  %s:%d  %s' % (m.name, m.file, m.line,
                                 m.subject().split(': ', 1)[1]))


def cmd_stats(tree, mutants, eq, _args):
    print('%s: %d mutants, %d in headers, %d declared equivalent'
          % (tree.name, len(mutants), sum(m.header for m in mutants),
             len(eq)))
    for title, key in (('function', 'function'), ('operator', 'op'),
                       ('file', 'file')):
        c = collections.Counter(getattr(m, key) for m in mutants)
        print('  per %s:' % title)
        keys = list(dict.fromkeys(getattr(m, key) for m in mutants))
        if key == 'op':
            keys.sort(key=OP_ORDER.get)
        for k in keys:
            print('    %-40s %4d' % (k, c[k]))


def cmd_write(tree, mutants, eq, args):
    d = os.path.join(args.dir, tree.name)
    write_patches(mutants, eq, d)
    print('%s: %s: %d patches in %s' % (TOOL, tree.name, len(mutants),
                                        display(d)))


def write_patches(mutants, eq, d):
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


def cmd_sample(tree, mutants, eq, args):
    for m in sample(mutants, eq, args.seed, args.count):
        print(m.name)


def cmd_agree(tree, mutants, _eq, args):
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


def select(mutants, eq, args):
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


def load_previous(path):
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


def current(entry, head, m):
    """Is an earlier entry one of this mutant on this kernel code?"""
    return (entry.get('tree_head') == head and
            entry.get('diff_sha256') == m.diff_sha() and
            entry.get('status') in ('killed', 'survived', 'equivalent',
                                    'nocompile', 'noapply'))


def settled(entry, sha):
    """Need --resume not run this current entry again? Not if it ran
    against the test sources of today (sha), nor if it was killed, did
    not build or apply: new tests do not make a mutant live again. A
    survivor (or an equivalent) of older tests runs again: a new test may
    kill it."""
    return entry.get('tests_sha256') == sha or \
        entry['status'] in ('killed', 'nocompile', 'noapply')


def rescore_entry(entry, reason):
    """An earlier entry under today's equivalents file."""
    e = dict(entry)
    if e['status'] in ('killed', 'survived', 'equivalent'):
        outcome = 'killed' if e['status'] == 'killed' else 'survived'
        e['status'] = mutate.final_status(outcome, bool(reason))
    e['equivalent_claimed'] = bool(reason)
    e.pop('equivalent_reason', None)
    if reason:
        e['equivalent_reason'] = reason
    return e


def cmd_run(tree, mutants, eq, args):
    """Run the selected mutants; return (passed, failed, skipped)."""
    selected = select(mutants, eq, args)
    results = tree.expand(args.results)
    name = CI_REPORT if args.sample else REPORT
    runs = os.path.join(results, name)
    json_path = os.path.join(results, name + '.json')
    head = mutate.git(tree.linux, 'rev-parse', 'HEAD').stdout.strip()
    sha = mutate.tests_sha(tree)
    previous = load_previous(json_path)
    kept = {}
    for m in mutants:
        e = previous.get(m.name)
        if e is not None and current(e, head, m):
            kept[m.name] = rescore_entry(e, eq.get(m.name))
    todo = [m for m in selected
            if not (args.resume and m.name in kept and
                    settled(kept[m.name], sha))]
    # Every current patch, so that each entry's patch is there to read.
    paths = dict(zip([m.name for m in mutants],
                     write_patches(mutants, eq, os.path.join(runs,
                                                             'patches'))))
    deps = {}
    if args.header_rebuild == 'targeted':
        for func in dict.fromkeys(m.function for m in todo if m.header):
            deps[func], closure = header_dependents(tree, func)
            if not deps[func]:
                raise ToolError('no object of %s contains %s (is %s '
                                'built?)' % (tree.name, func,
                                             display(tree.kunit_build)))
            print('%s: %s: a mutant of %s rebuilds %d objects: %s (through '
                  '%s)' % (TOOL, tree.name, func, len(deps[func]),
                           ' '.join(deps[func]), ', '.join(closure)),
                  flush=True)
    loaded = []
    for m in todo:
        lm = mutate.load_mutant(paths[m.name])
        if m.function in deps:
            lm['touch'] = deps[m.function]
        lm['extra'] = {'mode': 'patch', 'function': m.function,
                       'operator': m.op,
                       'line': m.line, 'tree_head': head,
                       'diff_sha256': m.diff_sha()}
        loaded.append(lm)
    scope = mutants if not args.sample else selected
    meta = {'tree_head': head, 'tests_sha256': sha,
            'sample': {'seed': args.seed, 'count': args.count}
            if args.sample else None}
    redo = set(m.name for m in todo)
    keep = [e for n, e in kept.items() if n not in redo and
            any(m.name == n for m in scope)]

    def write(es, base):
        rep = report(tree, scope, es, meta)
        mutate.write_atomically(json_path, json.dumps(rep, indent=1) + '\n')
        mutate.write_atomically(os.path.join(results, name + '.md'),
                                markdown(rep, base))

    print('%s: %s: %d mutants selected, %d to run (%d of them in headers), '
          '%d kept from earlier runs' % (TOOL, tree.name, len(selected),
                                         len(todo),
                                         sum(m.header for m in todo),
                                         len(keep)), flush=True)
    if args.mode == 'schema':
        # A header mutant joins the schema only when its rebuild is
        # targeted: otherwise the schema would rebuild every includer.
        in_schema = [m for m in todo if not m.header or
                     args.header_rebuild == 'targeted']
        by_name = {lm['name']: lm for lm in loaded}
        keep, back = run_schemata(tree, in_schema, by_name, results, args,
                                  name, keep, write) if in_schema else \
            (keep, [])
        schema_names = set(m.name for m in in_schema)
        patch_names = set(m.name for m in todo
                          if m.name not in schema_names) | \
            set(m.name for m in back)
        loaded = [lm for lm in loaded if lm['name'] in patch_names]
    entries = mutate.run_mutants(tree, loaded, results, args.timeout,
                                 args.jobs, runs=name, kept=keep,
                                 write=write, tool=TOOL)
    by_name = {e['name']: e for e in entries}
    rep = report(tree, scope, entries, meta)
    print('%s: %s: %s; reports in %s' % (
        TOOL, tree.name, score_line(rep['total']),
        display(os.path.join(results, name + '.md'))), flush=True)
    return summary_counts(counts(selected, by_name))


# --------------------------------------------------------------------------
# --mode schema: the .c mutants of a run in one kernel (tools/_schemata.py)
# --------------------------------------------------------------------------

SCHEMA_BASELINE = '_schema_baseline'
# Where gup_mutant is defined when no .c file of the pin core has mutants
# in a schema: a file that every tree builds into the kernel.
DEFINE_FILE = 'mm/gup.c'
SCHEMA_ATTEMPTS = 8


def compile_objects(tree, paths, jobs):
    """make the objects of tree paths (mm/gup.c, ...) in the tree's kunit
    build directory; return (rc, output)."""
    objs = [p[:-2] + '.o' for p in paths]
    cmd = ['make', '-s', 'ARCH=x86_64', 'O=' + tree.kunit_build,
           '--jobs=%d' % (jobs or 2)] + objs
    proc = subprocess.run(cmd, cwd=tree.linux, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          errors='backslashreplace')
    return proc.returncode, proc.stdout


def first_error(output):
    return next((ln.strip() for ln in output.splitlines()
                 if ': error:' in ln), (output.strip().splitlines() or
                                        ['make failed'])[-1])


def schema_texts(tree, originals, active, ids):
    """{path: (text, spans)} of the schema of the active mutants, and the
    names of the mutants whose function cannot be put in one (with the
    reason)."""
    by_file = collections.OrderedDict()
    for m in active:
        by_file.setdefault(m.file, collections.OrderedDict()).setdefault(
            m.function, []).append(m)
    out, refused = {}, {}
    define = True
    # .c files first: one of them defines gup_mutant, never a header
    for path, funcs in sorted(by_file.items(),
                              key=lambda kv: kv[0].endswith('.h')):
        src = originals[path]
        specs = []
        for func, ms in funcs.items():
            first, last = source_extents(src, func)[0]
            specs.append((func, first, last,
                          [(ids[m.name], m.line, m.line + len(m.old) - 1,
                            m.new) for m in ms]))
        while True:
            try:
                out[path] = _schemata.file_schema(
                    src, specs, define and path.endswith('.c'))
                break
            except _schemata.SchemaError as e:
                func = str(e).split(':')[0]
                if not any(s[0] == func for s in specs):
                    raise ToolError('%s: schema of %s: %s'
                                    % (tree.name, path, e))
                for m in funcs[func]:
                    refused[m.name] = str(e)
                specs = [s for s in specs if s[0] != func]
                if not specs:
                    break
        if path in out and path.endswith('.c'):
            define = False
    if out and define:
        # Only headers: the definition goes to the top of DEFINE_FILE.
        pre = _schemata.PREAMBLE_DEFINE % {'var': _schemata.VAR}
        out[DEFINE_FILE] = (pre + originals[DEFINE_FILE], [])
    return out, refused


def build_schema(tree, todo, ids, jobs, touch=(), mtimes=None,
                 tool=TOOL):
    """Write the schema of the mutants todo into the tree and compile its
    objects, dropping what does not compile. Return (active mutants,
    {name: nocompile detail}, {name: why it runs from its patch}). The
    tree is left with the schema written (restore with
    mutate.restore()).

    A header in the schema (--header-rebuild targeted) gets its old mtime
    (mtimes[path]) back after each write, and the .c files of touch a new
    one, so that kbuild rebuilds their objects only; they are compiled
    with the schema's .c files."""
    paths = list(dict.fromkeys([m.file for m in todo] + [DEFINE_FILE]))
    originals = {p: read_source(tree, p) for p in paths}
    active = list(todo)
    nocompile, fallback = {}, {}

    def write_files(texts):
        for p in paths:
            text = texts[p][0] if p in texts else originals[p]
            with open(os.path.join(tree.linux, p), 'w',
                      encoding='utf-8', errors='surrogateescape') as f:
                f.write(text)
            if p.endswith('.h'):
                os.utime(os.path.join(tree.linux, p), ns=mtimes[p])
        now = time.time_ns()
        for p in touch:
            os.utime(os.path.join(tree.linux, p), ns=(now, now))

    def objects(texts):
        return list(dict.fromkeys([p for p in texts if p.endswith('.c')] +
                                  list(touch)))

    for _attempt in range(SCHEMA_ATTEMPTS):
        texts, refused = schema_texts(tree, originals, active, ids)
        fallback.update(refused)
        active = [m for m in active if m.name not in refused]
        write_files(texts)
        rc, out = compile_objects(tree, objects(texts), jobs)
        if rc == 0:
            return active, nocompile, fallback
        bad, funcs = set(), set()
        for p, (_text, spans) in texts.items():
            for ln in _schemata.error_lines(out, p):
                where = _schemata.span_of(spans, ln)
                if where is None:
                    raise ToolError('%s: the schema of %s does not compile '
                                    'outside its copies: %s'
                                    % (tree.name, p, first_error(out)))
                if where[1]:
                    bad.add(where[1])
                else:
                    funcs.add(where[0])
        if not bad and not funcs:
            raise ToolError('%s: the schema does not compile: %s'
                            % (tree.name, first_error(out)))
        for m in active:
            if m.function in funcs:
                fallback[m.name] = ('the copy of %s or its dispatcher does '
                                    'not compile' % m.function)
        # A mutant named by an error is dropped only if its own patch
        # does not compile either, as make mutants would have found.
        write_files({})
        for m in active:
            if ids[m.name] not in bad or m.name in fallback:
                continue
            lines = originals[m.file].split('\n')
            lines[m.line - 1:m.line - 1 + len(m.old)] = list(m.new)
            write_files({m.file: ('\n'.join(lines), [])})
            rc1, out1 = compile_objects(
                tree, list(touch) if m.header else [m.file], jobs)
            write_files({})
            if rc1:
                nocompile[m.name] = 'kernel build failed: ' + \
                    first_error(out1)
            else:
                fallback[m.name] = ('compiles alone, not in the schema: ' +
                                    first_error(out))
            print('%s: %s:   %s %s' % (
                tool, tree.name, m.name, 'NOCOMPILE' if rc1 else
                'runs from its patch (fails only in the schema)'),
                flush=True)
        active = [m for m in active if m.name not in nocompile and
                  m.name not in fallback]
        if not active:
            return active, nocompile, fallback
    raise ToolError('%s: no schema that compiles after %d attempts: %s'
                    % (tree.name, SCHEMA_ATTEMPTS, first_error(out)))


def schema_entry(lm, sha, ident):
    e = {'name': lm['name'], 'file': ', '.join(p for p, _ in lm['files']),
         'status': None, 'cases': [], 'seconds': 0.0,
         'description': lm['header']['subject'],
         'models': lm['header']['models'],
         'equivalent_claimed': bool(lm['header']['equivalent']),
         'patch': os.path.relpath(os.path.abspath(lm['path']), mutate.ROOT),
         'tests_sha256': sha}
    if e['equivalent_claimed']:
        e['equivalent_reason'] = lm['header']['equivalent']
    e.update(lm.get('extra') or {})
    e.update(mode='schema', schema_id=ident)
    return e


def run_schemata(tree, todo, loaded, results, args, runs, kept, write,
                 tool=TOOL):
    """Run the .c mutants todo in one schema kernel: build it, run it
    once with gup_mutant=0 (the baseline of these runs), then once per
    mutant with gup_mutant=N, under mutate's kill rules. A mutant of todo
    is a Mutant, or anything with its name, function, file, line, old,
    new and header (tools/mutate.py --mode schema gives catalogue
    mutants so); loaded[name] is its mutate.load_mutant() dict. tool
    starts the lines printed. Return (entries, kept ones first; the
    mutants that must run from their patches instead)."""
    entries = list(kept)
    linux = tree.linux
    ids = {m.name: i for i, m in enumerate(todo, 1)}
    sha = mutate.tests_sha(tree)
    files = [(p, 'modify') for p in dict.fromkeys(
        [m.file for m in todo] + [DEFINE_FILE])]
    headers = [(p, k) for p, k in files if p.endswith('.h')]
    touch = sorted(set(p for m in todo if m.header
                       for p in loaded[m.name].get('touch') or []))
    baseline = None
    snap = None
    t0 = time.monotonic()
    if not os.path.isfile(os.path.join(tree.kunit_build, '.config')):
        raise ToolError('%s: no kernel configured in %s to build a schema '
                        'in; run make test TREE=%s first'
                        % (tree.name, display(tree.kunit_build), tree.name))
    with mutate.BuildLock(tool):
        mutate.require_clean(linux)
        # As mutate.run_one() for a header mutant: old mtimes back at the
        # end, and the build directory as it was (a copy).
        mtimes = mutate.save_mtimes(
            linux, headers + [(p, 'modify') for p in touch]) \
            if headers else {}
        try:
            if headers:
                snap = mutate.snapshot_build(tree.kunit_build)
            active, nocompile, fallback = build_schema(
                tree, todo, ids, args.jobs, touch, mtimes, tool)
            for m in todo:
                if m.name in nocompile:
                    e = schema_entry(loaded[m.name], sha, ids[m.name])
                    e['status'] = 'nocompile'
                    e['detail'] = nocompile[m.name]
                    entries.append(e)
            if not active:
                return entries, [m for m in todo if m.name in fallback]
            print('%s: %s: schema of %d mutants in %s compiled in %.0fs; '
                  'building and running it with %s=0'
                  % (tool, tree.name, len(active),
                     ', '.join(p for p, _ in files),
                     time.monotonic() - t0, _schemata.VAR), flush=True)
            rdir = os.path.join(results, runs, SCHEMA_BASELINE)
            mutate.fresh_run_dir(rdir)
            _rc, out = mutate.run_suite(
                rdir, args.timeout, args.jobs, tree,
                ['--kernel_args', '%s=0' % _schemata.VAR])
            summary = mutate.read_summary(rdir)
            if summary is None:
                raise ToolError('%s: the schema kernel does not build or '
                                'run: %s' % (tree.name, (out.strip()
                                                         .splitlines() or
                                                         ['?'])[-1]))
            baseline = mutate.Baseline(summary)
            if baseline.failures:
                print('%s: %s: the schema kernel fails without a mutant '
                      '(not counted as kills): %s'
                      % (tool, tree.name, ', '.join(baseline.describe())),
                      flush=True)
            print('%s: %s: schema kernel ready after %.0fs'
                  % (tool, tree.name, time.monotonic() - t0), flush=True)
            for i, m in enumerate(active, 1):
                lm = loaded[m.name]
                print('%s: %s: [%d/%d] %s=%d %s (%s)'
                      % (tool, tree.name, i, len(active), _schemata.VAR,
                         ids[m.name], m.name, lm['header']['subject']),
                      flush=True)
                t1 = time.monotonic()
                e = schema_entry(lm, sha, ids[m.name])
                rdir = os.path.join(results, runs, m.name)
                mutate.fresh_run_dir(rdir)
                _rc, out = mutate.run_suite(
                    rdir, args.timeout, args.jobs, tree,
                    ['--no-build', '--kernel_args',
                     '%s=%d' % (_schemata.VAR, ids[m.name])])
                summary = mutate.read_summary(rdir)
                if summary is None:
                    raise ToolError('run_suite failed for %s: %s' % (
                        m.name, (out.strip().splitlines() or ['?'])[-1]))
                outcome, cases = mutate.outcome_of_run(summary, baseline)
                e['status'] = mutate.final_status(outcome,
                                                  e['equivalent_claimed'])
                e['cases'] = cases
                e['seconds'] = round(time.monotonic() - t1, 1)
                entries.append(e)
                print('%s:   %s %s  %.1fs' % (tool, m.name,
                                              mutate.console_verdict(e),
                                              e['seconds']), flush=True)
                write(entries, baseline)
        except (ToolError, KeyboardInterrupt):
            if len(entries) > len(kept):
                write(entries, baseline)
            raise
        finally:
            mutate.restore(linux, files)
            mutate.restore_mtimes(linux, mtimes)
            mutate.restore_build(tree.kunit_build, snap)
    write(entries, baseline)
    print('%s: %s: schema run of %d mutants took %.0fs' % (
        tool, tree.name, len(active), time.monotonic() - t0), flush=True)
    return entries, [m for m in todo if m.name in fallback]


def prepare(tree):
    """Bring build/TREE/linux up to date before run generates from it
    (the same prepare_tree that mutate.run_mutants() runs again, then
    with nothing to do), so that the patches, the tree's HEAD and the
    test sources' sha256 are those the mutants will run on."""
    import prepare_tree
    with mutate.BuildLock(TOOL):
        prepare_tree.prepare(tree, quiet=True)


def main(argv=None):
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
            ('run', 'run mutants through tools/mutate.py\'s runner'),
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
    r.add_argument('--timeout', type=int, default=TIMEOUT,
                   help='seconds QEMU may run per mutant (default %d: the '
                   'suites run in about 4 s, and one generated mutant in '
                   'seven hangs and costs the whole timeout)' % TIMEOUT)
    r.add_argument('--jobs', type=int, default=0, help='build jobs')
    r.add_argument('--header-rebuild', choices=('full', 'targeted'),
                   default='full',
                   help='full (default): a header mutant rebuilds every '
                   'includer, as in make mutants; targeted: only the '
                   'objects of the .c files that name the function or a '
                   'header inline/macro that calls it (header_dependents()'
                   '); the other objects would compile to the same code')
    r.add_argument('--mode', choices=('schema', 'patch'), default='schema',
                   help='schema (default): the mutants of .c files run in '
                   'one kernel built with all of them (tools/_schemata.py), '
                   'each selected at boot by gup_mutant=N; header mutants, '
                   'and any whose function cannot be put in a schema, run '
                   'from their patches; patch: every mutant is applied, '
                   'built and run alone, as in make mutants')
    r.add_argument('--results', default='{results}/{tree}',
                   help='results directory of a tree (default '
                   '{results}/{tree}, i.e. results/TREE/)')
    args = ap.parse_args(argv)
    if args.command in ('sample', 'run') and args.count < 1:
        die(TOOL, '--count must be at least 1', 2)
    if args.command == 'run' and args.sample and args.names:
        die(TOOL, 'give either --sample or mutant names, not both', 2)
    trees = selected_trees(TOOL, args.tree)
    if args.command == 'run' and len(trees) > 1 and \
            '{tree}' not in args.results:
        die(TOOL, '--results %s: with several trees it must name {tree}'
            % args.results, 2)
    interrupt_on_sigterm()
    fn = {'list': cmd_list, 'stats': cmd_stats, 'write': cmd_write,
          'sample': cmd_sample, 'run': cmd_run,
          'agree': cmd_agree}[args.command]
    differ = 0
    passed = failed = skipped = 0
    for tree in trees:
        try:
            if args.command == 'run':
                prepare(tree)
            mutants = generate(tree)
            eq = read_equivalents(tree, [m.name for m in mutants])
            got = fn(tree, mutants, eq, args)
            if args.command == 'agree':
                differ += got
                got = None
        except ToolError as e:
            if args.command != 'run':
                die(TOOL, str(e), e.status)
            print('%s: %s: %s' % (TOOL, tree.name, e), file=sys.stderr,
                  flush=True)
            failed += 1
            continue
        except KeyboardInterrupt:
            die(TOOL, 'interrupted; %s was restored'
                % display(tree.linux), 130)
        if got:
            passed += got[0]
            failed += got[1]
            skipped += got[2]
            print('%s: %s: %d passed, %d failed, %d skipped'
                  % (TOOL, tree.name, got[0], got[1], got[2]), flush=True)
    if args.command == 'run':
        print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
        return 1 if failed else 0
    return 1 if differ else 0


if __name__ == '__main__':
    sys.exit(main())
