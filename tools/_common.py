"""Shared helpers of the gup-pin-kunit tools (standard library only).

Every tool reports bad input as one line on stderr, prefixed with its name,
and exits non-zero; nothing here prints a traceback for expected failures.

The trees: kunit/trees lists every kernel tree the project serves
(`TREE PACKAGE` a line) and is the one place that does; read_trees() and
select_trees() read it, Tree gives every per-tree path (build/TREE/...,
results/TREE/, patches/TREE/, kunit/TREE/, ...), and kernel_sources() is
the one rule saying which files under kunit/ go into a kernel tree.
read_pin_core() reads a tree's pin core (kunit/TREE/pin-core): `make
coverage` measures those functions, `make mutants-generated` mutates them
(tools/_cscan.py, the C scanner, finds their lines in the tree's source).
"""
import argparse
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import NoReturn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get('GPK_BUILD', os.path.join(ROOT, 'build'))
RESULTS = os.environ.get('GPK_RESULTS', os.path.join(ROOT, 'results'))
KUNIT = os.environ.get('GPK_KUNIT', os.path.join(ROOT, 'kunit'))
PATCHES = os.environ.get('GPK_PATCHES', os.path.join(ROOT, 'patches'))
DOCS = os.path.join(ROOT, 'docs')
# Shared harness configuration (one copy for every tree).
KUNITCONFIG = os.path.join(ROOT, 'kunitconfig')
STATE_NAME = 'gup-pin-kunit.json'
# The kunit/ subdirectories whose files go into every tree; kunit/TREE/
# (subdirectories only) goes into that tree.
COMMON_DIR = 'common'
HARNESS_DIR = 'harness'
# Dot files that are kernel sources: the KUnit configuration of a test
# directory (mm/tests/.kunitconfig); every other dot file is skipped.
KERNEL_DOT_FILES = ('.kunitconfig',)
TREE_NAME_RE = re.compile(r'^\d+\.\d+$')
# The build directories of the single-tree layout (build/linux and these
# next to it), moved into build/TREE/ by migrate_single_tree_build().
OLD_BUILD_DIRS = ('kunit-x86_64', 'kunit-debug-x86_64', 'gcov-x86_64',
                  'w1-x86_64')


class ToolError(Exception):
    """An expected failure: reported as one line, exit status 1."""
    status = 1


class UnknownTree(ToolError):
    """A TREE that kunit/trees does not list: exit status 2."""
    status = 2


def die(tool: str, msg: str, status: int = 1) -> NoReturn:
    """Print one line 'tool: msg' on stderr and exit."""
    print('%s: %s' % (tool, msg), file=sys.stderr)
    sys.exit(status)


def display(path: str) -> str:
    """A path as messages show it: relative to the repository when inside
    it (commands in messages are meant to be run from there), else
    absolute."""
    path = os.path.abspath(path)
    rel = os.path.relpath(path, ROOT)
    return path if rel == '..' or rel.startswith('..' + os.sep) else rel


def interrupt_on_sigterm() -> None:
    """Take SIGTERM (a CI job's timeout, kill) like Ctrl-C: raise
    KeyboardInterrupt, so that the cleanup that Ctrl-C gets (stop the
    build, restore a mutated tree, release the lock) runs for it too."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)


def run(cmd: Sequence[str], cwd: str | None = None, check: bool = True,
        capture: bool = True, timeout: float | None = None,
        env: Mapping[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """Run a command; return CompletedProcess. Raise ToolError on failure."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, text=True, timeout=timeout,
                              env=env, errors='backslashreplace',
                              stdout=subprocess.PIPE if capture else None,
                              stderr=subprocess.STDOUT if capture else None)
    except FileNotFoundError:
        raise ToolError('command not found: %s' % cmd[0])
    except subprocess.TimeoutExpired:
        raise ToolError('timed out after %ss: %s' % (timeout, ' '.join(cmd)))
    if check and proc.returncode != 0:
        out = (proc.stdout or '').strip().splitlines()
        last = out[-1] if out else 'no output'
        raise ToolError('%s failed (exit %d): %s'
                        % (' '.join(cmd[:3]), proc.returncode, last))
    return proc


