// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the pin paths when memory runs out (CONFIG_GUP_KUNIT_TEST
 * with CONFIG_FAILSLAB and CONFIG_FAIL_PAGE_ALLOC).
 *
 * gup_pin_fault: each case is one way into GUP, pin_user_pages(),
 * pin_user_pages_fast(), pin_user_pages_remote(), pin_user_pages_unlocked()
 * and, to compare, get_user_pages() and get_user_pages_fast(), on memory
 * that the call must fault in first (anonymous, THP, hugetlb, shmem, a
 * file on the ext4 disk) and, long-term, on pages of ZONE_MOVABLE that it
 * must migrate; and the fork() of pinned pages, whose early COW allocates
 * the child's copies. Its parameters are the failure points of the call,
 * n = 1, 2, ...: the n-th slab or page allocation of the call fails
 * (gup_kunit_fault.c), until the call reaches no n-th point.
 *
 * After each, the call returned every page, the first pages asked for, or
 * an errno; and once the case releases what it returned: no pin held, no
 * folio isolated, each page mapped in the range on the LRU, holding only
 * the references of its mappings, and still the mm's own; the hugetlb
 * pool as it was once the memory is unmapped; no WARNING, BUG or KASAN
 * report (the allocation-failure reports that an injection causes are
 * none of those). The ext4 file is read one page per request
 * (gup_kunit_ext4_page_requests()), so that the allocations of the block
 * layer below are the same in every run; the disk itself never fails a
 * request (no CONFIG_FAIL_MAKE_REQUEST): a failed read is not a pin
 * path's failure.
 *
 * The default run sweeps anonymous memory, the long-term pin of
 * ZONE_MOVABLE pages (the migration's failure paths) and the fork; boot
 * with gup_kunit_fault.full=1 to sweep every kind of memory. A kernel's own
 * entry points have their own suite in its folder (6.12:
 * gup_pin_fault_memfd, memfd_pin_folios()).
 */

#include <linux/mman.h>
#include <linux/pagemap.h>
#include <linux/sched/task.h>
#include <linux/signal.h>
#include "gup_kunit.h"

/* The memory a case pins: gup_kunit_fault_kind.mem. */
enum {
	GUP_KUNIT_FAULT_ANON,
	GUP_KUNIT_FAULT_THP,
	GUP_KUNIT_FAULT_HUGETLB,
	GUP_KUNIT_FAULT_SHMEM,
	GUP_KUNIT_FAULT_FILE,
	GUP_KUNIT_FAULT_MOVABLE,
};

/*
 * Every kind, for the pins; the get_user_pages() cases take all but the
 * last, FOLL_LONGTERM going with FOLL_PIN only, and so does
 * pin_user_pages_unlocked() where it cannot pin long-term.
 */
static const struct gup_kunit_fault_kind gup_kunit_fault_kinds[] = {
	{ "anon", GUP_KUNIT_FAULT_ANON, FOLL_WRITE, GUP_KUNIT_NPAGES, true },
	{ "THP", GUP_KUNIT_FAULT_THP, FOLL_WRITE, GUP_KUNIT_NPAGES, false },
	{ "hugetlb", GUP_KUNIT_FAULT_HUGETLB, FOLL_WRITE, GUP_KUNIT_NPAGES,
	  false },
	{ "shmem", GUP_KUNIT_FAULT_SHMEM, FOLL_WRITE, GUP_KUNIT_NPAGES, false },
	{ "ext4 file", GUP_KUNIT_FAULT_FILE, 0, GUP_KUNIT_NPAGES, false },
	{ "long-term, ZONE_MOVABLE", GUP_KUNIT_FAULT_MOVABLE,
	  FOLL_WRITE | FOLL_LONGTERM, GUP_KUNIT_NPAGES, true },
};

GUP_KUNIT_FAULT_PARAMS(gup_kunit_fault_pin, gup_kunit_fault_kinds,
		       ARRAY_SIZE(gup_kunit_fault_kinds));
GUP_KUNIT_FAULT_PARAMS(gup_kunit_fault_get, gup_kunit_fault_kinds,
		       ARRAY_SIZE(gup_kunit_fault_kinds) - 1);
GUP_KUNIT_FAULT_PARAMS(gup_kunit_fault_unlocked, gup_kunit_fault_kinds,
		       ARRAY_SIZE(gup_kunit_fault_kinds) -
		       !GUP_KUNIT_UNLOCKED_LONGTERM);

/**
 * struct gup_kunit_fault_entry - a way into GUP.
 * @name: its name, in the report line.
 * @call: the call, with the caller's locking.
 * @foll_get: it takes references, not pins.
 */
struct gup_kunit_fault_entry {
	const char *name;
	long (*call)(unsigned long start, long npages, unsigned int flags,
		     struct page **pages);
	bool foll_get;
};

static long gup_kunit_fault_remote(unsigned long start, long npages,
				   unsigned int flags, struct page **pages)
{
	long ret;

	mmap_read_lock(current->mm);
	ret = gup_kunit_pin_user_pages_remote(current->mm, start, npages,
					      flags, pages);
	mmap_read_unlock(current->mm);
	return ret;
}

static long gup_kunit_fault_unlocked(unsigned long start, long npages,
				     unsigned int flags, struct page **pages)
{
	return pin_user_pages_unlocked(start, npages, pages, flags);
}

static long gup_kunit_fault_get_slow(unsigned long start, long npages,
				     unsigned int flags, struct page **pages)
{
	long ret;

	mmap_read_lock(current->mm);
	ret = gup_kunit_get_user_pages(start, npages, flags, pages);
	mmap_read_unlock(current->mm);
	return ret;
}

static long gup_kunit_fault_get_fast(unsigned long start, long npages,
				     unsigned int flags, struct page **pages)
{
	return get_user_pages_fast(start, npages, flags, pages);
}

static long gup_kunit_fault_slow(unsigned long start, long npages,
				 unsigned int flags, struct page **pages)
{
	return gup_kunit_pin_by(GUP_KUNIT_SLOW, start, npages, flags, pages);
}

static long gup_kunit_fault_fast(unsigned long start, long npages,
				 unsigned int flags, struct page **pages)
{
	return gup_kunit_pin_by(GUP_KUNIT_FAST, start, npages, flags, pages);
}

/*
 * Map the memory of @k for the call, at @at if not 0, unfaulted but for
 * ZONE_MOVABLE's, which must be there to be migrated (and is mapped where
 * the kernel picks: its page tables are there before the call): set
 * *@base and *@len to the mapping, and return the first page the call is
 * asked for.
 */
static unsigned long gup_kunit_fault_map(struct kunit *test,
					 const struct gup_kunit_fault_kind *k,
					 unsigned long at, unsigned long *base,
					 unsigned long *len)
{
	struct file *file;

	*len = k->npages * PAGE_SIZE;
	switch (k->mem) {
	case GUP_KUNIT_FAULT_THP:
		*len = 2 * HPAGE_PMD_SIZE;
		*base = gup_kunit_mmap_at(test, at, *len, GUP_KUNIT_RW,
					  GUP_KUNIT_ANON);
		KUNIT_ASSERT_EQ(test, do_madvise(current->mm,
						 ALIGN(*base, HPAGE_PMD_SIZE),
						 HPAGE_PMD_SIZE,
						 MADV_HUGEPAGE), 0);
		return ALIGN(*base, HPAGE_PMD_SIZE);
	case GUP_KUNIT_FAULT_HUGETLB:
		*len = PMD_SIZE;
		*base = gup_kunit_mmap_at(test, at, *len, GUP_KUNIT_RW,
					  GUP_KUNIT_ANON | MAP_HUGETLB);
		break;
	case GUP_KUNIT_FAULT_SHMEM:
		*base = gup_kunit_mmap_at(test, at, *len, GUP_KUNIT_RW,
					  MAP_SHARED | MAP_ANONYMOUS);
		break;
	case GUP_KUNIT_FAULT_FILE:
		/* Written and fsync()ed, then evicted: the pin reads it. */
		file = gup_kunit_ext4_file(test, k->npages, NULL);
		gup_kunit_ext4_page_requests(test, file);
		invalidate_mapping_pages(file->f_mapping, 0, -1);
		*base = gup_kunit_vm_mmap_at(test, file, at, *len, PROT_READ,
					     MAP_SHARED);
		KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(*base));
		break;
	case GUP_KUNIT_FAULT_MOVABLE:
		*base = gup_kunit_mmap_movable(test, *len, 0, 0, k->npages);
		return *base;
	default:
		*base = gup_kunit_mmap_at(test, at, *len, GUP_KUNIT_RW,
					  GUP_KUNIT_ANON);
	}
	KUNIT_ASSERT_TRUE_MSG(test, !at || *base == at,
			      "warm-up mapped at %lx, not %lx", *base, at);
	return *base;
}

