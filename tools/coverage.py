#!/usr/bin/env python3
"""gcov coverage of the pin core in the x86_64 QEMU run (`make coverage`).

For each tree (--tree, repeatable; default every tree of kunit/trees):
  1. build and run the suites with tools/run_suite.py in make test's own
     build directory, build/TREE/kunit-x86_64 (the kunitconfig has
     CONFIG_GCOV_KERNEL=y, which profiles nothing by itself), with only
     the pin-core objects (one per .c file of kunit/TREE/pin-core) and
     the tests' own objects profiled (make options GCOV_PROFILE_gup.o=y
     GCOV_PROFILE_memremap.o=y
     GCOV_PROFILE_gup_kunit_pin.o=y ...; the tests' objects carry copies
     of the pin core's static inlines): kbuild rebuilds just those, and
     make test's next build rebuilds them unprofiled. The console goes to
     results/TREE/coverage-run/kunit.log;
  2. read the .gcda images that the harness's gcov dump prints on the
     console, twice over ('GCOV: <path> <offset> <hex> <crc>' lines, then
     one 'GCOV-END: <path> <size> <crc32> <crc>' line per file, each line
     with the crc32 of its own text): leave out every damaged line, take
     each chunk from a copy that has it whole, check size and crc32, and
     write each file next to its .gcno in the build directory;
  3. lcov --capture (branch coverage on) into
     results/TREE/coverage/lcov.info and genhtml --branch-coverage into
     results/TREE/coverage/ (index.html);
  4. from gcov --json-format, lines and branches hit/total for each
     function of the tree's pin core, kunit/TREE/pin-core (lines
     'function path/in/tree.c', in report order; a tree without it fails
     in one line), written to results/TREE/coverage/summary.json and
     printed as a table.

The goal is >= 95% of lines and >= 90% of branches for each function. A
function that meets both passes, any other fails; the last line is
'N passed, N failed, N skipped'. The exit status is still 0 when every
unexecuted line and every line with an untaken branch of each failing
function is listed (as `path:line`) in docs/TREE/coverage.md, which is
how the issue accepts a miss; it is 1 for an undocumented miss and for
tool errors (no GCOV data in the log, a corrupt dump, lcov missing, no
pin-core list), which are reported in one line. With several trees, each
tree's last line is 'coverage: TREE: N passed, N failed, 0 skipped' and
the last line sums them.

--no-run skips step 1 and uses the log and build directory as they are.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (ROOT, BuildLock, ToolError, Tree,  # noqa: E402
                     add_tree_argument, die, display,
                     kernel_sources, read_pin_core, run, selected_trees)
from _cscan import source_extents  # noqa: E402

TOOL = 'coverage'
# Defaults of --build_dir, --run_results, --out, --doc: {build} is
# build/TREE, {results} results/, {tree} the tree (Tree.expand).
BUILD_DIR = '{build}/kunit-x86_64'
RUN_RESULTS = '{results}/{tree}/coverage-run'
OUT = '{results}/{tree}/coverage'
DOC = os.path.join(ROOT, 'docs', '{tree}', 'coverage.md')
LINE_GOAL = 95.0
BRANCH_GOAL = 90.0


def pin_core_objects(tree: Tree) -> list[str]:
    """The objects to profile: one per .c file of the tree's pin core
    (mm/gup.c -> gup.o), in order; a function of a header is profiled
    where it is inlined (the pin core's .c files and the tests' own)."""
    out = []
    for _func, path in read_pin_core(tree):
        if path.endswith('.c'):
            obj = os.path.basename(path)[:-2] + '.o'
            if obj not in out:
                out.append(obj)
    return out


GCOV_RE = re.compile(r'GCOV: ((\S+) (\d+) (\S*)) ([0-9a-f]{8})\s*$')
END_RE = re.compile(r'GCOV-END: ((\S+) (\d+) ([0-9a-f]{8})) ([0-9a-f]{8})\s*$')
ERR_RE = re.compile(r'GCOV-ERROR: (.*?)\s*$')
ANY_RE = re.compile(r'GCOV(-END)?:')


# --------------------------------------------------------------------------
# Console dump -> .gcda images
# --------------------------------------------------------------------------

def crc32(data: str | bytes) -> str:
    """zlib's crc32 as eight hex digits, as the kernel prints it."""
    if isinstance(data, str):
        data = data.encode()
    return '%08x' % (zlib.crc32(data) & 0xffffffff)


