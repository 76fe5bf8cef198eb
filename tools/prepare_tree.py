#!/usr/bin/env python3
"""Prepare build/TREE/linux for each tree of kunit/trees: Debian's
linux-source-TREE tarball + patches/TREE/ + the kernel sources of kunit/.

Steps, per tree, each skipped when its inputs did not change:
  1. find the tarball that the tree's package (kunit/trees) installs (the
     version comes from dpkg, never from this file), and check that its
     `make kernelversion` is TREE.y;
  2. unpack it into build/TREE/linux as a git repository with one pristine
     base commit, tag `pristine` (Debian's .gitignore ignores every
     top-level path, so files are added with -f);
  3. apply patches/TREE/ (in the order of patches/TREE/series; no series
     file: no patches) with git am on branch `series`: that is the
     state's series_head;
  4. if there are harness files (kunit/harness/DIR/NAME.c), commit one
     generated commit on top, "gup-pin-kunit harness: build FILES (not for
     upstream)", that appends `obj-$(CONFIG_GUP_KUNIT_TEST) += NAME.o` to
     DIR/Makefile for each: that is the state's head (without harness
     files, head = series_head). `make series` never exports it;
  5. copy the kernel sources (tools/_common.py kernel_sources(): kunit/
     common/, kunit/TREE/ subdirectories, kunit/harness/) in place,
     writing only files whose content changed so that kbuild rebuilds
     only what changed.

State lives in build/TREE/linux/.git/gup-pin-kunit.json. Local edits to
the tree are refused, never overwritten. Prints one line per tree.

Environment overrides (for tools/tests; the defaults are what `make` uses):
  GPK_SRC_DIR   where the package's tarball must lie (default /usr/src/)
  GPK_PATCHES   the series directories (default patches/)
  GPK_KUNIT     kunit/ (trees, test sources)
  GPK_BUILD     build/
"""
import argparse
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (BuildLock, ToolError, Tree,  # noqa: E402
                     add_tree_argument, die, display, harness_sources,
                     kernel_sources, load_state, read_names, run,
                     save_state, selected_trees)

TOOL = 'prepare_tree'
SRC_DIR = os.path.join(os.environ.get('GPK_SRC_DIR', '/usr/src/'), '')
GIT_ID = ['-c', 'user.name=gup-pin-kunit', '-c',
          'user.email=gup-pin-kunit@localhost', '-c', 'commit.gpgsign=false']
# Dates of the generated commits: fixed, so that the same inputs give the
# same commit ids.
FIXED_DATE = '2000-01-01T00:00:00Z'
HARNESS_SUBJECT = 'gup-pin-kunit harness: build %s (not for upstream)'
HARNESS_CONFIG = 'CONFIG_GUP_KUNIT_TEST'


