"""The steps of `make check` (tools/check.py) that read the project and
its trees without booting a kernel: the tools' own unittest suite, mypy
on the tools, the series as git am applies it, checkpatch and
kernel-doc, the W=1 compile and the coverage matrix.

Each step adds its tests to check.py's tally t with t.add(step, name, ok,
why) and prints a line that names its tree.
"""
import fnmatch
import glob
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from collections.abc import Iterable, Mapping

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prepare_tree  # noqa: E402
from _common import (BUILD, ROOT, ToolError, Tree, display,  # noqa: E402
                     kernel_sources, run)

# Debian's python3-mypy installs mypy for /usr/bin/python3, which need
# not be the python3 that runs the tools.
DEBIAN_PYTHON = '/usr/bin/python3'
MYPY_ERROR = re.compile(r'^(?P<path>[^:\s]+\.py):\d+: error: ')


class Tally:
    """The tests of make check: counts, and the failures to list last."""

    def __init__(self) -> None:
        self.passed = self.failed = self.skipped = 0
        self.failures: list[str] = []

    def add(self, step: str, name: str, ok: bool | None,
            why: str = '') -> None:
        if ok is None:
            self.skipped += 1
            print('  SKIP %s: %s %s' % (step, name, why))
        elif ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append('%s: %s: %s' % (step, name, why))
            print('  FAIL %s: %s: %s' % (step, name, why), flush=True)

    def line(self) -> str:
        return '%d passed, %d failed, %d skipped' % (
            self.passed, self.failed, self.skipped)


def step_tools(t: Tally, start: str | None = None, top: str = ROOT) -> None:
    """Run the tools' own unittest suite in-process.

    The suite runs inside this process, under this process's build/.lock
    (GPK_LOCK_HELD); a test that leaves os.environ changed would break the
    steps after it (a nested make test that no longer sees the lock as its
    own waits for it). So the environment is put back afterwards, and a
    change is a failure of the tools step.
    """
    loader = unittest.TestLoader()
    suite = loader.discover(start or os.path.join(ROOT, 'tools', 'tests'),
                            top_level_dir=top)
    buf = io.StringIO()
    before = dict(os.environ)
    # The planted mutants of the audit need the prepared trees: the audit
    # step runs them, after prepare.
    os.environ['GPK_AUDIT_PLANTED'] = 'check'
    try:
        res = unittest.TextTestRunner(stream=buf, verbosity=1).run(suite)
    finally:
        os.environ['GPK_AUDIT_PLANTED'] = 'check'
        leaked = env_changes(before, os.environ, skip=('GPK_AUDIT_PLANTED',))
        os.environ.clear()
        os.environ.update(before)
    bad = {str(c): m for c, m in res.failures + res.errors}
    n_bad = len(res.failures) + len(res.errors)
    for name, msg in bad.items():
        t.add('tools', name, False, msg.strip().splitlines()[-1])
    if leaked:
        n_bad += 1
        t.add('tools', 'environment', False,
              'the unittest suite left os.environ changed: %s' % leaked)
    t.passed += res.testsRun - len(bad) - len(res.skipped)
    t.skipped += len(res.skipped)
    print('tools: %d unittest cases, %d failed, %d skipped'
          % (res.testsRun, n_bad, len(res.skipped)))


def env_changes(before: Mapping[str, str], after: Mapping[str, str],
                skip: Iterable[str] = ()) -> str:
    """'NAME removed, NAME changed, NAME added' for what differs, or ''."""
    out = []
    for k in sorted(set(before) | set(after)):
        if k in skip or before.get(k) == after.get(k):
            continue
        out.append('%s %s' % (k, 'added' if k not in before else
                              'removed' if k not in after else 'changed'))
    return ', '.join(out)


def mypy_python() -> str:
    """A python that can run mypy: this one, else Debian's."""
    if importlib.util.find_spec('mypy') is not None:
        return sys.executable
    return DEBIAN_PYTHON


