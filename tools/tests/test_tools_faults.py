"""Fault injection for tools/deps, prepare_tree.py, run_suite.py and the
build/ lock; run from the repository root with

    python3 -m unittest discover -s tools/tests -t .

Every bad input must give one line on stderr, prefixed with the tool's
name, and a non-zero exit: never a traceback, never a hang. The tools run
in subprocesses against temporary directories (GPK_BUILD, GPK_RESULTS,
GPK_SRC_DIR, GPK_PATCHES, GPK_KUNIT) with stub commands (dpkg-query, id,
apt-get, qemu-system-x86_64) first on PATH; the kernel trees are tiny fake
'linux-source' tarballs built here (fakes.py), and their patches are made
with real git. Nothing touches build/, results/ or the real package
database.
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
sys.path.insert(0, str(HERE))
from fakes import (DPKG_QUERY_TREE, GIT_ID, HANG, HARNESS_LINE,  # noqa
                   clean_env, git, install, make_kunit, make_patches,
                   make_tarball, run_tool, uninstall, write_exe,
                   write_trees)

TOOLS = HERE.parent
DEPS = TOOLS / 'deps'
PREPARE = TOOLS / 'prepare_tree.py'
RUN_SUITE = TOOLS / 'run_suite.py'
TREE = '6.1'
PKG = 'linux-source-6.1'
HARNESS_SUBJECT = ('gup-pin-kunit harness: build mm/gup_kunit_harness.c '
                   '(not for upstream)')

# dpkg-query for tools/deps: every package installed but the one named in
# the file 'missing'.
DPKG_QUERY_DEPS = r'''#!/bin/sh
d=$(dirname "$0")
if [ "$3" = "$(cat "$d/missing")" ]; then
	exit 1
fi
printf 'install ok installed'
'''


def default_sigint():
    """preexec_fn: SIGINT as a foreground job has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
        self.kunit = self.tmp / 'kunit'
        write_trees(self.kunit)
        # The JavaScript of make report, installed as npm ci leaves it.
        self.npm = self.tmp / 'build-npm'
        (self.npm / 'node_modules').mkdir(parents=True)
        for name in ('package.json', 'package-lock.json'):
            shutil.copy(TOOLS / 'js' / name, self.npm / name)
        (self.npm / 'node_modules' / '.package-lock.json').write_text('{}')

    def deps(self, uid, *args):
        write_exe(self.tmp / 'id', '#!/bin/sh\necho %d\n' % uid)
        env = clean_env(PATH='%s:%s' % (self.tmp, os.environ['PATH']),
                        GPK_KUNIT=self.kunit, GPK_NPM=self.npm)
        return run_tool([DEPS] + list(args), env)

    def test_javascript_is_installed_when_its_lock_changes(self):
        (self.tmp / 'missing').write_text('none-such')
        (self.npm / 'package-lock.json').write_text('{}')
        self.assertFault(self.deps(1000, '--check'), 'tools/deps',
                         'JavaScript of make report', 'not installed')
        log = self.tmp / 'npm-calls'
        write_exe(self.tmp / 'npm', '#!/bin/sh\necho "$@" >> "%s"\n'
                  'touch node_modules/.package-lock.json\n' % log)
        proc = self.deps(1000)
        self.assertGood(proc)
        self.assertIn('ci --ignore-scripts', log.read_text())
        self.assertEqual((self.npm / 'package-lock.json').read_text(),
                         (TOOLS / 'js' / 'package-lock.json').read_text())
        log.unlink()
        self.assertEqual(self.deps(1000).stderr, '')
        self.assertFalse(log.exists())

    def test_not_root_prints_the_install_line(self):
        line = self.assertFault(self.deps(1000), 'tools/deps')
        self.assertEqual(line, 'tools/deps: missing Debian packages; as root '
                         'run: apt-get install -y git')
        self.assertFalse(self.apt_log.exists())

    def test_missing_tree_package_is_named(self):
        (self.tmp / 'missing').write_text('linux-source-6.12')
        self.assertFault(self.deps(1000), 'tools/deps',
                         'apt-get install -y linux-source-6.12')

    def test_check_as_root_does_not_install(self):
        self.assertFault(self.deps(0, '--check'), 'tools/deps',
                         'apt-get install -y git')
        self.assertFalse(self.apt_log.exists())

    def test_root_installs(self):
        proc = self.deps(0)
        self.assertGood(proc)
        self.assertIn('install -y -q git', self.apt_log.read_text())

    def test_nothing_missing(self):
        (self.tmp / 'missing').write_text('none-such')
        proc = self.deps(1000, '--check')
        self.assertGood(proc)
        self.assertEqual(proc.stderr, '')

    def test_list_has_a_package_per_tree(self):
        out = self.assertGood(self.deps(1000, '--list')).split()
        self.assertEqual(out[:2], ['linux-source-6.1', 'linux-source-6.12'])
        for pkg in ('e2fsprogs', 'coccinelle', 'qemu-system-x86', 'lcov',
                    'python3-mypy'):
            self.assertIn(pkg, out)
        self.assertNotIn('linux-source', out)
        write_trees(self.kunit, [('6.1', 'linux-source-6.1')])
        out = self.assertGood(self.deps(1000, '--list')).split()
        self.assertNotIn('linux-source-6.12', out)

    def test_bad_trees_file(self):
        (self.kunit / 'trees').write_text('# trees\n6.1\n')
        self.assertFault(self.deps(1000, '--list'), 'tools/deps',
                         'trees:2: expected "TREE PACKAGE"')
        (self.kunit / 'trees').unlink()
        self.assertFault(self.deps(1000), 'tools/deps', 'cannot read',
                         'trees')

    def test_unknown_argument(self):
        self.assertFault(self.deps(1000, '--bogus'), 'tools/deps',
                         "unknown argument '--bogus'", status=2)


