#!/usr/bin/env python3
"""Export each tree's series, with the tests, as mailable patches
(`make series`).

For each tree (--tree, repeatable; default every tree of kunit/trees),
writes results/TREE/series/ (the results directory honours GPK_RESULTS):

  0000-cover-letter.patch   git format-patch --cover-letter; its subject
                            and blurb come from patches/TREE/cover-letter.txt
                            (first line: subject; after a blank line: blurb)
  0001-... .. 00NN-...      the patches of patches/TREE/series, in order;
                            the last one, which adds the tests' Kconfig
                            option and build rules, also gets the test
                            sources: the tree's kernel sources without
                            the harness (tools/_common.py
                            kernel_sources(tree, harness=False):
                            kunit/common/ and kunit/TREE/ subdirectories,
                            never kunit/harness/), at the same relative
                            path in the kernel tree. So every patch of the
                            series builds.

Sign-offs. The stored patches carry no Signed-off-by:
a DCO sign-off is a person's. Every exported patch is signed, as
`git format-patch -s` does, by whoever runs the export: `git config
user.name` and `user.email` of the project repository; the export is
refused (one line) when either is unset. A patch authored by the project
placeholder (an author email @localhost, such as gup-pin-kunit
<gup-pin-kunit@localhost>, or at example.org/.com/.net) gets the runner
as its author; a patch with a real author (a backport from upstream)
keeps it and gets the runner's sign-off after the author's. Signed-off-by
lines of the placeholder are dropped.

How: under build/.lock, prepare build/TREE/linux (tools/prepare_tree.py),
then, without a worktree and without touching its branches: commit the
series base..series_head again (the series without prepare_tree's harness
commit; same trees and author dates, authors as above), the last commit
with the test sources added through a temporary index, and run `git format-patch
-s --cover-letter --no-signature --zero-commit` with the runner as
committer. The date of the new commits and of the cover letter is
SOURCE_DATE_EPOCH if set, else a fixed date, so that unchanged inputs
export byte-identical patches.

Then checks that no patch touches a harness file (kunit/harness/) or
builds a harness object, and that the patches (all but the cover letter)
apply with git am to a fresh detached worktree at the pristine base
(build/TREE/export-am, removed afterwards) and reproduce the exported tree
exactly, and prints one line per tree:

  export_series: TREE: N patches in results/TREE/series (applies to
  PACKAGE VERSION), signed off by NAME <EMAIL>

Exit status 1 on any failure, with one line 'export_series: why' on
stderr per failure.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prepare_tree  # noqa: E402
from _common import (ROOT, BuildLock, ToolError, Tree,  # noqa: E402
                     add_tree_argument, die, display, harness_sources,
                     kernel_sources, run, selected_trees)

TOOL = 'export_series'
# Used when SOURCE_DATE_EPOCH is unset: fixed, for reproducible patches.
DEFAULT_DATE = '2026-12-04T15:00:00+00:00'
COVER_NAME = '0000-cover-letter.patch'
# Author emails of the project placeholder, never a person's.
PLACEHOLDER_EMAIL = re.compile(r'@(?:localhost|example\.(?:org|com|net))$',
                               re.I)
SIGNOFF_RE = re.compile(r'^Signed-off-by:.*<([^<>\s]+)>\s*$', re.I)


def out_dir(tree: Tree) -> str:
    return os.path.join(tree.results, 'series')


def read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except OSError as e:
        raise ToolError('cannot read %s (%s): %s'
                        % (display(path), what, e.strerror))


def runner_identity(repo: str = ROOT) -> tuple[str, str]:
    """(name, email) of whoever runs the export: git config user.name and
    user.email in the project repository. Unset: a ToolError."""
    ident = []
    for key in ('user.name', 'user.email'):
        proc = run(['git', '-C', repo, 'config', key], check=False)
        value = proc.stdout.strip() if proc.returncode == 0 else ''
        if not value:
            raise ToolError('git config %s is unset; every exported patch '
                            'carries your Signed-off-by, so set it: git '
                            'config %s "%s"' % (key, key, 'Your Name'
                                                if key == 'user.name'
                                                else 'you@example.com'))
        ident.append(value)
    name, email = ident
    if is_placeholder(email):
        raise ToolError('git config user.email is %s, a placeholder; a '
                        'Signed-off-by must be a person\'s' % email)
    return name, email


def is_placeholder(email: str) -> bool:
    """Is this author email the project placeholder (never a person)?"""
    return bool(PLACEHOLDER_EMAIL.search(email.strip()))


def drop_placeholder_signoffs(msg: str) -> str:
    """The commit message without Signed-off-by lines of a placeholder,
    ending in one newline."""
    lines = [ln for ln in msg.splitlines()
             if not ((m := SIGNOFF_RE.match(ln)) and
                     is_placeholder(m.group(1)))]
    return '\n'.join(lines).rstrip('\n') + '\n'


def parse_cover(text: str,
                path: str = 'cover-letter.txt') -> tuple[str, str]:
    """(subject, blurb) of patches/TREE/cover-letter.txt."""
    lines = text.strip('\n').splitlines()
    if not lines or not lines[0].strip():
        raise ToolError('%s: the first line must be the subject' % path)
    subject = lines[0].strip()
    blurb = '\n'.join(lines[1:]).strip('\n')
    if not blurb:
        raise ToolError('%s: no blurb after the subject line' % path)
    return subject, blurb


def fill_cover(text: str, subject: str, blurb: str) -> str:
    """Put subject and blurb into format-patch's cover letter template."""
    for marker in ('*** SUBJECT HERE ***', '*** BLURB HERE ***'):
        if marker not in text:
            raise ToolError('cover letter lacks the %r placeholder' % marker)
    return text.replace('*** SUBJECT HERE ***', subject, 1) \
               .replace('*** BLURB HERE ***', blurb, 1)


