"""Fault injection for tools/deps, prepare_tree.py, run_suite.py and the
build/ lock; run from the repository root with

    python3 -m unittest discover -s tools/tests

Every bad input must give one line on stderr, prefixed with the tool's
name, and a non-zero exit: never a traceback, never a hang. The tools run
in subprocesses against temporary directories (GPK_BUILD, GPK_RESULTS,
GPK_SRC_DIR, GPK_PATCHES, GPK_KUNIT) with stub commands (dpkg-query, id,
apt-get, qemu-system-x86_64) first on PATH; the kernel tree is a tiny fake
'linux-source' tarball built here, and its patches are made with real git.
Nothing touches build/, results/ or the real package database.
"""

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
DEPS = TOOLS / 'deps'
PREPARE = TOOLS / 'prepare_tree.py'
RUN_SUITE = TOOLS / 'run_suite.py'
HANG = 20          # seconds after which a tool counts as hung
GIT_ID = ['-c', 'user.name=t', '-c', 'user.email=t@localhost',
          '-c', 'commit.gpgsign=false']
SERIES = '6.1'
PKG = 'linux-source-6.1'

# dpkg-query for prepare_tree: the answers live in files next to the stub
# ('version' missing = package not installed; 'list' = output of -L).
DPKG_QUERY_TREE = r'''#!/bin/sh
d=$(dirname "$0")
case "$1" in
-W)
	[ "$2" = '-f=${Version}' ] && [ "$3" = linux-source-6.1 ] &&
		[ -f "$d/version" ] && exec cat "$d/version"
	exit 1 ;;
-L)
	[ "$2" = linux-source-6.1 ] && [ -f "$d/list" ] && exec cat "$d/list"
	echo "dpkg-query: package '$2' is not installed" >&2
	exit 1 ;;
esac
exit 1
'''

# dpkg-query for tools/deps: every package installed but the one named in
# the file 'missing'.
DPKG_QUERY_DEPS = r'''#!/bin/sh
d=$(dirname "$0")
if [ "$3" = "$(cat "$d/missing")" ]; then
	exit 1
fi
printf 'install ok installed'
'''


def write_exe(path, text):
    path = Path(path)
    path.write_text(text)
    path.chmod(0o755)


def git(cwd, *args):
    return subprocess.run(['git', '-C', str(cwd)] + GIT_ID + list(args),
                          check=True, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT).stdout.strip()


