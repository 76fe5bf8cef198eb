#!/usr/bin/env python3
"""The project's test command (`make check`; .ci/run runs it).

Steps, each counted as tests in the closing line, in this order but for
debug (see there). `tools` runs once; the others run for each tree (--tree, repeatable; default every tree of
kunit/trees, in order), and every line they print names the tree:
  tools     the tools' own unittest suite (tools/tests)
  apply     patches/TREE/ applies as git am applies it to the pristine
            tree (git mailinfo, then git apply --cached on an index of the
            base: no checkout), one test per patch, and one that the result
            is the prepared tree's series head
  checkpatch  the tree's scripts/checkpatch.pl --strict on every patch of
            patches/TREE/ and every C source of the tree's kernel sources,
            harness included, and its scripts/kernel-doc on those sources
            (one test per file; checkpatch exceptions need an entry in
            docs/checkpatch-exceptions.md, kernel-doc has none)
  kunit     `make test TREE=TREE` (tools/run_suite.py): every KUnit case
            in QEMU
  reviewer  the series as a reviewer runs it (tools/reviewer.py), on the
            make test kernel, which is built from the series'
            mm/tests/.kunitconfig plus the project's additions: booted as
            a plain kunit.py boots it (kunit.py exec with its own x86_64
            QEMU configuration: one CPU, 1 GiB, no argument, no disk),
            no case fails or crashes and every skip says what it needs,
            asking only for arguments of the documented run (one test);
            and make test, the documented run with the harness, skipped
            nothing (one test). make reviewer does the same from a
            pristine tree with the exported series, in two cold builds
            that do not fit CI's budget
  w1        a W=1 compile of the objects that the series and the kernel
            sources touch (to assembly, in the kunit build directory, in
            one make), with no warning on a line they add (one test per
            object)
  matrix    the tree's column of docs/coverage-matrix.md names exactly the
            KUnit cases of the tree
  mutants   every entry of kunit/mutants/TREE/catalogue still applies
            to the tree (one test: `make mutants` would count one that does
            not as a failure), and the mutants of kunit/mutants/TREE/ci-subset
            are all killed, run in one mutant schema kernel (tools/mutate.py
            --mode schema; `make mutants` runs the whole catalogue, its
            header mutants each built alone); a tree without a ci-subset
            is skipped with one line, not counted
  genmut    the CI sample of the generated mutants (`tools/genmut.py run
            --sample`: 20 mutants of the pin core's .c files, chosen by the
            seed SAMPLE_SEED of tools/genmut.py; `make mutants-generated`
            runs them all): one test per mutant, passed if killed or
            declared equivalent, skipped if it does not build (dropped),
            failed if it survives or does not apply; a tree without
            kunit/mutants/TREE/generated-equivalent is skipped with one
            line, not counted
  debug     `make test-debug TREE=TREE`: every KUnit case again, on the
            KASAN / lockdep / kmemleak / DEBUG_PAGEALLOC kernel (one test
            per case). It starts right after the kunit step and runs in
            the background (niced) beside the steps after it: its kernel
            builds from build/TREE/linux-debug, a checkout of the tree that
            the mutant steps do not touch; its results come after audit
  coverage  `make coverage TREE=TREE`: gcov of the pin core; one test,
            failed by an unexecuted line that docs/TREE/coverage.md does
            not explain, or by a tool error
  audit     tools/audit.py: one test per planted caller mutant of
            tools/cocci/planted/TREE/ (each must be flagged as a
            mismatch), and one for `make audit TREE=TREE` on the whole
            tree (failed by an unresolved site without a current verdict
            in docs/TREE/audit-review.md, or a mismatch that is no known
            bug); the tools step leaves the planted mutants to this step

After the trees, results/junit.xml and results/summary.json combine the
kunit step of every tree. The last line is 'N passed, N failed,
N skipped'; it is also written to results/check-summary.txt. Exit status
0 only if nothing failed.
"""
import argparse
import fnmatch
import hashlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktap_report  # noqa: E402
import prepare_tree  # noqa: E402
from _common import (KUNIT, KUNITCONFIG, RESULTS, ROOT,  # noqa: E402
                     BuildLock, ToolError, add_tree_argument, display,
                     interrupt_on_sigterm, kernel_sources, read_names, run,
                     selected_trees)

