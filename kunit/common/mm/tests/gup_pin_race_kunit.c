// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of pins racing with the rest of mm (CONFIG_GUP_KUNIT_TEST,
 * two CPUs).
 *
 * gup_pin_race: each case pairs a pin with an operation that moves the
 * pinned memory around, on two CPUs at once, round after round
 * (gup_kunit_race.c): the operation once per round on the second CPU,
 * the pin, used and released, over and over on the first until the
 * operation is done. After every round, what must hold however the two
 * interleaved: the data a device wrote through the pin is in the
 * process's memory; no pin is left (NR_FOLL_PIN_ACQUIRED minus
 * NR_FOLL_PIN_RELEASED back to the start); each folio holds the
 * references and pins it started with. No check depends on timing; the
 * rounds are fixed (boot with gup_kunit_race.rounds=N for more, as make
 * stress does).
 */

#include <linux/mm.h>
#include <linux/huge_mm.h>
#include <linux/mman.h>
#include <linux/pagemap.h>
#include <linux/sched/task.h>
#include <linux/swap.h>
#include <linux/signal.h>
#include "gup_kunit.h"

/* The pages one pin takes: 64 PTEs of one page table. */
#define GUP_KUNIT_RACE_NPAGES	64

/* ------------------------------------------------------------------ */
/* The device, and what a round leaves                                 */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_race_mem - user memory that a race pins.
 * @path: how side A pins it.
 * @addr: the first page.
 * @npages: how many pages each pin takes.
 * @pages: the pages of side A's pin.
 * @s0: the pin counters at the start.
 * @bad: the first page whose device write went missing, or -1.
 * @want: what the device wrote there.
 * @got: what the process read.
 */
struct gup_kunit_race_mem {
	enum gup_kunit_path path;
	unsigned long addr;
	long npages;
	struct page *pages[GUP_KUNIT_RACE_NPAGES];
	struct gup_kunit_snap s0;
	long bad;
	u64 want;
	u64 got;
};

/* The word a device writes through pin @i of round @round, into page @j. */
static u64 gup_kunit_race_word(int round, unsigned long i, long j)
{
	return ((u64)round << 40) ^ ((u64)i << 12) ^ j;
}

/*
 * Side A of the races over user memory: pin, then the process writes its
 * own word into each page (second word), the device writes its word (the
 * first) through the pin, the driver releases the pages dirty, and the
 * process must read the device's word in its memory. A pin on a page
 * that the process no longer maps (one that a fork shared with the child,
 * so that the process's write copied it away) loses the device's word.
 */
static int gup_kunit_race_pin_and_write(void *ctx, int round, unsigned long i)
{
	struct gup_kunit_race_mem *m = ctx;
	long j, ret;
	u64 got;

	ret = gup_kunit_pin_by(m->path, m->addr, m->npages, FOLL_WRITE,
			       m->pages);
	if (ret != m->npages) {
		if (ret > 0)
			unpin_user_pages(m->pages, ret);
		return ret < 0 ? ret : -EIO;
	}
	for (j = 0; j < m->npages; j++)
		if (put_user(~gup_kunit_race_word(round, i, j),
			     (u64 __user *)(m->addr + j * PAGE_SIZE) + 1))
			break;
	for (j = 0; j < m->npages; j++) {
		u64 *p = kmap_local_page(m->pages[j]);

		WRITE_ONCE(p[0], gup_kunit_race_word(round, i, j));
		kunmap_local(p);
	}
	unpin_user_pages_dirty_lock(m->pages, m->npages, true);
	for (j = 0; j < m->npages; j++) {
		if (get_user(got, (u64 __user *)(m->addr + j * PAGE_SIZE)))
			return -EFAULT;
		if (got != gup_kunit_race_word(round, i, j) && m->bad < 0) {
			m->bad = j;
			m->want = gup_kunit_race_word(round, i, j);
			m->got = got;
			return -EILSEQ;
		}
	}
	return 0;
}

/* After a round: every device write arrived; no pin is left. */
static bool gup_kunit_race_mem_check(struct kunit *test, void *ctx, int round)
{
	struct gup_kunit_race_mem *m = ctx;
	struct gup_kunit_snap s;

	if (m->bad >= 0) {
		KUNIT_FAIL(test, "round %d, page %ld: device wrote %#llx, process reads %#llx",
			   round, m->bad, m->want, m->got);
		return false;
	}
	gup_kunit_snap_counters(&s);
	if (s.acquired - s.released != m->s0.acquired - m->s0.released) {
		KUNIT_FAIL(test, "round %d: %ld pins left", round,
			   (s.acquired - s.released) -
			   (m->s0.acquired - m->s0.released));
		return false;
	}
	return true;
}

