# QEMU and kernel command line of the project's runs (make test, and a
# plain kunit.py run --qemu_config= in a prepared tree).
#
# The boot arguments and QEMU options that the suites need are written
# once, in the documented run of the series' mm/tests/.kunitconfig (in
# the tree kunit.py runs in: tools/_testenv.py reads it). This file adds
# what only the project's harness needs (HARNESS_KERNEL_ARGS of
# tools/_testenv.py):
#
#  oops=panic panic=1   an oops in a case becomes a panic, and the panic a
#                       reboot, which -no-reboot turns into QEMU exiting:
#                       a crash ends the run at once instead of waiting for
#                       KUnit's 300 s per-case timeout.
#  secretmem.enable=1   memfd_secret() for the harness's gup_pin_secretmem
#                       (6.1's default is off, 6.12's on).
#  -bios qboot.rom      kunit.py's own choice for x86_64.
#
# $GUP_KUNIT_DISK       the ext4 image of gup_pin_ext4_dma (tools/mkdisk.py;
#                       tools/run_suite.py makes it and sets this), put in
#                       the place of the documented gup-ext4.img, which QEMU
#                       opens snapshot=on: no boot writes to the image.
#                       Unset or empty: no disk, and the suite's cases skip.
import os
import sys

from ..qemu_config import QemuArchParams

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'tools'))
import _testenv  # noqa: E402

_RUN = _testenv.read_documented(os.getcwd())

QEMU_ARCH = QemuArchParams(linux_arch='x86_64',
			   kconfig='''
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y''',
			   qemu_arch='x86_64',
			   kernel_path='arch/x86/boot/bzImage',
			   kernel_command_line=' '.join(
				   ['console=ttyS0'] +
				   list(_testenv.HARNESS_KERNEL_ARGS) +
				   _RUN.kernel_args),
			   extra_qemu_params=['-bios', 'qboot.rom'] +
			   _RUN.qemu_args_with_disk(
				   os.environ.get('GUP_KUNIT_DISK', '')))