class FakeTreeCase(FaultCase):
    """Fixtures: fake linux-source-6.1 and -6.12 tarballs, patches of the
    6.1 tree, a fake kunit/, dpkg-query stubs; build/ in a temporary
    directory."""

    @classmethod
    def setUpClass(cls):
        cls.fix = Path(tempfile.mkdtemp(prefix='gpk-fix-'))
        f = cls.fix
        make_tarball(f, f / 'usr-src' / 'linux-source-6.1.tar.xz', '6.1.192')
        make_tarball(f, f / 'usr-src' / 'linux-source-6.12.tar.xz',
                     '6.12.9', name='linux-source-6.12')
        make_tarball(f, f / 'src-mk' / 'linux-source-6.1.tar.xz', '6.12.3')
        cls.good, cls.bad_patch, cls.names = make_patches(f)
        cls.prepared = None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.fix)

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-prep-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.build = self.tmp / 'build'
        self.tree = self.build / TREE / 'linux'
        self.stubs = self.tmp / 'stubs'
        self.stubs.mkdir()
        write_exe(self.stubs / 'dpkg-query', DPKG_QUERY_TREE)
        self.installed(self.fix / 'usr-src' / 'linux-source-6.1.tar.xz')
        self.patches = self.tmp / 'patches'
        shutil.copytree(self.good, self.patches / TREE)
        self.kunit = make_kunit(self.tmp / 'kunit')
        self.src_dir = self.fix

    def installed(self, tarball, version='6.1.192-1', pkg=PKG):
        install(self.stubs, pkg, tarball, version)

    def prepare(self, *args):
        env = clean_env(PATH='%s:%s' % (self.stubs, os.environ['PATH']),
                        GPK_BUILD=self.build, GPK_RESULTS=self.tmp / 'res',
                        GPK_SRC_DIR=self.src_dir, GPK_PATCHES=self.patches,
                        GPK_KUNIT=self.kunit)
        if not any(a.startswith('--tree') for a in args):
            args = ('--tree', TREE) + args
        return run_tool([sys.executable, PREPARE] + list(args), env)

    def state(self, tree=None):
        tree = tree or self.tree
        return json.loads((tree / '.git' / 'gup-pin-kunit.json').read_text())

    def head(self):
        return git(self.tree, 'rev-parse', 'HEAD')

    def subject(self, rev='HEAD'):
        return git(self.tree, 'log', '-1', '--format=%s', rev)

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
        self.assertEqual(list(self.build.glob('*/linux.unpack-*')), [])

    def good_run(self):
        out = self.assertGood(self.prepare())
        self.assertIn('2 patches, 1 harness files, 3 test sources updated',
                      out)
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
            shutil.copytree(cls.prepared, self.build, symlinks=True,
                            dirs_exist_ok=True)



class Checkout(unittest.TestCase):
    """prepare_tree.checkout(): a worktree of the tree's HEAD plus the
    kernel sources, kept up to date without rewriting what is current."""

    def setUp(self):
        import fakes
        from unittest import mock
        self.pt = fakes.load_tool('prepare_tree')
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-checkout-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.linux = self.tmp / 'linux'
        (self.linux / 'mm').mkdir(parents=True)
        (self.linux / 'mm' / 'gup.c').write_text('int a;\n')
        git(self.linux, 'init', '-q')
        git(self.linux, 'add', '-A')
        git(self.linux, 'commit', '-q', '-m', 'base')
        self.kunit = self.tmp / 'kunit'
        self.kunit.mkdir()
        (self.kunit / 't.c').write_text('test 1\n')
        self.srcs = {'mm/gup_kunit.c': str(self.kunit / 't.c')}
        self.tree = mock.Mock(linux=str(self.linux))
        patcher = mock.patch.object(self.pt, 'kernel_sources',
                                    lambda tree: dict(self.srcs))
        patcher.start()
        self.addCleanup(patcher.stop)
        self.co = self.tmp / 'linux-debug'

    def test_head_and_the_sources_but_not_a_mutant_in_the_tree(self):
        (self.linux / 'mm' / 'gup.c').write_text('int mutant;\n')
        self.assertEqual(self.pt.checkout(self.tree, str(self.co)),
                         str(self.co))
        self.assertEqual((self.co / 'mm' / 'gup.c').read_text(), 'int a;\n')
        self.assertEqual((self.co / 'mm' / 'gup_kunit.c').read_text(),
                         'test 1\n')

    def test_an_update_writes_only_what_changed(self):
        self.pt.checkout(self.tree, str(self.co))
        (self.co / 'mm' / 'gup.c').write_text('int stray;\n')
        old = self.co / 'mm' / 'old_kunit.c'
        old.write_text('gone\n')
        (self.linux / 'mm' / 'gup.c').write_text('int b;\n')
        git(self.linux, 'commit', '-q', '-am', 'next')
        test = self.co / 'mm' / 'gup_kunit.c'
        os.utime(test, (1, 1))
        self.pt.checkout(self.tree, str(self.co))
        self.assertEqual((self.co / 'mm' / 'gup.c').read_text(), 'int b;\n')
        self.assertFalse(old.exists())
        self.assertEqual(test.stat().st_mtime, 1)
        (self.kunit / 't.c').write_text('test 2\n')
        self.pt.checkout(self.tree, str(self.co))
        self.assertEqual(test.read_text(), 'test 2\n')

    def test_a_checkout_of_a_tree_made_again_is_made_again(self):
        self.pt.checkout(self.tree, str(self.co))
        shutil.rmtree(self.linux / '.git')
        git(self.linux, 'init', '-q')
        git(self.linux, 'add', '-A')
        git(self.linux, 'commit', '-q', '-m', 'unpacked again')
        self.pt.checkout(self.tree, str(self.co))
        self.assertEqual(git(self.co, 'log', '--format=%s', '-1'),
                         'unpacked again')


class HarnessLines(unittest.TestCase):
    """Where the harness's obj- lines go in a Makefile of the series."""

    def setUp(self):
        import fakes
        self.pt = fakes.load_tool('prepare_tree')

    def test_before_the_series_suites_and_their_comment(self):
        text = ('obj-y += gup.o\n# final last\n'
                'obj-$(CONFIG_GUP_KUNIT_TEST) += gup_kunit.o \\\n'
                '\t\t\t\tgup_kunit_final.o\nobj-y += z.o\n')
        got = self.pt.with_harness_lines(text, ['H1', 'H2'])
        self.assertEqual(got, 'obj-y += gup.o\nH1\nH2\n# final last\n'
                         'obj-$(CONFIG_GUP_KUNIT_TEST) += gup_kunit.o \\\n'
                         '\t\t\t\tgup_kunit_final.o\nobj-y += z.o\n')
        self.assertEqual(self.pt.with_harness_lines(got, ['H1', 'H2']), got)

    def test_at_the_end_without_series_suites(self):
        self.assertEqual(self.pt.with_harness_lines('obj-y += gup.o', ['H']),
                         'obj-y += gup.o\nH\n')
        self.assertEqual(self.pt.with_harness_lines('', ['H']), 'H\n')


