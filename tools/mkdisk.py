#!/usr/bin/env python3
"""Make the disk of gup_pin_ext4_dma: an empty ext4 image for QEMU.

The suite gup_pin_ext4_dma (kunit/common/mm/tests/gup_pin_ext4_dma_kunit.c) shows the
2018 failure of DMA into file pages on a real ext4 on a real block
device. kunit/qemu_x86_64.py attaches the image named by the environment
variable GUP_KUNIT_DISK as a virtio disk (/dev/vda), snapshot=on, so that
no boot changes the image and every boot starts from the same empty
filesystem. The cases create their files themselves and fsync() them
before mapping them, so the image holds no data the tests depend on.

tools/run_suite.py calls this before every QEMU run and sets
GUP_KUNIT_DISK, according to what the caller's environment says:
  unset       make IMAGE (default build/gup-kunit-ext4.img) afresh
  a path      use that image as it is, after e2fsck -fn finds it clean
  empty       attach no disk: the suite's cases skip, with the reason

The image: mke2fs -t ext4 -b 4096 (Debian's e2fsprogs, the ext4 features
of its /etc/mke2fs.conf), SIZE (default 32 MiB), a fixed UUID and hash
seed, lazy_itable_init=0 and lazy_journal_init=0 (no ext4lazyinit thread
writing during the suite), checked with e2fsck -fn, written to a
temporary file and renamed, so that a QEMU still running an older image
keeps it. Prints IMAGE. A missing mke2fs or an image that e2fsck does not
find clean is one line on stderr and exit status 1.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import BUILD, ToolError, die, display  # noqa: E402

TOOL = 'mkdisk'
DISK_ENV = 'GUP_KUNIT_DISK'
DEFAULT_IMAGE = os.path.join(BUILD, 'gup-kunit-ext4.img')
DEFAULT_SIZE_MIB = 32
UUID = '6770756b-756e-6974-6578-743400000001'
HASH_SEED = '6770756b-756e-6974-6578-743400000002'


def _tool(name):
    for d in (os.environ.get('PATH', '').split(os.pathsep) +
              ['/sbin', '/usr/sbin']):
        path = os.path.join(d, name)
        if d and os.access(path, os.X_OK):
            return path
    raise ToolError('%s not found: install e2fsprogs (tools/deps)' % name)


def check_image(path: str) -> None:
    """Raise ToolError unless @path is an ext4 image that e2fsck -fn finds
    clean."""
    if not os.path.isfile(path):
        raise ToolError('%s: no such image' % display(path))
    proc = subprocess.run([_tool('e2fsck'), '-fn', path], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          errors='backslashreplace')
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
        why = next((ln for ln in lines if 'e2fsck' not in ln.split(':')[0]),
                   lines[-1] if lines else 'no output')
        raise ToolError('%s: not a clean ext4 image (e2fsck -fn exit %d: %s)'
                        % (display(path), proc.returncode, why))


def make_image(path: str, size_mib: int = DEFAULT_SIZE_MIB) -> float:
    """Make the image at @path, checked, atomically; return seconds."""
    t0 = time.monotonic()
    mke2fs = _tool('mke2fs')
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.mkdisk-', suffix='.img',
                               dir=os.path.dirname(os.path.abspath(path)))
    os.close(fd)
    try:
        cmd = [mke2fs, '-q', '-F', '-t', 'ext4', '-b', '4096', '-m', '0',
               '-L', 'gup_kunit', '-U', UUID,
               '-E', 'lazy_itable_init=0,lazy_journal_init=0,hash_seed='
               + HASH_SEED, tmp, '%dM' % size_mib]
        proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              errors='backslashreplace')
        if proc.returncode != 0:
            last = (proc.stdout.strip().splitlines() or ['no output'])[-1]
            raise ToolError('mke2fs failed (exit %d): %s'
                            % (proc.returncode, last))
        check_image(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return time.monotonic() - t0


def disk_for_run(environ: Mapping[str, str] | None = None,
                 image: str = DEFAULT_IMAGE) -> tuple[str, float]:
    """The image a QEMU run attaches, as GUP_KUNIT_DISK says (see the
    module's doc): (path or '', seconds spent making it)."""
    environ = os.environ if environ is None else environ
    given = environ.get(DISK_ENV)
    if given is None:
        return os.path.abspath(image), make_image(image)
    if given == '':
        return '', 0.0
    check_image(given)
    return os.path.abspath(given), 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument('--output', metavar='IMAGE', default=DEFAULT_IMAGE,
                    help='where to write the image (default %s)'
                    % display(DEFAULT_IMAGE))
    ap.add_argument('--size', type=int, default=DEFAULT_SIZE_MIB,
                    metavar='MIB', help='size in MiB (default %d)'
                    % DEFAULT_SIZE_MIB)
    ap.add_argument('--check', metavar='IMAGE',
                    help='only check that IMAGE is a clean ext4 image')
    args = ap.parse_args(argv)
    try:
        if args.check:
            check_image(args.check)
            print(os.path.abspath(args.check))
            return 0
        if args.size < 8:
            raise ToolError('--size %d: at least 8 MiB (the journal)'
                            % args.size)
        make_image(args.output, args.size)
    except ToolError as e:
        die(TOOL, str(e), e.status)
    except OSError as e:
        die(TOOL, '%s: %s' % (e.filename or args.output, e.strerror))
    print(os.path.abspath(args.output))
    return 0


if __name__ == '__main__':
    sys.exit(main())