# --------------------------------------------------------------------------
# "One name a line, # comments" files
# --------------------------------------------------------------------------

def read_list(path: str, missing_ok: bool = False) -> list[tuple[int, str]]:
    """The entries of a list file: one a line, '#' starts a comment, blank
    lines are ignored; each entry stripped. kunit/trees, kunit/suites,
    patches/TREE/series, kunit/mutants/TREE/ci-subset, kunit/TREE/pin-core
    and kunit/expected-splats are such files.

    Return [(line number, entry)]. A missing file is [] with missing_ok,
    else, like any unreadable file, a ToolError.
    """
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        if missing_ok:
            return []
        raise ToolError('cannot read %s: no such file' % display(path))
    except OSError as e:
        raise ToolError('cannot read %s: %s' % (display(path), e.strerror))
    out = []
    for n, line in enumerate(lines, 1):
        entry = line.split('#', 1)[0].strip()
        if entry:
            out.append((n, entry))
    return out


def read_names(path: str, missing_ok: bool = False) -> list[str]:
    """The entries of a list file, without their line numbers."""
    return [entry for _n, entry in read_list(path, missing_ok)]


# --------------------------------------------------------------------------
# The trees
# --------------------------------------------------------------------------

class Tree:
    """One kernel tree of kunit/trees and every path that belongs to it.

    The paths are computed when read, from the module's BUILD, RESULTS,
    KUNIT and PATCHES, so that tests may point those elsewhere.
    """

    def __init__(self, name: str, package: str) -> None:
        self.name = name
        self.package = package

    def __repr__(self):
        return 'Tree(%r, %r)' % (self.name, self.package)

    def __eq__(self, other):
        return isinstance(other, Tree) and \
            (self.name, self.package) == (other.name, other.package)

    def __hash__(self):
        return hash(self.name)

    # build/TREE/
    @property
    def build(self) -> str:
        return os.path.join(BUILD, self.name)

    @property
    def linux(self) -> str:
        """The prepared tree: the tarball as a git repository."""
        return os.path.join(self.build, 'linux')

    @property
    def state(self) -> str:
        return os.path.join(self.linux, '.git', STATE_NAME)

    @property
    def kunit_build(self) -> str:
        return os.path.join(self.build, 'kunit-x86_64')

    @property
    def debug_build(self) -> str:
        return os.path.join(self.build, 'kunit-debug-x86_64')

    # results/TREE/
    @property
    def results(self) -> str:
        return os.path.join(RESULTS, self.name)

    # inputs
    @property
    def patches(self) -> str:
        """patches/TREE/: series, *.patch, cover-letter.txt."""
        return os.path.join(PATCHES, self.name)

    @property
    def config_dir(self) -> str:
        """kunit/TREE/: its files are per-tree configuration, its
        subdirectories kernel sources of this tree only."""
        return os.path.join(KUNIT, self.name)

    @property
    def expected_splats(self) -> str | None:
        """kunit/TREE/expected-splats if it exists, else None: the console
        reports that only this tree's cases provoke, on top of the
        shared kunit/expected-splats."""
        path = os.path.join(self.config_dir, 'expected-splats')
        return path if os.path.isfile(path) else None

    @property
    def pin_core(self) -> str:
        return os.path.join(self.config_dir, 'pin-core')

    @property
    def mutants(self) -> str:
        return os.path.join(KUNIT, 'mutants', self.name)

    @property
    def docs(self) -> str:
        return os.path.join(DOCS, self.name)

    def expand(self, pattern: str) -> str:
        """Replace {tree}, {build} (build/TREE) and {results} (results/,
        not per tree) in a path given on a command line."""
        return os.path.abspath(pattern.replace('{tree}', self.name)
                               .replace('{build}', self.build)
                               .replace('{results}', RESULTS))