def dpkg_field(pkg: str, field: str) -> str | None:
    proc = run(['dpkg-query', '-W', '-f=${%s}' % field, pkg], check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.strip()


def find_tarball(tree: Tree) -> tuple[str, str, str]:
    """Return (package, version, tarball path) of the tree's package."""
    pkg = tree.package
    version = dpkg_field(pkg, 'Version')
    if not version:
        raise ToolError('package %s (tree %s) is not installed; run '
                        'tools/deps or apt-get install %s'
                        % (pkg, tree.name, pkg))
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
    if base != '%s.tar.xz' % pkg:
        raise ToolError('tarball %s is not of tree %s (%s.tar.xz)'
                        % (base, tree.name, pkg))
    return pkg, version, tarball


def git(tree: Tree, *args: str, check: bool = True,
        timeout: float | None = None, env: Mapping[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return run(['git', '-C', tree.linux] + GIT_ID + list(args), check=check,
               timeout=timeout, env=env)


def series_files(tree: Tree) -> list[str]:
    """The patch paths that patches/TREE/series lists, in order; [] if the
    tree has no series file."""
    path = os.path.join(tree.patches, 'series')
    out = []
    for name in read_names(path, missing_ok=True):
        p = os.path.join(tree.patches, name)
        if not os.path.isfile(p):
            raise ToolError('%s names %s, which does not exist'
                            % (display(path), name))
        out.append(p)
    return out


def digest_files(paths: Iterable[str]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(os.path.basename(p).encode() + b'\0')
        with open(p, 'rb') as f:
            h.update(f.read())
    return h.hexdigest()


def file_sha(path: str) -> str | None:
    try:
        with open(path, 'rb') as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def local_changes(tree: Tree) -> list[str]:
    """Return tracked files modified in build/TREE/linux, or [] if clean."""
    proc = git(tree, 'status', '--porcelain', '--untracked-files=no')
    return [line[3:] for line in proc.stdout.splitlines() if line.strip()]


def unpack(tree: Tree, pkg: str, version: str, tarball: str) -> dict:
    """Unpack the tarball into a fresh git tree; return the state dict."""
    parent = os.path.dirname(tree.linux)
    os.makedirs(parent, exist_ok=True)
    # A run killed while unpacking leaves its temporary tree (GBs); we hold
    # the build/ lock, so any such directory is stale.
    for old in glob.glob(os.path.join(parent, 'linux.unpack-*')):
        shutil.rmtree(old, ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix='linux.unpack-', dir=parent)
    try:
        print('%s: %s: unpacking %s (%s)' % (TOOL, tree.name, tarball,
                                             version), flush=True)
        run(['tar', '-xJf', tarball, '-C', tmp, '--strip-components=1'])
        if not os.path.exists(os.path.join(tmp, 'Makefile')):
            raise ToolError('%s did not unpack to a kernel tree' % tarball)
        kver = run(['make', '-s', '-C', tmp, 'kernelversion']).stdout.strip()
        if kver.split('.')[:2] != tree.name.split('.'):
            raise ToolError('tarball %s holds kernel %s, expected %s.y'
                            % (tarball, kver, tree.name))
        gcmd = ['git', '-C', tmp] + GIT_ID
        run(gcmd + ['init', '-q', '-b', 'base'])
        run(gcmd + ['add', '-A', '-f', '.'], timeout=1800)
        env = dict(os.environ, GIT_AUTHOR_DATE=FIXED_DATE,
                   GIT_COMMITTER_DATE=FIXED_DATE)
        run(gcmd + ['commit', '-q', '-m',
                    'Pristine %s %s (%s)' % (pkg, version, kver)],
            env=env, timeout=1800)
        run(gcmd + ['tag', 'pristine'])
        base = run(gcmd + ['rev-parse', 'HEAD']).stdout.strip()
        if os.path.exists(tree.linux):
            shutil.rmtree(tree.linux)
        os.rename(tmp, tree.linux)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {'tree': tree.name, 'package': pkg, 'version': version,
            'tarball': tarball, 'tarball_stat': tarball_stat(tarball),
            'kernelversion': kver, 'base': base, 'patches': None,
            'series_head': base, 'harness': None, 'head': base,
            'synced': {}}


def tarball_stat(tarball: str) -> str:
    st = os.stat(tarball)
    return '%d:%d' % (st.st_size, int(st.st_mtime))


def apply_patches(tree: Tree, state: dict, patches: list[str]) -> None:
    """Reset to the pristine base and git am the series."""
    if os.path.isdir(os.path.join(tree.linux, '.git', 'rebase-apply')):
        git(tree, 'am', '--abort', check=False)
    git(tree, 'checkout', '-q', '-B', 'series', state['base'])
    git(tree, 'reset', '-q', '--hard', state['base'])
    for p in patches:
        proc = git(tree, 'am', '-q', '--whitespace=nowarn', p, check=False)
        if proc.returncode != 0:
            git(tree, 'am', '--abort', check=False)
            git(tree, 'reset', '-q', '--hard', state['base'])
            out = proc.stdout.strip().splitlines()
            first = next((ln for ln in out if 'error' in ln.lower() or
                          'fail' in ln.lower()), out[-1] if out else '')
            raise ToolError('patch %s does not apply to tree %s (%s %s): %s'
                            % (display(p), tree.name, state['package'],
                               state['version'], first.strip()))
    state['series_head'] = git(tree, 'rev-parse', 'HEAD').stdout.strip()
    state['head'] = state['series_head']
    state['patches'] = digest_files(patches)


def harness_objects(tree: Tree) -> list[tuple[str, str, str]]:
    """(tree path of a harness .c file, its dir's Makefile, obj- line),
    sorted, for every .c file under kunit/harness/."""
    out = []
    for rel, src in sorted(harness_sources(tree).items()):
        if not rel.endswith('.c'):
            continue
        d, name = os.path.split(rel)
        if not d:
            raise ToolError('%s: a harness source must lie in a directory '
                            'of the kernel tree' % display(src))
        out.append((rel, d + '/Makefile', 'obj-$(%s) += %s.o'
                    % (HARNESS_CONFIG, name[:-2])))
    return out


def with_harness_lines(text: str, lines: list[str]) -> str:
    """A Makefile's text with the harness's obj- lines added: before the
    series' own first obj-$(HARNESS_CONFIG) line (and the comment right
    above it), so that the harness's suites link, and so run, before the
    series' suites, of which gup_kunit_final.o must run last; at the end
    if there is none. Lines already there are not added again."""
    old = text.splitlines()
    new = [ln for ln in lines if ln not in old]
    if not new:
        return text
    at = next((i for i, ln in enumerate(old)
               if ln.startswith('obj-$(%s)' % HARNESS_CONFIG)), len(old))
    while at > 0 and at < len(old) and old[at - 1].startswith('#'):
        at -= 1
    return '\n'.join(old[:at] + new + old[at:]) + '\n'


def harness_commit(tree: Tree, state: dict,
                   objects: list[tuple[str, str, str]]) -> None:
    """Commit the Makefile lines that build the harness files on top of
    series_head; set state head. No harness files: no commit."""
    git(tree, 'reset', '-q', '--hard', state['series_head'])
    state['head'] = state['series_head']
    if not objects:
        return
    makefiles = sorted({m for _r, m, _l in objects})
    for makefile in makefiles:
        ours = [(rel, line) for rel, m, line in objects if m == makefile]
        if git(tree, 'ls-files', '--error-unmatch', makefile,
               check=False).returncode != 0:
            raise ToolError('harness source kunit/harness/%s: tree %s has '
                            'no %s to build it'
                            % (ours[0][0], tree.name, makefile))
        path = os.path.join(tree.linux, makefile)
        with open(path) as f:
            text = f.read()
        with open(path, 'w') as f:
            f.write(with_harness_lines(text, [ln for _r, ln in ours]))
    files = [rel for rel, _m, _l in objects]
    git(tree, 'add', '-f', '--', *makefiles)
    msg = (HARNESS_SUBJECT % ', '.join(files) + '\n\n'
           'Generated by tools/prepare_tree.py from kunit/harness/: the\n'
           'harness-only kernel sources are compiled in the project\'s own\n'
           'builds. `make series` exports the series without this commit.\n')
    env = dict(os.environ, GIT_AUTHOR_DATE=FIXED_DATE,
               GIT_COMMITTER_DATE=FIXED_DATE)
    if git(tree, 'diff', '--cached', '--quiet', check=False).returncode:
        git(tree, 'commit', '-q', '--no-verify', '-m', msg, env=env)
    state['head'] = git(tree, 'rev-parse', 'HEAD').stdout.strip()


def sync_sources(tree: Tree, state: dict) -> int:
    """Copy the kernel sources into the tree; return the number written."""
    srcs = kernel_sources(tree)
    synced = state.get('synced', {})
    written = 0
    # Refuse to overwrite a test source edited inside the tree.
    for rel, sha in synced.items():
        cur = file_sha(os.path.join(tree.linux, rel))
        if cur is not None and cur != sha:
            edit = display(srcs[rel]) if rel in srcs else 'kunit/'
            raise ToolError('%s was edited in the tree; edit %s instead '
                            '(save your change, then delete the tree copy)'
                            % (display(os.path.join(tree.linux, rel)), edit))
    for rel in set(synced) - set(srcs):
        try:
            os.unlink(os.path.join(tree.linux, rel))
        except FileNotFoundError:
            pass
    new = {}
    for rel, src in sorted(srcs.items()):
        dst = os.path.join(tree.linux, rel)
        sha = file_sha(src)
        if file_sha(dst) != sha:
            tracked = git(tree, 'ls-files', '--error-unmatch', rel,
                          check=False)
            if tracked.returncode == 0:
                raise ToolError('%s would overwrite %s of the kernel tree; '
                                'change it with a patch'
                                % (display(src), rel))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            tmp = dst + '.gpk-tmp'
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
            written += 1
        new[rel] = sha
    state['synced'] = new
    return written


def checkout(tree: Tree, path: str) -> str:
    """A second source tree to build from: at path, a git worktree of
    build/TREE/linux at its HEAD, with the kernel sources of kunit/
    copied in as sync_sources() copies them. It stays as it is while
    build/TREE/linux carries a mutant (tools/mutate.py, tools/genmut.py),
    so a kernel can build from it meanwhile. Made on first use; after
    that only what changed is written, so that builds from it stay
    incremental. Return path."""
    head = git(tree, 'rev-parse', 'HEAD').stdout.strip()
    # A checkout whose repository went (build/TREE/linux unpacked again)
    # is made again.
    if not os.path.exists(os.path.join(path, '.git')) or run(
            ['git', '-C', path, 'checkout', '-q', '-f', '--detach', head],
            check=False, timeout=1800).returncode:
        shutil.rmtree(path, ignore_errors=True)
        git(tree, 'worktree', 'prune')
        git(tree, 'worktree', 'add', '-q', '--detach', path, head,
            timeout=1800)
    srcs = kernel_sources(tree)
    # Untracked files (Debian's .gitignore ignores them all): ours.
    others = run(['git', '-C', path, 'ls-files', '-z', '--others'],
                 timeout=600).stdout.split('\0')
    for rel in others:
        if rel and rel not in srcs:
            os.unlink(os.path.join(path, rel))
    for rel, src in sorted(srcs.items()):
        dst = os.path.join(path, rel)
        if file_sha(dst) != file_sha(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst + '.gpk-tmp')
            os.replace(dst + '.gpk-tmp', dst)
    return path


def reset_hint(tree: Tree, commit: str = '') -> str:
    return 'git -C %s reset --hard%s' % (display(tree.linux),
                                         ' ' + commit[:12] if commit else '')


def remove_stale_git_locks(tree: Tree) -> list[str]:
    """A git killed in the middle of a command (a run stopped by SIGTERM
    during git am, say) leaves .git/index.lock behind, and every later git
    command in the tree refuses to run. Under build/.lock, which every
    tool holds while it uses the tree, no other git runs there: such a
    lock is stale. Return the locks removed."""
    removed = []
    for name in ('index.lock', 'HEAD.lock'):
        path = os.path.join(tree.linux, '.git', name)
        if os.path.exists(path):
            os.unlink(path)
            removed.append(name)
    return removed


def prepare(tree: Tree, quiet: bool = False) -> dict:
    """Bring build/TREE/linux up to date; return its state."""
    pkg, version, tarball = find_tarball(tree)
    remove_stale_git_locks(tree)
    state = load_state(tree)
    has_git = os.path.isdir(os.path.join(tree.linux, '.git'))
    fresh = (state is None or not has_git or
             state.get('version') != version or
             state.get('tarball_stat') != tarball_stat(tarball) or
             git(tree, 'rev-parse', '-q', '--verify',
                 state.get('base') or 'x', check=False).returncode != 0)
    if fresh and has_git and state:
        changes = local_changes(tree)
        if changes:
            raise ToolError('%s has local changes (%s ...); keep them '
                            'elsewhere, then: rm -rf %s'
                            % (display(tree.linux), changes[0],
                               display(tree.linux)))
    if fresh or state is None:
        state = unpack(tree, pkg, version, tarball)
        save_state(tree, state)
    state['tree'] = tree.name
    patches = series_files(tree)
    objects = harness_objects(tree)
    harness = [rel for rel, _m, _l in objects]
    head = git(tree, 'rev-parse', 'HEAD').stdout.strip()
    rebase = os.path.isdir(os.path.join(tree.linux, '.git', 'rebase-apply'))
    # patches is None while an apply of ours is under way, harness None
    # while the harness commit is being made: a HEAD that moved or a
    # changed file then is our own half-done work, redone from the base
    # (from series_head for the harness commit).
    am_pending = state.get('patches') is None or rebase
    harness_pending = state.get('harness') is None and not am_pending
    ours = {m for _r, m, _l in objects} if harness_pending else set()
    if not am_pending:
        if head != state['head'] and not (
                harness_pending and state['series_head'] in (
                    head, git(tree, 'rev-parse', '-q', '--verify',
                              head + '^', check=False).stdout.strip())):
            raise ToolError('%s HEAD moved to %s (local commits?); refusing '
                            'to reset it. Reset with: %s'
                            % (display(tree.linux), head[:12],
                               reset_hint(tree, state['head'])))
        changes = [c for c in local_changes(tree) if c not in ours]
        if changes:
            raise ToolError('%s has local changes (%s); refusing to touch '
                            'it. Reset with: %s'
                            % (display(tree.linux), ', '.join(changes[:3]),
                               reset_hint(tree)))
    need_am = am_pending or state.get('patches') != digest_files(patches)
    if need_am:
        print('%s: %s: applying %d patches' % (TOOL, tree.name,
                                               len(patches)), flush=True)
        state['patches'] = None
        # apply_patches() starts by resetting to the base: if it fails or is
        # stopped, that, not the old series head, is what the tree is at.
        state['head'] = state['series_head'] = state['base']
        state['harness'] = None
        save_state(tree, state)
        apply_patches(tree, state, patches)
        save_state(tree, state)
    if need_am or state.get('harness') != harness:
        state['harness'] = None
        save_state(tree, state)
        harness_commit(tree, state, objects)
        state['harness'] = harness
        save_state(tree, state)
    written = sync_sources(tree, state)
    save_state(tree, state)
    if not quiet:
        print('%s: %s: %s = %s %s (kernel %s), %d patches, %d harness '
              'files, %d test sources updated'
              % (TOOL, tree.name, display(tree.linux), state['package'],
                 state['version'], state['kernelversion'], len(patches),
                 len(harness), written))
    return state


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_tree_argument(ap)
    ap.add_argument('--quiet', action='store_true')
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    failed = 0
    try:
        with BuildLock(TOOL):
            for tree in trees:
                try:
                    prepare(tree, args.quiet)
                except ToolError as e:
                    failed += 1
                    print('%s: %s' % (TOOL, e), file=sys.stderr)
    except ToolError as e:
        die(TOOL, str(e), e.status)
    except KeyboardInterrupt:
        die(TOOL, 'interrupted; the next run recovers', 130)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