/* Map and fill private anonymous memory for the races over it. */
static struct gup_kunit_race_mem *gup_kunit_race_mem(struct kunit *test,
						     enum gup_kunit_path path)
{
	struct gup_kunit_race_mem *m = kunit_kzalloc(test, sizeof(*m),
						     GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, m);
	m->path = path;
	m->npages = GUP_KUNIT_RACE_NPAGES;
	m->addr = gup_kunit_mmap(test, m->npages * PAGE_SIZE, GUP_KUNIT_RW,
				 GUP_KUNIT_ANON);
	gup_kunit_fill(test, m->addr, m->npages);
	m->bad = -1;
	gup_kunit_snap_counters(&m->s0);
	return m;
}

/* ------------------------------------------------------------------ */
/* fork()                                                              */
/* ------------------------------------------------------------------ */

/* The child: it only has to exist. Its exit frees its copy of the mm. */
static int gup_kunit_race_child(void *unused)
{
	do_exit(0);
}

/* Side B: one fork(2)-like kernel_clone() of the case's mm, and reap. */
static int gup_kunit_race_fork(void *ctx, int round)
{
	struct kernel_clone_args args = {
		.flags = CLONE_UNTRACED,
		.exit_signal = SIGCHLD,
		.fn = gup_kunit_race_child,
	};
	int status;
	pid_t pid;

	if (round == 1)
		kernel_sigaction(SIGCHLD, SIG_DFL);	/* reap it ourselves */
	pid = kernel_clone(&args);
	if (pid < 0)
		return pid;
	return kernel_wait(pid, &status) == pid ? 0 : -ECHILD;
}

static const struct gup_kunit_race gup_kunit_race_fork_pin = {
	.name = "fork / pin",
	.a = gup_kunit_race_pin_and_write,
	.b = gup_kunit_race_fork,
	.check = gup_kunit_race_mem_check,
	.rounds = 40,
};

/*
 * A pin that meets a fork of its mm (copy_page_range(), which shares
 * each private page with the child unless it is pinned, then write-
 * protects it): the pinned page must stay the parent's own, whichever
 * came first. GUP-fast, which takes no lock, relies on the mm's
 * write_protect_seq and a recheck of each PTE; the slow path on
 * mmap_lock. A pin of a page that the fork shared loses the device's
 * write to the child: the process's next write copies the page away.
 */
static void pin_during_fork_keeps_device_writes_in_parent(struct kunit *test)
{
	const enum gup_kunit_path *path = test->param_value;

	gup_kunit_race(test, &gup_kunit_race_fork_pin,
		       gup_kunit_race_mem(test, *path));
}

/* ------------------------------------------------------------------ */
/* MADV_DONTNEED                                                       */
/* ------------------------------------------------------------------ */

/*
 * Side A against an unmap: the pages may go between the pin and the
 * process's read, so only the pin's own use is checked: the device
 * writes through it, and the release leaves no pin.
 */
static int gup_kunit_race_pin_use(void *ctx, int round, unsigned long i)
{
	struct gup_kunit_race_mem *m = ctx;
	long j, ret;

	ret = gup_kunit_pin_by(m->path, m->addr, m->npages, FOLL_WRITE,
			       m->pages);
	if (ret == -EFAULT)	/* side B unmapped the first page */
		return 0;
	if (ret < 0)
		return ret;
	for (j = 0; j < ret; j++) {
		u64 *p = kmap_local_page(m->pages[j]);

		WRITE_ONCE(p[0], gup_kunit_race_word(round, i, j));
		kunmap_local(p);
	}
	if (ret > 0)
		unpin_user_pages_dirty_lock(m->pages, ret, true);
	return 0;
}

/* Side B: MADV_DONTNEED of the whole range: the next touch faults anew. */
static int gup_kunit_race_dontneed(void *ctx, int round)
{
	struct gup_kunit_race_mem *m = ctx;

	return do_madvise(current->mm, m->addr, m->npages * PAGE_SIZE,
			  MADV_DONTNEED);
}

static const struct gup_kunit_race gup_kunit_race_dontneed_pin = {
	.name = "MADV_DONTNEED / pin",
	.a = gup_kunit_race_pin_use,
	.b = gup_kunit_race_dontneed,
	.check = gup_kunit_race_mem_check,
	.rounds = 200,
};

/*
 * A pin that meets MADV_DONTNEED of its range: the zap may take the
 * pages out of the page tables while they are pinned (the pin keeps
 * them), or before (the pin faults new ones in). Either way the release
 * leaves no pin, and each page goes when its last user does.
 */