def trees_file() -> str:
    return os.path.join(KUNIT, 'trees')


def read_trees(path: str | None = None) -> list[Tree]:
    """The trees of kunit/trees, in file order: [Tree]."""
    path = path or trees_file()
    out: list[Tree] = []
    for n, entry in read_list(path):
        fields = entry.split()
        where = '%s:%d' % (display(path), n)
        if len(fields) != 2:
            raise ToolError('%s: expected "TREE PACKAGE", got %r'
                            % (where, entry))
        name, package = fields
        if not TREE_NAME_RE.match(name):
            raise ToolError('%s: tree %r is not MAJOR.MINOR' % (where, name))
        if any(t.name == name for t in out):
            raise ToolError('%s: tree %s listed twice' % (where, name))
        out.append(Tree(name, package))
    if not out:
        raise ToolError('%s lists no tree' % display(path))
    return out


def select_trees(values: Iterable[str] | None,
                 path: str | None = None) -> list[Tree]:
    """The trees that --tree values name, in kunit/trees order.

    values: None or a list of strings, each one tree, 'all', or several
    separated by commas or blanks (TREE='6.1 6.12'). None, [] and 'all'
    mean every tree. An unknown name is an UnknownTree (exit status 2).
    """
    known = read_trees(path)
    names = []
    for value in values or []:
        names += [v for v in re.split(r'[\s,]+', value) if v]
    if not names or 'all' in names:
        return known
    by_name = {t.name: t for t in known}
    for name in names:
        if name not in by_name:
            raise UnknownTree("unknown tree '%s'; known trees: %s"
                              % (name, ', '.join(t.name for t in known)))
    return [t for t in known if t.name in names]


def add_tree_argument(parser: argparse.ArgumentParser) -> None:
    """The --tree option, the same in every tool."""
    parser.add_argument('--tree', action='append', metavar='TREE',
                        help='a tree of kunit/trees (repeatable; "all" or '
                        'none: every tree, in file order)')


def selected_trees(tool: str, values: Iterable[str] | None) -> list[Tree]:
    """select_trees() for a tool's main(): a bad kunit/trees or an unknown
    tree is one line on stderr and the exit."""
    try:
        return select_trees(values)
    except ToolError as e:
        die(tool, str(e), e.status)


# --------------------------------------------------------------------------
# The pin core: kunit/TREE/pin-core
# --------------------------------------------------------------------------

def read_pin_core(tree: Tree) -> list[tuple[str, str]]:
    """[(function, source file relative to the kernel tree)] of the tree's
    pin core, in report order, from kunit/TREE/pin-core."""
    path = tree.pin_core
    if not os.path.isfile(path):
        raise ToolError('tree %s has no %s (one "function path/in/tree.c" '
                        'a line): no pin core to measure'
                        % (tree.name, display(path)))
    out = []
    for n, entry in read_list(path):
        fields = entry.split()
        if len(fields) != 2 or not re.match(r'^[A-Za-z_]\w*$', fields[0]):
            raise ToolError('%s:%d: expected "function path/in/tree.c", '
                            'got %r' % (display(path), n, entry))
        out.append((fields[0], fields[1]))
    if not out:
        raise ToolError('%s lists no function' % display(path))
    return out


# --------------------------------------------------------------------------
# Kernel sources under kunit/
# --------------------------------------------------------------------------

def _walk_files(top, skip_top_files):
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs
                         if d != '__pycache__' and not d.startswith('.'))
        if skip_top_files and dirpath == top:
            continue
        for name in sorted(files):
            if (name.startswith('.') and name not in KERNEL_DOT_FILES) or \
                    name.endswith(('~', '.pyc')):
                continue
            path = os.path.join(dirpath, name)
            yield os.path.relpath(path, top).replace(os.sep, '/'), path


