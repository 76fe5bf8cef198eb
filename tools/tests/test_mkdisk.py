"""Tests of tools/mkdisk.py: the ext4 image of gup_pin_ext4_dma."""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
import mkdisk  # noqa: E402
from _common import ToolError  # noqa: E402

QEMU_CONFIG = os.path.join(HERE, '..', '..', 'kunit', 'qemu_x86_64.py')
HAVE_E2FSPROGS = all(shutil.which(t) or os.path.exists('/sbin/' + t)
                     for t in ('mke2fs', 'e2fsck'))


@unittest.skipUnless(HAVE_E2FSPROGS, 'e2fsprogs not installed')
class Image(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.image = os.path.join(self.dir, 'sub', 'disk.img')

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_made_image_is_clean_ext4_with_4k_blocks(self):
        mkdisk.make_image(self.image, 8)
        mkdisk.check_image(self.image)
        self.assertEqual(os.path.getsize(self.image), 8 << 20)
        with open(self.image, 'rb') as f:
            f.seek(1024)
            sb = f.read(1024)
        self.assertEqual(sb[0x38:0x3a], b'\x53\xef')       # s_magic
        self.assertEqual(int.from_bytes(sb[0x18:0x1c], 'little'), 2)
        self.assertEqual(sorted(os.listdir(os.path.dirname(self.image))),
                         ['disk.img'])                      # no temp left

    def test_corrupt_image_is_one_named_error(self):
        mkdisk.make_image(self.image, 8)
        with open(self.image, 'r+b') as f:
            f.seek(1024)
            f.write(b'\0' * 1024)
        with self.assertRaises(ToolError) as cm:
            mkdisk.check_image(self.image)
        self.assertIn('not a clean ext4 image', str(cm.exception))
        self.assertIn('disk.img', str(cm.exception))

    def test_cli_error_is_one_line_and_exit_1(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), \
                self.assertRaises(SystemExit) as cm:
            mkdisk.main(['--check', os.path.join(self.dir, 'none.img')])
        self.assertEqual(cm.exception.code, 1)
        self.assertEqual(len(err.getvalue().splitlines()), 1)
        self.assertIn('no such image', err.getvalue())

    def test_unset_variable_makes_the_default_image(self):
        path, secs = mkdisk.disk_for_run({}, self.image)
        self.assertEqual(path, os.path.abspath(self.image))
        mkdisk.check_image(path)
        self.assertGreater(secs, 0)

    def test_given_image_is_checked_not_remade(self):
        mkdisk.make_image(self.image, 8)
        before = os.stat(self.image).st_mtime_ns
        path, secs = mkdisk.disk_for_run({mkdisk.DISK_ENV: self.image},
                                         os.path.join(self.dir, 'other'))
        self.assertEqual((path, secs), (os.path.abspath(self.image), 0.0))
        self.assertEqual(os.stat(self.image).st_mtime_ns, before)

    def test_given_corrupt_image_is_refused(self):
        bad = os.path.join(self.dir, 'zeros.img')
        with open(bad, 'wb') as f:
            f.write(b'\0' * 65536)
        with self.assertRaises(ToolError):
            mkdisk.disk_for_run({mkdisk.DISK_ENV: bad})


class NoDisk(unittest.TestCase):
    def test_empty_variable_attaches_no_disk(self):
        self.assertEqual(mkdisk.disk_for_run({mkdisk.DISK_ENV: ''},
                                             '/nonexistent/x.img'),
                         ('', 0.0))

    def test_qemu_config_reads_the_same_variable(self):
        with open(QEMU_CONFIG) as f:
            text = f.read()
        self.assertIn("os.environ.get('%s'" % mkdisk.DISK_ENV, text)
        self.assertIn('qemu_args_with_disk(', text)

    def test_help(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), \
                self.assertRaises(SystemExit) as cm:
            mkdisk.main(['--help'])
        self.assertEqual(cm.exception.code, 0)
        self.assertIn(mkdisk.DISK_ENV, out.getvalue())


if __name__ == '__main__':
    unittest.main()