def export_date() -> str:
    epoch = os.environ.get('SOURCE_DATE_EPOCH')
    if epoch:
        if not epoch.isdigit():
            raise ToolError('SOURCE_DATE_EPOCH=%r is not a number' % epoch)
        return '@%s +0000' % epoch
    return DEFAULT_DATE


def ident_env(author: tuple[str, str], author_date: str,
              committer: tuple[str, str], date: str,
              extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ, GIT_AUTHOR_NAME=author[0],
               GIT_AUTHOR_EMAIL=author[1], GIT_AUTHOR_DATE=author_date,
               GIT_COMMITTER_NAME=committer[0],
               GIT_COMMITTER_EMAIL=committer[1], GIT_COMMITTER_DATE=date)
    env.update(extra or {})
    return env


def repo_git(repo: str, *args: str,
             **kw: Any) -> subprocess.CompletedProcess[str]:
    return run(['git', '-C', repo] + prepare_tree.GIT_ID + list(args), **kw)


def commit_tree(repo: str, tree_id: str, parent: str, msg: str,
                env: Mapping[str, str], scratch: str) -> str:
    """git commit-tree with the message in a scratch file; return the id."""
    path = os.path.join(scratch, 'msg')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(msg)
    return repo_git(repo, 'commit-tree', tree_id, '-p', parent, '-F', path,
                    env=env).stdout.strip()


