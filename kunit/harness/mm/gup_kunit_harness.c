// SPDX-License-Identifier: GPL-2.0
/*
 * gup-pin-kunit's harness inside the kernel: never part of the series.
 *
 * prepare_tree builds this file into the project's own kernels only (a
 * generated commit adds it to mm/Makefile); `make series` never exports
 * it. It does three things that a test harness needs and a kernel patch
 * should not carry:
 *
 *  - swap: before the suites run, it makes the brd ramdisk /dev/ram0
 *    (brd.rd_nr= brd.rd_size= on the command line) a swap area, so that
 *    gup_pin_user can page out anonymous memory. A built-in KUnit kernel
 *    has no user space to run mkswap and swapon.
 *  - coverage: with CONFIG_GCOV_KERNEL, at shutdown (after the last suite)
 *    it prints the gcov profile of every file under mm/ on the console,
 *    for tools/coverage.py to turn back into .gcda files.
 *  - self-test: with gup.kunit_selftest=panic|oops|hang, the gup_selftest
 *    suite crashes or hangs the kernel; with =leak, it leaks at boot. The
 *    harness uses them to show that it reports each as a failure.
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/init_syscalls.h>
#include <linux/kthread.h>
#include <linux/major.h>
#include <linux/mman.h>
#include <linux/moduleparam.h>
#include <linux/reboot.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include <linux/syscalls.h>

/* gup.kunit_selftest=, as when the self-test lived in mm/gup.c */
#undef MODULE_PARAM_PREFIX
#define MODULE_PARAM_PREFIX "gup."

/* ------------------------------------------------------------------ */
/* Swap on the brd ramdisk, before the suites run                      */
/* ------------------------------------------------------------------ */

#if defined(CONFIG_SWAP) && defined(CONFIG_BLK_DEV_RAM) && defined(CONFIG_X86_64)

asmlinkage long __x64_sys_swapon(const struct pt_regs *regs);

#define GUP_KUNIT_SWAP_DEV	"/gup_kunit_ram0"

