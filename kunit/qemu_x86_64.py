# QEMU and kernel command line of the gup-pin-kunit suites: the one place
# that both `make test` and a plain `kunit.py run --qemu_config=` use.
#
#  oops=panic panic=1   an oops in a case becomes a panic, and the panic a
#                       reboot, which -no-reboot turns into QEMU exiting:
#                       a crash ends the run at once instead of waiting for
#                       KUnit's 300 s per-case timeout.
#  hugepages=16         hugetlb pool for the user-memory pins (room for the
#                       pages that long-term pins migrate out of ZONE_MOVABLE).
#  movablecore=512M     a ZONE_MOVABLE for the FOLL_LONGTERM migration cases
#                       (512M: under KASAN the shadow fills the top 256M).
#  vsyscall=emulate     a gate area to pin.
#  memmap=2M!1G         2 MiB of RAM at 1 GiB kept from the page allocator
#                       (E820 legacy PMEM, no driver claims it): real memory
#                       for the device-coherent pgmaps of the user cases.
#  brd.rd_nr=2 brd.rd_size=4096  two 4 MiB ramdisks: /dev/ram0, the swap
#                       area that the pinned-anon reclaim case turns on and
#                       off; /dev/ram1, a block device whose page cache
#                       needs dirty tracking (6.12's file-backed long-term
#                       pin cases), never swap.
#  secretmem.enable=1   memfd_secret() for gup_pin_secretmem (6.1's default
#                       is off, 6.12's on).
#  (No PS/2 probe to turn off: kunitconfig leaves out SERIO, whose late
#  'input: ... Mouse' line could land inside the KTAP.)
#
# $GUP_KUNIT_DISK       the ext4 image of gup_pin_ext4_dma (tools/mkdisk.py;
#                       tools/run_suite.py makes it and sets this), attached
#                       as the virtio disk vda, snapshot=on: no boot writes
#                       to the image. Unset or empty: no disk, and the
#                       suite's cases skip.
import os

from ..qemu_config import QemuArchParams

_DISK = os.environ.get('GUP_KUNIT_DISK', '')
_DRIVE = ['-drive', 'file=%s,if=virtio,format=raw,snapshot=on'
          % _DISK.replace(',', ',,')] if _DISK else []

QEMU_ARCH = QemuArchParams(linux_arch='x86_64',
			   kconfig='''
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y''',
			   qemu_arch='x86_64',
			   kernel_path='arch/x86/boot/bzImage',
			   kernel_command_line='console=ttyS0 oops=panic panic=1 '
			   'hugepages=16 movablecore=512M vsyscall=emulate '
			   'memmap=2M!1G brd.rd_nr=2 brd.rd_size=4096 '
			   'secretmem.enable=1',
			   extra_qemu_params=['-bios', 'qboot.rom', '-smp', '2',
					      '-m', '2048'] + _DRIVE)