TOOL = 'check'
STEPS = ['tools', 'apply', 'checkpatch', 'kunit', 'reviewer', 'w1', 'matrix',
         'mutants', 'genmut', 'debug', 'coverage', 'audit']
COUNTS_RE = re.compile(r'(\d+) passed, (\d+) failed, (\d+) skipped$')


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []

    def add(self, step, name, ok, why=''):
        if ok is None:
            self.skipped += 1
            print('  SKIP %s: %s %s' % (step, name, why))
        elif ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append('%s: %s: %s' % (step, name, why))
            print('  FAIL %s: %s: %s' % (step, name, why), flush=True)

    def line(self):
        return '%d passed, %d failed, %d skipped' % (
            self.passed, self.failed, self.skipped)


def step_tools(t, start=None, top=ROOT):
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


def env_changes(before, after, skip=()):
    """'NAME removed, NAME changed, NAME added' for what differs, or ''."""
    out = []
    for k in sorted(set(before) | set(after)):
        if k in skip or before.get(k) == after.get(k):
            continue
        out.append('%s %s' % (k, 'added' if k not in before else
                              'removed' if k not in after else 'changed'))
    return ', '.join(out)


def step_apply(t, tree, state, patches):
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


def exceptions():
    """Files exempted from checkpatch, from docs/checkpatch-exceptions.md."""
    path = os.path.join(ROOT, 'docs', 'checkpatch-exceptions.md')
    out = {}
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r'\|\s*`([^`]+)`\s*\|\s*`([A-Z_]+)`\s*\|', line)
            if m:
                out.setdefault(m.group(1), set()).add(m.group(2))
    return out


def kernel_doc_warnings(tree, path):
    """The warnings of the tree's scripts/kernel-doc on a kernel source:
    every kernel-doc comment must describe what it documents."""
    proc = run(['perl', os.path.join(tree.linux, 'scripts', 'kernel-doc'),
                '-none', path], check=False, cwd=tree.linux)
    return [ln for ln in proc.stdout.splitlines() if 'warning:' in ln or
            'error:' in ln]


def step_checkpatch(t, tree, patches):
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


def added_lines(tree, state):
    """Map tree path -> set of line numbers that the series adds."""
    diff = run(['git', '-C', tree.linux, 'diff', '-U0', state['base'],
                state['head']]).stdout
    out, cur = {}, None
    for line in diff.splitlines():
        if line.startswith('+++ '):
            cur = line[6:] if line.startswith('+++ b/') else None
        m = re.match(r'@@ -\S+ \+(\d+)(?:,(\d+))? @@', line)
        if m and cur:
            start, n = int(m.group(1)), int(m.group(2) or 1)
            out.setdefault(cur, set()).update(range(start, start + n))
    return out


def own_objects(tree, sources):
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


def w1_output_by_object(output):
    """{object: [lines]} of the output of one make -Otarget of .s
    targets: kbuild's '  CC      dir/name.s' line starts the lines of
    dir/name.o (with --output-sync, a target's lines come together);
    lines before the first one (kbuild's prepare) belong to none."""
    out, cur = {}, None
    for ln in output.splitlines():
        m = W1_CC_RE.match(ln)
        if m:
            cur = m.group(1) + '.o'
            out.setdefault(cur, [])
        elif cur is not None:
            out[cur].append(ln)
    return out


def w1_new_warnings(lines, linux, kunit_files, added):
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


def step_w1(t, tree, state):
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


def step_matrix(t, tree):
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