/* Write a version-1 swap header ("SWAPSPACE2") over the whole ramdisk. */
static int gup_kunit_mkswap(void)
{
	union swap_header *hdr;
	struct file *f;
	loff_t pos = 0, size;
	ssize_t n;

	f = filp_open(GUP_KUNIT_SWAP_DEV, O_RDWR | O_LARGEFILE, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	size = i_size_read(f->f_mapping->host);
	hdr = kzalloc(PAGE_SIZE, GFP_KERNEL);
	if (!hdr || size < 16 * PAGE_SIZE) {
		kfree(hdr);
		fput(f);
		return hdr ? -ENOSPC : -ENOMEM;
	}
	hdr->info.version = 1;
	hdr->info.last_page = size / PAGE_SIZE - 1;
	memcpy(hdr->magic.magic, "SWAPSPACE2", 10);
	n = kernel_write(f, hdr, PAGE_SIZE, &pos);
	kfree(hdr);
	if (n == PAGE_SIZE)
		n = vfs_fsync(f, 0);
	fput(f);
	return n < 0 ? n : 0;
}

/*
 * swapon(2) of the ramdisk, from a kthread with a user address space of
 * its own: there is no in-kernel swapon(), so call the system call's
 * x86-64 entry with the path in user memory.
 */
static int gup_kunit_swapon_fn(void *done)
{
	struct mm_struct *mm = mm_alloc();
	struct pt_regs regs = { };
	unsigned long ubuf;
	long ret = -ENOMEM;

	if (!mm)
		goto out;
	mm->task_size = TASK_SIZE;
	arch_pick_mmap_layout(mm, &current->signal->rlim[RLIMIT_STACK]);
	kthread_use_mm(mm);
	ubuf = vm_mmap(NULL, 0, PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, 0);
	ret = IS_ERR_VALUE(ubuf) ? (long)ubuf : -EFAULT;
	if (!IS_ERR_VALUE(ubuf) &&
	    !copy_to_user((void __user *)ubuf, GUP_KUNIT_SWAP_DEV,
			  sizeof(GUP_KUNIT_SWAP_DEV))) {
		regs.di = ubuf;
		ret = __x64_sys_swapon(&regs);
	}
	kthread_unuse_mm(mm);
	mmput(mm);
out:
	if (ret)
		pr_warn("gup_kunit: swapon %s: %ld\n", GUP_KUNIT_SWAP_DEV, ret);
	complete(done);
	return 0;
}

static int __init gup_kunit_swap_init(void)
{
	DECLARE_COMPLETION_ONSTACK(done);
	struct task_struct *t;
	int err;

	err = init_mknod(GUP_KUNIT_SWAP_DEV, S_IFBLK | 0600,
			 new_encode_dev(MKDEV(RAMDISK_MAJOR, 0)));
	if (!err)
		err = gup_kunit_mkswap();
	if (err) {
		pr_info("gup_kunit: no swap on %s (%d): boot with brd.rd_nr=\n",
			GUP_KUNIT_SWAP_DEV, err);
		return 0;
	}
	t = kthread_run(gup_kunit_swapon_fn, &done, "gup_kunit_swapon");
	if (!IS_ERR(t))
		wait_for_completion(&done);
	return 0;
}
late_initcall(gup_kunit_swap_init);

#endif /* CONFIG_SWAP && CONFIG_BLK_DEV_RAM && CONFIG_X86_64 */

/* ------------------------------------------------------------------ */
/* The gcov profile of mm/ on the console, at shutdown                 */
/* ------------------------------------------------------------------ */

#ifdef CONFIG_GCOV_KERNEL

#include <linux/crc32.h>
#include <linux/vmalloc.h>
#include "../kernel/gcov/gcov.h"

/*
 * The profile that gcov keeps for mm/gup.c and mm/memremap.c (profiled
 * with GCOV_PROFILE_gup.o=y and GCOV_PROFILE_memremap.o=y on the make
 * command line) cannot be copied out of /sys/kernel/debug/gcov: a KUnit
 * kernel has no user space. Instead, at shutdown, after the last suite,
 * each profile of a file under mm/ is converted to the .gcda format, as
 * the debugfs files would present it, and printed on the console in lines
 * of at most 200 characters:
 *
 *   GCOV: <gcda path> <offset> <hex bytes> <line crc32>
 *   GCOV-END: <gcda path> <size> <crc32> <line crc32>
 *
 * Every crc32 is that of zlib (crc32_le() seeded and finished with ~0):
 * the file's over its bytes, a line's over the text between "GCOV: " (or
 * "GCOV-END: ") and the space before it. A serial console under host load
 * loses characters (the 8250 driver gives up waiting for the transmitter
 * and writes over the byte before), so the whole dump is printed twice:
 * tools/coverage.py on the host drops every line whose crc32 does not
 * match, takes each chunk from whichever copy has it whole, checks sizes
 * and file checksums, and writes the .gcda files next to the .gcno files
 * of the build directory.
 */

/* Longest console line, and most bytes that %*phN prints. */
#define GUP_KUNIT_GCOV_LINE	200
#define GUP_KUNIT_GCOV_CHUNK	64
/* How many times the dump is printed: a chunk lost in one is in another. */
#define GUP_KUNIT_GCOV_COPIES	2

static char gup_kunit_gcov_line[GUP_KUNIT_GCOV_LINE];

/* Print @tag, the formatted text, and the crc32 of that text. */
static __printf(2, 3) void gup_kunit_gcov_line_out(const char *tag,
						   const char *fmt, ...)
{
	va_list args;
	int len;

	va_start(args, fmt);
	len = vscnprintf(gup_kunit_gcov_line, sizeof(gup_kunit_gcov_line),
			 fmt, args);
	va_end(args);
	pr_info("%s: %s %08x\n", tag, gup_kunit_gcov_line,
		crc32_le(~0U, gup_kunit_gcov_line, len) ^ ~0U);
}

/* The profiles of files under mm/: only the pin core is profiled there. */
static bool gup_kunit_gcov_wanted(const char *name)
{
	size_t len = strlen(name);

	return strstr(name, "/mm/") && len > 5 &&
	       !strcmp(name + len - 5, ".gcda");
}

static void gup_kunit_gcov_print(const char *name, const char *buf,
				 size_t size)
{
	int room;
	size_t chunk, off;

	/*
	 * "GCOV: " name ' ' up to 10 digits ' ', two hex digits a byte, then
	 * ' ' and the line's crc32 in 8 digits
	 */
	room = GUP_KUNIT_GCOV_LINE - (int)strlen("GCOV: ") -
	       (int)strlen(name) - 12 - 9;
	chunk = clamp_t(int, room / 2, 8, GUP_KUNIT_GCOV_CHUNK);

	for (off = 0; off < size; off += chunk) {
		size_t len = min(chunk, size - off);

		gup_kunit_gcov_line_out("GCOV", "%s %zu %*phN", name, off,
					(int)len, buf + off);
	}
	gup_kunit_gcov_line_out("GCOV-END", "%s %zu %08x", name, size,
				crc32_le(~0U, buf, size) ^ ~0U);
}

/* Print every wanted profile once; the caller holds gcov_lock. */
static void gup_kunit_gcov_dump_once(void)
{
	struct gcov_info *info = NULL;
	const char *name;
	size_t size;
	char *buf;

	while ((info = gcov_info_next(info))) {
		name = gcov_info_filename(info);
		if (!gup_kunit_gcov_wanted(name))
			continue;
		size = convert_to_gcda(NULL, info);
		buf = vmalloc(size);
		if (!buf) {
			pr_info("GCOV-ERROR: %s no memory for %zu bytes\n",
				name, size);
			continue;
		}
		convert_to_gcda(buf, info);
		gup_kunit_gcov_print(name, buf, size);
		vfree(buf);
	}
}

static int gup_kunit_gcov_dump(struct notifier_block *nb, unsigned long code,
			       void *unused)
{
	int copy;

	mutex_lock(&gcov_lock);
	for (copy = 0; copy < GUP_KUNIT_GCOV_COPIES; copy++)
		gup_kunit_gcov_dump_once();
	mutex_unlock(&gcov_lock);
	return NOTIFY_DONE;
}

static struct notifier_block gup_kunit_gcov_nb = {
	.notifier_call = gup_kunit_gcov_dump,
};

static int __init gup_kunit_gcov_init(void)
{
	return register_reboot_notifier(&gup_kunit_gcov_nb);
}
late_initcall(gup_kunit_gcov_init);

#endif /* CONFIG_GCOV_KERNEL */

/* ------------------------------------------------------------------ */
/* gup_selftest: the harness's own crash, hang and leak detection      */
/* ------------------------------------------------------------------ */

static char *kunit_selftest = "";
static int *gup_kunit_nowhere;
module_param(kunit_selftest, charp, 0444);
MODULE_PARM_DESC(kunit_selftest,
		 "gup_selftest only: panic, oops, hang or leak on purpose");

/*
 * Leak kzalloc() objects: no pointer to them is left anywhere, except
 * perhaps to the last one, in a register or a stack slot. Zeroed, because
 * a kmalloc() object keeps SLUB's stale free pointer to the next object
 * of its slab, and kmemleak takes that for a reference: a chain of
 * kmalloc() leaks hangs off any live neighbour and goes unreported.
 */
static noinline void gup_kunit_leak(void)
{
	int i;

	for (i = 0; i < 8; i++) {
		void *p = kzalloc(SZ_1K, GFP_KERNEL);

		OPTIMIZER_HIDE_VAR(p);
	}
}

/*
 * Overwrite the stack below the caller's frame, where kmalloc()'s frames
 * left copies of the leaked pointer that kmemleak would take for a
 * reference (it scans task stacks).
 */
static noinline void gup_kunit_scrub_stack(void)
{
	char junk[1024];

	memzero_explicit(junk, sizeof(junk));
}

/*
 * gup.kunit_selftest=leak: leak before any suite runs, so that on the make
 * test-debug kernel gup_pin_final's kmemleak scan must find the objects,
 * whichever suites the filter selects.
 */
static int __init gup_kunit_selftest_leak(void)
{
	if (!strcmp(kunit_selftest, "leak")) {
		gup_kunit_leak();
		gup_kunit_scrub_stack();
	}
	return 0;
}
late_initcall(gup_kunit_selftest_leak);

/*
 * Does nothing unless booted with gup.kunit_selftest=panic|oops|hang, and
 * is not in the default filter: it exists so that the harness can prove
 * that a crashed or hung kernel is reported as a failure.
 */
static void selftest_crashes_kernel_on_request(struct kunit *test)
{
	kunit_info(test, "start\n");
	if (!strcmp(kunit_selftest, "panic"))
		panic("gup_kunit: panic requested by gup.kunit_selftest");
	if (!strcmp(kunit_selftest, "oops"))
		WRITE_ONCE(*gup_kunit_nowhere, 1);	/* NULL pointer */
	if (!strcmp(kunit_selftest, "hang"))
		for (;;)
			msleep(1000);
	kunit_skip(test, "needs gup.kunit_selftest=panic|oops|hang (off by default)");
}

static struct kunit_case gup_selftest_cases[] = {
	KUNIT_CASE(selftest_crashes_kernel_on_request),
	{}
};

static struct kunit_suite gup_selftest_suite = {
	.name = "gup_selftest",
	.test_cases = gup_selftest_cases,
};

kunit_test_suite(gup_selftest_suite);
