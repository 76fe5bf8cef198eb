"""The generated mutants of tools/genmut.py: the mutation operators applied
to the body of each function of a tree's pin core, and the mutants they
make, named and with their patches.

generate() reads each function of kunit/TREE/pin-core from the tree's
HEAD (its extent from tools/_cscan.py's source_extents(), its tokens from
function_tokens()), finds its sites with sites() (a Body: the
conditions, expression statements, returns and assertions of a function
body, from its tokens) and turns each into a Mutant: the lines before and
after, the unified diff hunk and the name FUNCTION+OFFSET-OPERATOR[-K].
tools/genmut.py --help says what each operator does and what is left
alone.
"""

from __future__ import annotations

import collections
import hashlib
import re
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import _mutation
from _common import ToolError, read_pin_core
from _cscan import Source, Tok, function_tokens, return_kind, \
    source_extents

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
# Statements of a function body
# --------------------------------------------------------------------------

class ParseError(ToolError):
    """A function body that the operators cannot read."""


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

    def __init__(self, toks: List[Tok]) -> None:
        self.t = toks
        self.conds: List[Tuple[int, int]] = []
        self.exprs: List[Tuple[int, int, bool]] = []
        self.returns: List[Tuple[int, int, bool]] = []
        self.decls: List[Tuple[int, int]] = []
        self.skip: Set[int] = set()
        self.truth: Set[int] = set()
        self.last: Optional[Tuple[int, int]] = None
        if not toks or toks[0].text != '{':
            raise ParseError('function body does not start with {')
        self.match = self._matches()
        end = self.block(0, top=True)
        if end != len(toks):
            raise ParseError('tokens after the closing brace')

    def _matches(self) -> Dict[int, int]:
        pairs = {')': '(', ']': '[', '}': '{'}
        stack: List[int] = []
        match: Dict[int, int] = {}
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

    def text(self, i: int) -> str:
        """The text of token i ('' past the end)."""
        return self.t[i].text if i < len(self.t) else ''

    def semi(self, i: int) -> int:
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

    def block(self, i: int, top: bool = False) -> int:
        """Read the block whose '{' is token i; return the index after
        its '}'."""
        close = self.match[i]
        j = i + 1
        while j < close:
            start = j
            j = self.stmt(j)
            if top:
                self.last = (start, j)
        return close + 1

    def is_decl(self, i: int) -> bool:
        """Does the statement at token i declare a variable?"""
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

    def stmt(self, i: int, body: bool = False) -> int:
        """Read the statement at token i (body: the unbraced body of an
        if/else/for/while); return the index after it."""
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
            semis: List[int] = []
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

    def _truth(self, lpar: int) -> None:
        """Note a literal that is the whole of the parenthesis at lpar, or
        (inside a condition) of a WARN*/likely/unlikely call."""
        rpar = self.match[lpar]
        if rpar == lpar + 2 and self.t[lpar + 1].kind == 'number':
            self.truth.add(lpar + 1)


# --------------------------------------------------------------------------
# The operators
# --------------------------------------------------------------------------

Site = collections.namedtuple('Site', 'op start end new')


def parse_int(text: str) -> Tuple[int, str, int]:
    """(value, suffix, base) of a C integer literal."""
    digits = text.rstrip('uUlL')
    suffix = text[len(digits):]
    if digits.lower().startswith('0x'):
        return int(digits, 16), suffix, 16
    if len(digits) > 1 and digits.startswith('0'):
        return int(digits, 8), suffix, 8
    return int(digits), suffix, 10


def format_int(value: int, suffix: str, base: int) -> str:
    """An integer as a C literal in base, with suffix."""
    if value < 0:
        return '(-%s)' % format_int(-value, suffix, base)
    if base == 16:
        return '0x%x%s' % (value, suffix)
    if base == 8 and value:
        return '0%o%s' % (value, suffix)
    return '%d%s' % (value, suffix)


def is_primary(toks: List[Tok], a: int, b: int) -> bool:
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


def truth_calls(body: Body) -> Set[int]:
    """Literal token indices that are the only argument of WARN*(),
    likely() or unlikely()."""
    out: Set[int] = set()
    t = body.t
    for i in range(len(t) - 3):
        if t[i].kind == 'ident' and TRUTH_CALL_RE.match(t[i].text) and \
                t[i + 1].text == '(' and t[i + 2].kind == 'number' and \
                t[i + 3].text == ')':
            out.add(i + 2)
    return out


def _negations(text: str, body: Body) -> List[Site]:
    """negate: the sites of the conditions of a body."""
    t, out = body.t, []
    for a, b in body.conds:
        if a in body.skip:
            continue
        start, end = t[a].start, t[b].end
        cond = text[start:end]
        if t[a].text == '!' and is_primary(t, a + 1, b):
            new = text[t[a + 1].start:end]
        elif is_primary(t, a, b):
            new = '!' + cond
        else:
            new = '!(' + cond + ')'
        out.append(Site('negate', start, end, new))
    return out