def _console_lines(lines: Iterable[str], notes: list[str] | None
                   ) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """The whole GCOV and GCOV-END lines of a console, as
    (line number, kind, groups); a line whose own crc32 does not match
    (a character lost or changed on the way) is counted and left out."""
    bad = 0
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip('\r\n')
        m = ERR_RE.search(line)
        if m:
            raise ToolError('the kernel could not dump a profile: %s'
                            % m.group(1))
        for kind, regex in (('end', END_RE), ('chunk', GCOV_RE)):
            m = regex.search(line)
            if m:
                break
        if not m:
            bad += bool(ANY_RE.search(line))
            continue
        if crc32(m.group(1)) != m.group(5):
            bad += 1
            continue
        yield n, kind, m.groups()[1:4]
    if bad and notes is not None:
        notes.append('%d damaged GCOV line(s) left out' % bad)


def parse_console(lines: Iterable[str], notes: list[str] | None = None
                  ) -> dict[str, bytes]:
    """Return {kernel gcda path: bytes} from the GCOV lines of a console.

    The kernel prints the dump more than once, each line with its own
    crc32: a damaged line is left out (and counted in @notes, a list,
    when given) and each chunk is taken from any copy that has it whole;
    a later line for the same file and offset replaces an earlier one.
    Raise ToolError for a chunk that is not hex, a chunk that no copy has
    whole, a file without its GCOV-END line, or a size or file crc32 that
    does not match.
    """
    chunks: dict[str, dict[int, bytes]] = {}
    ends: dict[str, tuple[int, int, str]] = {}
    for n, kind, (path, num, text) in _console_lines(lines, notes):
        if kind == 'end':
            ends[path] = (n, int(num), text)
            continue
        try:
            if len(text) % 2:
                raise ValueError
            blob = bytes.fromhex(text)
        except ValueError:
            raise ToolError('line %d: %s: chunk at offset %s is not hex'
                            % (n, path, num))
        chunks.setdefault(path, {})[int(num)] = blob
    for path in sorted(set(chunks) - set(ends)):
        raise ToolError('%s: no GCOV-END line after %d chunks (truncated '
                        'console?)' % (path, len(chunks[path])))
    files = {path: _assemble(path, chunks.get(path, {}), *end)
             for path, end in ends.items()}
    if not files:
        raise ToolError('no GCOV data in the console log (was the kernel '
                        'built with CONFIG_GCOV_KERNEL and did gup_pin_final '
                        'run?)')
    return files


def _assemble(path: str, chunks: dict[int, bytes], n: int, size: int,
              crc: str) -> bytes:
    """The bytes of @path from its chunks (by offset), checked against
    the size and crc32 of its GCOV-END line (line @n)."""
    data = bytearray()
    while len(data) < size:
        blob = chunks.get(len(data))
        if not blob:
            raise ToolError('line %d: %s: no copy has the chunk at offset '
                            '%d whole (lost console lines?)'
                            % (n, path, len(data)))
        data += blob
    if len(data) != size:
        raise ToolError('line %d: %s: got %d bytes, GCOV-END says %d '
                        '(truncated console?)' % (n, path, len(data), size))
    if crc32(bytes(data)) != crc:
        raise ToolError('line %d: %s: crc32 %s, GCOV-END says %s '
                        '(corrupted console?)'
                        % (n, path, crc32(bytes(data)), crc))
    return bytes(data)