class PrepareTreeFaults(FakeTreeCase):
    # good path -----------------------------------------------------------
    def test_good_path_is_incremental(self):
        out = self.good_run()
        self.assertIn('unpacking', out)
        self.assertIn('(kernel 6.1.192)', out)
        self.assertTrue(out.startswith('prepare_tree: 6.1: '), out)
        st = self.state()
        self.assertEqual(st['kernelversion'], '6.1.192')
        self.assertEqual(st['tree'], TREE)
        self.assertEqual(git(self.tree, 'rev-list', '--count',
                             'pristine..HEAD'), '3')
        self.assertIn('#include "gup_kunit.c"',
                      (self.tree / 'mm' / 'gup.c').read_text())
        # kunit/common/**, kunit/6.1/*/** and kunit/harness/** are copied;
        # kunit/6.1/kunitconfig, pin-core, mutants/, suites are not.
        self.assertEqual((self.tree / 'mm' / 'gup_kunit.c').read_text(),
                         '/* tests */\n')
        self.assertTrue((self.tree / 'mm' / 'gup_kunit_61.h').exists())
        self.assertTrue((self.tree / 'mm' / 'gup_kunit_harness.c').exists())
        for name in ('mutants', 'suites', 'kunitconfig', 'pin-core',
                     'common', 'harness', TREE, 'trees'):
            self.assertFalse((self.tree / name).exists(), name)
        self.assertEqual(sorted(st['synced']),
                         ['mm/gup_kunit.c', 'mm/gup_kunit_61.h',
                          'mm/gup_kunit_harness.c'])
        self.assertNoLeftovers()

        again = self.assertGood(self.prepare())
        self.assertIn('2 patches, 1 harness files, 0 test sources updated',
                      again)
        self.assertNotIn('unpacking', again)
        self.assertNotIn('applying', again)
        self.assertEqual(self.state()['base'], st['base'])
        self.assertEqual(self.head(), st['head'])

    def test_harness_commit(self):
        """After git am, one generated commit builds the harness sources;
        the state keeps series_head (after git am) and head (after it)."""
        self.prepared_tree()
        st = self.state()
        self.assertEqual(st['head'], self.head())
        self.assertEqual(st['series_head'], git(self.tree, 'rev-parse',
                                                'HEAD^'))
        self.assertEqual(self.subject(), HARNESS_SUBJECT)
        self.assertEqual(self.subject('HEAD^'), 'mm: GUP_KUNIT option')
        self.assertEqual(st['harness'], ['mm/gup_kunit_harness.c'])
        self.assertEqual(git(self.tree, 'diff', '--name-only', 'HEAD^',
                             'HEAD'), 'mm/Makefile')
        self.assertEqual((self.tree / 'mm' / 'Makefile').read_text(),
                         'obj-y += gup.o\n%s\n' % HARNESS_LINE)
        self.assertEqual(git(self.tree, 'rev-parse', '--abbrev-ref', 'HEAD'),
                         'series')
        # Reproducible: a fresh tree gets the same harness commit (its
        # parent, made by git am, carries the time of the am).
        fmt = '--format=%an <%ae> %ad %cn <%ce> %cd %T%n%B'
        first = git(self.tree, 'log', '-1', fmt)
        self.assertIn('gup-pin-kunit <gup-pin-kunit@localhost>', first)
        shutil.rmtree(self.build)
        self.good_run()
        self.assertEqual(git(self.tree, 'log', '-1', fmt), first)

    def test_harness_files_added_and_removed(self):
        self.prepared_tree()
        series_head = self.state()['series_head']
        extra = self.kunit / 'harness' / 'lib' / 'gup_selftest.c'
        extra.parent.mkdir()
        extra.write_text('/* self-test */\n')
        # lib/ has no Makefile in the fake tree: one line, nothing changed.
        self.assertFault(self.prepare(), 'prepare_tree',
                         'kunit/harness/lib/gup_selftest.c',
                         'tree 6.1 has no lib/Makefile')
        extra.unlink()
        extra = self.kunit / 'harness' / 'mm' / 'gup_selftest.c'
        extra.write_text('/* self-test */\n')
        out = self.assertGood(self.prepare())
        self.assertIn('2 patches, 2 harness files', out)
        self.assertNotIn('applying', out)
        self.assertEqual(self.subject(), 'gup-pin-kunit harness: build '
                         'mm/gup_kunit_harness.c, mm/gup_selftest.c (not '
                         'for upstream)')
        self.assertEqual(git(self.tree, 'rev-parse', 'HEAD^'), series_head)
        self.assertTrue((self.tree / 'mm' / 'Makefile').read_text()
                        .endswith('gup_kunit_harness.o\nobj-$(CONFIG_GUP_'
                                  'KUNIT_TEST) += gup_selftest.o\n'))
        # No harness files: no harness commit; the copies go too.
        shutil.rmtree(self.kunit / 'harness')
        out = self.assertGood(self.prepare())
        self.assertIn('2 patches, 0 harness files', out)
        self.assertEqual(self.head(), series_head)
        self.assertEqual(self.state()['head'], series_head)
        self.assertEqual(self.state()['harness'], [])
        self.assertFalse((self.tree / 'mm' / 'gup_kunit_harness.c').exists())
        self.assertEqual((self.tree / 'mm' / 'Makefile').read_text(),
                         'obj-y += gup.o\n')

    def test_killed_while_making_the_harness_commit_recovers(self):
        self.prepared_tree()
        st = self.state()
        good = self.head()
        # Killed after git commit, before the state was saved: HEAD is the
        # harness commit, the state says the commit is under way.
        st['harness'] = None
        st['head'] = st['series_head']
        (self.tree / '.git' / 'gup-pin-kunit.json').write_text(json.dumps(st))
        self.assertGood(self.prepare())
        self.assertEqual(self.head(), good)
        # Killed after writing mm/Makefile, before git commit.
        git(self.tree, 'reset', '-q', '--hard', st['series_head'])
        with open(self.tree / 'mm' / 'Makefile', 'a') as f:
            f.write(HARNESS_LINE + '\n')
        (self.tree / '.git' / 'gup-pin-kunit.json').write_text(json.dumps(st))
        self.assertGood(self.prepare())
        self.assertEqual(self.head(), good)

    def test_killed_git_leaves_a_lock_that_the_next_run_removes(self):
        self.prepared_tree()
        good = self.head()
        (self.tree / '.git' / 'index.lock').write_text('')
        self.assertGood(self.prepare())
        self.assertEqual(self.head(), good)
        self.assertFalse((self.tree / '.git' / 'index.lock').exists())

    def test_old_state_without_series_head(self):
        """A state of the single-tree layout (no series_head, no harness
        key, no harness commit) is brought up to date without git am."""
        self.prepared_tree()
        st = self.state()
        git(self.tree, 'reset', '-q', '--hard', st['series_head'])
        st['head'] = st.pop('series_head')
        del st['harness']
        del st['tree']
        (self.tree / '.git' / 'gup-pin-kunit.json').write_text(json.dumps(st))
        out = self.assertGood(self.prepare())
        self.assertNotIn('applying', out)
        self.assertEqual(self.subject(), HARNESS_SUBJECT)
        self.assertEqual(self.state()['series_head'], st['head'])

    def test_two_trees_one_line_each(self):
        self.installed(self.fix / 'usr-src' / 'linux-source-6.12.tar.xz',
                       '6.12.9-1', 'linux-source-6.12')
        proc = self.prepare('--tree', 'all')
        out = self.assertGood(proc).splitlines()
        done = [ln for ln in out if 'test sources updated' in ln]
        self.assertEqual(len(done), 2, out)
        self.assertTrue(done[0].startswith('prepare_tree: 6.1: '))
        self.assertTrue(done[1].startswith('prepare_tree: 6.12: '))
        # 6.12 has no patches/6.12/series: an empty series, then the
        # harness commit on the pristine base; no 6.1-only sources.
        self.assertIn('0 patches, 1 harness files, 2 test sources', done[1])
        t612 = self.build / '6.12' / 'linux'
        self.assertEqual(git(t612, 'rev-list', '--count', 'pristine..HEAD'),
                         '1')
        self.assertEqual(self.state(t612)['kernelversion'], '6.12.9')
        self.assertFalse((t612 / 'mm' / 'gup_kunit_61.h').exists())

    def test_one_tree_failing_does_not_stop_the_others(self):
        proc = self.prepare('--tree', '6.1', '--tree', '6.12')
        self.assertFault(proc, 'prepare_tree',
                         'package linux-source-6.12 (tree 6.12) is not '
                         'installed')
        self.assertIn('prepare_tree: 6.1: ', proc.stdout)

    def test_unknown_tree(self):
        proc = self.prepare('--tree', '6.2')
        line = self.assertFault(proc, 'prepare_tree', status=2)
        self.assertEqual(line, "prepare_tree: unknown tree '6.2'; known "
                         "trees: 6.1, 6.12")
        self.assertFalse(self.build.exists())

    def test_same_path_from_two_roots(self):
        dup = self.kunit / '6.1' / 'mm' / 'gup_kunit.c'
        dup.write_text('/* 6.1 copy */\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         'mm/gup_kunit.c comes from both',
                         'kunit/common/mm/gup_kunit.c', str(dup))

    # the package and its tarball -----------------------------------------
    def test_package_not_installed(self):
        uninstall(self.stubs, PKG)
        self.assertFault(self.prepare(), 'prepare_tree',
                         'package %s (tree 6.1) is not installed' % PKG,
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

    def test_tarball_of_another_tree_by_name(self):
        self.installed(self.fix / 'usr-src' / 'linux-source-6.12.tar.xz')
        self.assertFault(self.prepare(), 'prepare_tree',
                         'linux-source-6.12.tar.xz is not of tree 6.1')
        self.assertFalse(self.tree.exists())

    def test_tarball_of_another_tree_by_makefile(self):
        self.installed(self.fix / 'src-mk' / 'linux-source-6.1.tar.xz')
        line = self.assertFault(self.prepare(), 'prepare_tree',
                                'holds kernel 6.12.3, expected 6.1.y')
        self.assertEqual(line.count('prepare_tree:'), 1)
        self.assertFalse(self.tree.exists())
        self.assertNoLeftovers()

    # the series ------------------------------------------------------------
    def test_patch_that_does_not_apply(self):
        self.prepared_tree()
        shutil.copy(self.bad_patch, self.patches / TREE)
        (self.patches / TREE / 'series').write_text(
            '%s\n%s\n' % (self.names[0], self.bad_patch.name))
        line = self.assertFault(self.prepare(), 'prepare_tree',
                                self.bad_patch.name,
                                'does not apply to tree 6.1')
        self.assertNotIn(self.names[0], line)
        self.assertPristine()
        self.assertEqual(self.state()['head'], self.state()['base'])
        # Fixing the series is enough: the next run applies it.
        (self.patches / TREE / 'series').write_text(
            '\n'.join(self.names) + '\n')
        out = self.assertGood(self.prepare())
        self.assertIn('applying 2 patches', out)
        self.assertEqual(git(self.tree, 'rev-list', '--count',
                             'pristine..HEAD'), '3')

    def test_series_names_a_missing_patch(self):
        (self.patches / TREE / 'series').write_text('0009-none.patch\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         '6.1/series names 0009-none.patch')

    # local edits -------------------------------------------------------
    def test_local_edit_of_a_tracked_file_is_refused(self):
        self.prepared_tree()
        gup = self.tree / 'mm' / 'gup.c'
        edited = gup.read_text() + '/* mine */\n'
        gup.write_text(edited)
        self.assertFault(self.prepare(), 'prepare_tree',
                         'local changes (mm/gup.c)',
                         'git -C %s reset --hard' % self.tree)
        self.assertEqual(gup.read_text(), edited)
        # The same when the series changed and would be re-applied.
        (self.patches / TREE / 'series').write_text(self.names[0] + '\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         'local changes (mm/gup.c)', 'reset --hard')
        self.assertEqual(gup.read_text(), edited)
        # ... and when the harness commit would be made again.
        (self.kunit / 'harness' / 'mm' / 'gup_kunit_harness.c').unlink()
        self.assertFault(self.prepare(), 'prepare_tree',
                         'local changes (mm/gup.c)', 'reset --hard')
        self.assertEqual(gup.read_text(), edited)

    def test_local_commit_is_refused(self):
        self.prepared_tree()
        ours = self.head()
        (self.tree / 'mm' / 'Kconfig').write_text('mine\n')
        git(self.tree, 'commit', '-q', '-am', 'mine')
        mine = self.head()
        (self.patches / TREE / 'series').write_text(self.names[0] + '\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         'HEAD moved to %s' % mine[:12],
                         'git -C %s reset --hard %s' % (self.tree, ours[:12]))
        self.assertEqual(self.head(), mine)

    def test_edited_tree_copy_of_a_test_source_is_refused(self):
        self.prepared_tree()
        copy = self.tree / 'mm' / 'gup_kunit.c'
        copy.write_text('/* edited in the tree */\n')
        self.assertFault(self.prepare(), 'prepare_tree',
                         '%s was edited in the tree' % copy,
                         'edit %s instead'
                         % (self.kunit / 'common' / 'mm' / 'gup_kunit.c'))
        self.assertEqual(copy.read_text(), '/* edited in the tree */\n')

    # interrupted runs --------------------------------------------------
    def test_interrupted_unpack_recovers(self):
        junk = self.build / TREE / 'linux.unpack-x1y2z3'
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
        st['head'] = st['series_head'] = st['base']
        st['harness'] = None
        (self.tree / '.git' / 'gup-pin-kunit.json').write_text(json.dumps(st))
        git(self.tree, 'reset', '-q', '--hard', st['base'])
        git(self.tree, 'am', '-q', str(self.patches / TREE / self.names[0]))
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
        st['head'] = st['series_head'] = st['base']
        st['harness'] = None
        (self.tree / '.git' / 'gup-pin-kunit.json').write_text(json.dumps(st))
        git(self.tree, 'reset', '-q', '--hard', st['base'])
        git(self.tree, 'am', '-q', str(self.patches / TREE / self.names[0]))
        out = self.assertGood(self.prepare())
        self.assertIn('applying 2 patches', out)
        self.assertEqual(git(self.tree, 'rev-list', '--count',
                             'pristine..HEAD'), '3')

    # the layout of the single-tree version -------------------------------
    def old_layout(self):
        """build/ as the single-tree version left it: build/linux and the
        build directories next to it, a stale worktree registered."""
        self.prepared_tree()
        old = self.build / 'linux'
        os.rename(self.tree, old)
        shutil.rmtree(self.build / TREE)
        for name in ('kunit-x86_64', 'w1-x86_64', 'gcov-x86_64'):
            (self.build / name).mkdir()
            (self.build / name / '.config').write_text(name)
        git(old, 'worktree', 'add', '-q', '--detach',
            str(self.build / 'am-check'), 'pristine')
        shutil.rmtree(self.build / 'am-check')
        return old

    def test_old_build_linux_is_moved_into_place(self):
        old = self.old_layout()
        out = self.assertGood(self.prepare()).splitlines()
        self.assertEqual(out[0], 'prepare_tree: moved %s (linux-source-6.1) '
                         'and its build directories of the single-tree '
                         'layout to %s/' % (old, self.build / TREE))
        self.assertNotIn('unpacking', '\n'.join(out))
        self.assertNotIn('applying', '\n'.join(out))
        self.assertFalse(old.exists())
        self.assertTrue((self.tree / '.git').is_dir())
        for name in ('kunit-x86_64', 'w1-x86_64', 'gcov-x86_64'):
            self.assertFalse((self.build / name).exists())
            self.assertEqual((self.build / TREE / name / '.config')
                             .read_text(), name)
        self.assertFalse((self.build / TREE / 'kunit-debug-x86_64').exists())
        self.assertEqual(len(git(self.tree, 'worktree', 'list')
                             .splitlines()), 1)
        # Once moved, nothing more is said.
        again = self.assertGood(self.prepare())
        self.assertNotIn('single-tree', again)

    def test_old_build_linux_that_cannot_be_moved_is_left(self):
        old = self.old_layout()
        self.prepared_tree()            # build/6.1/linux exists already
        proc = self.prepare()
        out = self.assertGood(proc).splitlines()
        self.assertEqual(out[0], 'prepare_tree: ignoring %s of the '
                         'single-tree layout (%s already exists); remove it '
                         'with: rm -rf %s %s %s %s'
                         % (old, self.tree, old, self.build / 'kunit-x86_64',
                            self.build / 'gcov-x86_64',
                            self.build / 'w1-x86_64'))
        self.assertTrue(old.is_dir())
        # A tree of no known package: the same, and the run carries on.
        shutil.rmtree(self.build / TREE)
        st = self.state(old)
        st['package'] = 'linux-source-5.10'
        (old / '.git' / 'gup-pin-kunit.json').write_text(json.dumps(st))
        out = self.assertGood(self.prepare()).splitlines()
        self.assertIn('(its package linux-source-5.10 is no tree of %s)'
                      % (self.kunit / 'trees'), out[0])
        self.assertTrue(old.is_dir())
        self.assertIn('unpacking', out[1])


class CheckTrees(FakeTreeCase):
    """make check on two fake trees, with the steps that need no kernel
    build: each step names its tree, a tree without a ci-subset skips its
    mutants in one line, the counts are summed into the last line."""

    def check(self, *args):
        install(self.stubs, 'linux-source-6.12',
                self.fix / 'usr-src' / 'linux-source-6.12.tar.xz', '6.12.9-1')
        env = clean_env(PATH='%s:%s' % (self.stubs, os.environ['PATH']),
                        GPK_BUILD=self.build, GPK_RESULTS=self.tmp / 'res',
                        GPK_SRC_DIR=self.src_dir, GPK_PATCHES=self.patches,
                        GPK_KUNIT=self.kunit)
        skip = []
        for step in ('tools', 'mypy', 'kunit', 'reviewer', 'w1', 'matrix',
                     'debug', 'coverage', 'audit', 'kcsan'):
            skip += ['--skip', step]
        return run_tool([sys.executable, TOOLS / 'check.py'] + skip +
                        list(args), env, timeout=120)

    def test_steps_per_tree(self):
        proc = self.check()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        out = proc.stdout.splitlines()
        self.assertEqual(out[-1], '11 passed, 0 failed, 0 skipped')
        for line in ('check: tree 6.1 (linux-source-6.1)',
                     'apply 6.1: 2 patches on the pristine base of '
                     'linux-source-6.1 6.1.192-1 (an index, no checkout)',
                     'checkpatch 6.1: 5 files',
                     'mutants 6.1: skipped: no %s'
                     % (self.kunit / 'mutants' / '6.1' / 'ci-subset'),
                     'check: tree 6.12 (linux-source-6.12)',
                     'apply 6.12: 0 patches on the pristine base of '
                     'linux-source-6.12 6.12.9-1 (an index, no checkout)',
                     'checkpatch 6.12: 2 files',
                     'mutants 6.12: skipped: no %s'
                     % (self.kunit / 'mutants' / '6.12' / 'ci-subset'),
                     'genmut 6.1: skipped: no %s'
                     % (self.kunit / 'mutants' / '6.1' /
                        'generated-equivalent')):
            self.assertIn(line, out)
        self.assertEqual((self.tmp / 'res' / 'check-summary.txt').read_text(),
                         '11 passed, 0 failed, 0 skipped\n')
        # The kunit step did not run: no combined results.
        self.assertFalse((self.tmp / 'res' / 'summary.json').exists())

    def test_a_failure_names_its_tree(self):
        (self.kunit / '6.1' / 'mm' / 'gup_kunit_61.h').write_text(
            '/* checkpatch-error */\n')
        proc = self.check('--tree', '6.1', '--skip', 'mutants')
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout.splitlines()[-1],
                         '7 passed, 1 failed, 0 skipped')
        self.assertIn('FAILED checkpatch 6.1: %s: 1 issues, first: '
                      % (self.kunit / '6.1' / 'mm' / 'gup_kunit_61.h'),
                      proc.stdout)
        self.assertNotIn('tree 6.12', proc.stdout)


class RunSuiteFaults(FaultCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-run-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.build = self.tmp / 'build'
        self.bin = self.tmp / 'bin'
        self.bin.mkdir()
        self.kunit = make_kunit(self.tmp / 'kunit')

    def run_suite(self, results, *args):
        # PATH holds only the stubs: no qemu, no git, no make, no dpkg.
        env = clean_env(PATH=self.bin, GPK_BUILD=self.build,
                        GPK_RESULTS=results, GPK_KUNIT=self.kunit)
        return run_tool([sys.executable, RUN_SUITE] + list(args), env)

    def test_qemu_missing_stops_before_any_build(self):
        self.assertFault(self.run_suite(self.tmp / 'res'), 'run_suite',
                         'run_suite: qemu-system-x86_64 not found; ',
                         'tools/deps')
        self.assertEqual(os.listdir(self.build), ['.lock'])
        self.assertFalse((self.tmp / 'res').exists())

    def test_results_dir_not_writable(self):
        write_exe(self.bin / 'qemu-system-x86_64', '#!/bin/sh\nexit 0\n')
        blocker = self.tmp / 'a-file'
        blocker.write_text('')
        res = blocker / 'results'
        proc = self.run_suite(res, '--tree', '6.1')
        self.assertFault(proc, 'run_suite', 'run_suite: results directory '
                         '%s is not writable' % res, 'Not a directory')
        self.assertFalse((self.build / '6.1').exists())
        # A tree's own results directory: that tree fails, in one line.
        proc = self.run_suite(self.tmp / 'res', '--tree', '6.1',
                              '--results', str(res / '{tree}'))
        self.assertFault(proc, 'run_suite', 'run_suite: 6.1: results '
                         'directory %s is not writable' % (res / '6.1'),
                         'Not a directory')
        self.assertEqual(proc.stdout.splitlines()[-1],
                         '0 passed, 1 failed, 0 skipped')
        self.assertFalse((self.build / '6.1').exists())

    def test_unknown_tree(self):
        proc = self.run_suite(self.tmp / 'res', '--tree', '6.2')
        line = self.assertFault(proc, 'run_suite', status=2)
        self.assertEqual(line, "run_suite: unknown tree '6.2'; known trees: "
                         "6.1, 6.12")
        self.assertFalse(self.build.exists())

    def test_several_trees_need_a_results_pattern(self):
        self.assertFault(self.run_suite(self.tmp / 'res', '--results',
                                        str(self.tmp / 'r')),
                         'run_suite', '--results %s: with several trees it '
                         'must name {tree}' % (self.tmp / 'r'), status=2)


class UnknownTreeEverywhere(FaultCase):
    """Every tool refuses an unknown tree in one line, exit status 2,
    before it takes the lock or touches anything."""

    def test_every_tool(self):
        tmp = Path(tempfile.mkdtemp(prefix='gpk-tree-'))
        self.addCleanup(shutil.rmtree, tmp)
        env = clean_env(GPK_BUILD=tmp / 'build', GPK_RESULTS=tmp / 'res',
                        GPK_KUNIT=make_kunit(tmp / 'kunit'))
        for tool in ('prepare_tree', 'run_suite', 'check', 'mutate',
                     'coverage', 'repeat', 'export_series'):
            with self.subTest(tool=tool):
                proc = run_tool([sys.executable, TOOLS / (tool + '.py'),
                                 '--tree', '6.1', '--tree', '6.2'], env)
                line = self.assertFault(proc, tool, status=2)
                self.assertEqual(line, "%s: unknown tree '6.2'; known "
                                 "trees: 6.1, 6.12" % tool)
        self.assertFalse((tmp / 'build').exists())
        self.assertFalse((tmp / 'res').exists())


# A kunit.py stand-in: it logs its verb, then does what the file "mode"
# next to it says. 'pass': `build` succeeds, `exec` puts the file "ktap"
# next to it into BUILD_DIR/test.log (the console) and writes --json.
KUNIT_STUB = r'''#!/usr/bin/env python3
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, 'calls'), 'a') as f:
    f.write(' '.join(sys.argv[1:2]) + '\n')
mode = open(os.path.join(here, 'mode')).read().strip()
opts = dict(a[2:].split('=', 1) for a in sys.argv[2:]
            if a.startswith('--') and '=' in a)
if mode == 'pass':
    if sys.argv[1] == 'exec':
        ktap = open(os.path.join(here, 'ktap')).read()
        with open(os.path.join(opts['build_dir'], 'test.log'), 'w') as f:
            f.write(ktap)
        with open(opts['json'], 'w') as f:
            f.write('{}')
        print('Testing complete.')
        sys.exit(1 if 'not ok' in ktap else 0)
    os.makedirs(opts['build_dir'], exist_ok=True)
    print('kunitconfig: ' + ' '.join(v for k, v in
                                      ((a[2:].split('=', 1))
                                       for a in sys.argv[2:]
                                       if a.startswith('--kunitconfig='))))
elif mode == 'hang':
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

KTAP = """KTAP version 1
1..1
    KTAP version 1
    # Subtest: gup_pin
    1..2
{warn}    ok 1 pin_adds_bias
    {second} 2 unpin_drops_bias
# gup_pin: pass:1 fail:0 skip:0 total:2
{suite} 1 gup_pin
"""


def stub_tree(build, tree, mode='pass', ktap=''):
    """build/TREE/linux prepared, as far as --no-prepare looks: a state
    and a kunit.py stand-in; return the stand-in's directory."""
    linux = build / tree / 'linux'
    (linux / '.git').mkdir(parents=True)
    (linux / '.git' / 'gup-pin-kunit.json').write_text(json.dumps({
        'tree': tree, 'package': 'linux-source-' + tree,
        'version': tree + '.0-stub', 'kernelversion': tree + '.0',
        'head': '0', 'series_head': '0', 'base': '0', 'harness': []}))
    kunit = linux / 'tools' / 'testing' / 'kunit'
    kunit.mkdir(parents=True)
    write_exe(kunit / 'kunit.py', KUNIT_STUB)
    (kunit / 'mode').write_text(mode)
    (kunit / 'ktap').write_text(ktap)
    return kunit


class RunSuiteTrees(FaultCase):
    """make test on two trees with a kunit.py stand-in: a line per tree,
    the sum last, results/TREE/ and the combined results/junit.xml and
    results/summary.json."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-trees-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.build = self.tmp / 'build'
        self.res = self.tmp / 'res'
        self.kunit = make_kunit(self.tmp / 'kunit')
        # 6.1's first case WARNs, which kunit/6.1/expected-splats
        # declares; 6.12's second case fails.
        (self.kunit / '6.1' / 'expected-splats').write_text(
            'gup_pin.pin_adds_bias WARNING:\n')
        warn = 'WARNING: CPU: 0 PID: 1 at mm/gup.c:1 try_grab_folio\n'
        self.stubs = {
            '6.1': stub_tree(self.build, '6.1', ktap=KTAP.format(
                warn=warn, second='ok', suite='ok')),
            '6.12': stub_tree(self.build, '6.12', ktap=KTAP.format(
                warn='', second='not ok', suite='not ok'))}
        self.bin = self.tmp / 'bin'
        self.bin.mkdir()
        write_exe(self.bin / 'qemu-system-x86_64', '#!/bin/sh\nexit 0\n')
        self.env = clean_env(PATH='%s:%s' % (self.bin, os.path.dirname(
            sys.executable)), GPK_BUILD=self.build, GPK_RESULTS=self.res,
            GPK_KUNIT=self.kunit)

    def run_suite(self, *args):
        return run_tool([sys.executable, RUN_SUITE, '--no-prepare'] +
                        list(args), self.env)

    def test_two_trees_sum_and_combined_results(self):
        proc = self.run_suite()
        self.assertNotIn('Traceback', proc.stdout + proc.stderr)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        out = proc.stdout.splitlines()
        self.assertEqual(out[-1], '3 passed, 1 failed, 0 skipped')
        trees = [ln for ln in out if ln.startswith('run_suite: 6.')
                 and 'passed' in ln]
        self.assertEqual(len(trees), 2, out)
        self.assertTrue(trees[0].startswith('run_suite: 6.1: 2 passed, 0 '
                                            'failed, 0 skipped (kernel 6.1.0'))
        self.assertTrue(trees[1].startswith('run_suite: 6.12: 1 passed, 1 '
                                            'failed, 0 skipped'))
        self.assertIn('FAILED gup_pin.unpin_drops_bias', proc.stdout)
        for tree in ('6.1', '6.12'):
            for name in ('kunit.log', 'kunit.ktap', 'kunit.json',
                         'junit.xml', 'summary.json', 'meta.json',
                         'build.log'):
                self.assertTrue((self.res / tree / name).exists(), name)
            meta = json.loads((self.res / tree / 'meta.json').read_text())
            self.assertEqual(meta['tree'], tree)
        # The series' mm/tests/.kunitconfig, then the project's additions.
        for tree in ('6.1', '6.12'):
            self.assertIn('kunitconfig: mm/tests %s\n'
                          % (TOOLS.parent / 'kunitconfig'),
                          (self.res / tree / 'build.log').read_text())
        summary = json.loads((self.res / 'summary.json').read_text())
        self.assertEqual((summary['passed'], summary['failed'],
                          summary['skipped']), (3, 1, 0))
        self.assertEqual(list(summary['trees']), ['6.1', '6.12'])
        self.assertEqual(summary['trees']['6.12']['failed'], 1)
        junit = (self.res / 'junit.xml').read_text()
        self.assertIn('<testsuite name="6.1/gup_pin"', junit)
        self.assertIn('<testsuite name="6.12/gup_pin"', junit)

    def test_a_tree_splat_list_is_its_own(self):
        """kunit/6.1/expected-splats declares nothing for 6.12: the same
        WARNING fails 6.12's case."""
        (self.stubs['6.12'] / 'ktap').write_text(KTAP.format(
            warn='WARNING: CPU: 0 PID: 1 at mm/gup.c:1 x\n', second='ok',
            suite='ok'))
        proc = self.run_suite()
        self.assertEqual(proc.stdout.splitlines()[-1],
                         '3 passed, 1 failed, 0 skipped')
        self.assertIn('gup_pin.pin_adds_bias: unexpected console report',
                      proc.stdout)

    def test_one_tree_and_a_failing_build(self):
        (self.stubs['6.12'] / 'mode').write_text('fail')
        proc = self.run_suite('--tree', '6.12')
        self.assertFault(proc, 'run_suite', 'run_suite: 6.12: kernel build '
                         'failed', 'second build stops here')
        self.assertEqual(proc.stdout.splitlines()[-1],
                         '0 passed, 1 failed, 0 skipped')
        self.assertFalse((self.res / '6.1').exists())
        summary = json.loads((self.res / 'summary.json').read_text())
        self.assertEqual(list(summary['trees']), ['6.12'])
        self.assertIn('kernel build failed',
                      summary['trees']['6.12']['error'])
        self.assertIn('<testsuite name="6.12/&lt;tree&gt;"',
                      (self.res / 'junit.xml').read_text())

    def test_given_results_dir_writes_no_combined_files(self):
        proc = self.run_suite('--tree', '6.1', '--results',
                              str(self.tmp / 'one'))
        self.assertGood(proc)
        self.assertTrue((self.tmp / 'one' / 'summary.json').exists())
        self.assertFalse(self.res.exists())


class BuildFaults(FaultCase):
    """A build interrupted half way, and a disk that fills up, against a
    prepared tree whose kunit.py is a stand-in."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-build-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.build = self.tmp / 'build'
        self.kunit = stub_tree(self.build, TREE, mode='fail')
        self.bin = self.tmp / 'bin'
        self.bin.mkdir()
        write_exe(self.bin / 'qemu-system-x86_64', '#!/bin/sh\nexit 0\n')
        self.res = self.tmp / 'res'
        self.env = clean_env(PATH='%s:%s' % (self.bin, os.path.dirname(
            sys.executable)), GPK_BUILD=self.build, GPK_RESULTS=self.res,
            GPK_KUNIT=make_kunit(self.tmp / 'kunit'))
        self.cmd = [sys.executable, str(RUN_SUITE), '--no-prepare',
                    '--tree', TREE]

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
        # A shell's background job (nohup, 'cmd &') starts with SIGINT
        # ignored, and so would run_suite: give it the disposition of a
        # terminal's foreground job, which is what Ctrl-C reaches.
        proc = subprocess.Popen(self.cmd, env=self.env, text=True,
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                preexec_fn=default_sigint)
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
                         % (self.build / TREE / 'kunit-x86_64'),
                         'No space left on device')

    def test_disk_full_for_the_build_log(self):
        """results/ is on a full disk (build.log is /dev/full): the build
        is stopped and the one line names the log."""
        self.mode('hang')
        (self.res / TREE).mkdir(parents=True)
        (self.res / TREE / 'build.log').symlink_to('/dev/full')
        self.assertFault(run_tool(self.cmd, self.env), 'run_suite',
                         'cannot write %s' % (self.res / TREE / 'build.log'),
                         'No space left on device')
        pid = int((self.kunit / 'pid').read_text())
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)


class BuildLockFaults(FaultCase):
    def held_lock(self, wait):
        """(build dir, fd, env): build/.lock held by this process, and
        the environment of a tool that may wait `wait` seconds for it."""
        tmp = Path(tempfile.mkdtemp(prefix='gpk-lock-'))
        self.addCleanup(shutil.rmtree, tmp)
        build = tmp / 'build'
        build.mkdir()
        fd = os.open(build / '.lock', os.O_RDWR | os.O_CREAT, 0o644)
        self.addCleanup(os.close, fd)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        write_trees(tmp)
        env = clean_env(GPK_BUILD=build, GPK_RESULTS=tmp / 'res',
                        GPK_LOCK_WAIT=wait, GPK_SRC_DIR=tmp, GPK_KUNIT=tmp,
                        GPK_PATCHES=tmp)
        return build, fd, env

    def test_second_holder_gives_up(self):
        build, _fd, env = self.held_lock(1)
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

    def test_lock_held_by_a_parent_fails_at_once(self):
        # make check holds build/.lock and runs make test; if the nested
        # run_suite lost GPK_LOCK_HELD it must not wait for its own parent
        # (a CI run once waited out the whole GPK_LOCK_WAIT this way).
        _build, fd, env = self.held_lock(600)
        os.write(fd, b'%d\n' % os.getpid())
        res = run_tool([sys.executable, RUN_SUITE], env=env, timeout=30)
        self.assertFault(res, 'run_suite', 'build/.lock is held by pid %d'
                         % os.getpid(), 'waiting would never end')

    def test_a_released_lock_names_no_holder(self):
        # mutate.py releases the lock between two mutants; another run
        # then takes it and writes its pid a moment later. In between,
        # mutate.py must not read its own stale pid and stop (it did).
        tmp = Path(tempfile.mkdtemp(prefix='gpk-lock-'))
        self.addCleanup(shutil.rmtree, tmp)
        env = clean_env(GPK_BUILD=tmp / 'build', GPK_RESULTS=tmp / 'res',
                        GPK_SRC_DIR=tmp, GPK_KUNIT=tmp, GPK_PATCHES=tmp)
        write_trees(tmp)
        code = ('import sys; sys.path.insert(0, %r); import _common; '
                'lock = _common.BuildLock("t"); lock.__enter__(); '
                'print(open(_common.BUILD + "/.lock").read().strip()); '
                'lock.__exit__(None, None, None)' % str(TOOLS))
        res = run_tool([sys.executable, '-c', code], env=env, timeout=30)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertTrue(res.stdout.strip().isdigit(), res.stdout)
        self.assertEqual((tmp / 'build' / '.lock').read_text(), '')


if __name__ == '__main__':
    unittest.main()