/* Its anonymous pages are the case's mm's own: private, never forked. */
static bool gup_kunit_fault_private(const struct gup_kunit_fault_kind *k)
{
	return k->mem != GUP_KUNIT_FAULT_SHMEM &&
	       k->mem != GUP_KUNIT_FAULT_FILE;
}

/* A round of a sweep of a call (@ctx): its n-th failure point fails. */
static void gup_kunit_fault_round(struct kunit *test, const void *ctx,
				  unsigned long at)
{
	const struct gup_kunit_fault_entry *e = ctx;
	const struct gup_kunit_fault_step *step = test->param_value;
	const struct gup_kunit_fault_kind *k = step->kind;
	struct gup_kunit_pins *p = gup_kunit_pins(test, k->npages);
	struct gup_kunit_fault_before b;
	unsigned long addr, base, len;
	struct gup_kunit_pool pool;
	bool reached;
	long ret;

	p->foll_get = e->foll_get;
	gup_kunit_pool(&pool);
	addr = gup_kunit_fault_map(test, k, at, &base, &len);
	gup_kunit_fault_snap(&b);
	gup_kunit_fault_arm(test);
	ret = e->call(addr, k->npages, k->flags, p->pages);
	reached = gup_kunit_fault_disarm(test, e->name, ret, k->npages);
	gup_kunit_pins_got(p, ret);
	gup_kunit_fault_expect_result(test, reached, ret, k->npages);
	gup_kunit_fault_expect_pages(test, addr, p->pages, p->nr,
				     !e->foll_get);
	gup_kunit_release(p);
	gup_kunit_fault_expect_restored(test, &b, addr, k->npages,
					gup_kunit_fault_private(k));
	KUNIT_EXPECT_EQ(test, vm_munmap(base, len), 0);
	GUP_KUNIT_EXPECT_POOL(test, &pool, 0, 0);
}