def map_gcda(kernel_path: str, build_dir: str) -> str:
    """Where the .gcda of kernel_path goes: the longest tail of the path
    that names a .gcno in build_dir."""
    if not kernel_path.endswith('.gcda'):
        raise ToolError('%s is not a .gcda path' % kernel_path)
    parts = [p for p in kernel_path.split('/') if p]
    for i in range(len(parts)):
        rel = os.path.join(*parts[i:])
        if os.path.exists(os.path.join(build_dir, rel[:-5] + '.gcno')):
            return os.path.join(build_dir, rel)
    raise ToolError('no .gcno in %s for %s' % (build_dir, kernel_path))


# --------------------------------------------------------------------------
# gcov JSON -> per-function summary
# --------------------------------------------------------------------------

def rel_source(path: str, cwd: str | None, tree: str) -> str:
    """A gcov source path, relative to the kernel tree when inside it."""
    if not os.path.isabs(path):
        path = os.path.normpath(os.path.join(cwd or '', path))
    tree = os.path.abspath(tree)
    if path.startswith(tree + os.sep):
        return os.path.relpath(path, tree)
    return path


def summarize(gcov_docs: list[dict], functions: list[tuple[str, str]],
              tree: str, read_source: Callable[[str], str | None] | None = None
              ) -> list[dict]:
    """Per-function figures from gcov JSON documents (one per .gcda).

    Lines are merged over the documents by (file, line): a line counts
    once, and is hit if any object executed it. Branches are not merged:
    the copies of a header function in two objects are different branches.
    A function's lines are those gcov reports between its start_line and
    end_line; a function that no object has out of line (a header inline
    that is always inlined) gets its extent from the source.
    functions: [(name, tree path)]; tree: the kernel tree's directory.
    """
    lines: dict[tuple[str, int], int] = {}
    branches: dict[tuple[str, int], list[int]] = {}  # counts, all objects
    extents: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for doc in gcov_docs:
        cwd = doc.get('current_working_directory')
        for f in doc.get('files', []):
            src = rel_source(f['file'], cwd, tree)
            for fn in f.get('functions', []):
                extents.setdefault((src, fn['name']), set()).add(
                    (fn['start_line'], fn['end_line']))
            for ln in f.get('lines', []):
                key = (src, ln['line_number'])
                lines[key] = lines.get(key, 0) + ln['count']
                branches.setdefault(key, []).extend(
                    b['count'] for b in ln.get('branches', []))
    out = []
    for name, src in functions:
        ranges = extents.get((src, name))
        origin = 'gcov'
        if not ranges:
            text = read_source(src) if read_source else None
            ranges = set(source_extents(text, name)) if text else set()
            origin = 'source'
        if not ranges:
            raise ToolError('function %s not found in gcov data or in %s'
                            % (name, src))
        nums = sorted({ln for (f, ln) in lines if f == src and
                       any(a <= ln <= b for a, b in ranges)})
        unexec = [ln for ln in nums if lines[(src, ln)] == 0]
        br = [(ln, c) for ln in nums for c in branches.get((src, ln), [])]
        untaken = sorted({ln for ln, c in br if c == 0})
        rec: dict = {
            'function': name, 'file': src,
            'start_line': min(a for a, _ in ranges),
            'end_line': max(b for _, b in ranges), 'extent_from': origin,
            'lines': {'hit': len(nums) - len(unexec), 'total': len(nums)},
            'branches': {'hit': sum(1 for _, c in br if c),
                         'total': len(br)},
            'unexecuted_lines': unexec,
            'untaken_branch_lines': untaken,
        }
        rec['lines']['percent'] = percent(rec['lines'])
        rec['branches']['percent'] = percent(rec['branches'])
        rec['meets_goal'] = (rec['lines']['percent'] >= LINE_GOAL and
                             rec['branches']['percent'] >= BRANCH_GOAL)
        out.append(rec)
    return out


def percent(hits: dict) -> float:
    if not hits['total']:
        return 100.0
    return round(100.0 * hits['hit'] / hits['total'], 1)


