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

The mutants of a run go into one schema (schema mode, both front ends'
default): file_schema() writes its text; build_schema() writes it into
the tree and compiles its objects, dropping a mutant the compiler names
as nocompile if its own patch does not compile either (else it runs from
its patch); run_schema() builds the kernel once, boots it once with
gup_mutant=0 (the baseline of these runs) and once per mutant with
gup_mutant=N and no build, under the kill rules of tools/_mutation.py,
and restores the tree. run_mutants() is the entry point of the front
ends: in schema mode the mutants that fit run in a schema, the others
(several hunks, a header without a targeted rebuild, a function the
schema cannot copy) from their patches, as all of them in patch mode.
schema_mutant() makes a catalogue entry a mutant of a schema (a
generated mutant is one already); add_run_options() and run_trees() are
the run options and the loop over the trees that the front ends share.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import _mutation
from _common import ToolError, die, display
from _cscan import (enclosing_function, return_kind, signature_start,
                    source_extents, tokenize)

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


FunctionSpans = List[Tuple[int, int, Optional[int]]]


def function_schema(lines: List[str], func: str, first: int, last: int,
                    mutants: Sequence[Tuple[int, int, int, List[str]]]
                    ) -> Tuple[List[str], FunctionSpans]:
    """The text (lines) that replaces lines signature_start()..last of a
    function with mutants [(id, first line, last line, new lines)]
    (1-based file lines, the mutant replacing first..last by new lines),
    and its spans [(offset of first line, offset of last line, id)]
    relative to the returned lines: id 0 for the copy of the original,
    None for the dispatcher."""
    a = signature_start(lines, func, first)
    sig, body = _split_signature(lines, func, a, last)
    sig_text = '\n'.join(sig)
    params = _params(sig_text, func)
    void = return_kind(tokenize(sig_text), func) == 'void'
    out: List[str] = []
    spans: FunctionSpans = []

    def add(chunk: List[str], ident: int) -> None:
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


Spans = List[Tuple[int, int, str, Optional[int]]]


def file_schema(text: str, functions: Sequence[Tuple[str, int, int, Any]],
                define: bool) -> Tuple[str, Spans]:
    """The schema of a file: text with each function of functions
    [(func, first, last, mutants)] replaced by its function_schema(),
    right after a preamble that declares gup_mutant (define: the first
    one of this file defines it). The preamble goes before each function,
    not at the top: a header's functions may sit in #ifdef blocks of their
    own, inside its include guard. Return (new text, spans), spans
    [(first, last, func, id)] in lines of the new text (1-based,
    inclusive)."""
    lines = text.split('\n')
    out: List[str] = []
    spans: Spans = []
    pos = 1
    for func, first, last, mutants in sorted(functions,
                                             key=lambda f: f[1]):
        a = signature_start(lines, func, first)
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


def error_lines(output: str, path: str) -> List[int]:
    """The lines of path (a tree path such as mm/gup.c) that the
    compiler's output names in an error, or in the macro expansion that
    an error came from."""
    rx = re.compile(ERROR_RE.pattern % re.escape(path), re.M)
    return sorted(set(int(m.group(2)) for m in rx.finditer(output)))


def span_of(spans: Spans, line: int) -> Optional[Tuple[str, Optional[int]]]:
    """(func, id) of the span that holds a line, else None."""
    for a, b, func, ident in spans:
        if a <= line <= b:
            return func, ident
    return None


# --------------------------------------------------------------------------
# A catalogue mutant as a mutant of a schema
# --------------------------------------------------------------------------

