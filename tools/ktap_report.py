#!/usr/bin/env python3
"""Turn a raw KUnit QEMU console log into KTAP, JUnit XML and a summary.

Usage:
    ktap_report.py LOG [--ktap OUT.ktap] [--junit OUT.xml]
                       [--expect-suites FILE] [--summary-json OUT.json]
                       [--expect-splats [FILE]]...

The log is a kernel console capture: boot messages, then the KTAP that
Linux 6.1 and 6.12 KUnit print, possibly interleaved with kernel splats
and possibly cut short because the kernel crashed or hung.

Grammar (after stripping an optional printk timestamp "[    1.234567] "):
  * KTAP starts at the first column-0 "KTAP version N" / "TAP version N"
    line and ends when the top-level plan "1..N" is fulfilled, at a
    "Kernel panic - not syncing" or "reboot: ..." line, at a second
    column-0 version line, or at the end of the log.
  * The nesting depth of a line is its indentation: one tab, or 4 spaces
    as 6.1 KUnit prints (2 if the first indented KTAP line uses 2, as in
    the KTAP v1 spec), per level.  "KTAP version", "# Subtest: NAME" and
    "1..N" at depth d open/describe the test at level d;
    "ok|not ok N [- ]NAME [# DIRECTIVE]" at depth d is the result of a
    child of level d (so a suite's result is at depth 0 and its cases'
    results at depth 1).  "# SKIP reason" marks a skip;
    "not ok ... # CRASHED: ..." and "not ok ... # not run: ..." (written by
    this tool) read back as crashed and not run.
  * Lines starting with "# " at any depth, and any other text at depth >= 1
    (e.g. "    Expected a == b, but"), are KTAP diagnostics.  Other column-0
    text (WARNING:, BUG:, " <TASK>", ...: anything indented by less than
    one level) is kernel output: it is kept out of the KTAP file but, like
    the KTAP diagnostics, attached to the test whose result line follows
    (JUnit <failure> text, or <system-out> for passed/skipped tests).

Leaf tests are cases without parameters and the parameters of parameterised
cases ("CASE/PARAM DESC").  A suite with no cases, or a test reported
"not ok" although none of its leaves failed (e.g. suite init failure or a
crash in suite exit), is itself counted as a leaf named "<suite>".

When the log ends with tests still open (crash, hang, QEMU killed):
  * the test that was running is "crashed".  It is named after the last
    "# NAME: ..." diagnostic when that identifies a case, otherwise
    "<suite N>", "<case N>" or "<param N>" (N = its KTAP number);
  * every planned but unreported test of an open test becomes one entry
    "<not run>" whose count is the number of missing tests (the names are
    unknown: 6.1 prints a name only after running a test);
  * the KTAP file gets closing lines that make it valid TAP and failing:
    "not ok N NAME # CRASHED: REASON; see LOG" for the crashed test and
    every open ancestor, "not ok N <not run> # not run: ..." for each
    missing number.  "ok" is never synthesized.
REASON is the first BUG:/Oops/panic/stall line after the last result, or
"log ended (kernel crashed or hung)".

Counting: "<not run>" entries count as many failed tests as their count
(also in the JUnit tests/errors attributes and the JSON "count" field);
an expected suite (--expect-suites) absent from the log counts as one
failed test (testcase "<not run>", message "suite did not run") and
replaces one unnamed not-run suite if the top-level plan left any.  The
KTAP file is not changed for missing expected suites unless the log has
no KTAP at all, in which case a stub listing them as "not ok" is written.

Exit status: 0 all passed/skipped; 1 a test failed, crashed or is missing;
2 bad input (unreadable file, no KTAP and no --expect-suites).

Console reports (--expect-splats, apply_splats()): a WARNING, BUG, KASAN,
... line fails the case during which it appeared unless the case declared
it, by printing "# CASE: expected report: TEXT" before its result line
(a parameterised case: among that parameter's lines), or a file line
"CASE-GLOB TEXT" declares it; a declared TEXT that no report line of the
case contains fails the case too. A benign race that a case may or may
not meet ("# CASE: may report: TEXT") is allowed and never required; so
is a report outside every case whose file line has the glob 'console'
(a race of the boot, before any case).

This is the one parser of the project: run_suite.py runs it on every
console, and tools/repeat.py, mutate.py, check.py and reviewer.py read its
verdicts (summary.json, or parse_log(), apply_expected(), apply_splats(),
summary(), junit_xml() and report_lines() on the Result).  The results
of several trees together (combine(), write_combined()) are in
tools/_combined.py, importable from here too.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Iterable, Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _combined import (clean_xml, combine, parse_counts,  # noqa: E402,F401
                       remove_combined, sub_element, write_combined)
from _common import ToolError, read_list, read_names  # noqa: E402

PASSED = 'passed'
FAILED = 'failed'
SKIPPED = 'skipped'
CRASHED = 'crashed'
NOT_RUN = 'not_run'
FAILING = (FAILED, CRASHED, NOT_RUN)

DEFAULT_INDENT = 4
TAIL_LINES = 60
NOT_RUN_NAME = '<not run>'
SUITE_SELF_NAME = '<suite>'
CRASH_MESSAGE = 'kernel crashed or hung while running this case'
LOG_ENDED = 'log ended (kernel crashed or hung)'

TIMESTAMP_RE = re.compile(r'^\[\s*\d+\.\d+\](?:\[\s*[CT]\d+\])? ?')
VERSION_RE = re.compile(r'^K?TAP version \d+$')
SUBTEST_RE = re.compile(r'^# Subtest: (.*)$')
PLAN_RE = re.compile(r'^1\.\.(\d+)')
RESULT_RE = re.compile(
    r'^(ok|not ok) (\d+)(?: -)?(?: ([^#]*?))?\s*(?:#\s*(.*))?$')
DIAG_RE = re.compile(r'^#(?: |$)')
END_RE = re.compile(
    r'Kernel panic - not syncing'
    r'|reboot: (?:System halted|Power down|Restarting system)')
CRASH_RE = re.compile(
    r'Kernel panic - not syncing|\bBUG:|\bOops\b|general protection fault'
    r'|Unable to handle kernel|detected stalls?\b|blocked for more than')
# Console reports that fail the case during which they appear, unless
# declared (--expect-splats): WARN, BUG, KASAN, UBSAN, kmemleak, lockdep
# (which reports as "WARNING: possible ..." / "inconsistent lock state"),
# bad page state, general protection fault, a complaint of ext4 (the
# gup_pin_ext4_dma disk), and an unmount that finds inodes still in use.
SPLAT_RE = re.compile(r'^(?:WARNING: |BUG: |BUG kmalloc|KASAN: |UBSAN: |'
                      r'kmemleak: \d+ new suspected memory leak|'
                      r'unreferenced object 0x|'
                      r'.*Bad page (?:state|map)|general protection fault|'
                      r'.*inconsistent lock state|EXT4-fs (?:warning|error)|'
                      r'VFS: Busy inodes)')
SPLAT_MESSAGES = ('unexpected console report', 'declared console report',
                  'console report outside')
FAILED_AT_RE = re.compile(r'(?:EXPECTATION|ASSERTION) FAILED at (\S+):(\d+)')
STATS_RE = re.compile(r'^# \S+: pass:\d+ fail:\d+ skip:\d+ total:\d+$')
CASE_LOG_RE = re.compile(r'^\s+# (\w+): ')
SKIP_RE = re.compile(r'^SKIP\b\s*(.*)$', re.IGNORECASE)
SYNTHESIZED_RE = re.compile(r'^(CRASHED|not run)\b:?\s*(.*)$')
DECLARATION_RE = re.compile(r'^\s*# (\S+): expected report: (.*\S)\s*$')
MAY_RE = re.compile(r'^\s*# (\S+): may report: (.*\S)\s*$')


@dataclass
class Node:
    """One KTAP test: the top-level list, a suite, a case or a parameter."""

    name: str = ''
    number: int = 0
    planned: int | None = None
    status: str | None = None
    message: str = ''
    count: int = 1
    diagnostics: list[str] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)

    def add(self, child: Node) -> Node:
        """Append child with the next KTAP number and return it."""
        child.number = len(self.children) + 1
        self.children.append(child)
        return child


@dataclass
class Leaf:
    """A counted test: a case without parameters or one parameter."""

    suite: str
    name: str
    status: str | None
    message: str
    file: str | None
    line: int | None
    diagnostics: list[str]
    count: int


@dataclass
class Counts:
    """Leaf counts; failures are failed expectations, errors the rest."""

    passed: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0

    @classmethod
    def of(cls, leaves: list[Leaf]) -> Counts:
        counts = cls()
        for leaf in leaves:
            attr = {PASSED: 'passed', FAILED: 'failures',
                    SKIPPED: 'skipped'}.get(leaf.status or '', 'errors')
            setattr(counts, attr, getattr(counts, attr) + leaf.count)
        return counts

    @property
    def failed(self) -> int:
        return self.failures + self.errors

    @property
    def tests(self) -> int:
        return self.passed + self.failed + self.skipped


@dataclass
class Result:
    """Everything parse_log() learned from one console log."""

    found: bool
    log_name: str
    root: Node = field(default_factory=Node)
    ktap_lines: list[str] = field(default_factory=list)
    crash_reason: str | None = None
    console_tail: list[str] = field(default_factory=list)
    missing_suites: list[str] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        return self.crash_reason is not None

    def leaves(self) -> list[Leaf]:
        return [leaf for suite in self.root.children
                for leaf in _leaves(suite, suite.name, '')]

    def counts(self) -> Counts:
        return Counts.of(self.leaves())

    def exit_status(self) -> int:
        return 1 if self.counts().failed or self.crashed else 0


class _Parser:
    """Indentation-driven KTAP state machine over timestamp-free lines."""

    def __init__(self, log_name: str, version_line: str):
        self.log_name = log_name
        self.root = Node()
        self.stack = [self.root]
        self.pending: list[str] = []
        self.lines = [version_line]
        self.unit: int | None = None

    def feed(self, line: str) -> bool:
        """Consume one line; return False once the KTAP has ended."""
        body = line.lstrip(' \t')
        kind, match = _classify(body)
        depth = self._depth(line[:len(line) - len(body)], kind)
        if END_RE.search(line) or (kind == 'version' and depth == 0):
            self.pending.append(line)
            return False
        if kind == 'text' and depth == 0:
            self.pending.append(line)
            return True
        self.lines.append(line)
        handler = getattr(self, '_on_' + kind, None)
        if handler is None or not handler(depth, match):
            self.pending.append(line)
        return not self._complete()

    def finish(self) -> str | None:
        """Close what the log left open; return the crash reason or None."""
        if len(self.stack) == 1 and not _has_room(self.root, True):
            return None
        reason = _crash_reason(self.pending)
        note = f'{reason}; see {self.log_name}'
        innermost = self.stack[-1]
        if _has_room(innermost, False):
            level = len(self.stack) - 1
            number = len(innermost.children) + 1
            crashed = innermost.add(Node(
                name=self._running_name(level, number), status=CRASHED,
                message=f'crashed ({reason})', diagnostics=self.pending))
            self._emit(level, crashed, f'CRASHED: {note}')
        else:
            innermost.diagnostics.extend(self.pending)
        self.pending = []
        for level in range(len(self.stack) - 1, -1, -1):
            node = self.stack[level]
            self._add_not_run(node, level, note)
            if level:
                node.status, node.message = CRASHED, f'crashed ({reason})'
                self._emit(level - 1, node, f'CRASHED: {note}')
        del self.stack[1:]
        return reason

    def _depth(self, indent: str, kind: str) -> int:
        """Nesting level; the first indented KTAP line sets the unit."""
        if self.unit is None and kind != 'text' and len(indent) in (2, 4) \
                and not indent.strip(' '):
            self.unit = len(indent)
        unit = self.unit or DEFAULT_INDENT
        return indent.count('\t') + indent.count(' ') // unit

    def _indent(self, level: int) -> str:
        return ' ' * (self.unit or DEFAULT_INDENT) * level

    def _on_version(self, depth: int, _match: re.Match) -> bool:
        return self._open(depth) is not None

    def _on_subtest(self, depth: int, match: re.Match) -> bool:
        node = self.stack[depth] if 0 < depth < len(self.stack) else None
        if node is None or node.name or node.children \
                or node.planned is not None:
            node = self._open(depth)
        if node is None:
            return False
        node.name = match.group(1)
        return True

    def _on_plan(self, depth: int, match: re.Match) -> bool:
        if depth >= len(self.stack) and self._open(depth) is None:
            return False
        self.stack[depth].planned = int(match.group(1))
        return True

    def _on_result(self, depth: int, match: re.Match) -> bool:
        if depth >= len(self.stack) and self._open(depth) is None:
            return False
        if len(self.stack) > depth + 1:
            node = self.stack[depth + 1]
            self._set_result(node, match)
            self._pop_to(depth + 1)
        else:
            self._set_result(self.stack[depth].add(Node()), match)
        return True

    def _open(self, depth: int) -> Node | None:
        """Start a test at nesting level depth, or None if impossible."""
        if depth < 1 or depth > len(self.stack):
            return None
        self._pop_to(depth)
        node = self.stack[-1].add(Node(diagnostics=self.pending))
        self.pending = []
        self.stack.append(node)
        return node

    def _pop_to(self, level: int) -> None:
        for node in self.stack[level:]:
            if node.status is None:
                node.status = FAILED
                node.message = 'no result line (malformed KTAP)'
        del self.stack[level:]

    def _set_result(self, node: Node, match: re.Match) -> None:
        verdict, number, name, directive = match.groups()
        node.number = int(number)
        node.name = name or node.name or f'<test {number}>'
        node.status, node.message = _status(verdict, directive or '')
        node.diagnostics.extend(self.pending)
        self.pending = []

    def _complete(self) -> bool:
        return len(self.stack) == 1 and self.root.planned is not None \
            and len(self.root.children) >= self.root.planned

    def _running_name(self, level: int, number: int) -> str:
        if level == 0:
            return f'<suite {number}>'
        if level == 1:
            return _guess_case(self.pending) or f'<case {number}>'
        return f'<param {number}>'

    def _add_not_run(self, node: Node, level: int, note: str) -> None:
        if not _has_room(node, True):
            return
        assert node.planned is not None  # _has_room(node, True)
        first = len(node.children) + 1
        count = node.planned - len(node.children)
        scope = 'earlier' if level == 0 else 'earlier in the suite'
        unit = 'suites' if level == 0 else 'tests'
        node.add(Node(
            name=NOT_RUN_NAME, status=NOT_RUN, count=count,
            message=f'not run: kernel crashed {scope} ({count} of '
                    f'{node.planned} planned {unit} never reported)'))
        for number in range(first, node.planned + 1):
            self.lines.append(f'{self._indent(level)}not ok {number} '
                              f'{NOT_RUN_NAME} # not run: {note}')

    def _emit(self, level: int, node: Node, directive: str) -> None:
        self.lines.append(
            f'{self._indent(level)}not ok {node.number} {node.name} '
            f'# {directive}')


def _classify(body: str) -> tuple[str, re.Match | None]:
    """Return the KTAP line kind of an unindented line and its match."""
    for kind, regex in (('version', VERSION_RE), ('subtest', SUBTEST_RE),
                        ('plan', PLAN_RE), ('result', RESULT_RE),
                        ('diag', DIAG_RE)):
        match = regex.match(body)
        if match:
            return kind, match
    return 'text', None


def _has_room(node: Node, needs_plan: bool) -> bool:
    """True if node may still get children (plan unfulfilled/unknown)."""
    if node.planned is None:
        return not needs_plan
    return len(node.children) < node.planned


def _status(verdict: str, directive: str) -> tuple[str, str]:
    skip = SKIP_RE.match(directive)
    if skip:
        return SKIPPED, skip.group(1)
    synthesized = SYNTHESIZED_RE.match(directive)
    if synthesized and verdict == 'not ok':
        kind, detail = synthesized.groups()
        status = CRASHED if kind == 'CRASHED' else NOT_RUN
        return status, f'{kind.lower()} ({detail})'
    return (PASSED if verdict == 'ok' else FAILED), directive


def _crash_reason(lines: list[str]) -> str:
    for line in lines:
        if CRASH_RE.search(line):
            return line.strip()
    return LOG_ENDED


def _guess_case(lines: list[str]) -> str | None:
    """Name of the running case from its last "    # NAME: ..." line."""
    for line in reversed(lines):
        match = CASE_LOG_RE.match(line)
        if match:
            return match.group(1)
    return None


def _leaves(node: Node, suite: str, path: str) -> list[Leaf]:
    own_name = path or (NOT_RUN_NAME if node.status == NOT_RUN
                        else SUITE_SELF_NAME)
    if not node.children:
        return [_make_leaf(node, suite, own_name)]
    leaves = [leaf for child in node.children for leaf in _leaves(
        child, suite, f'{path}/{child.name}' if path else child.name)]
    if node.status in FAILING and not any(
            leaf.status in FAILING for leaf in leaves):
        leaves.append(_make_leaf(node, suite, own_name))
    return leaves


def _make_leaf(node: Node, suite: str, name: str) -> Leaf:
    location = _location(node.diagnostics)
    message = node.message
    if node.status == FAILED:
        message = _failure_message(node)
    elif node.status == SKIPPED:
        message = message or 'skipped'
    return Leaf(suite, name, node.status, message,
                location[0] if location else None,
                location[1] if location else None,
                node.diagnostics, node.count)


def _location(diagnostics: list[str]) -> tuple[str, int] | None:
    for line in diagnostics:
        match = FAILED_AT_RE.search(line)
        if match:
            return match.group(1), int(match.group(2))
    return None


def _failure_message(node: Node) -> str:
    if node.message.startswith(SPLAT_MESSAGES):
        return node.message
    lines = [line.strip() for line in node.diagnostics if line.strip()]
    for line in lines:
        match = FAILED_AT_RE.search(line)
        if match:
            return match.group(0)
    for line in lines:
        if DIAG_RE.match(line) and not STATS_RE.match(line):
            return line[2:]
    return node.message or (lines[0] if lines else 'failed')


def parse_log(text: str, log_name: str = 'kunit.log') -> Result:
    """Parse a console log; log_name is quoted in synthesized KTAP lines."""
    raw = text.splitlines()
    lines = [TIMESTAMP_RE.sub('', line.rstrip()) for line in raw]
    tail = [line.rstrip() for line in raw[-TAIL_LINES:]]
    start = next((index for index, line in enumerate(lines)
                  if VERSION_RE.match(line)), None)
    if start is None:
        return Result(found=False, log_name=log_name, console_tail=tail)
    parser = _Parser(log_name, lines[start])
    for line in lines[start + 1:]:
        if not parser.feed(line):
            break
    reason = parser.finish()
    return Result(True, log_name, parser.root, parser.lines, reason, tail)


def read_splats(path: str) -> list[tuple[str, str]]:
    """Declared splats: lines 'CASE-GLOB TEXT' (# comments allowed)."""
    out = []
    for _number, line in read_list(path):
        glob, _, text = line.partition(' ')
        out.append((glob, text.strip()))
    return out


def case_declarations(diagnostics: list[str], case: str,
                      regex: re.Pattern[str] = DECLARATION_RE) -> list[str]:
    """The report texts that case declares among diagnostics.

    A case that provokes a console report on purpose prints, before its
    result line (a parameterised case: among that parameter's lines),
    once per text, the diagnostic "# CASE: expected report: TEXT"
    (kunit_info()); with regex=MAY_RE, the benign races it may meet,
    "# CASE: may report: TEXT". A line naming another case declares
    nothing here.
    """
    found = []
    for line in diagnostics:
        match = regex.match(line)
        if match and match.group(1) == case:
            found.append(match.group(2))
    return found


def _leaf_nodes(node: Node, path: str) -> Iterator[tuple[str, Node]]:
    if not node.children:
        yield path, node
    for child in node.children:
        yield from _leaf_nodes(child, f'{path}/{child.name}' if '.' in path
                               else f'{path}.{child.name}' if path
                               else child.name)


def _reports(lines: Iterable[str]) -> list[str]:
    """The console report lines among lines, stripped. A KTAP diagnostic
    ("# ...", a declaration among them) is the test's own output, never
    a report, whatever it quotes."""
    return [line for line in (ln.strip() for ln in lines)
            if SPLAT_RE.match(line) and not DIAG_RE.match(line)]


def _splat_problem(name: str, node: Node, splats: list[str],
                   declared: list[tuple[str, str]]) -> str | None:
    """Why the console reports of leaf name fail it, or None.

    The texts it may show are those of the files (declared) whose glob
    matches name, and those it declares itself (case_declarations()).
    """
    case = name.partition('.')[2].partition('/')[0]
    texts = [text for glob, text in declared
             if fnmatch.fnmatchcase(name, glob)]
    texts += case_declarations(node.diagnostics, case)
    allowed = texts + case_declarations(node.diagnostics, case, MAY_RE)
    unexpected = [ln for ln in splats if not any(t in ln for t in allowed)]
    missing = [t for t in texts if not any(t in ln for ln in splats)]
    if unexpected:
        return f'unexpected console report: {unexpected[0]}'
    if missing and node.status == PASSED:
        return f'declared console report "{missing[0]}" did not appear'
    return None


def apply_splats(result: Result, text: str,
                 declared: list[tuple[str, str]]) -> list[str]:
    """Fail cases with undeclared console splats, or missing declared ones.

    A splat belongs to the case whose result line follows it. The case
    declares its own (case_declarations()); declared adds the lines
    "CASE-GLOB TEXT" of kunit/expected-splats and kunit/TREE/ (for what
    a case cannot declare itself). Each report line during a case must
    contain one of its texts, and each text must appear in one of its
    report lines. Splats outside every case (before KUnit, after the
    last suite) fail a synthesized 'console' entry, unless a line of
    declared with the glob 'console' allows them. Return one line per
    problem.
    """
    problems, attributed = [], []
    for name, node in _leaf_nodes(result.root, ''):
        splats = _reports(node.diagnostics)
        attributed += splats
        why = _splat_problem(name, node, splats, declared)
        if why:
            problems.append(f'{name}: {why}')
            if node.status in (PASSED, SKIPPED):
                node.status, node.message = FAILED, why
    outside = _reports(TIMESTAMP_RE.sub('', x) for x in text.splitlines())
    for line in attributed:
        if line in outside:
            outside.remove(line)
    boot = [text for glob, text in declared if glob == 'console']
    outside = [ln for ln in outside if not any(t in ln for t in boot)]
    if outside and result.found:
        why = f'console report outside any case: {outside[0]}'
        problems.append(f'console: {why}')
        suite = result.root.add(Node(name='console'))
        suite.add(Node(name='reports outside any case', status=FAILED,
                       message=why, diagnostics=outside))
    return problems


def apply_expected(result: Result, names: list[str]) -> list[str]:
    """Add expected suites absent from the log as failed; return them."""
    seen = {suite.name for suite in result.root.children}
    missing = [name for name in dict.fromkeys(names) if name not in seen]
    _absorb_unnamed(result.root, len(missing))
    for name in missing:
        result.root.add(Node(name=name, status=NOT_RUN,
                             message='suite did not run'))
    result.missing_suites = missing
    if not result.found:
        result.ktap_lines = ['KTAP version 1', f'1..{len(missing)}'] + [
            f'not ok {number} {name} # not run: no KTAP output found in '
            f'{result.log_name}'
            for number, name in enumerate(missing, start=1)]
    return missing


def _absorb_unnamed(root: Node, named: int) -> None:
    """Let named missing suites replace unnamed "<not run>" suites."""
    for node in root.children:
        if node.status == NOT_RUN and node.name == NOT_RUN_NAME:
            node.count -= min(named, node.count)
            if not node.count:
                root.children.remove(node)
            return


def _group(leaves: list[Leaf]) -> dict[str, list[Leaf]]:
    groups: dict[str, list[Leaf]] = {}
    for leaf in leaves:
        groups.setdefault(leaf.suite, []).append(leaf)
    return groups


def _count_attrs(counts: Counts) -> dict[str, str]:
    return {'tests': str(counts.tests), 'failures': str(counts.failures),
            'errors': str(counts.errors), 'skipped': str(counts.skipped)}


def _testcase(parent: ET.Element, leaf: Leaf, tail: list[str]) -> None:
    attrs = {'classname': clean_xml(leaf.suite),
             'name': clean_xml(leaf.name)}
    if leaf.file:
        attrs.update(file=clean_xml(leaf.file), line=str(leaf.line))
    case = ET.SubElement(parent, 'testcase', attrs)
    diagnostics = '\n'.join(leaf.diagnostics)
    if leaf.status == FAILED:
        sub_element(case, 'failure', leaf.message, diagnostics)
    elif leaf.status == CRASHED:
        sub_element(case, 'error', CRASH_MESSAGE, '\n'.join(tail))
    elif leaf.status == NOT_RUN:
        sub_element(case, 'error', leaf.message, diagnostics)
    else:
        if leaf.status == SKIPPED:
            sub_element(case, 'skipped', leaf.message)
        if diagnostics:
            sub_element(case, 'system-out', None, diagnostics)


def junit_xml(result: Result) -> ET.ElementTree:
    """JUnit XML: one testsuite per KUnit suite, one testcase per leaf."""
    leaves = result.leaves()
    root = ET.Element('testsuites', _count_attrs(Counts.of(leaves)))
    for suite, group in _group(leaves).items():
        element = ET.SubElement(root, 'testsuite', {
            'name': clean_xml(suite), **_count_attrs(Counts.of(group))})
        for leaf in group:
            _testcase(element, leaf, result.console_tail)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    return tree


def summary(result: Result) -> dict:
    """The --summary-json document."""
    leaves = result.leaves()
    counts = Counts.of(leaves)
    return {
        'passed': counts.passed, 'failed': counts.failed,
        'skipped': counts.skipped, 'crashed': result.crashed,
        'crash_reason': result.crash_reason,
        'missing_suites': result.missing_suites,
        'suites': [{'name': suite, 'cases': [
            {'name': leaf.name, 'status': leaf.status, 'file': leaf.file,
             'line': leaf.line, 'message': leaf.message,
             'count': leaf.count} for leaf in group]}
            for suite, group in _group(leaves).items()],
    }


def report_lines(result: Result) -> list[str]:
    """stdout: one FAILED line per failing leaf, then the counts line."""
    leaves = result.leaves()
    counts = Counts.of(leaves)
    lines = [f'FAILED {leaf.suite}.{leaf.name}: {leaf.message}'
             for leaf in leaves if leaf.status in FAILING]
    lines.append(f'{counts.passed} passed, {counts.failed} failed, '
                 f'{counts.skipped} skipped')
    return lines


def read_expected(path: str) -> list[str]:
    """Suite names, one a line; '#' comments and blank lines ignored."""
    return read_names(path)


def _warn(message: str) -> None:
    print(f'ktap_report: {message}', file=sys.stderr)


def _write_outputs(result: Result, args: argparse.Namespace) -> None:
    if args.ktap:
        with open(args.ktap, 'w', encoding='utf-8') as file:
            file.write('\n'.join(result.ktap_lines) + '\n')
    if args.junit:
        junit_xml(result).write(args.junit, encoding='utf-8',
                                xml_declaration=True)
    if args.summary_json:
        with open(args.summary_json, 'w', encoding='utf-8') as file:
            json.dump(summary(result), file, indent=2)
            file.write('\n')


def _run(args: argparse.Namespace) -> int:
    with open(args.log, encoding='utf-8', errors='replace') as file:
        text = file.read()
    expected = read_expected(args.expect_suites) if args.expect_suites \
        else []
    result = parse_log(text, os.path.basename(args.log))
    if not result.found:
        _warn(f'no KTAP output found in {args.log} '
              '(kernel did not reach KUnit?)')
        if not expected:
            return 2
    for name in apply_expected(result, expected):
        _warn(f'expected suite {name} did not run')
    if args.expect_splats is not None:
        declared = [entry for path in args.expect_splats if path
                    for entry in read_splats(path)]
        for problem in apply_splats(result, text, declared):
            _warn(problem)
    _write_outputs(result, args)
    print('\n'.join(report_lines(result)))
    return result.exit_status()


def _arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='ktap_report.py',
        description='Extract and summarise KUnit KTAP results from a raw '
                    'kernel console log (QEMU run), tolerating kernel '
                    'splats, crashes and truncation.',
        epilog='Exit status: 0 all tests passed or skipped; 1 a test '
               'failed, crashed or an expected suite is missing; 2 bad '
               'input.')
    parser.add_argument('log', metavar='LOG', help='raw console log')
    parser.add_argument('--ktap', metavar='OUT.ktap',
                        help='write the extracted KTAP, closed with '
                             '"not ok" lines if the log is truncated')
    parser.add_argument('--junit', metavar='OUT.xml',
                        help='write JUnit XML')
    parser.add_argument('--expect-suites', metavar='FILE',
                        help='suite names that must appear, one per line')
    parser.add_argument('--summary-json', metavar='OUT.json',
                        help='write a JSON summary')
    parser.add_argument('--expect-splats', metavar='FILE', nargs='?',
                        const='', action='append',
                        help='fail every case during which the console '
                             'shows a WARNING, BUG, KASAN, kmemleak, '
                             'lockdep or bad page report, except those '
                             'that the case declares (its diagnostic '
                             '"# CASE: expected report: TEXT") or FILE '
                             'declares (lines "CASE-GLOB TEXT"), and a '
                             'declared one that did not appear; '
                             'repeatable: the declarations of every FILE '
                             'count (none: only the cases declare)')
    return parser


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = _arg_parser().parse_args(argv)
    try:
        return _run(args)
    except OSError as err:
        _warn(f'{err.filename or "I/O"}: {err.strerror or err}')
        return 2
    except ToolError as err:
        _warn(str(err))
        return 2


if __name__ == '__main__':
    sys.exit(main())