static void pin_during_madv_dontneed_leaves_no_pin(struct kunit *test)
{
	const enum gup_kunit_path *path = test->param_value;

	gup_kunit_race(test, &gup_kunit_race_dontneed_pin,
		       gup_kunit_race_mem(test, *path));
}

/* ------------------------------------------------------------------ */
/* munmap()                                                            */
/* ------------------------------------------------------------------ */

/* Before each round: the range mapped again, where side B unmapped it. */
static int gup_kunit_race_remap(struct kunit *test, void *ctx, int round)
{
	struct gup_kunit_race_mem *m = ctx;

	gup_kunit_mmap_at(test, m->addr, m->npages * PAGE_SIZE, GUP_KUNIT_RW,
			  GUP_KUNIT_ANON | MAP_FIXED);
	gup_kunit_fill(test, m->addr, m->npages);
	return 0;
}

/* Side B: munmap() of the whole range. */
static int gup_kunit_race_munmap(void *ctx, int round)
{
	struct gup_kunit_race_mem *m = ctx;

	return vm_munmap(m->addr, m->npages * PAGE_SIZE);
}

static const struct gup_kunit_race gup_kunit_race_munmap_pin = {
	.name = "munmap / pin",
	.prepare = gup_kunit_race_remap,
	.a = gup_kunit_race_pin_use,
	.b = gup_kunit_race_munmap,
	.check = gup_kunit_race_mem_check,
	.rounds = 200,
};

/*
 * A pin that meets munmap() of its range: the unmap may free the page
 * tables and drop the mappings' references while the pages are pinned
 * (the pin keeps them), or come first (the pin finds nothing: -EFAULT,
 * or a partial pin). Whatever was pinned is released exactly.
 */
static void pin_during_munmap_leaves_no_pin(struct kunit *test)
{
	const enum gup_kunit_path *path = test->param_value;

	gup_kunit_race(test, &gup_kunit_race_munmap_pin,
		       gup_kunit_race_mem(test, *path));
}

/* ------------------------------------------------------------------ */
/* MADV_PAGEOUT                                                        */
/* ------------------------------------------------------------------ */

/* Side B: MADV_PAGEOUT of the whole range: reclaim, swap it out. */
static int gup_kunit_race_pageout(void *ctx, int round)
{
	struct gup_kunit_race_mem *m = ctx;

	return do_madvise(current->mm, m->addr, m->npages * PAGE_SIZE,
			  MADV_PAGEOUT);
}

static const struct gup_kunit_race gup_kunit_race_pageout_pin = {
	.name = "MADV_PAGEOUT / pin",
	.a = gup_kunit_race_pin_and_write,
	.b = gup_kunit_race_pageout,
	.check = gup_kunit_race_mem_check,
	.rounds = 40,
};

/*
 * A pin that meets reclaim of its pages (MADV_PAGEOUT, which swaps
 * anonymous pages out): reclaim must leave a pinned page mapped, since
 * the device may write into it after the swap copy is made; a page
 * swapped out before the pin is swapped in again and pinned. Either way
 * the device's writes reach the process. Without swap space (which only
 * user space can turn on) there is nothing to show: the case skips.
 */
static void pin_during_pageout_keeps_device_writes(struct kunit *test)
{
	const enum gup_kunit_path *path = test->param_value;

	if (!total_swap_pages)
		kunit_skip(test, GUP_KUNIT_NEEDS_SWAP);
	gup_kunit_race(test, &gup_kunit_race_pageout_pin,
		       gup_kunit_race_mem(test, *path));
}

/* ------------------------------------------------------------------ */
/* One folio, pinned from two CPUs                                     */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_race_folio - one folio that both sides pin.
 * @addr: the page of it that they pin.
 * @folio: the folio.
 * @s0: its counts and the pin counters at the start.
 */
struct gup_kunit_race_folio {
	unsigned long addr;
	struct folio *folio;
	struct gup_kunit_snap s0;
};

/* Pin the page once with GUP-fast, and release it. */
static int gup_kunit_race_pin_once(struct gup_kunit_race_folio *f)
{
	struct page *page;
	int ret = pin_user_pages_fast(f->addr, 1, FOLL_WRITE, &page);

	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	unpin_user_page(page);
	return 0;
}

static int gup_kunit_race_folio_a(void *ctx, int round, unsigned long i)
{
	return gup_kunit_race_pin_once(ctx);
}

