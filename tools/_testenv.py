"""The test environment that the series documents (standard library only).

The exported series carries mm/tests/.kunitconfig, whose comment gives
the one documented way to run every case: an mkfs.ext4 line that makes
the disk image, and a kunit.py line with --kernel_args= and --qemu_args=.
That comment is the one place where the boot arguments and QEMU options
are written: kunit/qemu_x86_64.py (make test), tools/reviewer.py (make
reviewer) and the skip reasons of the suites (checked in tools/tests)
read them from there.
"""
import os
import re
import shlex

# Where the series puts the tests' configuration, in a kernel tree.
KUNITCONFIG_DIR = 'mm/tests'
KUNITCONFIG = KUNITCONFIG_DIR + '/.kunitconfig'
# The image name that the documented lines use.
DOCUMENTED_IMAGE = 'gup-ext4.img'
# What the project's own runs add to the documented kernel command line
# (kunit/qemu_x86_64.py says why): what the harness needs, never what a
# case of the series needs.
HARNESS_KERNEL_ARGS = ('oops=panic', 'panic=1', 'secretmem.enable=1')


class TestEnvError(Exception):
    """The .kunitconfig comment does not document a run."""


def _commands(text):
    """The shell commands in the comment lines of a .kunitconfig, each
    joined across its backslash continuations."""
    out, cur = [], ''
    for line in text.splitlines():
        if not line.startswith('#'):
            cur = ''
            continue
        body = line[1:].strip()
        if cur:
            cur += ' ' + body
        elif body.startswith(('./tools/testing/kunit/kunit.py',
                              'mkfs.ext4')):
            cur = body
        else:
            continue
        if cur.endswith('\\'):
            cur = cur[:-1].rstrip()
        else:
            out.append(cur)
            cur = ''
    return out


class Documented:
    """The documented run of a .kunitconfig.

    bare: the kunit.py command without arguments beyond the config;
    full: the kunit.py command with every argument; mkfs: the command
    that makes the disk image; kernel_args and qemu_args: the arguments
    of full, split as kunit.py splits them (a --kernel_args value is
    one list entry per word, a --qemu_args value is shlex-split).
    """

    def __init__(self, text):
        cmds = _commands(text)
        runs = [c for c in cmds if c.startswith('./tools/testing/kunit/')]
        mkfs = [c for c in cmds if c.startswith('mkfs.ext4')]
        if len(runs) != 2 or len(mkfs) != 1:
            raise TestEnvError('expected two kunit.py run lines and one '
                               'mkfs.ext4 line in the comment, found %d '
                               'and %d' % (len(runs), len(mkfs)))
        self.bare, self.full = sorted(runs, key=len)
        self.mkfs = mkfs[0]
        self.kernel_args, self.qemu_args = [], []
        for word in shlex.split(self.full)[2:]:
            key, _, value = word.partition('=')
            if key == '--kernel_args':
                self.kernel_args += value.split()
            elif key == '--qemu_args':
                self.qemu_args += shlex.split(value)
            elif word not in shlex.split(self.bare):
                raise TestEnvError('the documented run has %r, which the '
                                   'bare run lacks and which is neither '
                                   '--kernel_args nor --qemu_args' % word)
        if not self.kernel_args or not self.qemu_args:
            raise TestEnvError('the documented run has no --kernel_args= '
                               'or no --qemu_args=')

    def qemu_args_with_disk(self, image: str) -> list[str]:
        """qemu_args with the documented image replaced by @image, or
        without the -drive that attaches it if @image is empty."""
        out, skip = [], False
        for i, arg in enumerate(self.qemu_args):
            if skip:
                skip = False
                continue
            nxt = self.qemu_args[i + 1] if i + 1 < len(self.qemu_args) \
                else ''
            if arg == '-drive' and 'file=%s,' % DOCUMENTED_IMAGE in nxt:
                skip = True
                if image:
                    out += ['-drive', nxt.replace(
                        'file=%s,' % DOCUMENTED_IMAGE,
                        'file=%s,' % image.replace(',', ',,'))]
                continue
            out.append(arg)
        return out

    def arguments(self) -> set[str]:
        """Every --kernel_args word and --qemu_args word, for checking
        that a skip reason names only what the documented run has."""
        return set(self.kernel_args) | set(self.qemu_args)


def read_documented(tree_dir: str) -> 'Documented':
    """The Documented run of the .kunitconfig in a kernel tree."""
    path = os.path.join(tree_dir, KUNITCONFIG)
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except OSError as e:
        raise TestEnvError('cannot read %s: %s' % (path, e.strerror))
    return Documented(text)


# What a skip reason says to add: "pass --kernel_args=X" or
# "pass --qemu_args='X'".
SKIP_ARG_RE = re.compile(r"pass --(kernel_args|qemu_args)=(?:'([^']*)'|(\S+))")


def skip_arguments(reason: str) -> list[tuple[str, list[str]]]:
    """[(kind, words)] of what a skip reason says to pass."""
    out: list[tuple[str, list[str]]] = []
    for m in SKIP_ARG_RE.finditer(reason):
        value = m.group(2) if m.group(2) is not None else m.group(3)
        out.append((m.group(1), value.split() if m.group(1) ==
                    'kernel_args' else shlex.split(value)))
    return out