def _token_sites(body: Body) -> List[Site]:
    """The operators of one token: relational, logical, arithmetic, the
    constants, the bias, FOLL_GET/FOLL_PIN."""
    t, out = body.t, []
    truth = body.truth | truth_calls(body)
    for i, tk in enumerate(t):
        if i in body.skip:
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
    return out


def _deletions(body: Body) -> List[Site]:
    """del: the expression statements of a body."""
    t, out = body.t, []
    for a, semi, is_body in body.exprs:
        if t[a].kind == 'ident' and DECL_MACRO_RE.match(t[a].text):
            continue
        out.append(Site('del', t[a].start, t[semi].end,
                        ';' if is_body else ''))
    return out


def _early_returns(text: str, body: Body, kind: str) -> List[Site]:
    """ret: the returns of a body but its last statement."""
    t, out = body.t, []
    last = body.last
    values = [(r, s) for r, s, _b in body.returns if s > r + 1]
    for r, semi, is_body in body.returns:
        if last and r == last[0]:
            continue
        start, end = t[r].start, t[semi].end
        expr = text[t[r + 1].start:t[semi - 1].end] if semi > r + 1 else ''
        new = other_outcome(kind, expr, t, r + 1, semi - 1, values, text)
        if new is None and kind == 'void' and not expr:
            out.append(Site('ret', start, end, ';' if is_body else ''))
        elif new is not None:
            out.append(Site('ret', start, end, 'return %s;' % new))
    return out


def sites(text: str, toks: List[Tok], name: str,
          kind: Optional[str] = None) -> List[Site]:
    """The mutation sites of one function: [Site(op, start, end, new)]
    with start/end offsets into text and the replacement. toks: the
    function's tokens, signature included; kind: its return_kind()
    (default: from toks)."""
    lb = next((i for i, tk in enumerate(toks) if tk.text == '{'), None)
    if lb is None:
        raise ParseError('%s has no body' % name)
    kind = kind or return_kind(toks[:lb], name)
    body = Body(toks[lb:])
    return (_negations(text, body) + _token_sites(body) +
            _deletions(body) + _early_returns(text, body, kind))


def other_outcome(kind: str, expr: str, t: List[Tok], a: int, b: int,
                  values: List[Tuple[int, int]], text: str
                  ) -> Optional[str]:
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

    def __init__(self, name: str, function: str, file: str, line: int,
                 offset: int, op: str, old: Optional[List[str]] = None,
                 new: Optional[List[str]] = None, hunk: str = '') -> None:
        self.name, self.function, self.file = name, function, file
        self.line, self.offset, self.op = line, offset, op
        self.old: List[str] = old or []
        self.new: List[str] = new or []
        self.hunk = hunk

    @property
    def header(self) -> bool:
        """Is it a mutant of a header?"""
        return self.file.endswith('.h')

    def diff(self) -> str:
        """Its unified diff."""
        return '--- a/%s\n+++ b/%s\n%s' % (self.file, self.file, self.hunk)

    def diff_sha(self) -> str:
        """sha256 of its diff."""
        return hashlib.sha256(self.diff().encode()).hexdigest()

    def subject(self) -> str:
        """'NAME: what the operator does: 'old' -> 'new''."""
        def short(lines: List[str]) -> str:
            s = ' '.join(ln.strip() for ln in lines).strip() or '(nothing)'
            return s if len(s) <= 100 else s[:97] + '...'
        return "%s: %s: '%s' -> '%s'" % (
            self.name, OPERATORS[self.op], short(self.old), short(self.new))

    def patch(self, equivalent: Optional[str] = None) -> str:
        """Its patch: a catalogue entry's format, without a Mutant: line."""
        head = 'Subject: %s\nModels: generated: %s\n' % (self.subject(),
                                                         self.op)
        if equivalent:
            head += 'Equivalent: %s\n' % equivalent
        return head + '\n' + self.diff()


def hunk(lines: List[str], first: int, last: int, new_lines: List[str],
         context: int = 3) -> str:
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


def function_mutants(src: Source, func: str, path: str, first: int,
                     last: int) -> List[Mutant]:
    """The mutants of one function, defined on lines first..last of src,
    in source and operator order, named."""
    toks, kind = function_tokens(src, func, first, last)
    found = sites(src.text, toks, func, kind)
    found.sort(key=lambda s: (src.line_of(s.start), s.start,
                              OP_ORDER[s.op], s.end))
    per_line = collections.Counter(
        (src.line_of(s.start), s.op) for s in found)
    seen: collections.Counter = collections.Counter()
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


def generate(tree: Any, read: Optional[Callable[[str], str]] = None
             ) -> List[Mutant]:
    """Every mutant of the tree's pin core: [Mutant], in pin-core order.
    read(path) gives a tree file's text (default: build/TREE/linux at
    its HEAD, _mutation.read_source())."""
    read = read or (lambda p: _mutation.read_source(tree, p))
    sources: Dict[str, Source] = {}
    out: List[Mutant] = []
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