def schema_mutant(m: _mutation.Mutant, read: Any
                  ) -> Tuple[Optional[types.SimpleNamespace], str]:
    """The patch mutant m (a load_mutant() dict) as a mutant that a schema
    can hold (name, function, file, line, old, new, header), and ''; or
    None and why it must run from its patch. It must be one hunk of one
    .c file whose change lies inside one function of the file as
    read(path) gives it (the tree's HEAD)."""
    files = m['files']
    if len(files) != 1 or files[0][1] != 'modify' or \
       not files[0][0].endswith('.c'):
        return None, 'it does not change exactly one .c file'
    hunks = _mutation.diff_hunks(m['text'])
    if len(hunks) != 1:
        return None, 'its diff has %d hunks' % len(hunks)
    path, start, body = hunks[0]
    changed = [i for i, (tag, _ln) in enumerate(body) if tag != ' ']
    if not changed:
        return None, 'its hunk changes nothing'
    a, b = changed[0], changed[-1]
    old_side = [ln for tag, ln in body if tag != '+']
    lines = read(path).split('\n')
    at = start - 1
    if lines[at:at + len(old_side)] != old_side:
        # As git apply: the match nearest to where the hunk says.
        hits = sorted((abs(k - at), k) for k in range(len(lines))
                      if lines[k:k + len(old_side)] == old_side)
        if not hits or (len(hits) > 1 and hits[0][0] == hits[1][0]):
            return None, 'its hunk does not match %s as the tree has it' % path
        at = hits[0][1]
    first = at + 1 + sum(1 for tag, _ln in body[:a] if tag != '+')
    old = [ln for tag, ln in body[a:b + 1] if tag != '+']
    new = [ln for tag, ln in body[a:b + 1] if tag != '-']
    text = '\n'.join(lines)
    # The lines it changes, or the two an insertion goes between.
    ends = (first, first + len(old) - 1) if old else (first - 1, first)
    funcs = set(enclosing_function(text, n) for n in ends)
    if len(funcs) != 1 or None in funcs:
        return None, 'its change is not inside one function'
    return types.SimpleNamespace(name=m['name'], function=funcs.pop(),
                                 file=path, line=first, old=old, new=new,
                                 header=False), ''


# --------------------------------------------------------------------------
# Building a schema in the tree
# --------------------------------------------------------------------------

SCHEMA_BASELINE = '_schema_baseline'
# Where gup_mutant is defined when no .c file of the pin core has mutants
# in a schema: a file that every tree builds into the kernel.
DEFINE_FILE = 'mm/gup.c'
SCHEMA_ATTEMPTS = 8


def compile_objects(tree: Any, paths: Sequence[str], jobs: int
                    ) -> Tuple[int, str]:
    """make the objects of tree paths (mm/gup.c, ...) in the tree's kunit
    build directory; return (rc, output)."""
    objs = [p[:-2] + '.o' for p in paths]
    cmd = ['make', '-s', 'ARCH=x86_64', 'O=' + tree.kunit_build,
           '--jobs=%d' % (jobs or 2)] + objs
    proc = subprocess.run(cmd, cwd=tree.linux, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          errors='backslashreplace')
    return proc.returncode, proc.stdout


def first_error(output: str) -> str:
    """The first error line of a compiler's output, else its last line."""
    return next((ln.strip() for ln in output.splitlines()
                 if ': error:' in ln), (output.strip().splitlines() or
                                        ['make failed'])[-1])


def _file_specs(src: str, funcs: Dict[str, List[Any]], ids: Dict[str, int]
                ) -> List[Tuple[str, int, int, list]]:
    """The functions of one file for file_schema(): (func, first, last,
    [(id, first, last, new lines)]) each."""
    specs = []
    for func, ms in funcs.items():
        first, last = source_extents(src, func)[0]
        specs.append((func, first, last,
                      [(ids[m.name], m.line, m.line + len(m.old) - 1,
                        m.new) for m in ms]))
    return specs


