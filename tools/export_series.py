#!/usr/bin/env python3
"""Export the series, with the tests, as mailable patches (`make series`).

Writes results/series/ (the results directory honours GPK_RESULTS):

  0000-cover-letter.patch   git format-patch --cover-letter; its subject
                            and blurb come from patches/cover-letter.txt
                            (first line: subject; after a blank line: blurb)
  0001-... .. 00NN-...      the patches of patches/series, in that order
  00NN+1-mm-gup-add-KUnit-tests-...
                            one generated patch adding the test sources:
                            every file under kunit/ except kunit/mutants/,
                            kunit/qemu_x86_64.py and kunit/suites, at the
                            same relative path in the kernel tree
                            (kunit/mm/gup_kunit.c -> mm/gup_kunit.c), with
                            the commit message of patches/kunit-tests.msg

How: under build/.lock (as tools/prepare_tree.py), prepare build/linux
(pristine base + patches/series), add a temporary detached worktree of it
at the series head in build/, copy the test sources in, commit them with
the author and committer of the message's first Signed-off-by and a fixed
date, and run `git format-patch --cover-letter --no-signature
--zero-commit` over base..HEAD. The worktree is removed afterwards, even
on error; build/linux's branches are not touched.

Then checks that the patches (all but the cover letter) apply with git am
to a fresh detached worktree at the pristine base and reproduce the
exported tree exactly, and prints one line:

  export_series: N patches in results/series (applies to VERSION)

The date of the generated commit and of the cover letter is
SOURCE_DATE_EPOCH if set, else a fixed date, so that an unchanged input
exports byte-identical patches. Exit status 1 on any failure, with one
line 'export_series: why' on stderr.
"""
import argparse
import glob
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prepare_tree  # noqa: E402
from _common import (BUILD, BuildLock, RESULTS, ROOT, TREE,  # noqa: E402
                     ToolError, die, run)

TOOL = 'export_series'
KUNIT = os.path.join(ROOT, 'kunit')
PATCHES = os.path.join(ROOT, 'patches')
MSG = os.path.join(PATCHES, 'kunit-tests.msg')
COVER = os.path.join(PATCHES, 'cover-letter.txt')
OUT = os.path.join(RESULTS, 'series')
EXPORT_WT = os.path.join(BUILD, 'export-series')
VERIFY_WT = os.path.join(BUILD, 'export-am')
# Entries of kunit/ that belong to the harness, not to the kernel tree.
NOT_EXPORTED = ('mutants/', 'qemu_x86_64.py', 'suites')
# Used when SOURCE_DATE_EPOCH is unset: fixed, for reproducible patches.
DEFAULT_DATE = '2026-12-04T15:00:00+00:00'
COVER_NAME = '0000-cover-letter.patch'


def export_sources(kunit_dir=KUNIT):
    """Map tree-relative path -> source path of the files to export."""
    out = {}
    for dirpath, dirs, files in os.walk(kunit_dir):
        dirs.sort()
        for name in sorted(files):
            src = os.path.join(dirpath, name)
            rel = os.path.relpath(src, kunit_dir).replace(os.sep, '/')
            if any(rel == x or (x.endswith('/') and rel.startswith(x))
                   for x in NOT_EXPORTED):
                continue
            if '__pycache__' in rel.split('/') or rel.endswith('.pyc'):
                continue
            out[rel] = src
    return out


def read_text(path, what):
    try:
        with open(path, encoding='utf-8') as f:
            return f.read()
    except OSError as e:
        raise ToolError('cannot read %s (%s): %s'
                        % (os.path.relpath(path, ROOT), what, e.strerror))


def signoff(msg):
    """(name, email) of the first Signed-off-by of a commit message."""
    m = re.search(r'^Signed-off-by:\s*(.+?)\s*<([^<>\s]+)>\s*$', msg, re.M)
    if not m:
        raise ToolError('patches/kunit-tests.msg has no '
                        '"Signed-off-by: Name <email>" line')
    return m.group(1), m.group(2)


def parse_cover(text):
    """(subject, blurb) of patches/cover-letter.txt."""
    lines = text.strip('\n').splitlines()
    if not lines or not lines[0].strip():
        raise ToolError('patches/cover-letter.txt: the first line must be '
                        'the subject')
    subject = lines[0].strip()
    blurb = '\n'.join(lines[1:]).strip('\n')
    if not blurb:
        raise ToolError('patches/cover-letter.txt: no blurb after the '
                        'subject line')
    return subject, blurb


def fill_cover(text, subject, blurb):
    """Put subject and blurb into format-patch's cover letter template."""
    for marker in ('*** SUBJECT HERE ***', '*** BLURB HERE ***'):
        if marker not in text:
            raise ToolError('cover letter lacks the %r placeholder' % marker)
    return text.replace('*** SUBJECT HERE ***', subject, 1) \
               .replace('*** BLURB HERE ***', blurb, 1)