def resign_series(repo: str, base: str, head: str,
                  runner: tuple[str, str], date: str, scratch: str,
                  fold: dict[str, str]) -> str:
    """Commit base..head again on base, with the same trees (the last one
    plus the files of fold): placeholder authors become the
    runner, placeholder sign-offs go, the committer is the runner at
    date. Return the new head."""
    revs = repo_git(repo, 'rev-list', '--reverse', '%s..%s' % (base, head)
                    ).stdout.split()
    if not revs:
        raise ToolError('the series is empty: no patch to put the test '
                        'sources in')
    parent = base
    for i, rev in enumerate(revs):
        info = repo_git(repo, 'log', '-1', '--date=raw',
                        '--format=%an%x00%ae%x00%ad%x00%T%x00%B', rev
                        ).stdout
        name, email, adate, tree_id, msg = info.split('\0', 4)
        if i == len(revs) - 1:
            tree_id = tree_with(repo, rev, fold, scratch)
        author = runner if is_placeholder(email) else (name, email)
        env = ident_env(author, '@' + adate.strip(), runner, date)
        parent = commit_tree(repo, tree_id, parent,
                             drop_placeholder_signoffs(msg), env, scratch)
    return parent


def tree_with(repo: str, commit: str, srcs: dict[str, str],
              scratch: str) -> str:
    """The id of commit's tree plus the files srcs ({tree path: file}),
    made through a temporary index; a file of the tree is never
    overwritten."""
    for rel, src in sorted(srcs.items()):
        if repo_git(repo, 'cat-file', '-e', '%s:%s' % (commit, rel),
                    check=False).returncode == 0:
            raise ToolError('%s would overwrite %s of the kernel tree'
                            % (display(src), rel))
    env = dict(os.environ, GIT_INDEX_FILE=os.path.join(scratch, 'index'))
    repo_git(repo, 'read-tree', commit, env=env, timeout=600)
    for rel, src in sorted(srcs.items()):
        blob = repo_git(repo, 'hash-object', '-w', '--', src).stdout.strip()
        mode = '100755' if os.access(src, os.X_OK) else '100644'
        repo_git(repo, 'update-index', '--add', '--cacheinfo',
                 '%s,%s,%s' % (mode, blob, rel), env=env)
    return repo_git(repo, 'write-tree', env=env).stdout.strip()


def patch_paths(text: str) -> set[str]:
    """Tree paths that a format-patch file changes."""
    return set(re.findall(r'^diff --git a/(\S+) b/\S+$', text, re.M)) | \
        set(re.findall(r'^diff --git a/\S+ b/(\S+)$', text, re.M))


def check_no_harness(patches: Iterable[str], tree: Tree) -> None:
    """No exported patch may add a harness file or build its object."""
    harness = harness_sources(tree)
    objs = {os.path.basename(rel)[:-2] + '.o' for rel in harness
            if rel.endswith('.c')}
    for p in patches:
        text = read_text(p, 'exported patch')
        bad = sorted(patch_paths(text) & set(harness))
        if bad:
            raise ToolError('%s adds the harness file %s; harness sources '
                            'are never exported' % (display(p), bad[0]))
        for line in text.splitlines():
            if line.startswith('+') and not line.startswith('+++') and \
               any(re.search(r'(?<![\w-])%s\b' % re.escape(o), line)
                   for o in objs):
                raise ToolError('%s builds a harness object: %s'
                                % (display(p), line[1:].strip()))


def export(tree: Tree, state: dict, runner: tuple[str, str],
           out: str | None = None) -> tuple[list[str], str]:
    """Write the tree's series to out; return (patch paths, exported tree
    id)."""
    out = out or out_dir(tree)
    cover_path = os.path.join(tree.patches, 'cover-letter.txt')
    subject, blurb = parse_cover(read_text(cover_path, 'cover letter blurb'),
                                 display(cover_path))
    srcs = kernel_sources(tree, harness=False)
    if not srcs:
        raise ToolError('no test sources for tree %s under kunit/ to export'
                        % tree.name)
    date = export_date()
    os.makedirs(tree.build, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix='export-', dir=tree.build)
    try:
        head = resign_series(tree.linux, state['base'],
                             state['series_head'], runner, date, scratch,
                             fold=srcs)
        tree_id = repo_git(tree.linux, 'rev-parse', head + '^{tree}'
                           ).stdout.strip()
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.makedirs(out)
        repo_git(tree.linux, 'format-patch', '-q', '-s', '--no-signature',
                 '--cover-letter', '--zero-commit', '-o', out,
                 '%s..%s' % (state['base'], head),
                 env=ident_env(runner, date, runner, date))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    cover = os.path.join(out, COVER_NAME)
    text = read_text(cover, 'generated cover letter')
    with open(cover, 'w', encoding='utf-8') as f:
        f.write(fill_cover(text, subject, blurb))
    patches = sorted(p for p in glob.glob(os.path.join(out, '*.patch'))
                     if os.path.basename(p) != COVER_NAME)
    return patches, tree_id