def schema_texts(tree: Any, originals: Dict[str, str], active: List[Any],
                 ids: Dict[str, int]
                 ) -> Tuple[Dict[str, Tuple[str, Spans]], Dict[str, str]]:
    """{path: (text, spans)} of the schema of the active mutants, and the
    names of the mutants whose function cannot be put in one (with the
    reason)."""
    by_file: Dict[str, Dict[str, List[Any]]] = collections.OrderedDict()
    for m in active:
        by_file.setdefault(m.file, collections.OrderedDict()).setdefault(
            m.function, []).append(m)
    out: Dict[str, Tuple[str, Spans]] = {}
    refused: Dict[str, str] = {}
    define = True
    # .c files first: one of them defines gup_mutant, never a header
    for path, funcs in sorted(by_file.items(),
                              key=lambda kv: kv[0].endswith('.h')):
        specs = _file_specs(originals[path], funcs, ids)
        while specs:
            try:
                out[path] = file_schema(originals[path], specs,
                                        define and path.endswith('.c'))
                break
            except SchemaError as e:
                func = str(e).split(':')[0]
                if not any(s[0] == func for s in specs):
                    raise ToolError('%s: schema of %s: %s'
                                    % (tree.name, path, e))
                for m in funcs[func]:
                    refused[m.name] = str(e)
                specs = [s for s in specs if s[0] != func]
        if path in out and path.endswith('.c'):
            define = False
    if out and define:
        # Only headers: the definition goes to the top of DEFINE_FILE.
        pre = PREAMBLE_DEFINE % {'var': VAR}
        out[DEFINE_FILE] = (pre + originals[DEFINE_FILE], [])
    return out, refused


class _Files:
    """The files of a schema in the tree: write them (a schema's text, a
    mutant's, or the originals) with the mtimes a targeted header
    rebuild needs (a header's old one back, the .c files of touch a new
    one), and compile their objects."""

    def __init__(self, tree: Any, paths: List[str], touch: Sequence[str],
                 mtimes: Optional[Dict[str, Tuple[int, int]]],
                 jobs: int) -> None:
        self.tree, self.paths, self.touch = tree, paths, list(touch)
        self.mtimes = mtimes or {}
        self.jobs = jobs
        self.originals = {p: _mutation.read_source(tree, p) for p in paths}

    def write(self, texts: Dict[str, Tuple[str, Any]]) -> None:
        """Write texts[path][0] for each path of texts, the original of
        the others."""
        linux = self.tree.linux
        for p in self.paths:
            text = texts[p][0] if p in texts else self.originals[p]
            with open(os.path.join(linux, p), 'w', encoding='utf-8',
                      errors='surrogateescape') as f:
                f.write(text)
            if p.endswith('.h'):
                os.utime(os.path.join(linux, p), ns=self.mtimes[p])
        now = time.time_ns()
        for p in self.touch:
            os.utime(os.path.join(linux, p), ns=(now, now))

    def compile(self, paths: Sequence[str]) -> Tuple[int, str]:
        """compile_objects() of paths' .c files and of touch."""
        return compile_objects(self.tree, list(dict.fromkeys(
            [p for p in paths if p.endswith('.c')] + self.touch)),
            self.jobs)

    def alone(self, m: Any) -> Tuple[int, str]:
        """Write and compile mutant m alone; the originals back after."""
        lines = self.originals[m.file].split('\n')
        lines[m.line - 1:m.line - 1 + len(m.old)] = list(m.new)
        self.write({m.file: ('\n'.join(lines), [])})
        rc, out = compile_objects(self.tree, self.touch if m.header
                                  else [m.file], self.jobs)
        self.write({})
        return rc, out


def _named_in_errors(tree: Any, texts: Dict[str, Tuple[str, Spans]],
                     out: str) -> Tuple[set, set]:
    """(ids of the copies, names of the functions whose dispatcher) that
    the compiler's errors name; ToolError for an error elsewhere."""
    bad, funcs = set(), set()
    for p, (_text, spans) in texts.items():
        for ln in error_lines(out, p):
            where = span_of(spans, ln)
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
    return bad, funcs