def git_env(name, email, date):
    return dict(os.environ, GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email,
                GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email,
                GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)


def export_date():
    epoch = os.environ.get('SOURCE_DATE_EPOCH')
    if epoch:
        if not epoch.isdigit():
            raise ToolError('SOURCE_DATE_EPOCH=%r is not a number' % epoch)
        return '@%s +0000' % epoch
    return DEFAULT_DATE


def tree_git(*args, **kw):
    return run(['git', '-C', TREE] + prepare_tree.GIT_ID + list(args), **kw)


def remove_worktree(path):
    tree_git('worktree', 'remove', '--force', path, check=False)
    shutil.rmtree(path, ignore_errors=True)
    tree_git('worktree', 'prune', check=False)


def add_worktree(path, commit):
    remove_worktree(path)
    tree_git('worktree', 'add', '-q', '--detach', path, commit, timeout=1800)


def uncommitted_kunit():
    """Exported files under kunit/ that differ from the project's HEAD."""
    paths = ['kunit/' + rel for rel in export_sources()]
    proc = run(['git', '-C', ROOT, 'status', '--porcelain',
                '--untracked-files=all', '--'] + paths, check=False)
    if proc.returncode:
        return []
    return [ln[3:] for ln in proc.stdout.splitlines() if ln.strip()]


def export(state, out=OUT):
    """Write the series to out; return (patch paths, exported tree id)."""
    msg = read_text(MSG, 'commit message of the test patch')
    name, email = signoff(msg)
    subject, blurb = parse_cover(read_text(COVER, 'cover letter blurb'))
    srcs = export_sources()
    if not srcs:
        raise ToolError('no test sources under kunit/ to export')
    env = git_env(name, email, export_date())
    add_worktree(EXPORT_WT, state['head'])
    try:
        wt = ['git', '-C', EXPORT_WT] + prepare_tree.GIT_ID
        for rel, src in sorted(srcs.items()):
            if run(wt + ['ls-files', '--error-unmatch', rel],
                   check=False).returncode == 0:
                raise ToolError('kunit/%s would overwrite a file of the '
                                'kernel tree' % rel)
            dst = os.path.join(EXPORT_WT, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)
        run(wt + ['add', '-f', '--'] + sorted(srcs))
        run(wt + ['commit', '-q', '--no-verify', '--cleanup=whitespace',
                  '-F', MSG], env=env)
        tree = run(wt + ['rev-parse', 'HEAD^{tree}']).stdout.strip()
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.makedirs(out)
        run(wt + ['format-patch', '-q', '--no-signature', '--cover-letter',
                  '--zero-commit', '-o', out,
                  '%s..HEAD' % state['base']], env=env)
    finally:
        remove_worktree(EXPORT_WT)
    cover = os.path.join(out, COVER_NAME)
    text = read_text(cover, 'generated cover letter')
    with open(cover, 'w', encoding='utf-8') as f:
        f.write(fill_cover(text, subject, blurb))
    patches = sorted(p for p in glob.glob(os.path.join(out, '*.patch'))
                     if os.path.basename(p) != COVER_NAME)
    return patches, tree


def verify(state, patches, tree):
    """git am the patches on a fresh worktree at base; compare the tree."""
    add_worktree(VERIFY_WT, state['base'])
    try:
        am = ['git', '-C', VERIFY_WT] + prepare_tree.GIT_ID
        for p in patches:
            proc = run(am + ['am', '-q', p], check=False)
            if proc.returncode:
                run(am + ['am', '--abort'], check=False)
                why = (proc.stdout.strip().splitlines() or ['?'])[0]
                raise ToolError('%s does not apply with git am to %s: %s'
                                % (os.path.relpath(p, ROOT),
                                   state['version'], why))
        got = run(am + ['rev-parse', 'HEAD^{tree}']).stdout.strip()
        if got != tree:
            raise ToolError('git am of results/series gives tree %s, not '
                            'the exported %s' % (got[:12], tree[:12]))
    finally:
        remove_worktree(VERIFY_WT)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--series', default=os.environ.get('GPK_SERIES', '6.1'),
                    help='kernel series of the linux-source package '
                    '(default 6.1)')
    args = ap.parse_args()
    try:
        with BuildLock(TOOL):
            state = prepare_tree.prepare(args.series, quiet=True)
            patches, tree = export(state)
            verify(state, patches, tree)
    except ToolError as e:
        die(TOOL, str(e))
    except KeyboardInterrupt:
        die(TOOL, 'interrupted', 130)
    dirty = uncommitted_kunit()
    if dirty:
        print('%s: note: exported kunit/ with uncommitted changes: %s'
              % (TOOL, ', '.join(dirty)), file=sys.stderr)
    print('%s: %d patches in %s (applies to %s)'
          % (TOOL, len(patches), os.path.relpath(OUT, ROOT),
             state['version']))


if __name__ == '__main__':
    main()