def step_mypy(t: Tally, files: list[str] | None = None,
              cache: str | None = None) -> None:
    """mypy on the tools (tools/*.py, or @files), as kunit.py's
    run_checks.py runs it on kunit.py: one test per file, failed by an
    error mypy reports in it; one failed test if mypy cannot run. Its
    cache goes to build/mypy-cache (or @cache), never into tools/."""
    files = files or sorted(glob.glob(os.path.join(ROOT, 'tools', '*.py')))
    cache = cache or os.path.join(BUILD, 'mypy-cache')
    cmd = [mypy_python(), '-m', 'mypy', '--ignore-missing-imports',
           '--no-error-summary', '--cache-dir=' + cache] + files
    try:
        proc = run(cmd, cwd=ROOT, check=False)
    except ToolError as e:
        t.add('mypy', 'run', False, '%s (run tools/deps: python3-mypy)' % e)
        return
    errors: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        m = MYPY_ERROR.match(line)
        if m:
            errors.setdefault(os.path.abspath(os.path.join(
                ROOT, m.group('path'))), []).append(line)
    if proc.returncode not in (0, 1) or (proc.returncode and not errors):
        out = proc.stdout.strip().splitlines()
        t.add('mypy', 'run', False, '%s (exit %d; run tools/deps: '
              'python3-mypy)' % (out[-1] if out else 'no output',
                                 proc.returncode))
        return
    for path in files:
        bad = errors.get(os.path.abspath(path), [])
        t.add('mypy', display(path), not bad,
              '%s (%d errors)' % (bad[0], len(bad)) if bad else '')
    print('mypy: %d files, %d errors' % (
        len(files), sum(len(e) for e in errors.values())))