def documented_refs(text: str) -> set[tuple[str, int]]:
    """Set of (file, line) that docs/TREE/coverage.md explains.

    A line is explained by a table row whose first cell cites it as
    `file:line` (or a range `file:a-b`). Citations anywhere else (a
    heading such as "try_get_folio (mm/gup.c:70-97)", prose) explain
    nothing: counting them would excuse every line of the function.
    """
    refs = set()
    for row in text.splitlines():
        cells = row.strip().split('|')
        if not row.lstrip().startswith('|') or len(cells) < 3:
            continue
        for m in re.finditer(r'([\w./-]+\.[ch]):(\d+)(?:-(\d+))?',
                             cells[1]):
            a = int(m.group(2))
            b = int(m.group(3) or a)
            for ln in range(a, b + 1):
                refs.add((m.group(1), ln))
    return refs


def undocumented(rec: dict, refs: set[tuple[str, int]]) -> list[int]:
    """Lines of a function's misses that docs/TREE/coverage.md does not
    cite."""
    miss = sorted(set(rec['unexecuted_lines']) |
                  set(rec['untaken_branch_lines']))
    return [ln for ln in miss if (rec['file'], ln) not in refs]


def stale_refs(recs: list[dict], refs: set[tuple[str, int]]
               ) -> list[tuple[str, int]]:
    """(file, line) that docs/TREE/coverage.md explains inside a function
    of recs although the line is no longer a miss: the explanation is
    out of date. Only reported, never failed on: a race-only line may run
    in one run and not in the next."""
    out = []
    for r in recs:
        miss = set(r['unexecuted_lines']) | set(r['untaken_branch_lines'])
        out += [(f, ln) for f, ln in sorted(refs)
                if f == r['file'] and
                r['start_line'] <= ln <= r['end_line'] and ln not in miss]
    return out


def table(recs: list[dict]) -> list[str]:
    rows = ['%-34s %-19s %15s %15s  %s' % ('function', 'file', 'lines',
                                           'branches', 'goal')]
    for r in recs:
        rows.append('%-34s %-19s %4d/%-4d %5.1f%% %4d/%-4d %5.1f%%  %s' % (
            r['function'], r['file'], r['lines']['hit'],
            r['lines']['total'], r['lines']['percent'],
            r['branches']['hit'], r['branches']['total'],
            r['branches']['percent'], 'met' if r['meets_goal'] else 'MISSED'))
    return rows


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------

def test_objects(tree: Tree) -> list[str]:
    """The objects of the tree's test sources (kernel_sources(), harness
    left out), profiled too: a static inline of the pin core that the
    tests call (folio_maybe_dma_pinned(), is_longterm_pinnable_page()) has
    its copies there, and the kernel's own callers may be few."""
    return sorted(os.path.basename(rel)[:-2] + '.o'
                  for rel in kernel_sources(tree, harness=False)
                  if rel.endswith('.c'))


def profiled(args: argparse.Namespace, tree: Tree) -> list[str]:
    """--profile, else the objects of the tree's pin core."""
    return list(args.profile) if args.profile else pin_core_objects(tree)


def build_and_run(args: argparse.Namespace, tree: Tree) -> float:
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'run_suite.py'),
           '--tree', tree.name,
           '--build_dir', args.build_dir, '--results', args.run_results]
    for obj in profiled(args, tree) + test_objects(tree):
        cmd += ['--make_options', 'GCOV_PROFILE_%s=y' % obj]
    if args.filter:
        cmd.append(args.filter)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, errors='backslashreplace')
    lines = proc.stdout.rstrip('\n').splitlines()
    for ln in lines:
        print('  ' + ln)
    if proc.returncode != 0:
        print('%s: warning: the suite run did not pass (%s); coverage is '
              'of what ran' % (TOOL, lines[-1] if lines else 'no output'),
              file=sys.stderr)
    return time.monotonic() - t0


def write_gcda(images: dict[str, bytes], build_dir: str) -> list[str]:
    written = []
    for kpath, data in sorted(images.items()):
        dest = map_gcda(kpath, build_dir)
        with open(dest, 'wb') as f:
            f.write(data)
        written.append(dest)
    return written


