// SPDX-License-Identifier: GPL-2.0
/*
 * gup_pin_secretmem: GUP never pins the pages of memfd_secret() (harness
 * only, never part of the series).
 *
 * Secret memory is removed from the kernel's direct map: no device and no
 * kernel code may reach it, so neither path of GUP may hand its pages out.
 * The slow path refuses the vma (check_vma_flags()), and GUP-fast, which
 * sees no vma, refuses the folio (gup_fast_folio_allowed() on 6.12,
 * gup_pte_range() on 6.1). Only the memfd_secret() system call makes such
 * a file, so the suite calls the system call's x86-64 entry, as the
 * harness's swapon does: a kernel patch could not, which is why this
 * suite lives in kunit/harness/ and not in the series. The kernel must
 * boot with secretmem.enable=1 (6.1's default is off).
 */

#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/syscalls.h>
#include "tests/gup_kunit.h"

asmlinkage long __x64_sys_memfd_secret(const struct pt_regs *regs);

/**
 * struct gup_kunit_secretmem_case - one pin of secret memory.
 * @name: the path and the pin.
 * @path: which of GUP's paths pins.
 * @flags: FOLL_ flags of the pin (FOLL_PIN added).
 */
struct gup_kunit_secretmem_case {
	const char *name;
	enum gup_kunit_path path;
	unsigned int flags;
};

static const struct gup_kunit_secretmem_case gup_kunit_secretmem_cases[] = {
	{ "slow path", GUP_KUNIT_SLOW, 0 },
	{ "GUP-fast", GUP_KUNIT_FAST, 0 },
	{ "GUP-fast alone", GUP_KUNIT_FAST_ONLY, 0 },
	{ "GUP-fast alone, long-term write", GUP_KUNIT_FAST_ONLY,
	  FOLL_LONGTERM | FOLL_WRITE },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_secretmem, gup_kunit_secretmem_cases,
			    struct gup_kunit_secretmem_case);

/*
 * A new memfd_secret() file of @npages pages, mapped shared and
 * read-write into the case's address space, its pages faulted in by
 * writing to them. The mapping holds the file; both go when the case ends.
 */
static unsigned long gup_kunit_mmap_secretmem(struct kunit *test, long npages)
{
	unsigned long len = npages * PAGE_SIZE, addr;
	struct pt_regs regs = { };	/* memfd_secret(0) */
	struct file *file;
	long fd;
	int err;

	fd = __x64_sys_memfd_secret(&regs);
	if (fd < 0)
		kunit_skip(test,
			   "needs secretmem: pass --kernel_args=secretmem.enable=1 (memfd_secret(): %ld)",
			   fd);
	file = fget(fd);
	close_fd(fd);
	KUNIT_ASSERT_NOT_NULL(test, file);
	err = vfs_truncate(&file->f_path, len);
	addr = err ? err : gup_kunit_vm_mmap(test, file, len, GUP_KUNIT_RW,
					     MAP_SHARED);
	fput(file);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "ftruncate/mmap: %ld",
			       (long)addr);
	gup_kunit_fill(test, addr, npages);
	return addr;
}

/*
 * Pinning faulted secret memory pins nothing, on every path: the slow
 * path fails with -EFAULT, as does GUP-fast, which leaves the pages to
 * it; GUP-fast alone returns 0 pages.
 */
static void pin_user_pages_of_secret_memory_is_refused(struct kunit *test)
{
	const struct gup_kunit_secretmem_case *c = test->param_value;
	long npages = GUP_KUNIT_NPAGES;
	struct gup_kunit_pins *p = gup_kunit_pins(test, npages);
	struct gup_kunit_snap s;
	unsigned long addr;
	long ret;

	addr = gup_kunit_mmap_secretmem(test, npages);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(c->path, addr, npages, c->flags, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret,
			c->path == GUP_KUNIT_FAST_ONLY ? 0L : (long)-EFAULT);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_unpin(p);
}

static struct kunit_case gup_pin_secretmem_cases[] = {
	KUNIT_CASE_PARAM(pin_user_pages_of_secret_memory_is_refused,
			 gup_kunit_secretmem_gen_params),
	{}
};

static struct kunit_suite gup_pin_secretmem_suite = {
	.name = "gup_pin_secretmem",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_secretmem_cases,
};

kunit_test_suite(gup_pin_secretmem_suite);