def mutants_key(tree, state, paths):
    """Hash of everything that can change a mutant's verdict on a tree;
    paths: the mutants (or what makes them) and their other inputs."""
    h = hashlib.sha256(('%s\0%s' % (tree.name, state['head'])).encode())
    files = [src for _rel, src in sorted(kernel_sources(tree).items())]
    files += paths + [KUNITCONFIG] + \
        [f for f in (tree.expected_splats,) if f] + \
        [os.path.join(KUNIT, f) for f in ('qemu_x86_64.py', 'expected-splats',
                                          'suites')] + \
        [os.path.join(ROOT, 'tools', f) for f in (
            'mutate.py', 'run_suite.py', 'ktap_report.py', '_common.py',
            '_testenv.py')]
    for f in files:
        h.update(display(f).encode())
        with open(f, 'rb') as fh:
            h.update(fh.read())
    return h.hexdigest()


# The modules of the mutation engine and of its C scanner: a change of
# one of them can change any mutant's verdict.
MUTATION_ENGINE = ('_mutation.py', '_schemata.py', '_cscan.py')


def step_mutants(t, tree, state):
    """Run the CI subset of the tree's mutants; each mutant is a test.

    The verdict is cached (build/TREE/mutants-ci.cache) under a hash of
    the series head, the kernel sources, the harness and the mutants:
    with nothing changed, nothing is rebuilt.
    """
    step = 'mutants ' + tree.name
    subset = os.path.join(tree.mutants, 'ci-subset')
    if not os.path.isfile(subset):
        print('%s: skipped: no %s' % (step, display(subset)))
        return
    import _mutation
    import mutate
    cat = mutate.catalogue_path(tree)
    names = read_names(subset)
    try:
        mutants = mutate.load_catalogue(cat)
    except ToolError as e:
        t.add(step, 'catalogue', False, str(e))
        return
    known = {m['name'] for m in mutants}
    stale = [m['name'] for m in mutants
             if _mutation.apply_error(tree.linux, m['text'],
                                      check_only=True)]
    t.add(step, 'catalogue applies', not stale,
          '%d of %d entries of %s no longer apply to the tree: %s'
          % (len(stale), len(mutants), display(cat), ', '.join(stale[:5])))
    missing = [n for n in names if n not in known]
    if missing:
        t.add(step, 'ci-subset', False, '%s names %s, which %s does not '
              'hold' % (display(subset), missing[0], display(cat)))
        return
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'mutate.py'),
           '--tree', tree.name, '--mode', 'schema', '--results',
           os.path.join(tree.results, 'mutants-ci')] + names
    paths = [cat, subset] + [os.path.join(ROOT, 'tools', f)
                             for f in MUTATION_ENGINE]
    cached_mutant_run(t, step, tree, mutants_key(tree, state, paths),
                      'mutants-ci.cache', cmd, 'mutate',
                      'CI subset of %d' % len(names))


def step_genmut(t, tree, state):
    """Run the CI sample of the tree's generated mutants (tools/genmut.py
    run --sample); each mutant is a test. Cached like step_mutants(),
    under the generator, the pin core and the equivalents file too. A
    tree without kunit/mutants/TREE/generated-equivalent (the file that
    takes the survivors of its full run into account) is skipped with one
    line, not counted."""
    import genmut
    step = 'genmut ' + tree.name
    eq = genmut.equivalents_path(tree)
    if not os.path.isfile(eq):
        print('%s: skipped: no %s' % (step, display(eq)))
        return
    inputs = [os.path.join(ROOT, 'tools', f) for f in
              ('genmut.py', '_generator.py') + MUTATION_ENGINE] + \
        [tree.pin_core, eq]
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'genmut.py'), 'run',
           '--sample', '--tree', tree.name]
    cached_mutant_run(t, step, tree, mutants_key(tree, state, inputs),
                      'genmut-ci.cache', cmd, 'genmut',
                      'CI sample of %d' % genmut.SAMPLE_COUNT)