/* Side B: 256 pins and releases of the same page. */
static int gup_kunit_race_folio_b(void *ctx, int round)
{
	int i, err = 0;

	for (i = 0; i < 256 && !err; i++)
		err = gup_kunit_race_pin_once(ctx);
	return err;
}

/* After a round: the folio's counts, and the counters, as they started. */
static bool gup_kunit_race_folio_check(struct kunit *test, void *ctx,
				       int round)
{
	struct gup_kunit_race_folio *f = ctx;
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	if (s.ref != f->s0.ref || s.pincount != f->s0.pincount ||
	    s.acquired - s.released != f->s0.acquired - f->s0.released) {
		KUNIT_FAIL(test, "round %d: ref %d (was %d), pincount %d (was %d), %ld pins left",
			   round, s.ref, f->s0.ref, s.pincount, f->s0.pincount,
			   (s.acquired - s.released) -
			   (f->s0.acquired - f->s0.released));
		return false;
	}
	return true;
}

static const struct gup_kunit_race gup_kunit_race_folio_pins = {
	.name = "pin / pin",
	.a = gup_kunit_race_folio_a,
	.b = gup_kunit_race_folio_b,
	.check = gup_kunit_race_folio_check,
	.rounds = 300,
};

/* The folios pinned from two CPUs: a small one, and a PMD-mapped THP. */
static const bool gup_kunit_race_thp[] = { false, true };

