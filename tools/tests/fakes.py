"""Stand-ins shared by the tests that run the tools as programs: stub
commands, a fake linux-source tarball, fake patches and a fake kunit/.

Nothing here touches build/, results/ or the real package database: the
tools run against temporary directories (GPK_BUILD, GPK_RESULTS,
GPK_SRC_DIR, GPK_PATCHES, GPK_KUNIT) with stubs first on PATH.
"""

import atexit
import gzip
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent


KTAP_STORED = Path(__file__).resolve().parent / 'fixtures' / 'ktap'
_ktap_dir = []


def ktap_fixtures():
    """The directory of the real console logs of fixtures/ktap/, as the
    tools read them: they are stored gzipped (NAME.log.gz, whole and
    unedited) to keep the repository small, and unpacked once per
    process into a temporary directory, beside the other fixture files."""
    if not _ktap_dir:
        tmp = Path(tempfile.mkdtemp(prefix='gpk-ktap-'))
        atexit.register(shutil.rmtree, tmp, True)
        for path in KTAP_STORED.iterdir():
            if path.name.endswith('.gz'):
                with gzip.open(path, 'rb') as f:
                    (tmp / path.name[:-3]).write_bytes(f.read())
            else:
                shutil.copyfile(path, tmp / path.name)
        _ktap_dir.append(tmp)
    return _ktap_dir[0]


def load_tool(name):
    """The module of tools/NAME.py, loaded once for all the tests (the one
    sys.modules already has, if a tool or a test imported it first)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name,
                                                  TOOLS / (name + '.py'))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


HANG = 20          # seconds after which a tool counts as hung
GIT_ID = ['-c', 'user.name=t', '-c', 'user.email=t@localhost',
          '-c', 'commit.gpgsign=false']
TREES = (('6.1', 'linux-source-6.1'), ('6.12', 'linux-source-6.12'))
HARNESS_LINE = 'obj-$(CONFIG_GUP_KUNIT_TEST) += gup_kunit_harness.o'
# scripts/checkpatch.pl of the fake tree: a file whose text says
# "checkpatch-error" gets an ERROR, as --terse prints it.
CHECKPATCH = r'''#!/bin/sh
for f; do :; done
if grep -q checkpatch-error "$f"; then
	echo "$f:1: ERROR:FAKE: checkpatch-error found"
fi
exit 0
'''

# dpkg-query for prepare_tree: the answers live in files next to the stub,
# per package ('version-PKG' missing = PKG not installed; 'list-PKG' =
# output of -L PKG).
DPKG_QUERY_TREE = r'''#!/bin/sh
d=$(dirname "$0")
case "$1" in
-W)
	[ "$2" = '-f=${Version}' ] && [ -f "$d/version-$3" ] &&
		exec cat "$d/version-$3"
	exit 1 ;;
-L)
	[ -f "$d/list-$2" ] && exec cat "$d/list-$2"
	echo "dpkg-query: package '$2' is not installed" >&2
	exit 1 ;;
esac
exit 1
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
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('GPK_', 'GIT_CONFIG', 'SOURCE_DATE'))}
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


def write_trees(kunit, trees=TREES):
    kunit = Path(kunit)
    kunit.mkdir(parents=True, exist_ok=True)
    (kunit / 'trees').write_text(
        '# TREE PACKAGE\n' + ''.join('%s %s\n' % t for t in trees))


def make_kunit(kunit):
    """A kunit/ with a common source, a 6.1-only header, a harness source,
    per-tree configuration and harness configuration that are no
    sources."""
    kunit = Path(kunit)
    write_trees(kunit)
    files = {
        'common/mm/gup_kunit.c': '/* tests */\n',
        '6.1/mm/gup_kunit_61.h': '/* 6.1 only */\n',
        '6.1/kunitconfig': 'CONFIG_X=y\n',
        '6.1/pin-core': 'try_grab_page mm/gup.c\n',
        'harness/mm/gup_kunit_harness.c': '/* harness: gcov dump */\n',
        'mutants/6.1/001-x.patch': 'not for the tree\n',
        'suites': 'gup_pin\n',
        'expected-splats': '# none\n',
        'qemu_x86_64.py': '# qemu\n',
    }
    for rel, text in files.items():
        (kunit / rel).parent.mkdir(parents=True, exist_ok=True)
        (kunit / rel).write_text(text)
    return kunit


def make_source(top, version, extra=''):
    """A fake kernel tree: Makefile with `kernelversion`, mm/gup.c,
    mm/Kconfig, mm/Makefile and Debian's ignore-everything .gitignore."""
    (top / 'mm').mkdir(parents=True)
    (top / 'Makefile').write_text('kernelversion:\n\t@echo %s\n' % version)
    (top / 'mm' / 'gup.c').write_text(
        '/* gup */\nint a;\nint b;\nint c;\n' + extra)
    (top / 'mm' / 'Kconfig').write_text('config MMU\n\tbool\n')
    (top / 'mm' / 'Makefile').write_text('obj-y += gup.o\n')
    (top / 'scripts').mkdir()
    write_exe(top / 'scripts' / 'checkpatch.pl', CHECKPATCH)
    (top / '.gitignore').write_text('/*\n')


def make_tarball(workdir, dest, version, name='linux-source-6.1'):
    src = workdir / ('src-%s-%s' % (name, version))
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


def install(stubs, package, tarball, version):
    """Make the dpkg-query stub report package as installed."""
    stubs = Path(stubs)
    (stubs / ('version-' + package)).write_text(version + '\n')
    (stubs / ('list-' + package)).write_text(
        '/.\n/usr\n/usr/src\n%s\n/usr/share/doc/%s\n' % (tarball, package))


def uninstall(stubs, package):
    path = Path(stubs) / ('version-' + package)
    if path.exists():
        path.unlink()