def cached_mutant_run(t, step, tree, key, cache_name, cmd, tool, what):
    """Run a mutant tool (mutate.py, genmut.py) whose last line is
    'N passed, N failed, N skipped' and add its counts, unless the verdict
    is cached in build/TREE/<cache_name> under key (a clean earlier run
    of the same inputs). Only the verdicts that fail and the tool's own
    lines about the tree (errors, baseline failures) are shown."""
    cache = os.path.join(tree.build, cache_name)
    try:
        with open(cache) as f:
            cached_key, cached_line = f.read().split('\n')[:2]
    except (OSError, ValueError):
        cached_key = cached_line = ''
    if cached_key == key:
        m = re.match(r'(\d+) passed, 0 failed, (\d+) skipped$',
                     cached_line)
        if m:
            t.passed += int(m.group(1))
            t.skipped += int(m.group(2))
            print('%s: %s (%s, unchanged since the last run: not rerun)'
                  % (step, cached_line, what))
            return
    proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    # The verdicts that fail, and mutate's own lines about the tree
    # (errors, baseline failures), not its progress.
    own = re.compile(r'^%s: %s: (?!\[\d+/\d+\] |baseline run |'
                     r'\d+ passed, )' % (tool, re.escape(tree.name)))
    for ln in lines:
        if 'SURVIVED' in ln or 'NOAPPLY' in ln or 'NOCOMPILE' in ln or \
           own.match(ln):
            print(ln)
    m = COUNTS_RE.match(lines[-1] if lines else '')
    if not m:
        t.add(step, 'run', False, (lines[-1] if lines else 'no output'))
        return
    t.passed += int(m.group(1))
    t.failed += int(m.group(2))
    t.skipped += int(m.group(3))
    if int(m.group(2)):
        t.failures.append('%s: %s of the %s not killed'
                          % (step, m.group(2), what))
    print('%s: %s (%s)' % (step, lines[-1], what))
    if not int(m.group(2)) and proc.returncode == 0:
        with open(cache, 'w') as f:
            f.write('%s\n%s\n' % (key, lines[-1]))


def run_counted(t, step, what, cmd):
    """Run a tool whose last line is 'N passed, N failed, N skipped' and
    add its counts (add_counted())."""
    proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    add_counted(t, step, what, proc.returncode, proc.stdout)


def add_counted(t, step, what, returncode, output):
    """Print the output of a tool whose last line is 'N passed, N failed,
    N skipped' and add its counts; a tool that does not report them, or
    exits non-zero with nothing failed, is one failure of its own."""
    lines = output.rstrip('\n').splitlines()
    for ln in lines[:-1]:
        print(ln)
    m = re.match(r'(\d+) passed, (\d+) failed, (\d+) skipped$',
                 lines[-1] if lines else '')
    if not m:
        if lines:
            print(lines[-1])
        t.add(step, 'run', False, '%s did not report counts' % what)
        return
    t.passed += int(m.group(1))
    t.failed += int(m.group(2))
    t.skipped += int(m.group(3))
    if int(m.group(2)):
        t.failures.append('%s: %s failed' % (step, m.group(2)))
    if returncode and not int(m.group(2)):
        t.add(step, 'run', False, '%s exited %d' % (what, returncode))
    print('%s: %s' % (step, lines[-1]))


def step_kunit(t, tree, args):
    cmd = [sys.executable, os.path.join(ROOT, 'tools', 'run_suite.py'),
           '--tree', tree.name]
    if args.filter:
        cmd.append(args.filter)
    run_counted(t, 'kunit ' + tree.name, 'make test TREE=%s' % tree.name,
                cmd)