/* One step of a sweep of @e. */
static void gup_kunit_fault_sweep(struct kunit *test,
				  const struct gup_kunit_fault_entry *e)
{
	gup_kunit_fault_run(test, gup_kunit_fault_round, e);
}

static const struct gup_kunit_fault_entry gup_kunit_fault_pin_slow = {
	"pin_user_pages", gup_kunit_fault_slow, false,
};

static void pin_user_pages_fails_cleanly(struct kunit *test)
{
	gup_kunit_fault_sweep(test, &gup_kunit_fault_pin_slow);
}

static const struct gup_kunit_fault_entry gup_kunit_fault_pin_fast = {
	"pin_user_pages_fast", gup_kunit_fault_fast, false,
};

static void pin_user_pages_fast_fails_cleanly(struct kunit *test)
{
	gup_kunit_fault_sweep(test, &gup_kunit_fault_pin_fast);
}

static const struct gup_kunit_fault_entry gup_kunit_fault_pin_remote = {
	"pin_user_pages_remote", gup_kunit_fault_remote, false,
};

static void pin_user_pages_remote_fails_cleanly(struct kunit *test)
{
	gup_kunit_fault_sweep(test, &gup_kunit_fault_pin_remote);
}

static const struct gup_kunit_fault_entry gup_kunit_fault_pin_unlocked = {
	"pin_user_pages_unlocked", gup_kunit_fault_unlocked, false,
};

static void pin_user_pages_unlocked_fails_cleanly(struct kunit *test)
{
	gup_kunit_fault_sweep(test, &gup_kunit_fault_pin_unlocked);
}

static const struct gup_kunit_fault_entry gup_kunit_fault_get_slow_entry = {
	"get_user_pages", gup_kunit_fault_get_slow, true,
};

static void get_user_pages_fails_cleanly(struct kunit *test)
{
	gup_kunit_fault_sweep(test, &gup_kunit_fault_get_slow_entry);
}

static const struct gup_kunit_fault_entry gup_kunit_fault_get_fast_entry = {
	"get_user_pages_fast", gup_kunit_fault_get_fast, true,
};

static void get_user_pages_fast_fails_cleanly(struct kunit *test)
{
	gup_kunit_fault_sweep(test, &gup_kunit_fault_get_fast_entry);
}

/* ------------------------------------------------------------------ */
/* fork() of pinned pages                                              */
/* ------------------------------------------------------------------ */

static const struct gup_kunit_fault_kind gup_kunit_fault_fork_kinds[] = {
	{ "pinned anon", GUP_KUNIT_FAULT_ANON, FOLL_WRITE, GUP_KUNIT_NPAGES,
	  true },
};

GUP_KUNIT_FAULT_PARAMS(gup_kunit_fault_fork, gup_kunit_fault_fork_kinds,
		       ARRAY_SIZE(gup_kunit_fault_fork_kinds));

/* The child: it only has to exist. Its exit frees its copy of the mm. */
static int gup_kunit_fault_child(void *unused)
{
	do_exit(0);
}