def gcov_json(gcda: str) -> list[dict]:
    """gcov --json-format of one .gcda, run in a scratch directory."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = run(['gcov', '--json-format', '--stdout', '--branch-counts',
                    '--branch-probabilities', '--object-directory',
                    os.path.dirname(gcda), gcda], cwd=tmp)
    docs = []
    dec = json.JSONDecoder()
    text, pos = proc.stdout, 0
    while True:
        start = text.find('{', pos)
        if start < 0:
            break
        try:
            doc, pos = dec.raw_decode(text, start)
        except ValueError:
            raise ToolError('gcov --json-format of %s: unparsable output'
                            % gcda)
        docs.append(doc)
    if not docs:
        raise ToolError('gcov --json-format of %s printed no JSON' % gcda)
    return docs


def lcov_html(args: argparse.Namespace, gcdas: list[str],
              tree: Tree) -> str:
    for tool in ('lcov', 'genhtml', 'gcov'):
        if not shutil.which(tool):
            raise ToolError('%s not found; run tools/deps (package %s)'
                            % (tool, 'gcc' if tool == 'gcov' else 'lcov'))
    info = os.path.join(args.out, 'lcov.info')
    dirs = sorted({os.path.dirname(g) for g in gcdas})
    cmd = ['lcov', '--capture', '--rc', 'lcov_branch_coverage=1',
           '--base-directory', tree.linux, '--output-file', info,
           '--test-name', 'gup_pin']
    for d in dirs:
        cmd += ['--directory', d]
    run(cmd, timeout=600)
    run(['genhtml', '--branch-coverage', '--rc', 'genhtml_branch_coverage=1',
         '--title', 'gup-pin-kunit: pin core of %s (x86_64 QEMU)'
         % tree.name,
         '--output-directory', args.out, info], timeout=600)
    return info


def source_reader(tree: Tree) -> Callable[[str], str | None]:
    def read_source(rel):
        try:
            with open(os.path.join(tree.linux, rel), errors='replace') as f:
                return f.read()
        except OSError:
            return None
    return read_source


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('filter', nargs='?', default='',
                    help='kunit.py filter glob (default: run_suite\'s); '
                    'gup_pin_final must match, it prints the profile')
    add_tree_argument(ap)
    ap.add_argument('--no-run', dest='run', action='store_false',
                    help='use the log and build directory as they are')
    ap.add_argument('--build_dir', default=BUILD_DIR,
                    help='default %s' % BUILD_DIR)
    ap.add_argument('--run_results', default=RUN_RESULTS,
                    help='results directory of the run (kunit.log); '
                    'default %s' % RUN_RESULTS)
    ap.add_argument('--out', default=OUT,
                    help='HTML report, lcov.info and summary.json; default '
                    '%s' % OUT)
    ap.add_argument('--doc', default=DOC,
                    help='where each miss must be listed (default '
                    'docs/{tree}/coverage.md)')
    ap.add_argument('--profile', action='append', default=None,
                    metavar='OBJ.o', help='object to profile (repeatable; '
                    'default: one per .c file of kunit/TREE/pin-core)')
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    if len(trees) > 1:
        for name in ('build_dir', 'run_results', 'out', 'doc'):
            if not any(p in getattr(args, name) for p in ('{tree}',
                                                          '{build}')):
                die(TOOL, '--%s %s: with several trees it must name {tree} '
                    'or {build}' % (name, getattr(args, name)), 2)
    passed = failed = status = 0
    try:
        with BuildLock(TOOL):
            for tree in trees:
                targs = argparse.Namespace(**vars(args))
                for name in ('build_dir', 'run_results', 'out', 'doc'):
                    setattr(targs, name, tree.expand(getattr(args, name)))
                try:
                    rc, ok, bad = coverage(targs, tree)
                except ToolError as e:
                    print('%s: %s: %s' % (TOOL, tree.name, e),
                          file=sys.stderr, flush=True)
                    rc, ok, bad = 1, 0, 1
                passed += ok
                failed += bad
                status = status or rc
                if len(trees) > 1:
                    print('%s: %s: %d passed, %d failed, 0 skipped (exit %d)'
                          % (TOOL, tree.name, ok, bad, rc), flush=True)
    except ToolError as e:
        die(TOOL, str(e), e.status)
    except KeyboardInterrupt:
        die(TOOL, 'interrupted', 130)
    print('%d passed, %d failed, 0 skipped' % (passed, failed))
    return status


def coverage(args: argparse.Namespace,
             tree: Tree) -> tuple[int, int, int]:
    """One tree; return (exit status, functions meeting the goal, the
    others). ToolError on a tool error."""
    functions = read_pin_core(tree)
    if not shutil.which('lcov') or not shutil.which('genhtml'):
        raise ToolError('lcov not found; run tools/deps (package lcov)')
    t_run = build_and_run(args, tree) if args.run else None
    log = os.path.join(args.run_results, 'kunit.log')
    try:
        notes: list[str] = []
        with open(log, errors='backslashreplace') as f:
            images = parse_console(f, notes)
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (log, e.strerror))
    for note in notes:
        print('%s: %s: %s (each chunk taken from another copy)'
              % (TOOL, tree.name, note))
    t0 = time.monotonic()
    for old in _existing_gcda(args.build_dir):
        os.unlink(old)
    gcdas = write_gcda(images, args.build_dir)
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    info = lcov_html(args, gcdas, tree)
    docs = []
    for g in gcdas:
        docs += gcov_json(g)
    recs = summarize(docs, functions, tree.linux,
                     read_source=source_reader(tree))
    try:
        with open(args.doc) as f:
            refs = documented_refs(f.read())
    except OSError:
        refs = set()
    for r in recs:
        r['undocumented_misses'] = undocumented(r, refs)
    total = {k: {'hit': sum(r[k]['hit'] for r in recs),
                 'total': sum(r[k]['total'] for r in recs)}
             for k in ('lines', 'branches')}
    for v in total.values():
        v['percent'] = percent(v)
    summary = {'tree': tree.name,
               'goal': {'lines_percent': LINE_GOAL,
                        'branches_percent': BRANCH_GOAL},
               'pin_core': display(tree.pin_core),
               'profiled': profiled(args, tree), 'gcda': sorted(images),
               'lcov_info': info, 'functions': recs, 'total': total,
               'run_seconds': round(t_run, 1) if t_run else None,
               'report_seconds': round(time.monotonic() - t0, 1)}
    with open(os.path.join(args.out, 'summary.json'), 'w') as f:
        json.dump(summary, f, indent=1)

    for row in table(recs):
        print(row)
    print('%-54s %4d/%-4d %5.1f%% %4d/%-4d %5.1f%%' % (
        'total', total['lines']['hit'], total['lines']['total'],
        total['lines']['percent'], total['branches']['hit'],
        total['branches']['total'], total['branches']['percent']))
    bad = [r for r in recs if not r['meets_goal'] and
           r['undocumented_misses']]
    sys.stdout.flush()
    for r in bad:
        print('%s: %s: %s misses the goal; not in %s: %s' % (
            TOOL, tree.name, r['function'], display(args.doc),
            ', '.join('%s:%d' % (r['file'], ln)
                      for ln in r['undocumented_misses'])), file=sys.stderr)
    stale = stale_refs(recs, refs)
    if stale:
        print('%s: %s: explained in %s but run now (out of date): %s' % (
            TOOL, tree.name, display(args.doc),
            ', '.join('%s:%d' % ref for ref in stale)))
    print('%s: %s: report %s' % (TOOL, tree.name,
                                 display(os.path.join(args.out,
                                                      'index.html'))))
    passed = sum(1 for r in recs if r['meets_goal'])
    return (1 if bad else 0), passed, len(recs) - passed


def _existing_gcda(build_dir):
    for dirpath, _dirs, files in os.walk(build_dir):
        for name in files:
            if name.endswith('.gcda'):
                yield os.path.join(dirpath, name)


if __name__ == '__main__':
    sys.exit(main())