def step_reviewer(t, tree):
    """The reviewer's two outcomes on the make test kernel: a bare boot
    (results/TREE/bare/), and make test's own skips."""
    import json
    import reviewer
    import _testenv
    step = 'reviewer ' + tree.name
    out = os.path.join(tree.results, 'bare')
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, 'kunit.log')
    test_log = os.path.join(tree.kunit_build, 'test.log')
    if os.path.exists(test_log):
        os.unlink(test_log)
    proc = run([sys.executable, 'tools/testing/kunit/kunit.py', 'exec',
                '--arch=x86_64', '--build_dir=' + tree.kunit_build,
                '--timeout=300'], cwd=tree.linux, check=False, timeout=420)
    with open(os.path.join(out, 'kunit.out'), 'w') as f:
        f.write(proc.stdout or '')
    if os.path.exists(test_log):
        shutil.copyfile(test_log, log)
    else:
        open(log, 'w').close()
    documented = _testenv.read_documented(tree.linux)
    outcome = reviewer.evaluate(
        reviewer.parse_console(log, (reviewer.SPLATS, tree.expected_splats)),
        documented, harness=_testenv.HARNESS_KERNEL_ARGS)
    with open(os.path.join(out, 'outcome.json'), 'w') as f:
        json.dump(outcome, f, indent=1, sort_keys=True)
    t.add(step, 'bare boot', not outcome['problems'],
          '; '.join(outcome['problems'][:3]))
    print('%s: bare boot: %d passed, %d skipped, %d failed%s'
          % (step, outcome['passed'], outcome['skipped'], outcome['failed'],
             ', crashed' if outcome['crashed'] else ''))
    try:
        with open(os.path.join(tree.results, 'summary.json')) as f:
            skipped = json.load(f)['skipped']
    except (OSError, ValueError, KeyError):
        skipped = None
    t.add(step, 'documented run', skipped == 0,
          'make test skipped %s cases (results/%s/summary.json)'
          % (skipped, tree.name))