static void gup_kunit_race_thp_desc(const bool *thp, char *desc)
{
	strscpy(desc, *thp ? "THP" : "small folio", KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_race_thp, gup_kunit_race_thp,
		  gup_kunit_race_thp_desc);

/*
 * Map a PMD-mapped THP if @thp (skipped if none comes), else a page;
 * return its first page's address.
 */
static unsigned long gup_kunit_race_map_folio(struct kunit *test, bool thp)
{
	unsigned long addr, start;

	if (!thp) {
		addr = gup_kunit_mmap(test, PAGE_SIZE, GUP_KUNIT_RW,
				      GUP_KUNIT_ANON);
		gup_kunit_fill(test, addr, 1);
		return addr;
	}
#ifdef CONFIG_TRANSPARENT_HUGEPAGE
	addr = gup_kunit_mmap(test, 2 * HPAGE_PMD_SIZE, GUP_KUNIT_RW,
			      GUP_KUNIT_ANON);
	start = ALIGN(addr, HPAGE_PMD_SIZE);
	KUNIT_ASSERT_EQ(test, do_madvise(current->mm, start, HPAGE_PMD_SIZE,
					 MADV_HUGEPAGE), 0);
	gup_kunit_fill(test, start, 1);
	if (folio_test_large(gup_kunit_user_folio(test, start)))
		return start;
#endif
	kunit_skip(test, "needs a THP (CONFIG_TRANSPARENT_HUGEPAGE)");
	return 0;
}

/*
 * Pins and releases of one page, from two CPUs at once: a small folio
 * counts each pin as GUP_PIN_COUNTING_BIAS references, a large one as
 * one reference and one in its pincount, all with atomics; after every
 * round both counts are back where they started, to the last one.
 */
static void pins_from_two_cpus_count_exactly(struct kunit *test)
{
	const bool *thp = test->param_value;
	struct gup_kunit_race_folio *f = kunit_kzalloc(test, sizeof(*f),
						       GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->addr = gup_kunit_race_map_folio(test, *thp);
	f->folio = gup_kunit_user_folio(test, f->addr);
	lru_add_drain_all();
	gup_kunit_snap(f->folio, &f->s0);
	gup_kunit_race(test, &gup_kunit_race_folio_pins, f);
}

/* ------------------------------------------------------------------ */
/* THP split                                                           */
/* ------------------------------------------------------------------ */

#ifdef CONFIG_TRANSPARENT_HUGEPAGE

/**
 * struct gup_kunit_race_split - a THP that one side pins, the other splits.
 * @m: the pins over its first GUP_KUNIT_RACE_NPAGES pages.
 * @start: the THP.
 * @thps: rounds that began with a THP.
 * @splits: splits that succeeded.
 */
struct gup_kunit_race_split {
	struct gup_kunit_race_mem m;
	unsigned long start;
	int thps;
	int splits;
};

/*
 * Before each round: a PMD-mapped THP again, if a split took the last.
 * The split THP's page table stays behind an unmap of its pages, and a
 * fault under a page table maps small pages: a MAP_FIXED mapping over it
 * frees that table, so that the next fault maps a THP again.
 */
static int gup_kunit_race_split_prepare(struct kunit *test, void *ctx,
					int round)
{
	struct gup_kunit_race_split *sp = ctx;
	struct folio *folio;

	folio = gup_kunit_user_folio(test, sp->start);
	if (!folio_test_large(folio)) {
		gup_kunit_mmap_at(test, sp->start, HPAGE_PMD_SIZE,
				  GUP_KUNIT_RW, GUP_KUNIT_ANON | MAP_FIXED);
		KUNIT_ASSERT_EQ(test, do_madvise(current->mm, sp->start,
						 HPAGE_PMD_SIZE,
						 MADV_HUGEPAGE), 0);
		gup_kunit_fill(test, sp->start, GUP_KUNIT_RACE_NPAGES);
		folio = gup_kunit_user_folio(test, sp->start);
	}
	sp->thps += folio_test_large(folio);
	return 0;
}

/*
 * Side B: split the THP, as the deferred split or khugepaged would; a
 * split fails while side A holds a pin, so try until one succeeds, up
 * to 64 times.
 */
static int gup_kunit_race_split_b(void *ctx, int round)
{
	struct gup_kunit_race_split *sp = ctx;
	struct page *page;
	int tries, ret;

	for (tries = 0; tries < 64; tries++) {
		if (get_user_pages_fast_only(sp->start, 1, 0, &page) != 1)
			return 0;
		ret = -EBUSY;
		if (PageTransHuge(compound_head(page))) {
			lock_page(page);
			ret = split_huge_page(page);
			unlock_page(page);
		}
		put_page(page);
		if (!ret) {
			sp->splits++;
			break;
		}
		cond_resched();
	}
	return 0;
}

static const struct gup_kunit_race gup_kunit_race_split_pin = {
	.name = "THP split / pin",
	.prepare = gup_kunit_race_split_prepare,
	.a = gup_kunit_race_pin_and_write,
	.b = gup_kunit_race_split_b,
	.check = gup_kunit_race_mem_check,
	.rounds = 40,
};

/*
 * A THP split while its pages are pinned, over and over: a split must
 * fail while the folio holds a pin (its references are not the
 * expected ones, and folio_ref_freeze() refuses), and a pin must not be
 * taken on a folio that a split has frozen. Every device write through
 * a pin reaches the process, every release leaves no pin, and the pages
 * of a split THP are small folios with the counts of one mapping.
 */
static void pinned_thp_split_keeps_pins_and_data(struct kunit *test)
{
	const enum gup_kunit_path *path = test->param_value;
	struct gup_kunit_race_split *sp = kunit_kzalloc(test, sizeof(*sp),
							GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, sp);
	sp->start = gup_kunit_race_map_folio(test, true);
	sp->m.path = *path;
	sp->m.addr = sp->start;
	sp->m.npages = GUP_KUNIT_RACE_NPAGES;
	sp->m.bad = -1;
	gup_kunit_fill(test, sp->start, GUP_KUNIT_RACE_NPAGES);
	gup_kunit_snap_counters(&sp->m.s0);
	gup_kunit_race(test, &gup_kunit_race_split_pin, sp);
	kunit_info(test, "race: %d rounds began with a THP, %d splits\n",
		   sp->thps, sp->splits);
}
#endif /* CONFIG_TRANSPARENT_HUGEPAGE */

/* ------------------------------------------------------------------ */

KUNIT_ARRAY_PARAM(gup_kunit_race_paths, gup_kunit_paths, gup_kunit_path_desc);

static struct kunit_case gup_pin_race_cases[] = {
	KUNIT_CASE_PARAM(pin_during_fork_keeps_device_writes_in_parent,
			 gup_kunit_race_paths_gen_params),
	KUNIT_CASE_PARAM(pin_during_madv_dontneed_leaves_no_pin,
			 gup_kunit_race_paths_gen_params),
	KUNIT_CASE_PARAM(pin_during_munmap_leaves_no_pin,
			 gup_kunit_race_paths_gen_params),
	KUNIT_CASE_PARAM(pin_during_pageout_keeps_device_writes,
			 gup_kunit_race_paths_gen_params),
	KUNIT_CASE_PARAM(pins_from_two_cpus_count_exactly,
			 gup_kunit_race_thp_gen_params),
#ifdef CONFIG_TRANSPARENT_HUGEPAGE
	KUNIT_CASE_PARAM(pinned_thp_split_keeps_pins_and_data,
			 gup_kunit_race_paths_gen_params),
#endif
	{}
};

static struct kunit_suite gup_pin_race_suite = {
	.name = "gup_pin_race",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_race_cases,
};

kunit_test_suite(gup_pin_race_suite);