def build_schema(tree: Any, todo: List[Any], ids: Dict[str, int],
                 jobs: int, tool: str, touch: Sequence[str] = (),
                 mtimes: Optional[Dict[str, Tuple[int, int]]] = None
                 ) -> Tuple[List[Any], Dict[str, str], Dict[str, str]]:
    """Write the schema of the mutants todo into the tree and compile its
    objects, dropping what does not compile. Return (active mutants,
    {name: nocompile detail}, {name: why it runs from its patch}). The
    tree is left with the schema written (restore with
    _mutation.restore()).

    A header in the schema (--header-rebuild targeted) gets its old mtime
    (mtimes[path]) back after each write, and the .c files of touch a new
    one, so that kbuild rebuilds their objects only; they are compiled
    with the schema's .c files."""
    files = _Files(tree, list(dict.fromkeys([m.file for m in todo] +
                                            [DEFINE_FILE])),
                   touch, mtimes, jobs)
    active = list(todo)
    nocompile: Dict[str, str] = {}
    fallback: Dict[str, str] = {}
    for _attempt in range(SCHEMA_ATTEMPTS):
        texts, refused = schema_texts(tree, files.originals, active, ids)
        fallback.update(refused)
        active = [m for m in active if m.name not in refused]
        files.write(texts)
        rc, out = files.compile(list(texts))
        if rc == 0:
            return active, nocompile, fallback
        bad, funcs = _named_in_errors(tree, texts, out)
        for m in active:
            if m.function in funcs:
                fallback[m.name] = ('the copy of %s or its dispatcher does '
                                    'not compile' % m.function)
        # A mutant named by an error is dropped only if its own patch
        # does not compile either, as make mutants would have found.
        files.write({})
        for m in active:
            if ids[m.name] not in bad or m.name in fallback:
                continue
            rc1, out1 = files.alone(m)
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


# --------------------------------------------------------------------------
# Running a schema kernel
# --------------------------------------------------------------------------

def schema_entry(lm: _mutation.Mutant, sha: str, ident: int
                 ) -> _mutation.Entry:
    """The entry of a mutant run in a schema as mutant ident."""
    e = _mutation.new_entry(lm, sha)
    e.update(mode='schema', schema_id=ident)
    return e


def _schema_baseline(tree: Any, results: str, runs: str, opts: Any,
                     tool: str) -> _mutation.Baseline:
    """Build the schema kernel and run it with gup_mutant=0: the baseline
    of the schema's mutants (RESULTS/<runs>/_schema_baseline/)."""
    rdir = os.path.join(results, runs, SCHEMA_BASELINE)
    _mutation.fresh_run_dir(rdir)
    _rc, out = _mutation.run_suite(rdir, opts.timeout, opts.jobs, tree,
                                   ['--kernel_args', '%s=0' % VAR])
    summary = _mutation.read_summary(rdir)
    if summary is None:
        raise ToolError('%s: the schema kernel does not build or run: %s'
                        % (tree.name, _mutation.last_line(out, '?')))
    baseline = _mutation.Baseline(summary)
    if baseline.failures:
        print('%s: %s: the schema kernel fails without a mutant (not '
              'counted as kills): %s' % (tool, tree.name,
                                         ', '.join(baseline.describe())),
              flush=True)
    return baseline


def _run_in_schema(m: Any, lm: _mutation.Mutant, ident: int, sha: str,
                   baseline: _mutation.Baseline, results: str, runs: str,
                   opts: Any, tree: Any) -> _mutation.Entry:
    """Boot the schema kernel with gup_mutant=ident, no build; return the
    entry of mutant m (lm its load_mutant() dict)."""
    t1 = time.monotonic()
    e = schema_entry(lm, sha, ident)
    rdir = os.path.join(results, runs, m.name)
    _mutation.fresh_run_dir(rdir)
    _rc, out = _mutation.run_suite(
        rdir, opts.timeout, opts.jobs, tree,
        ['--no-build', '--kernel_args', '%s=%d' % (VAR, ident)])
    summary = _mutation.read_summary(rdir)
    if summary is None:
        raise ToolError('run_suite failed for %s: %s'
                        % (m.name, _mutation.last_line(out, '?')))
    _mutation.judge(e, summary, baseline)
    e['seconds'] = round(time.monotonic() - t1, 1)
    return e