class Background:
    """A command that runs beside the steps that follow it, niced, its
    output kept in a file until finish() collects it."""

    def __init__(self, cmd):
        self.log = tempfile.TemporaryFile(mode='w+', errors='replace')
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(['nice', '-n', '10'] + cmd, text=True,
                                     stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def finish(self):
        """Wait for it; return (exit status, output, seconds it ran)."""
        rc = self.proc.wait()
        self.log.seek(0)
        out = self.log.read()
        self.log.close()
        return rc, out, time.monotonic() - self.t0

    def stop(self):
        """Kill it and what it started, if it still runs."""
        if self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        self.log.close()


def start_debug(tree, args):
    """make test-debug TREE=TREE in the background: the debug kernel
    builds from its own checkout of the tree (make test-debug's
    --checkout) while the mutant steps change build/TREE/linux; the tree
    is prepared already (NO_PREPARE=1)."""
    cmd = ['make', '-s', '-C', ROOT, 'test-debug', 'TREE=' + tree.name,
           'NO_PREPARE=1']
    if args.filter:
        cmd.append('FILTER=' + args.filter)
    return Background(cmd)


def step_debug(t, tree, job):
    """The debug kernel's results: the suites on the KASAN/lockdep/
    kmemleak kernel that start_debug() started."""
    rc, out, seconds = job.finish()
    add_counted(t, 'debug ' + tree.name, 'make test-debug TREE=%s'
                % tree.name, rc, out)
    print('debug %s: built and run in the background in %.0fs'
          % (tree.name, seconds))


def step_coverage(t, tree):
    """make coverage: gcov of the pin core. Its per-function goal counts
    are information (a documented miss passes the step); the step fails
    on an undocumented miss or a tool error (non-zero exit)."""
    step = 'coverage ' + tree.name
    proc = subprocess.run([sys.executable,
                           os.path.join(ROOT, 'tools', 'coverage.py'),
                           '--tree', tree.name],
                          text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    total = [ln for ln in lines if ln.startswith('total ')]
    errors = [ln for ln in lines if ln.startswith('coverage: ') and
              ': report ' not in ln]
    why = (errors or lines[-1:] or ['no output'])[0]
    t.add(step, 'pin core', proc.returncode == 0,
          'exit %d: %s' % (proc.returncode, why))
    print('%s: lines, branches hit: %s; functions meeting the goal: '
          '%s (exit %d)' % (step, ' '.join(total[0].split()[1:]) if total
                            else '?', lines[-1] if lines else '?',
                            proc.returncode))


def step_audit(t, tree):
    """tools/audit.py: the planted mutants (one test each), then the
    whole tree (one test)."""
    step = 'audit ' + tree.name
    audit = os.path.join(ROOT, 'tools', 'audit.py')
    run_counted(t, step + ' planted', 'audit.py --planted',
                [sys.executable, audit, '--tree', tree.name, '--planted'])
    proc = subprocess.run([sys.executable, audit, '--tree', tree.name],
                          text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    lines = proc.stdout.rstrip('\n').splitlines()
    summary = [ln for ln in lines if ln.startswith('audit: %s: ' % tree.name)
               and ' sites: ' in ln]
    for ln in lines[:-1][:20]:
        if ln not in summary:
            print('  ' + ln)
    t.add(step, 'whole tree', proc.returncode == 0,
          (summary or lines[-1:] or ['no output'])[-1])
    print('%s: %s' % (step, (summary or lines[-1:] or ['?'])[-1]))


def check_tree(t, tree, args):
    """Every step but tools on one tree. Return None if the kunit step was
    skipped, else the error that kept the tree from running ('' if
    none)."""
    skip = set(args.skip)
    print('check: tree %s (%s)' % (tree.name, tree.package), flush=True)
    t0 = time.monotonic()
    try:
        state = prepare_tree.prepare(tree, quiet=True)
    except ToolError as e:
        t.add('check ' + tree.name, 'prepare', False, str(e))
        return None if 'kunit' in skip else str(e)
    finally:
        step_time(tree.name, 'prepare', t0)
    patches = prepare_tree.series_files(tree)
    jobs = {}
    steps = [('apply', lambda: step_apply(t, tree, state, patches)),
             ('checkpatch', lambda: step_checkpatch(t, tree, patches)),
             ('kunit', lambda: step_kunit(t, tree, args)),
             ('reviewer', lambda: step_reviewer(t, tree)),
             # Two cores: the debug kernel's cold build takes what the
             # mostly single-threaded steps below leave.
             ('debug start', lambda: jobs.update(
                 debug=start_debug(tree, args))),
             ('w1', lambda: step_w1(t, tree, state)),
             ('matrix', lambda: step_matrix(t, tree)),
             ('mutants', lambda: step_mutants(t, tree, state)),
             ('genmut', lambda: step_genmut(t, tree, state)),
             ('coverage', lambda: step_coverage(t, tree)),
             ('audit', lambda: step_audit(t, tree)),
             ('debug', lambda: step_debug(t, tree, jobs.pop('debug')))]
    try:
        for name, fn in steps:
            if name.split()[0] in skip:
                continue
            t0 = time.monotonic()
            try:
                fn()
            except ToolError as e:
                t.add('%s %s' % (name, tree.name), 'run', False, str(e))
            if name != 'debug start':
                step_time(tree.name, name, t0)
    finally:
        for job in jobs.values():
            job.stop()
    return None if 'kunit' in skip else ''


def step_time(tree, step, t0):
    """Say how long a step took, so that CI's time can be read per step
    (one line; never counted as a test)."""
    print('check: %s %s took %.0fs' % (tree or '-', step,
                                       time.monotonic() - t0), flush=True)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--skip', action='append', default=[], choices=STEPS,
                    help='leave out a step (repeatable)')
    add_tree_argument(ap)
    ap.add_argument('--filter', help='kunit.py filter glob for the kunit '
                    'and debug steps')
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    interrupt_on_sigterm()
    t = Tally()
    t0 = time.monotonic()
    ran = []
    try:
        with BuildLock(TOOL):
            if 'tools' not in args.skip:
                t1 = time.monotonic()
                step_tools(t)
                step_time(None, 'tools', t1)
            for tree in trees:
                error = check_tree(t, tree, args)
                if error is not None:
                    ran.append((tree.name, tree.results, error or None))
    except ToolError as e:
        t.add('check', 'setup', False, str(e))
        print('%s: %s' % (TOOL, e), file=sys.stderr)
    except KeyboardInterrupt:
        t.add('check', 'interrupted', False, 'interrupted')
    if ran:
        try:
            ktap_report.write_combined(ran, RESULTS)
        except OSError as e:
            t.add('check', 'combined results', False, str(e))
    print('check: %.0fs' % (time.monotonic() - t0))
    for f in t.failures:
        print('FAILED %s' % f)
    try:
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, 'check-summary.txt'), 'w') as f:
            f.write(t.line() + '\n')
    except OSError:
        pass
    print(t.line())
    return 1 if t.failed else 0


if __name__ == '__main__':
    sys.exit(main())