def kernel_sources(tree: Tree | str, harness: bool = True,
                   kunit: str | None = None) -> dict[str, str]:
    """The kernel sources of a tree: {tree-relative path: project path}.

    The one rule for which files under kunit/ go into a kernel tree:
      kunit/common/**   every tree, at the same relative path
                        (kunit/common/mm/tests/gup_kunit.h ->
                        mm/tests/gup_kunit.h);
      kunit/TREE/*/**   that tree only: files in subdirectories
                        (kunit/6.1/mm/x.c -> mm/x.c); the files directly
                        in kunit/TREE/ (kunitconfig, pin-core) are
                        per-tree configuration, never sources;
      kunit/harness/**  every tree, but only with harness=True: the
                        project's own builds compile them, `make series`
                        never exports them.
    Everything else under kunit/ is harness configuration. Dot files
    (but .kunitconfig), editor backups (*~) and __pycache__ are skipped. A relative path
    that two of these roots give is a ToolError.

    tree: a Tree (or anything with a .name) or a tree name; kunit: the
    kunit/ directory (default KUNIT).
    """
    kunit = kunit or KUNIT
    name = tree if isinstance(tree, str) else tree.name
    roots = [(os.path.join(kunit, COMMON_DIR), False),
             (os.path.join(kunit, name), True)]
    if harness:
        roots.append((os.path.join(kunit, HARNESS_DIR), False))
    out: dict[str, str] = {}
    for top, skip_top_files in roots:
        if not os.path.isdir(top):
            continue
        for rel, path in _walk_files(top, skip_top_files):
            if rel in out:
                raise ToolError('%s comes from both %s and %s; a tree path '
                                'may come from one of kunit/%s/, kunit/%s/ '
                                'and kunit/%s/ only'
                                % (rel, display(out[rel]), display(path),
                                   COMMON_DIR, name, HARNESS_DIR))
            out[rel] = path
    return out


def harness_sources(tree: Tree | str,
                    kunit: str | None = None) -> dict[str, str]:
    """The harness-only part of kernel_sources(tree): {tree path: path}."""
    kunit = kunit or KUNIT
    harness_top = os.path.join(kunit, HARNESS_DIR) + os.sep
    return {rel: path for rel, path in
            kernel_sources(tree, True, kunit).items()
            if path.startswith(harness_top)}


# --------------------------------------------------------------------------
# The per-tree state of build/TREE/linux
# --------------------------------------------------------------------------

def load_state(tree: Tree) -> dict | None:
    """The state json of build/TREE/linux, or None.

    Keys: tree, package, version, tarball, tarball_stat, kernelversion,
    base (pristine commit), patches (digest of the series applied, None
    while git am is under way), series_head (after git am), harness (the
    harness .c files that the harness commit builds, None while it is
    being made), head (series_head plus the harness commit), synced
    ({tree path: sha256} of the copied kernel sources). A state of the
    single-tree layout lacks series_head and harness; it had no harness
    commit, so series_head is its head.
    """
    try:
        with open(tree.state) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    if 'series_head' not in state:
        state['series_head'] = state.get('head')
        state.setdefault('harness', [])
    return state


def save_state(tree: Tree, state: dict) -> None:
    tmp = tree.state + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(tmp, tree.state)


# --------------------------------------------------------------------------
# build/: the lock and the layout of the single-tree version
# --------------------------------------------------------------------------