def _schema_files(todo: List[Any], loaded: Dict[str, _mutation.Mutant]
                  ) -> Tuple[List[Tuple[str, str]], List[str]]:
    """The files a schema of todo writes, and touch: the .c files its
    header mutants rebuild."""
    files = [(p, 'modify') for p in dict.fromkeys(
        [m.file for m in todo] + [DEFINE_FILE])]
    touch = sorted(set(p for m in todo if m.header
                       for p in loaded[m.name].get('touch') or []))
    return files, touch


def run_schema(tree: Any, todo: List[Any],
               loaded: Dict[str, _mutation.Mutant], results: str, opts: Any,
               runs: str, kept: Sequence[_mutation.Entry],
               write: _mutation.Writer, tool: str
               ) -> Tuple[List[_mutation.Entry], List[Any]]:
    """Run the mutants todo in one schema kernel: build it, run it once
    with gup_mutant=0 (the baseline of these runs), then once per mutant
    with gup_mutant=N, under the kill rules of tools/_mutation.py. A
    mutant of todo has a name, function, file, line, old, new and header
    (a generated Mutant, or schema_mutant() of a catalogue entry);
    loaded[name] is its load_mutant() dict; opts has timeout and jobs.
    Return (entries, kept ones first; the mutants that must run from
    their patches instead)."""
    entries = list(kept)
    ids = {m.name: i for i, m in enumerate(todo, 1)}
    sha = _mutation.tests_sha(tree)
    files, touch = _schema_files(todo, loaded)
    headers = [(p, k) for p, k in files if p.endswith('.h')]
    baseline = snap = None
    t0 = time.monotonic()
    if not os.path.isfile(os.path.join(tree.kunit_build, '.config')):
        raise ToolError('%s: no kernel configured in %s to build a schema '
                        'in; run make test TREE=%s first'
                        % (tree.name, display(tree.kunit_build), tree.name))
    with _mutation.BuildLock(tool):
        _mutation.require_clean(tree.linux)
        # As _mutation.run_one() for a header mutant: old mtimes back at
        # the end, and the build directory as it was (a copy).
        mtimes = _mutation.save_mtimes(
            tree.linux, headers + [(p, 'modify') for p in touch]) \
            if headers else {}
        try:
            if headers:
                snap = _mutation.snapshot_build(tree.kunit_build)
            active, nocompile, fallback = build_schema(
                tree, todo, ids, opts.jobs, tool, touch, mtimes)
            for m in todo:
                if m.name in nocompile:
                    e = schema_entry(loaded[m.name], sha, ids[m.name])
                    e.update(status='nocompile', detail=nocompile[m.name])
                    entries.append(e)
            if not active:
                return entries, [m for m in todo if m.name in fallback]
            print('%s: %s: schema of %d mutants in %s compiled in %.0fs; '
                  'building and running it with %s=0'
                  % (tool, tree.name, len(active),
                     ', '.join(p for p, _ in files),
                     time.monotonic() - t0, VAR), flush=True)
            baseline = _schema_baseline(tree, results, runs, opts, tool)
            print('%s: %s: schema kernel ready after %.0fs'
                  % (tool, tree.name, time.monotonic() - t0), flush=True)
            for i, m in enumerate(active, 1):
                print('%s: %s: [%d/%d] %s=%d %s (%s)'
                      % (tool, tree.name, i, len(active), VAR, ids[m.name],
                         m.name, loaded[m.name]['header']['subject']),
                      flush=True)
                _mutation.record(_run_in_schema(
                    m, loaded[m.name], ids[m.name], sha, baseline, results,
                    runs, opts, tree), entries, baseline, write, tool)
        except (ToolError, KeyboardInterrupt):
            if len(entries) > len(kept):
                write(entries, baseline)
            raise
        finally:
            _mutation.restore(tree.linux, files)
            _mutation.restore_mtimes(tree.linux, mtimes)
            _mutation.restore_build(tree.kunit_build, snap)
    write(entries, baseline)
    print('%s: %s: schema run of %d mutants took %.0fs' % (
        tool, tree.name, len(active), time.monotonic() - t0), flush=True)
    return entries, [m for m in todo if m.name in fallback]