def remove_worktree(repo: str, path: str) -> None:
    repo_git(repo, 'worktree', 'remove', '--force', path, check=False)
    shutil.rmtree(path, ignore_errors=True)
    repo_git(repo, 'worktree', 'prune', check=False)


def verify(tree: Tree, state: dict, patches: list[str],
           tree_id: str) -> None:
    """git am the patches on a fresh worktree at base; compare the tree."""
    wt = os.path.join(tree.build, 'export-am')
    remove_worktree(tree.linux, wt)
    repo_git(tree.linux, 'worktree', 'add', '-q', '--detach', wt,
             state['base'], timeout=1800)
    try:
        am = ['git', '-C', wt] + prepare_tree.GIT_ID
        for p in patches:
            proc = run(am + ['am', '-q', p], check=False)
            if proc.returncode:
                run(am + ['am', '--abort'], check=False)
                why = (proc.stdout.strip().splitlines() or ['?'])[0]
                raise ToolError('%s does not apply with git am to tree %s '
                                '(%s): %s' % (display(p), tree.name,
                                              state['version'], why))
        got = run(am + ['rev-parse', 'HEAD^{tree}']).stdout.strip()
        if got != tree_id:
            raise ToolError('git am of %s gives tree %s, not the exported '
                            '%s' % (display(os.path.dirname(patches[0])),
                                    got[:12], tree_id[:12]))
    finally:
        remove_worktree(tree.linux, wt)


def uncommitted_sources(tree: Tree) -> list[str]:
    """Exported kernel sources that differ from the project's HEAD."""
    paths = sorted(kernel_sources(tree, harness=False).values())
    proc = run(['git', '-C', ROOT, 'status', '--porcelain',
                '--untracked-files=all', '--'] + paths, check=False)
    if proc.returncode:
        return []
    return [ln[3:] for ln in proc.stdout.splitlines() if ln.strip()]


def export_tree(tree: Tree, runner: tuple[str, str]) -> str:
    """Prepare, export and verify one tree; return the line to print."""
    state = prepare_tree.prepare(tree, quiet=True)
    patches, tree_id = export(tree, state, runner)
    check_no_harness(patches, tree)
    verify(tree, state, patches, tree_id)
    dirty = uncommitted_sources(tree)
    if dirty:
        print('%s: %s: note: exported test sources with uncommitted '
              'changes: %s' % (TOOL, tree.name, ', '.join(dirty)),
              file=sys.stderr)
    return ('%s: %s: %d patches in %s (applies to %s %s), signed off by '
            '%s <%s>' % (TOOL, tree.name, len(patches),
                         display(out_dir(tree)), state['package'],
                         state['version'], runner[0], runner[1]))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_tree_argument(ap)
    args = ap.parse_args()
    trees = selected_trees(TOOL, args.tree)
    try:
        runner = runner_identity()
    except ToolError as e:
        die(TOOL, str(e))
    failed = 0
    try:
        with BuildLock(TOOL):
            for tree in trees:
                try:
                    print(export_tree(tree, runner), flush=True)
                except ToolError as e:
                    failed += 1
                    print('%s: %s: %s' % (TOOL, tree.name, e),
                          file=sys.stderr, flush=True)
    except ToolError as e:
        die(TOOL, str(e), e.status)
    except KeyboardInterrupt:
        die(TOOL, 'interrupted', 130)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