def step_apply(t: Tally, tree: Tree, state: dict,
               patches: list[str]) -> None:
    """git am's check of patches/TREE/ without a checkout: each patch is
    read as git am reads it (git mailinfo: a subject and an author) and
    applied, in order, with git apply --cached (git am's apply, on the
    index alone) to an index of the pristine base; then the tree that
    index holds must be the prepared tree's series head."""
    step = 'apply ' + tree.name
    index = os.path.join(tree.build, 'am-check.index')
    env = dict(os.environ, GIT_INDEX_FILE=index)
    git = ['git', '-C', tree.linux] + prepare_tree.GIT_ID
    tmp = tempfile.mkdtemp(prefix='gpk-am-check-')
    ok = True
    try:
        run(git + ['read-tree', state['base']], env=env, timeout=600)
        for p in patches:
            name = os.path.basename(p)
            msg, diff = os.path.join(tmp, 'msg'), os.path.join(tmp, 'diff')
            with open(p, 'rb') as f:
                info = subprocess.run(['git', 'mailinfo', msg, diff],
                                      stdin=f, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT)
            head = info.stdout.decode(errors='replace')
            missing = [k for k in ('Author', 'Subject')
                       if not re.search(r'^%s: \S' % k, head, re.M)]
            if info.returncode or missing:
                ok = False
                t.add(step, name, False, 'git am cannot read it as a mail '
                      '(%s)' % ('no ' + ', no '.join(missing) if missing
                                else head.strip()[:80]))
                break
            proc = run(git + ['apply', '--cached', '--whitespace=nowarn',
                              diff], env=env, check=False)
            if proc.returncode:
                ok = False
                t.add(step, name, False, 'git apply failed: ' +
                      (proc.stdout.strip().splitlines() or ['?'])[0])
                break
            t.add(step, name, True)
        if ok:
            got = run(git + ['write-tree'], env=env).stdout.strip()
            want = run(git + ['rev-parse', state['series_head'] +
                              '^{tree}']).stdout.strip()
            t.add(step, 'series head', got == want,
                  'the patches give tree %s, the prepared series head has '
                  '%s' % (got[:12], want[:12]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            os.unlink(index)
        except FileNotFoundError:
            pass
    print('%s: %d patches on the pristine base of %s %s (an index, no '
          'checkout)' % (step, len(patches), state['package'],
                         state['version']))


def exceptions() -> dict[str, set[str]]:
    """Files exempted from checkpatch, from docs/checkpatch-exceptions.md."""
    path = os.path.join(ROOT, 'docs', 'checkpatch-exceptions.md')
    out: dict[str, set[str]] = {}
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r'\|\s*`([^`]+)`\s*\|\s*`([A-Z_]+)`\s*\|', line)
            if m:
                out.setdefault(m.group(1), set()).add(m.group(2))
    return out


def kernel_doc_warnings(tree: Tree, path: str) -> list[str]:
    """The warnings of the tree's scripts/kernel-doc on a kernel source:
    every kernel-doc comment must describe what it documents."""
    proc = run(['perl', os.path.join(tree.linux, 'scripts', 'kernel-doc'),
                '-none', path], check=False, cwd=tree.linux)
    return [ln for ln in proc.stdout.splitlines() if 'warning:' in ln or
            'error:' in ln]


def step_checkpatch(t: Tally, tree: Tree, patches: list[str]) -> None:
    step = 'checkpatch ' + tree.name
    exc = exceptions()
    cp = [os.path.join(tree.linux, 'scripts', 'checkpatch.pl'), '--strict',
          '--no-tree', '--show-types', '--terse']
    files = [(p, False) for p in patches]
    for _rel, src in sorted(kernel_sources(tree).items()):
        if src.endswith(('.c', '.h')):
            files.append((src, True))
    for path, is_src in files:
        cmd = cp + (['-f', path] if is_src else [path])
        proc = run(cmd, check=False, cwd=tree.linux)
        rel = display(path)
        allowed = set()
        for pattern, types in exc.items():
            if fnmatch.fnmatchcase(rel, pattern):
                allowed |= types
        issues = [ln for ln in proc.stdout.splitlines()
                  if re.search(r':\s*(ERROR|WARNING|CHECK):', ln)]
        issues = [ln for ln in issues
                  if not any(':%s:' % a in ln for a in allowed)]
        if is_src:
            issues += kernel_doc_warnings(tree, path)
        t.add(step, rel, not issues,
              '%d issues, first: %s' % (len(issues), issues[0])
              if issues else '')
    print('%s: %d files' % (step, len(files)))


def added_lines(tree: Tree, state: dict) -> dict[str, set[int]]:
    """Map tree path -> set of line numbers that the series adds."""
    diff = run(['git', '-C', tree.linux, 'diff', '-U0', state['base'],
                state['head']]).stdout
    out: dict[str, set[int]] = {}
    cur = None
    for line in diff.splitlines():
        if line.startswith('+++ '):
            cur = line[6:] if line.startswith('+++ b/') else None
        m = re.match(r'@@ -\S+ \+(\d+)(?:,(\d+))? @@', line)
        if m and cur:
            start, n = int(m.group(1)), int(m.group(2) or 1)
            out.setdefault(cur, set()).update(range(start, start + n))
    return out


def own_objects(tree: Tree, sources: Iterable[str]) -> list[str]:
    """Objects of kernel sources that are compiled on their own: a .c file
    whose NAME.o its directory's Makefile names (the series', or the
    harness commit's obj- lines); the others are #included."""
    out = []
    for rel in sorted(sources):
        if not rel.endswith('.c'):
            continue
        d, name = os.path.split(rel)
        try:
            with open(os.path.join(tree.linux, d, 'Makefile')) as f:
                text = f.read()
        except OSError:
            continue
        if re.search(r'(?<![\w-])%s\.o\b' % re.escape(name[:-2]), text):
            out.append(rel[:-2] + '.o')
    return out


W1_CC_RE = re.compile(r'^\s+CC\s+(\S+)\.s$')
W1_WARNING_RE = re.compile(r'^(\S+?\.[ch]):(\d+):\d+: warning:')


def w1_output_by_object(output: str) -> dict[str, list[str]]:
    """{object: [lines]} of the output of one make -Otarget of .s
    targets: kbuild's '  CC      dir/name.s' line starts the lines of
    dir/name.o (with --output-sync, a target's lines come together);
    lines before the first one (kbuild's prepare) belong to none."""
    out: dict[str, list[str]] = {}
    cur = None
    for ln in output.splitlines():
        m = W1_CC_RE.match(ln)
        if m:
            cur = m.group(1) + '.o'
            out.setdefault(cur, [])
        elif cur is not None:
            out[cur].append(ln)
    return out


def w1_new_warnings(lines: list[str], linux: str, kunit_files: set[str],
                    added: dict[str, set[int]]) -> list[str]:
    """The warnings among lines that are the project's: on a line that the
    series adds, or anywhere in a kernel source of kunit/. A path is as
    the compiler prints it: absolute, or relative to the tree."""
    out = []
    for ln in lines:
        m = W1_WARNING_RE.match(ln)
        if not m:
            continue
        path = m.group(1)
        path = os.path.relpath(path if path.startswith('/') else
                               os.path.join(linux, path), linux)
        if path in kunit_files or int(m.group(2)) in added.get(path, ()):
            out.append(ln)
    return out


def step_w1(t: Tally, tree: Tree, state: dict) -> None:
    """W=1 of the objects the series and the kernel sources touch,
    compiled to assembly (NAME.s) in the kunit build directory, in one
    make: the compiler's warnings are those of the object, and NAME.o,
    which the other steps link, is left as it is. The .s files go first,
    so that each is compiled again."""
    step = 'w1 ' + tree.name
    added = added_lines(tree, state)
    kunit_files = set(kernel_sources(tree))
    objs = sorted({p[:-2] + '.o' for p in added if p.endswith('.c')} |
                  set(own_objects(tree, kunit_files)))
    cfg = os.path.join(tree.kunit_build, '.config')
    if not os.path.exists(cfg):
        t.add(step, 'config', False, 'no %s: run make test TREE=%s first'
              % (display(cfg), tree.name))
        return
    targets = [o[:-2] + '.s' for o in objs]
    for target in targets:
        try:
            os.unlink(os.path.join(tree.kunit_build, target))
        except FileNotFoundError:
            pass
    proc = run(['make', '-C', tree.linux, 'ARCH=x86_64',
                'O=' + tree.kunit_build, '-j%d' % (os.cpu_count() or 2),
                '--output-sync=target', 'W=1'] + targets,
               check=False, timeout=3600)
    by_obj = w1_output_by_object(proc.stdout)
    for obj in objs:
        lines = by_obj.get(obj)
        built = os.path.exists(os.path.join(tree.kunit_build,
                                            obj[:-2] + '.s'))
        if lines is None or not built:
            err = [ln for ln in (lines or proc.stdout.splitlines())
                   if 'error' in ln]
            t.add(step, obj, False, 'build failed: %s' % (err[:1] or '?'))
            continue
        new = w1_new_warnings(lines, tree.linux, kunit_files, added)
        t.add(step, obj, not new, '%d new warnings, first: %s'
              % (len(new), new[0]) if new else '')
    print('%s: %d objects compiled with W=1' % (step, len(objs)))


def step_matrix(t: Tally, tree: Tree) -> None:
    step = 'matrix ' + tree.name
    path = os.path.join(ROOT, 'tools', 'coverage_matrix.py')
    proc = run([sys.executable, path, '--tree', tree.name], check=False)
    lines = proc.stdout.strip().splitlines()
    ok = proc.returncode == 0
    for ln in lines[:-1][:20]:
        print('  ' + ln)
    t.add(step, 'docs/coverage-matrix.md', ok,
          lines[-1] if not ok and lines else '')
    print('%s: %s' % (step, (lines or ['ok'])[-1]))