def migrate_single_tree_build(tool: str) -> str | None:
    """Deal with a build/linux of the single-tree layout.

    If its state names the package of a tree of kunit/trees and that
    tree has no build/TREE/linux yet, move build/linux and the build
    directories next to it (OLD_BUILD_DIRS) into build/TREE/, prune the
    repository's worktrees (they were under build/), and say so in one
    line. Otherwise say in one line how to remove it, and leave it.
    Returns the tree moved to, or None.
    """
    old = os.path.join(BUILD, 'linux')
    if not os.path.isdir(old):
        return None
    try:
        with open(os.path.join(old, '.git', STATE_NAME)) as f:
            package = json.load(f).get('package')
    except (OSError, ValueError, AttributeError):
        package = None
    target = next((t for t in read_trees() if t.package == package), None)
    if target is not None and not os.path.lexists(target.linux):
        try:
            os.makedirs(target.build, exist_ok=True)
            os.rename(old, target.linux)
            for name in OLD_BUILD_DIRS:
                src = os.path.join(BUILD, name)
                dst = os.path.join(target.build, name)
                if os.path.isdir(src) and not os.path.lexists(dst):
                    os.rename(src, dst)
        except OSError as e:
            raise ToolError('cannot move %s into %s: %s'
                            % (display(old), display(target.build),
                               e.strerror))
        run(['git', '-C', target.linux, 'worktree', 'prune'], check=False)
        print('%s: moved %s (%s) and its build directories of the '
              'single-tree layout to %s/' % (tool, display(old), package,
                                              display(target.build)),
              flush=True)
        return target.name
    why = ('%s already exists' % display(target.linux) if target else
           'its package %s is no tree of %s' % (package or '(unknown)',
                                                display(trees_file())))
    gone = [display(os.path.join(BUILD, n)) for n in ('linux',) +
            OLD_BUILD_DIRS if os.path.lexists(os.path.join(BUILD, n))]
    print('%s: ignoring %s of the single-tree layout (%s); remove it with: '
          'rm -rf %s' % (tool, display(old), why, ' '.join(gone)),
          flush=True)
    return None


def lock_holder(fd: int) -> int | None:
    """The pid the holder of build/.lock wrote into it, or None."""
    try:
        return int(os.pread(fd, 32, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def ancestors(pid: int | None = None) -> list[int]:
    """The pids of this process and of its parents, up to init."""
    out = []
    pid = os.getpid() if pid is None else pid
    while pid > 1 and pid not in out:
        out.append(pid)
        try:
            with open('/proc/%d/stat' % pid) as f:
                pid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


class BuildLock:
    """Exclusive lock on build/ so that two runs never share a tree.

    A second run waits (up to GPK_LOCK_WAIT seconds, default 3600) and
    then refuses. Nested tools see GPK_LOCK_HELD and do not lock again.
    The holder writes its pid into the lock file: a nested tool that lost
    GPK_LOCK_HELD and finds the lock held by one of its own parents stops
    at once instead of waiting for itself.
    The outermost holder also moves a build/linux of the single-tree
    layout into place (migrate_single_tree_build).
    """

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.fd = None

    def __enter__(self):
        if os.environ.get('GPK_LOCK_HELD') == str(os.getppid()) or \
           os.environ.get('GPK_LOCK_HELD') == 'inherit':
            return self
        os.makedirs(BUILD, exist_ok=True)
        self.fd = os.open(os.path.join(BUILD, '.lock'),
                          os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(self.fd)
            if holder in ancestors():
                os.close(self.fd)
                self.fd = None
                die(self.tool, 'build/.lock is held by pid %d, which '
                    'started this run, but GPK_LOCK_HELD does not say so; '
                    'waiting would never end' % holder)
            wait = int(os.environ.get('GPK_LOCK_WAIT', '3600'))
            print('%s: another run holds build/.lock; waiting up to %ds'
                  % (self.tool, wait), file=sys.stderr)

            def expired(_sig, _frm):
                raise TimeoutError()
            old = signal.signal(signal.SIGALRM, expired)
            signal.alarm(max(wait, 1))
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX)
            except TimeoutError:
                die(self.tool, 'build/ is locked by another run '
                    '(still busy after %ds); not touching it' % wait)
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, old)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, b'%d\n' % os.getpid(), 0)
        try:
            migrate_single_tree_build(self.tool)
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise
        os.environ['GPK_LOCK_HELD'] = 'inherit'
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.environ.pop('GPK_LOCK_HELD', None)
            # Forget the pid while still holding the lock: a run that finds
            # the lock taken by the next holder, before that one wrote its
            # pid, must not read ours and take it for a parent of its own.
            os.ftruncate(self.fd, 0)
            os.close(self.fd)
        return False