def clean_env(**extra):
    """os.environ without the project's overrides, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('GPK_')}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM='1',
               LC_ALL='C')
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_tool(cmd, env, timeout=HANG):
    try:
        return subprocess.run([str(c) for c in cmd], env=env, text=True,
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError('%s hung (> %ss)' % (cmd[-1], timeout))


class FaultCase(unittest.TestCase):
    """Assertions shared by every fault."""

    def assertFault(self, proc, tool, *needles, lines=1, status=1):
        """Exit status `status`, no traceback, `lines` stderr lines that all
        start with 'tool: ', the last one containing every needle."""
        both = proc.stdout + proc.stderr
        self.assertNotIn('Traceback', both)
        err = proc.stderr.splitlines()
        self.assertEqual(proc.returncode, status, both)
        self.assertEqual(len(err), lines, proc.stderr)
        for ln in err:
            self.assertTrue(ln.startswith(tool + ': '), ln)
        for n in needles:
            self.assertIn(n, err[-1])
        return err[-1]

    def assertGood(self, proc):
        self.assertNotIn('Traceback', proc.stdout + proc.stderr)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc.stdout


class DepsFaults(FaultCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-deps-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        write_exe(self.tmp / 'dpkg-query', DPKG_QUERY_DEPS)
        (self.tmp / 'missing').write_text('git')
        self.apt_log = self.tmp / 'apt-calls'
        write_exe(self.tmp / 'apt-get',
                  '#!/bin/sh\necho "$@" >> "%s"\n' % self.apt_log)

    def deps(self, uid, *args):
        write_exe(self.tmp / 'id', '#!/bin/sh\necho %d\n' % uid)
        env = clean_env(PATH='%s:%s' % (self.tmp, os.environ['PATH']))
        return run_tool([DEPS] + list(args), env)

    def test_not_root_prints_the_install_line(self):
        line = self.assertFault(self.deps(1000), 'tools/deps')
        self.assertEqual(line, 'tools/deps: missing Debian packages; as root '
                         'run: apt-get install -y git')
        self.assertFalse(self.apt_log.exists())

    def test_check_as_root_does_not_install(self):
        self.assertFault(self.deps(0, '--check'), 'tools/deps',
                         'apt-get install -y git')
        self.assertFalse(self.apt_log.exists())

    def test_nothing_missing(self):
        (self.tmp / 'missing').write_text('none-such')
        proc = self.deps(1000, '--check')
        self.assertGood(proc)
        self.assertEqual(proc.stderr, '')

    def test_unknown_argument(self):
        self.assertFault(self.deps(1000, '--bogus'), 'tools/deps',
                         "unknown argument '--bogus'", status=2)


def make_source(top, version, extra=''):
    """A fake kernel tree: Makefile with `kernelversion`, mm/gup.c,
    mm/Kconfig and Debian's ignore-everything .gitignore."""
    (top / 'mm').mkdir(parents=True)
    (top / 'Makefile').write_text('kernelversion:\n\t@echo %s\n' % version)
    (top / 'mm' / 'gup.c').write_text(
        '/* gup */\nint a;\nint b;\nint c;\n' + extra)
    (top / 'mm' / 'Kconfig').write_text('config MMU\n\tbool\n')
    (top / '.gitignore').write_text('/*\n')


def make_tarball(workdir, dest, version, name='linux-source-6.1'):
    src = workdir / ('src-' + version)
    make_source(src / name, version)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(['tar', '-cJf', str(dest), '-C', str(src), name],
                   check=True)


def make_patches(workdir):
    """Two good patches for the fake tree and one that does not apply."""
    repo = workdir / 'patch-repo'
    make_source(repo, '6.1.192')
    git(repo, 'init', '-q', '-b', 'main')
    git(repo, 'add', '-A', '-f', '.')
    git(repo, 'commit', '-q', '-m', 'base')
    base = git(repo, 'rev-parse', 'HEAD')
    gup = repo / 'mm' / 'gup.c'
    gup.write_text(gup.read_text() + '#include "gup_kunit.c"\n')
    git(repo, 'commit', '-q', '-am', 'mm/gup: add a KUnit hook')
    kc = repo / 'mm' / 'Kconfig'
    kc.write_text(kc.read_text() + 'config GUP_KUNIT\n\ttristate\n')
    git(repo, 'commit', '-q', '-am', 'mm: GUP_KUNIT option')
    good = workdir / 'patches-good'
    git(repo, 'format-patch', '-q', '-o', str(good), base + '..HEAD')
    # 0003 changes a line that only an unpublished commit introduced.
    git(repo, 'checkout', '-q', '-b', 'other', base)
    gup.write_text(gup.read_text().replace('int b;', 'int bb;'))
    git(repo, 'commit', '-q', '-am', 'private')
    gup.write_text(gup.read_text().replace('int bb;', 'int bbb;'))
    git(repo, 'commit', '-q', '-am', 'mm/gup: rename bb')
    bad = workdir / 'bad'
    git(repo, 'format-patch', '-q', '--start-number=3', '-o', str(bad),
        'HEAD~1..HEAD')
    names = sorted(p.name for p in good.glob('*.patch'))
    bad_patch = next(bad.glob('*.patch'))
    assert len(names) == 2, names
    (good / 'series').write_text('# the series\n' + '\n'.join(names) + '\n')
    return good, bad_patch, names


