#!/usr/bin/env python3
"""Prepare build/linux: Debian's linux-source tarball + patches/ + kunit/.

Steps, each skipped when its inputs did not change:
  1. find the tarball that Debian's linux-source package installs (the
     version comes from dpkg, never from this file) and check its major
     version against --series (default 6.1);
  2. unpack it into build/linux as a git repository with one pristine base
     commit (Debian's .gitignore ignores every top-level path, so files are
     added with -f);
  3. apply patches/ (in the order of patches/series) with git am;
  4. copy the test sources under kunit/ (laid out as in the kernel tree) in
     place, writing only files whose content changed so that kbuild
     rebuilds only what changed.

State lives in build/linux/.git/gup-pin-kunit.json. Local edits to the
tree are refused, never overwritten.

Environment overrides (for tools/tests; the defaults are what `make` uses):
  GPK_SRC_DIR   where the package's tarball must lie (default /usr/src/)
  GPK_PATCHES   the series directory (default patches/)
  GPK_KUNIT     the test sources (default kunit/)
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (BuildLock, ROOT, STATE, TREE, ToolError,  # noqa: E402
                     die, run)

TOOL = 'prepare_tree'
PATCHES = os.environ.get('GPK_PATCHES', os.path.join(ROOT, 'patches'))
KUNIT = os.environ.get('GPK_KUNIT', os.path.join(ROOT, 'kunit'))
SRC_DIR = os.path.join(os.environ.get('GPK_SRC_DIR', '/usr/src/'), '')
# Entries of kunit/ that configure the harness instead of going into the tree.
KUNIT_NOT_TREE = ('mutants',)
GIT_ID = ['-c', 'user.name=gup-pin-kunit', '-c',
          'user.email=gup-pin-kunit@localhost', '-c', 'commit.gpgsign=false']


def dpkg_field(pkg, field):
    proc = run(['dpkg-query', '-W', '-f=${%s}' % field, pkg], check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.strip()


def find_tarball(series):
    """Return (package, version, tarball path) for linux-source-SERIES."""
    pkg = 'linux-source-%s' % series
    version = dpkg_field(pkg, 'Version')
    if not version:
        deps = dpkg_field('linux-source', 'Depends') or ''
        hint = (' (linux-source depends on %s)' % deps) if deps else ''
        raise ToolError('package %s is not installed%s; run tools/deps or '
                        'apt-get install %s' % (pkg, hint, pkg))
    files = run(['dpkg-query', '-L', pkg]).stdout.split()
    tars = [f for f in files if f.startswith(SRC_DIR) and
            f.endswith('.tar.xz')]
    if not tars:
        raise ToolError('package %s lists no %s*.tar.xz' % (pkg, SRC_DIR))
    tarball = tars[0]
    if not os.path.isfile(tarball):
        raise ToolError('linux-source tarball %s is missing (reinstall %s)'
                        % (tarball, pkg))
    base = os.path.basename(tarball)
    if base != 'linux-source-%s.tar.xz' % series:
        raise ToolError('tarball %s is not of series %s' % (base, series))
    return pkg, version, tarball


def load_state():
    try:
        with open(STATE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def save_state(state):
    tmp = STATE + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(tmp, STATE)


def git(*args, check=True, timeout=None):
    return run(['git', '-C', TREE] + GIT_ID + list(args), check=check,
               timeout=timeout)


def series_files():
    """Return the patch paths listed in patches/series, in order."""
    path = os.path.join(PATCHES, 'series')
    if not os.path.exists(path):
        return []
    names = []
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                names.append(line)
    out = []
    for name in names:
        p = os.path.join(PATCHES, name)
        if not os.path.isfile(p):
            raise ToolError('patches/series names %s, which does not exist'
                            % name)
        out.append(p)
    return out


def digest_files(paths):
    h = hashlib.sha256()
    for p in paths:
        h.update(os.path.basename(p).encode() + b'\0')
        with open(p, 'rb') as f:
            h.update(f.read())
    return h.hexdigest()


def file_sha(path):
    try:
        with open(path, 'rb') as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def kunit_sources():
    """Map tree-relative path -> source path for every file under kunit/."""
    out = {}
    for top in sorted(os.listdir(KUNIT)) if os.path.isdir(KUNIT) else []:
        full = os.path.join(KUNIT, top)
        if top in KUNIT_NOT_TREE or not os.path.isdir(full):
            continue
        for dirpath, _dirs, files in os.walk(full):
            for name in files:
                src = os.path.join(dirpath, name)
                out[os.path.relpath(src, KUNIT)] = src
    return out


def local_changes():
    """Return tracked files modified in build/linux, or [] if clean."""
    proc = git('status', '--porcelain', '--untracked-files=no')
    return [line[3:] for line in proc.stdout.splitlines() if line.strip()]


def unpack(pkg, version, tarball, series):
    """Unpack the tarball into a fresh git tree; return the state dict."""
    parent = os.path.dirname(TREE)
    os.makedirs(parent, exist_ok=True)
    # A run killed while unpacking leaves its temporary tree (GBs); we hold
    # the build/ lock, so any such directory is stale.
    for old in glob.glob(os.path.join(parent, 'linux.unpack-*')):
        shutil.rmtree(old, ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix='linux.unpack-', dir=parent)
    try:
        print('%s: unpacking %s (%s)' % (TOOL, tarball, version), flush=True)
        run(['tar', '-xJf', tarball, '-C', tmp, '--strip-components=1'])
        if not os.path.exists(os.path.join(tmp, 'Makefile')):
            raise ToolError('%s did not unpack to a kernel tree' % tarball)
        kver = run(['make', '-s', '-C', tmp, 'kernelversion']).stdout.strip()
        if kver.split('.')[:2] != series.split('.'):
            raise ToolError('tarball %s holds kernel %s, expected %s.y'
                            % (tarball, kver, series))
        gcmd = ['git', '-C', tmp] + GIT_ID
        run(gcmd + ['init', '-q', '-b', 'base'])
        run(gcmd + ['add', '-A', '-f', '.'], timeout=1800)
        env = dict(os.environ, GIT_AUTHOR_DATE='2000-01-01T00:00:00Z',
                   GIT_COMMITTER_DATE='2000-01-01T00:00:00Z')
        run(gcmd + ['commit', '-q', '-m',
                    'Pristine %s %s (%s)' % (pkg, version, kver)],
            env=env, timeout=1800)
        run(gcmd + ['tag', 'pristine'])
        base = run(gcmd + ['rev-parse', 'HEAD']).stdout.strip()
        if os.path.exists(TREE):
            shutil.rmtree(TREE)
        os.rename(tmp, TREE)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {'package': pkg, 'version': version, 'tarball': tarball,
            'tarball_stat': tarball_stat(tarball), 'kernelversion': kver,
            'base': base, 'patches': None, 'head': base, 'synced': {}}


def tarball_stat(tarball):
    st = os.stat(tarball)
    return '%d:%d' % (st.st_size, int(st.st_mtime))


def apply_patches(state, patches):
    """Reset to the pristine base and git am the series."""
    if os.path.isdir(os.path.join(TREE, '.git', 'rebase-apply')):
        git('am', '--abort', check=False)
    git('checkout', '-q', '-B', 'series', state['base'])
    git('reset', '-q', '--hard', state['base'])
    for p in patches:
        proc = git('am', '-q', '--whitespace=nowarn', p, check=False)
        if proc.returncode != 0:
            git('am', '--abort', check=False)
            git('reset', '-q', '--hard', state['base'])
            first = next((ln for ln in proc.stdout.splitlines()
                          if 'error' in ln.lower() or 'fail' in ln.lower()),
                         proc.stdout.strip().splitlines()[-1:] or [''])
            if isinstance(first, list):
                first = first[0] if first else ''
            raise ToolError('patch %s does not apply to %s: %s'
                            % (os.path.relpath(p, ROOT), state['version'],
                               first.strip()))
    state['head'] = git('rev-parse', 'HEAD').stdout.strip()
    state['patches'] = digest_files(patches)


def sync_kunit(state):
    """Copy kunit/ sources into the tree; return the number written."""
    srcs = kunit_sources()
    synced = state.get('synced', {})
    written = 0
    # Refuse to overwrite a test source edited inside the tree.
    for rel, sha in synced.items():
        cur = file_sha(os.path.join(TREE, rel))
        if cur is not None and cur != sha:
            raise ToolError('build/linux/%s was edited in the tree; edit '
                            'kunit/%s instead (save your change, then '
                            'delete the tree copy)' % (rel, rel))
    for rel in set(synced) - set(srcs):
        try:
            os.unlink(os.path.join(TREE, rel))
        except FileNotFoundError:
            pass
    new = {}
    for rel, src in sorted(srcs.items()):
        dst = os.path.join(TREE, rel)
        sha = file_sha(src)
        if file_sha(dst) != sha:
            tracked = git('ls-files', '--error-unmatch', rel, check=False)
            if tracked.returncode == 0:
                raise ToolError('kunit/%s would overwrite a file of the '
                                'kernel tree; change it with a patch' % rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            tmp = dst + '.gpk-tmp'
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
            written += 1
        new[rel] = sha
    state['synced'] = new
    return written


def prepare(series, quiet=False):
    pkg, version, tarball = find_tarball(series)
    state = load_state()
    fresh = (state is None or not os.path.isdir(TREE) or
             state.get('version') != version or
             state.get('tarball_stat') != tarball_stat(tarball) or
             git('rev-parse', '-q', '--verify', state.get('base', 'x'),
                 check=False).returncode != 0)
    if fresh and os.path.isdir(os.path.join(TREE, '.git')) and state:
        changes = local_changes()
        if changes:
            raise ToolError('build/linux has local changes (%s ...); keep '
                            'them elsewhere, then: rm -rf build/linux'
                            % changes[0])
    if fresh:
        state = unpack(pkg, version, tarball, series)
        save_state(state)
    patches = series_files()
    head = git('rev-parse', 'HEAD').stdout.strip()
    if state.get('patches') != digest_files(patches) or \
       head != state.get('head') or \
       os.path.isdir(os.path.join(TREE, '.git', 'rebase-apply')):
        changes = local_changes()
        if changes and head == state.get('head'):
            raise ToolError('build/linux has local changes (%s); refusing '
                            'to re-apply patches/. Reset with: git -C '
                            'build/linux reset --hard' % ', '.join(changes[:3]))
        # patches is None while an apply of ours is under way: a HEAD
        # that moved then is our own half-applied series, not a local
        # commit, and is redone from the base.
        if head != state.get('head') and \
           state.get('patches') is not None and not os.path.isdir(
                os.path.join(TREE, '.git', 'rebase-apply')):
            raise ToolError('build/linux HEAD moved to %s (local commits?); '
                            'refusing to reset it. Reset with: git -C '
                            'build/linux reset --hard %s'
                            % (head[:12], state['head'][:12]))
        print('%s: applying %d patches' % (TOOL, len(patches)), flush=True)
        state['patches'] = None
        # apply_patches() starts by resetting to the base: if it fails or is
        # stopped, that, not the old series head, is what the tree is at.
        state['head'] = state['base']
        save_state(state)
        apply_patches(state, patches)
        save_state(state)
    elif local_changes():
        raise ToolError('build/linux has local changes (%s); reset with: '
                        'git -C build/linux reset --hard'
                        % ', '.join(local_changes()[:3]))
    written = sync_kunit(state)
    save_state(state)
    if not quiet:
        print('%s: build/linux = %s %s (kernel %s), %d patches, %d test '
              'sources updated' % (TOOL, state['package'], state['version'],
                                   state['kernelversion'], len(patches),
                                   written))
    return state


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--series', default=os.environ.get('GPK_SERIES', '6.1'),
                    help='kernel series of the linux-source package '
                    '(default 6.1)')
    ap.add_argument('--quiet', action='store_true')
    args = ap.parse_args()
    try:
        with BuildLock(TOOL):
            prepare(args.series, args.quiet)
    except ToolError as e:
        die(TOOL, str(e))
    except KeyboardInterrupt:
        die(TOOL, 'interrupted; the next run recovers', 130)


if __name__ == '__main__':
    main()