def run_mutants(tree: Any, loaded: List[_mutation.Mutant], fit: List[Any],
                opts: Any, results: str, runs: str,
                kept: Sequence[_mutation.Entry], write: _mutation.Writer,
                tool: str) -> List[_mutation.Entry]:
    """Run the mutants of one tree in the mode opts.mode; the entry point
    of tools/mutate.py and tools/genmut.py. loaded: the mutants, their
    load_mutant() dicts, in order; fit: those of them that a schema can
    hold, as schema mutants (run_schema()); opts: mode, timeout, jobs.

    schema: the mutants of fit run in one schema kernel (run_schema()),
    then the others, and those the schema could not hold, from their
    patches (_mutation.run_patches(), in the order of loaded); patch:
    every mutant from its patch. kept, write, runs and tool as for
    _mutation.run_patches(). Return the entries: kept, then the schema's,
    then those of the patch runs."""
    if opts.mode == 'schema' and fit:
        by_name = {lm['name']: lm for lm in loaded}
        kept, back = run_schema(tree, fit, by_name, results, opts, runs,
                                kept, write, tool)
        done = set(m.name for m in fit) - set(m.name for m in back)
        loaded = [lm for lm in loaded if lm['name'] not in done]
    return _mutation.run_patches(tree, loaded, results, opts.timeout,
                                 opts.jobs, runs, kept, write, tool)


# --------------------------------------------------------------------------
# What the front ends share: their run options, their loop over the trees
# --------------------------------------------------------------------------

MODE_HELP = ('schema (default): the mutants that a schema can hold run in '
             'one kernel built with all of them (tools/_schemata.py), each '
             'chosen at boot by gup_mutant=N; the others (several hunks or '
             'files, a header but with genmut.py --header-rebuild targeted, '
             'a function the schema cannot copy) run from their patches; '
             'patch: every mutant is applied, built and run alone')


def add_run_options(ap: argparse.ArgumentParser, timeout: int, why: str
                    ) -> None:
    """--mode, --timeout (default timeout, because why), --jobs and
    --results: the options of a run, the same in both front ends."""
    ap.add_argument('--mode', choices=('schema', 'patch'), default='schema',
                    help=MODE_HELP)
    ap.add_argument('--timeout', type=int, default=timeout,
                    help='seconds QEMU may run per mutant (default %d: %s)'
                    % (timeout, why))
    ap.add_argument('--jobs', type=int, default=0,
                    help='build jobs (default: run_suite default)')
    ap.add_argument('--results', default='{results}/{tree}',
                    help='results directory of a tree; {tree} and '
                    '{results} are replaced (default {results}/{tree}, '
                    'i.e. results/TREE/)')


def check_results_option(tool: str, trees: int, results: str) -> None:
    """Exit 2 if several trees would share one --results directory."""
    if trees > 1 and '{tree}' not in results:
        die(tool, '--results %s: with several trees it must name {tree}'
            % results, 2)


def run_trees(tool: str, work: Sequence[Tuple[Any, Any]],
              run: Callable[[Any, Any], Optional[Tuple[int, int, int]]]
              ) -> int:
    """run(tree, what) for each (tree, what) of work; it returns the
    tree's (passed, failed, skipped), or None to count nothing. A tree
    whose run fails (ToolError) is one line on stderr and one failure;
    Ctrl-C ends the run. Print the sums as the last line, 'N passed, N
    failed, N skipped'; return the exit status, 1 if any failed."""
    passed = failed = skipped = 0
    for tree, what in work:
        try:
            got = run(tree, what)
        except ToolError as e:
            failed += 1
            print('%s: %s: %s' % (tool, tree.name, e), file=sys.stderr,
                  flush=True)
            continue
        except KeyboardInterrupt:
            die(tool, 'interrupted; %s was restored' % display(tree.linux),
                130)
        if got:
            passed += got[0]
            failed += got[1]
            skipped += got[2]
    print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
    return 1 if failed else 0