class PrepareTreeFaults(FaultCase):
    @classmethod
    def setUpClass(cls):
        cls.fix = Path(tempfile.mkdtemp(prefix='gpk-fix-'))
        f = cls.fix
        make_tarball(f, f / 'usr-src' / 'linux-source-6.1.tar.xz', '6.1.192')
        make_tarball(f, f / 'src-6.12' / 'linux-source-6.12.tar.xz',
                     '6.12.9', name='linux-source-6.12')
        make_tarball(f, f / 'src-mk' / 'linux-source-6.1.tar.xz', '6.12.3')
        cls.good, cls.bad_patch, cls.names = make_patches(f)
        kunit = f / 'kunit'
        (kunit / 'mm').mkdir(parents=True)
        (kunit / 'mm' / 'gup_kunit.c').write_text('/* tests */\n')
        (kunit / 'mutants').mkdir()
        (kunit / 'mutants' / '001-x.patch').write_text('not for the tree\n')
        (kunit / 'suites').write_text('gup_pin\n')
        cls.kunit = kunit
        cls.prepared = None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.fix)

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-prep-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.build = self.tmp / 'build'
        self.tree = self.build / 'linux'
        self.stubs = self.tmp / 'stubs'
        self.stubs.mkdir()
        write_exe(self.stubs / 'dpkg-query', DPKG_QUERY_TREE)
        self.installed(self.fix / 'usr-src' / 'linux-source-6.1.tar.xz')
        self.patches = self.tmp / 'patches'
        shutil.copytree(self.good, self.patches)
        self.src_dir = self.fix

    def installed(self, tarball, version='6.1.192-1'):
        (self.stubs / 'version').write_text(version + '\n')
        (self.stubs / 'list').write_text(
            '/.\n/usr\n/usr/src\n%s\n/usr/share/doc/%s\n' % (tarball, PKG))

    def prepare(self, *args):
        env = clean_env(PATH='%s:%s' % (self.stubs, os.environ['PATH']),
                        GPK_BUILD=self.build, GPK_RESULTS=self.tmp / 'res',
                        GPK_SRC_DIR=self.src_dir, GPK_PATCHES=self.patches,
                        GPK_KUNIT=self.kunit)
        return run_tool([sys.executable, PREPARE] + list(args), env)

    def state(self):
        return json.loads((self.tree / '.git' / 'gup-pin-kunit.json')
                          .read_text())

    def head(self):
        return git(self.tree, 'rev-parse', 'HEAD')

    def series_tree(self):
        """The applied series, as a tree id (commit ids carry dates)."""
        return (git(self.tree, 'rev-parse', 'HEAD^{tree}'),
                git(self.tree, 'rev-list', '--count', 'pristine..HEAD'))

    def assertPristine(self):
        """The tree is at the pristine base, clean, with no am pending."""
        self.assertEqual(self.head(), git(self.tree, 'rev-parse', 'pristine'))
        self.assertEqual(git(self.tree, 'status', '--porcelain',
                             '--untracked-files=no'), '')
        self.assertFalse((self.tree / '.git' / 'rebase-apply').exists())

    def assertNoLeftovers(self):
        self.assertEqual(list(self.build.glob('linux.unpack-*')), [])

    def good_run(self):
        out = self.assertGood(self.prepare('--series', SERIES))
        self.assertIn('2 patches, 1 test sources updated', out)
        return out

    def prepared_tree(self):
        """build/ as a good run leaves it: one run per class, then copies
        (the state names only the tarball, never the tree's path)."""
        cls = type(self)
        if cls.prepared is None:
            self.good_run()
            cls.prepared = self.fix / 'prepared-build'
            shutil.copytree(self.build, cls.prepared, symlinks=True)
        else:
            shutil.copytree(cls.prepared, self.build, symlinks=True)

    # good path -----------------------------------------------------------
    def test_good_path_is_incremental(self):
        out = self.good_run()
        self.assertIn('unpacking', out)
        self.assertIn('(kernel 6.1.192)', out)
        st = self.state()
        self.assertEqual(st['kernelversion'], '6.1.192')
        self.assertEqual(git(self.tree, 'rev-list', '--count',
                             'pristine..HEAD'), '2')
        self.assertIn('#include "gup_kunit.c"',
                      (self.tree / 'mm' / 'gup.c').read_text())
        self.assertEqual((self.tree / 'mm' / 'gup_kunit.c').read_text(),
                         '/* tests */\n')
        self.assertFalse((self.tree / 'mutants').exists())
        self.assertFalse((self.tree / 'suites').exists())
        self.assertNoLeftovers()

        again = self.assertGood(self.prepare('--series', SERIES))
        self.assertIn('2 patches, 0 test sources updated', again)
        self.assertNotIn('unpacking', again)
        self.assertNotIn('applying', again)
        self.assertEqual(self.state()['base'], st['base'])
        self.assertEqual(self.head(), st['head'])

    # the package and its tarball -----------------------------------------
    def test_package_not_installed(self):
        (self.stubs / 'version').unlink()
        self.assertFault(self.prepare(), 'prepare_tree',
                         'package %s is not installed' % PKG,
                         'tools/deps', 'apt-get install %s' % PKG)
        self.assertFalse(self.tree.exists())

    def test_tarball_listed_but_absent(self):
        gone = self.fix / 'usr-src' / 'gone' / 'linux-source-6.1.tar.xz'
        self.installed(gone)
        self.assertFault(self.prepare(), 'prepare_tree',
                         'tarball %s is missing' % gone, 'reinstall ' + PKG)
        self.assertFalse(self.tree.exists())

    def test_tarball_outside_src_dir(self):
        self.src_dir = self.tmp / 'elsewhere'
        self.assertFault(self.prepare(), 'prepare_tree',
                         'package %s lists no %s/*.tar.xz'
                         % (PKG, self.src_dir))

    def test_tarball_of_another_series_by_name(self):
        self.installed(self.fix / 'src-6.12' / 'linux-source-6.12.tar.xz')
        self.assertFault(self.prepare('--series', SERIES), 'prepare_tree',
                         'linux-source-6.12.tar.xz is not of series 6.1')
        self.assertFalse(self.tree.exists())

    def test_tarball_of_another_series_by_makefile(self):
        self.installed(self.fix / 'src-mk' / 'linux-source-6.1.tar.xz')
        self.assertFault(self.prepare('--series', SERIES), 'prepare_tree',
                         'holds kernel 6.12.3, expected 6.1.y')
        self.assertFalse(self.tree.exists())
        self.assertNoLeftovers()

    # the series ------------------------------------------------------------
    def test_patch_that_does_not_apply(self):
        self.prepared_tree()
        shutil.copy(self.bad_patch, self.patches)
        (self.patches / 'series').write_text(
            '%s\n%s\n' % (self.names[0], self.bad_patch.name))
        line = self.assertFault(self.prepare(), 'prepare_tree',
                                self.bad_patch.name, 'does not apply')
        self.assertNotIn(self.names[0], line)
        self.assertPristine()
        self.assertEqual(self.state()['head'], self.state()['base'])
        # Fixing the series is enough: the next run applies it.
        (self.patches / 'series').write_text('\n'.join(self.names) + '\n')
        out = self.assertGood(self.prepare())
        self.assertIn('applying 2 patches', out)
        self.assertEqual(git(self.tree, 'rev-list', '--count',
                             'pristine..HEAD'), '2')

    def test_series_names_a_missing_patch(self):
        (self.patches / 'series').write_text('0009-none.patch\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         'patches/series names 0009-none.patch')

    # local edits -------------------------------------------------------
    def test_local_edit_of_a_tracked_file_is_refused(self):
        self.prepared_tree()
        gup = self.tree / 'mm' / 'gup.c'
        edited = gup.read_text() + '/* mine */\n'
        gup.write_text(edited)
        self.assertFault(self.prepare(), 'prepare_tree',
                         'local changes (mm/gup.c)',
                         'git -C build/linux reset --hard')
        self.assertEqual(gup.read_text(), edited)
        # The same when the series changed and would be re-applied.
        (self.patches / 'series').write_text(self.names[0] + '\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         'local changes (mm/gup.c)', 'reset --hard')
        self.assertEqual(gup.read_text(), edited)

    def test_local_commit_is_refused(self):
        self.prepared_tree()
        (self.tree / 'mm' / 'Kconfig').write_text('mine\n')
        git(self.tree, 'commit', '-q', '-am', 'mine')
        mine = self.head()
        (self.patches / 'series').write_text(self.names[0] + '\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         'HEAD moved to %s' % mine[:12], 'reset --hard')
        self.assertEqual(self.head(), mine)

    def test_edited_tree_copy_of_a_test_source_is_refused(self):
        self.prepared_tree()
        copy = self.tree / 'mm' / 'gup_kunit.c'
        copy.write_text('/* edited in the tree */\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         'build/linux/mm/gup_kunit.c was edited in the tree',
                         'edit kunit/mm/gup_kunit.c instead')
        self.assertEqual(copy.read_text(), '/* edited in the tree */\n')

    # interrupted runs --------------------------------------------------
    def test_interrupted_unpack_recovers(self):
        junk = self.build / 'linux.unpack-x1y2z3'
        (junk / 'mm').mkdir(parents=True)
        (junk / 'mm' / 'gup.c').write_text('half')
        out = self.good_run()
        self.assertIn('unpacking', out)
        self.assertNoLeftovers()
        self.assertIn('2 patches', out)

    def test_unpacked_tree_without_state_recovers(self):
        # Killed between moving the tree in place and writing its state.
        self.prepared_tree()
        (self.tree / '.git' / 'gup-pin-kunit.json').unlink()
        out = self.good_run()
        self.assertIn('unpacking', out)

    def test_interrupted_git_am_recovers(self):
        self.prepared_tree()
        st = self.state()
        good_tree = self.series_tree()
        # As prepare() leaves it when killed inside git am of patch 2:
        # state marks the series unapplied from the base, HEAD is at
        # patch 1 and .git/rebase-apply holds the rest.
        st['patches'] = None
        st['head'] = st['base']
        (self.tree / '.git' / 'gup-pin-kunit.json').write_text(json.dumps(st))
        git(self.tree, 'reset', '-q', '--hard', st['base'])
        git(self.tree, 'am', '-q', str(self.patches / self.names[0]))
        am = subprocess.run(['git', '-C', str(self.tree)] + GIT_ID +
                            ['am', '-q', str(self.bad_patch)],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
        self.assertNotEqual(am.returncode, 0)
        self.assertTrue((self.tree / '.git' / 'rebase-apply').is_dir())
        out = self.assertGood(self.prepare())
        self.assertIn('applying 2 patches', out)
        self.assertNotIn('unpacking', out)
        self.assertFalse((self.tree / '.git' / 'rebase-apply').exists())
        self.assertEqual(self.state()['base'], st['base'])
        self.assertEqual(self.series_tree(), good_tree)

    def test_killed_between_patches_recovers(self):
        # Killed after git am of patch 1 and before that of patch 2: no
        # rebase-apply, HEAD at patch 1, but the state says an apply was
        # under way (patches is None), so the next run redoes the series.
        self.prepared_tree()
        st = self.state()
        st['patches'] = None
        st['head'] = st['base']
        (self.tree / '.git' / 'gup-pin-kunit.json').write_text(json.dumps(st))
        git(self.tree, 'reset', '-q', '--hard', st['base'])
        git(self.tree, 'am', '-q', str(self.patches / self.names[0]))
        out = self.assertGood(self.prepare())
        self.assertIn('applying 2 patches', out)
        self.assertEqual(git(self.tree, 'rev-list', '--count',
                             'pristine..HEAD'), '2')


class RunSuiteFaults(FaultCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-run-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.build = self.tmp / 'build'
        self.bin = self.tmp / 'bin'
        self.bin.mkdir()

    def run_suite(self, results):
        # PATH holds only the stubs: no qemu, no git, no make, no dpkg.
        env = clean_env(PATH=self.bin, GPK_BUILD=self.build,
                        GPK_RESULTS=results)
        return run_tool([sys.executable, RUN_SUITE], env)

    def test_qemu_missing_stops_before_any_build(self):
        self.assertFault(self.run_suite(self.tmp / 'res'), 'run_suite',
                         'run_suite: qemu-system-x86_64 not found; ',
                         'tools/deps')
        self.assertFalse((self.build / 'linux').exists())
        self.assertFalse((self.tmp / 'res').exists())

    def test_results_dir_not_writable(self):
        write_exe(self.bin / 'qemu-system-x86_64', '#!/bin/sh\nexit 0\n')
        blocker = self.tmp / 'a-file'
        blocker.write_text('')
        res = blocker / 'results'
        self.assertFault(self.run_suite(res), 'run_suite',
                         'results directory %s is not writable' % res,
                         'Not a directory')
        self.assertFalse((self.build / 'linux').exists())


# A kunit.py stand-in for the build faults: `build` logs its call, then
# does what the file "mode" next to it says.
KUNIT_STUB = r'''#!/usr/bin/env python3
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, 'calls'), 'a') as f:
    f.write(' '.join(sys.argv[1:2]) + '\n')
mode = open(os.path.join(here, 'mode')).read().strip()
if mode == 'hang':
    with open(os.path.join(here, 'pid'), 'w') as f:
        f.write(str(os.getpid()))
    print('  CC      mm/gup.o', flush=True)
    time.sleep(60)
elif mode == 'enospc':
    print('  CC      mm/gup.o')
    print('mm/gup.c:3000:1: fatal error: error writing to /tmp/ccX.s: '
          'No space left on device')
    print('make[3]: *** [scripts/Makefile.build:250: mm/gup.o] Error 1')
    print('make: *** [Makefile:2012: .] Error 2')
    sys.exit(2)
else:
    print('drivers/x.c:1:1: error: second build stops here')
    sys.exit(2)
'''


class BuildFaults(FaultCase):
    """A build interrupted half way, and a disk that fills up, against a
    prepared tree whose kunit.py is a stand-in."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-build-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.build = self.tmp / 'build'
        tree = self.build / 'linux'
        (tree / '.git').mkdir(parents=True)
        (tree / '.git' / 'gup-pin-kunit.json').write_text(
            '{"version": "6.1.0-stub", "head": "0", "base": "0"}')
        self.kunit = tree / 'tools' / 'testing' / 'kunit'
        self.kunit.mkdir(parents=True)
        write_exe(self.kunit / 'kunit.py', KUNIT_STUB)
        self.bin = self.tmp / 'bin'
        self.bin.mkdir()
        write_exe(self.bin / 'qemu-system-x86_64', '#!/bin/sh\nexit 0\n')
        self.res = self.tmp / 'res'
        self.env = clean_env(PATH='%s:%s' % (self.bin, os.path.dirname(
            sys.executable)), GPK_BUILD=self.build, GPK_RESULTS=self.res)
        self.cmd = [sys.executable, str(RUN_SUITE), '--no-prepare']

    def mode(self, mode):
        (self.kunit / 'mode').write_text(mode)

    def calls(self):
        return (self.kunit / 'calls').read_text().split()

    def interrupt_build(self, sig):
        """Start run_suite with a build that hangs, send it sig once the
        build runs; return (result, pid of the build)."""
        self.mode('hang')
        pidfile = self.kunit / 'pid'
        if pidfile.exists():
            pidfile.unlink()
        proc = subprocess.Popen(self.cmd, env=self.env, text=True,
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + HANG
        while not pidfile.exists() or not pidfile.read_text():
            self.assertLess(time.monotonic(), deadline, 'build never started')
            time.sleep(0.05)
        build_pid = int(pidfile.read_text())
        proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail('run_suite hung after signal %d' % sig)
        return (subprocess.CompletedProcess(proc.args, proc.returncode, out,
                                            err), build_pid)

    def test_build_interrupted_half_way(self):
        """Ctrl-C, or SIGTERM (a CI timeout), in the middle of the build:
        the build's whole process group is stopped (nothing goes on
        writing in the tree), one line and status 130, the lock is free,
        and the next run builds again."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=sig):
                res, build_pid = self.interrupt_build(sig)
                self.assertFault(res, 'run_suite', 'interrupted',
                                 status=130)
                with self.assertRaises(ProcessLookupError):
                    os.kill(build_pid, 0)
                fd = os.open(self.build / '.lock', os.O_RDWR)
                self.addCleanup(os.close, fd)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
        self.mode('fail')
        self.assertFault(run_tool(self.cmd, self.env), 'run_suite',
                         'kernel build failed',
                         'error: second build stops here')
        self.assertEqual(self.calls(), ['build'] * 3)

    def test_disk_full_during_build(self):
        """The compiler hits ENOSPC: the one line says the disk is full,
        where, and quotes the compiler, not make's last 'Error 2'."""
        self.mode('enospc')
        self.assertFault(run_tool(self.cmd, self.env), 'run_suite',
                         'kernel build failed: disk full in %s'
                         % (self.build / 'kunit-x86_64'),
                         'No space left on device')

    def test_disk_full_for_the_build_log(self):
        """results/ is on a full disk (build.log is /dev/full): the build
        is stopped and the one line names the log."""
        self.mode('hang')
        self.res.mkdir()
        (self.res / 'build.log').symlink_to('/dev/full')
        self.assertFault(run_tool(self.cmd, self.env), 'run_suite',
                         'cannot write %s' % (self.res / 'build.log'),
                         'No space left on device')
        pid = int((self.kunit / 'pid').read_text())
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)


class BuildLockFaults(FaultCase):
    def test_second_holder_gives_up(self):
        tmp = Path(tempfile.mkdtemp(prefix='gpk-lock-'))
        self.addCleanup(shutil.rmtree, tmp)
        build = tmp / 'build'
        build.mkdir()
        fd = os.open(build / '.lock', os.O_RDWR | os.O_CREAT, 0o644)
        self.addCleanup(os.close, fd)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        env = clean_env(GPK_BUILD=build, GPK_RESULTS=tmp / 'res',
                        GPK_LOCK_WAIT=1, GPK_SRC_DIR=tmp, GPK_KUNIT=tmp,
                        GPK_PATCHES=tmp)
        tools = (('prepare_tree', PREPARE), ('run_suite', RUN_SUITE))
        t0 = time.monotonic()
        procs = [subprocess.Popen([sys.executable, str(script)], env=env,
                                  text=True, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
                 for _tool, script in tools]
        for (tool, _script), proc in zip(tools, procs):
            with self.subTest(tool=tool):
                try:
                    out, err = proc.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.communicate()
                    self.fail('%s hung on the lock' % tool)
                res = subprocess.CompletedProcess(proc.args, proc.returncode,
                                                  out, err)
                self.assertFault(res, tool,
                                 'build/ is locked by another run',
                                 'still busy after 1s', lines=2)
                self.assertIn('waiting up to 1s', err.splitlines()[0])
        self.assertLess(time.monotonic() - t0, 6)
        self.assertEqual(os.listdir(build), ['.lock'])

if __name__ == '__main__':
    unittest.main()