/*
 * fork() as kernel_clone() makes it for a fork(2) (no CLONE_VM: the child
 * gets a copy of the case's mm), of a private mapping whose pages are
 * pinned, with a child that runs one kernel function: the child may
 * not share a page that a device writes into, so copy_present_page()
 * copies each at once, allocating. A failure anywhere in the fork must
 * leave the parent's pinned pages as they were: still mapped, pinned,
 * exclusive, with their references; the child, if there was one, exits
 * and takes nothing with it.
 */
static void gup_kunit_fault_fork_round(struct kunit *test, const void *ctx,
				       unsigned long at)
{
	const struct gup_kunit_fault_step *step = test->param_value;
	const long npages = step->kind->npages;
	struct kernel_clone_args args = {
		.flags = CLONE_UNTRACED,
		.exit_signal = SIGCHLD,
		.fn = gup_kunit_fault_child,
	};
	struct gup_kunit_pins *p = gup_kunit_pins(test, npages);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_fault_before b;
	struct gup_kunit_snap s0;
	unsigned long addr;
	int status = 0;
	bool reached;
	long i, ret;
	pid_t pid;

	addr = gup_kunit_mmap_at(test, at, npages * PAGE_SIZE, GUP_KUNIT_RW,
				 GUP_KUNIT_ANON);
	gup_kunit_fill(test, addr, npages);
	gup_kunit_user_refs(test, addr, npages, ref0);
	gup_kunit_snap_counters(&s0);
	ret = pin_user_pages_fast(addr, npages, FOLL_WRITE, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, npages);
	gup_kunit_fault_snap(&b);
	kernel_sigaction(SIGCHLD, SIG_DFL);	/* reap the child ourselves */
	gup_kunit_fault_arm(test);
	pid = kernel_clone(&args);
	/* a child is one complete result, of one asked for */
	reached = gup_kunit_fault_disarm(test, "fork", pid > 0 ? 1 : pid, 1);
	if (pid > 0)
		KUNIT_EXPECT_EQ(test, kernel_wait(pid, &status), pid);
	kernel_sigaction(SIGCHLD, SIG_IGN);
	gup_kunit_fault_expect_result(test, reached, pid > 0 ? 1 : pid, 1);

	GUP_KUNIT_EXPECT_PINS_HELD(test, &b.s, 0);
	gup_kunit_expect_mapped(test, addr, p->pages, npages);
	gup_kunit_expect_biased(test, p->pages, npages, ref0, true);
	for (i = 0; i < npages; i++)
		KUNIT_EXPECT_TRUE_MSG(test, PageAnonExclusive(p->pages[i]),
				      "page %ld lost PG_anon_exclusive", i);
	gup_kunit_release(p);
	b.s = s0;	/* no pin held once the case's own are released */
	gup_kunit_fault_expect_restored(test, &b, addr, npages, true);
	KUNIT_EXPECT_EQ(test, vm_munmap(addr, npages * PAGE_SIZE), 0);
}

/*
 * fork() as kernel_clone() makes it for a fork(2) (no CLONE_VM: the child
 * gets a copy of the case's mm), of a private mapping whose pages are
 * pinned, with a child that runs one kernel function: the child may
 * not share a page that a device writes into, so copy_present_page()
 * copies each at once, allocating. A failure anywhere in the fork must
 * leave the parent's pinned pages as they were: still mapped, pinned,
 * exclusive, with their references; the child, if there was one, exits
 * and takes nothing with it.
 */
static void fork_of_pinned_pages_fails_cleanly(struct kunit *test)
{
	gup_kunit_fault_run(test, gup_kunit_fault_fork_round, NULL);
}

static struct kunit_case gup_pin_fault_cases[] = {
	KUNIT_CASE_PARAM(pin_user_pages_fails_cleanly,
			 gup_kunit_fault_pin_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_fast_fails_cleanly,
			 gup_kunit_fault_pin_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_remote_fails_cleanly,
			 gup_kunit_fault_pin_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_unlocked_fails_cleanly,
			 gup_kunit_fault_unlocked_gen_params),
	KUNIT_CASE_PARAM(get_user_pages_fails_cleanly,
			 gup_kunit_fault_get_gen_params),
	KUNIT_CASE_PARAM(get_user_pages_fast_fails_cleanly,
			 gup_kunit_fault_get_gen_params),
	KUNIT_CASE_PARAM(fork_of_pinned_pages_fails_cleanly,
			 gup_kunit_fault_fork_gen_params),
	{}
};

static struct kunit_suite gup_pin_fault_suite = {
	.name = "gup_pin_fault",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_fault_cases,
};

kunit_test_suite(gup_pin_fault_suite);
