"""The C scanner of the tools: functions, their extents and their tokens.

Every tool that reads kernel C goes through this module: `make coverage`
(the extents of the pin core's functions), `make mutants` (the function a
catalogue mutant changes), `make mutants-generated` (the tokens of each
function of the pin core) and `make audit` (the text of the function
around a pin call, which its review hashes).

Functions are found as the kernel's coding style writes them (checkpatch
enforces it): a definition starts in column 0, its name either on its
first line or on the line after its return type; its body opens with a
'{' alone in column 0 and ends at the next line that starts with '}' in
column 0. definitions() finds every such definition in one pass over the
lines, and every question below is answered from its list:

  source_extents(text, name)    (first, last) of each definition of name
  enclosing_function(text, line)  the function whose first..last hold line
  function_span(lines, line)    (head, last) of the function whose body,
                                '{' to '}', holds line
  signature_start(lines, name, first)  the line of the return type

A definition in another style is not a definition here: a one-line stub
(`static inline void f(void) { }`) or a body that opens on the line of
the signature. No function of a pin core is written so.

The tokens: tokenize() gives the code of a range of text as tokens, with
comments, strings' contents, whitespace and preprocessor lines (with
their continuations) never taken for code; function_tokens() gives those
of a function's lines, return_kind() what its signature returns.

header_definitions() answers another question, what a header's inline
functions and function-like macros may call (tools/genmut.py
--header-rebuild targeted), and so reads more loosely: see there.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, List, NamedTuple, Optional, Tuple

from _common import ToolError

# A line that can hold a function's name: column 0, the first identifier
# followed by '(' (no '(' or ';' before it).
SIGNATURE_RE = re.compile(r'^(?:[A-Za-z_][^(;]*?\b)?([A-Za-z_]\w*)\s*\(')


class Definition(NamedTuple):
    """One function definition; line numbers 1-based.

    name   its name (None if no line of its signature holds one)
    head   the first line of its signature text: the lines above the
           '{' up to a blank line, a comment's end, a ';', a '}' or a
           preprocessor line
    first  the line that holds its name (None with the name)
    open   the line of its '{'
    last   the line of its '}'
    """
    name: Optional[str]
    head: int
    first: Optional[int]
    open: int
    last: int


def _head(lines: List[str], i: int) -> int:
    """0-based index of the first line of the signature above line i."""
    head = i
    while head > 0:
        prev = lines[head - 1]
        if not prev.strip() or prev.startswith(('}', '#')) or \
           prev.rstrip().endswith((';', '*/')):
            break
        head -= 1
    return head


def _name_line(lines: List[str], i: int) -> Tuple[Optional[str],
                                                  Optional[int]]:
    """(name, 0-based line) of the definition whose '{' is line i: the
    last line above it that can hold a name (SIGNATURE_RE), among those
    since the last line that holds a '{', ends with ';' or starts with
    '}'."""
    top = i
    while top > 0:
        prev = lines[top - 1]
        if '{' in prev or prev.rstrip().endswith(';') or \
           prev.startswith('}'):
            break
        top -= 1
    for k in range(i - 1, top - 1, -1):
        m = SIGNATURE_RE.match(lines[k])
        if m:
            return m.group(1), k
    return None, None


def definitions(lines: List[str]) -> List[Definition]:
    """Every function definition of the lines of a C file, in order (see
    the module's docstring for what counts as one). A '{' alone in
    column 0 that nothing closes ends the scan."""
    out = []
    i = 0
    while i < len(lines):
        if lines[i].rstrip() == '{':
            last = next((j for j in range(i + 1, len(lines))
                         if lines[j].startswith('}')), None)
            if last is None:
                break
            name, first = _name_line(lines, i)
            out.append(Definition(name, _head(lines, i) + 1,
                                  None if first is None else first + 1,
                                  i + 1, last + 1))
            i = last
        i += 1
    return out


def source_extents(text: str, name: str) -> List[Tuple[int, int]]:
    """(first, last) line numbers of each definition of name in C source:
    from the line of its name to its closing brace. Several when #ifdef
    alternatives define it (the real one first, as a rule)."""
    return [(d.first, d.last) for d in definitions(text.splitlines())
            if d.name == name and d.first is not None]


def enclosing_function(text: str, line: int) -> Optional[str]:
    """The name of the function whose definition, from the line of its
    name to its closing brace, holds line (1-based); None outside every
    function."""
    for d in definitions(text.splitlines()):
        if d.first is not None and d.first <= line <= d.last:
            return d.name
    return None


def function_span(lines: List[str], line: int) -> Optional[Tuple[int, int]]:
    """(head, last) of the function whose body, from its '{' to its '}',
    holds line (1-based): its whole text, the lines of its signature
    included. None outside every body, on the lines of a signature
    too."""
    for d in definitions(lines):
        if d.open <= line <= d.last:
            return d.head, d.last
    return None


def signature_start(lines: List[str], name: str, first: int) -> int:
    """The first line (1-based) of the definition text of name, whose name
    is on line first: the line before when the name starts its line (the
    return type is there), else first."""
    if first > 1 and lines[first - 1].startswith(name):
        return first - 1
    return first


# --------------------------------------------------------------------------
# Tokens
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
DIRECTIVE_RE = re.compile(r'[ \t]*#')


class Tok(NamedTuple):
    """A token: kind ('ident', 'number', 'string', 'char' or 'punct'), its
    text, and its start and end offsets in the text."""
    kind: str
    text: str
    start: int
    end: int


def _skip_directive(text: str, pos: int, end: int) -> int:
    """The offset after the preprocessor line that starts at pos, with its
    backslash continuations and a block comment opened on it."""
    while True:
        nl = text.find('\n', pos)
        if nl < 0 or nl >= end:
            return end
        if nl - 1 >= pos and text[nl - 1] == '\\':
            pos = nl + 1
            continue
        c = text.find('/*', pos, nl)
        if c >= 0 and text.find('*/', c, nl) < 0:
            close = text.find('*/', c)
            if close < 0:
                raise ToolError('unterminated comment at offset %d' % c)
            pos = close + 2
            continue
        return nl + 1


def tokenize(text: str, start: int = 0, end: Optional[int] = None
             ) -> List[Tok]:
    """The tokens of text[start:end]. Comments and whitespace give none; a
    preprocessor line (first non-blank '#', with its backslash
    continuations) gives none either. An unterminated comment or an
    unknown character is a ToolError."""
    end = len(text) if end is None else end
    out = []
    pos = start
    line_start = True
    while pos < end:
        if line_start and DIRECTIVE_RE.match(text, pos):
            pos = _skip_directive(text, pos, end)
            continue
        if text.startswith('/*', pos) and text.find('*/', pos + 2) < 0:
            raise ToolError('unterminated comment at offset %d' % pos)
        m = TOKEN_RE.match(text, pos)
        if not m or m.end() > end:
            raise ToolError('cannot tokenize %r at offset %d'
                            % (text[pos:pos + 10], pos))
        kind = m.lastgroup or ''
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


def return_kind(sig_toks: List[Tok], name: str) -> str:
    """'ptr', 'bool', 'void' or 'int': what a function returns, from the
    tokens of its signature (those before its name count)."""
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


class Source:
    """A source file's text, its lines and the offset of each line."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split('\n')
        if self.lines and self.lines[-1] == '':
            self.lines.pop()
        self.starts = [0]
        for ln in self.lines:
            self.starts.append(self.starts[-1] + len(ln) + 1)

    def line_of(self, offset: int) -> int:
        """The line (1-based) that holds an offset."""
        return bisect.bisect_right(self.starts, offset)

    def apply(self, site: Any) -> Tuple[int, int, List[str]]:
        """(first, last, new lines) of a replacement of the text from
        site.start to site.end by site.new: the lines it touches and what
        they become; lines left blank by a deletion go."""
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


def function_tokens(src: Source, name: str, first: int, last: int
                    ) -> Tuple[List[Tok], str]:
    """The tokens of lines first..last of src (a function's extent, from
    source_extents()) and what the function returns (return_kind(), its
    return type on the line before its name included)."""
    end = src.starts[last]
    toks = tokenize(src.text, src.starts[first - 1], end)
    sig = tokenize(src.text, src.starts[signature_start(
        src.lines, name, first) - 1], end)
    brace = next((i for i, tk in enumerate(sig) if tk.text == '{'),
                 len(sig))
    return toks, return_kind(sig[:brace], name)


# --------------------------------------------------------------------------
# What a header defines (--header-rebuild targeted)
# --------------------------------------------------------------------------

INLINE_DEF_RE = re.compile(
    r'^(?:static\s+)?(?:inline|__always_inline)\b[^;{=]*?\b(\w+)\s*\(',
    re.M)
MACRO_DEF_RE = re.compile(r'^#\s*define\s+(\w+)\(', re.M)


def header_definitions(text: str) -> List[Tuple[str, str]]:
    """[(name, body text)] of the inline functions and function-like
    macros that a header defines. Unlike definitions(), a one-line stub
    counts, and a function's body is taken to end at the next '}' in
    column 0, which for a stub takes in what follows it: the text is
    there to find what a function may call, where too much only rebuilds
    an object more and too little would leave a mutant unbuilt. A macro
    ends at a line without a trailing backslash."""
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

