// SPDX-License-Identifier: GPL-2.0
/*
 * The GUP pin KUnit suites' test library: fault injection. A sweep makes
 * every failure point of one call fail, one at a time, with the
 * fault-injection framework's per-task fail_nth (what syzkaller drives
 * through /proc/self/task/N/fail-nth): with current->fail_nth = n, the
 * n-th slab or page allocation that the task makes fails, and only that
 * one; a call that returns with fail_nth still set reached fewer than n
 * points, and the sweep is complete. The checks here are what must hold
 * after any of them.
 */

#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/file.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/swap.h>
#include "gup_kunit.h"

/*
 * gup_kunit_fault.full=1: sweep every kind of memory of the fault cases,
 * not only those marked for the default run (tools' make fault).
 */
#undef MODULE_PARAM_PREFIX
#define MODULE_PARAM_PREFIX "gup_kunit_fault."
static bool full;
module_param(full, bool, 0444);
MODULE_PARM_DESC(full, "sweep every kind of memory (default: the short sweep)");

/* A sweep that reaches this many points is cut short: the case fails. */
#define GUP_KUNIT_FAULT_MAX_N	400

/* The step the case runs now, and whether its n-th point was reached. */
static struct gup_kunit_fault_step gup_kunit_fault_step;
static bool gup_kunit_fault_reached;
/* The round that runs now is the warm-up: nothing is armed. */
static bool gup_kunit_fault_warming;

/**
 * gup_kunit_fault_next() - the next step of a sweep, a KUnit parameter.
 * @kinds: the kinds of memory the case sweeps, in order.
 * @count: how many.
 * @prev: the step that ran last, or NULL.
 * @desc: the parameter's description: "KIND, n=N".
 *
 * The same kind with n + 1 while the last step reached its n-th failure
 * point (and n is below GUP_KUNIT_FAULT_MAX_N), else the next kind of the
 * sweep with n = 1: the default run sweeps the kinds marked @short only.
 *
 * Return: the step (one static object: KUnit runs the steps one by one),
 * or NULL when every kind is swept.
 */
const void *gup_kunit_fault_next(const struct gup_kunit_fault_kind *kinds,
				 size_t count, const void *prev, char *desc)
{
	struct gup_kunit_fault_step *step = &gup_kunit_fault_step;
	const struct gup_kunit_fault_kind *k;
	size_t i;

	if (prev && gup_kunit_fault_reached &&
	    step->n < GUP_KUNIT_FAULT_MAX_N) {
		step->n++;
	} else {
		i = prev ? step->kind - kinds + 1 : 0;
		for (; i < count && !full && !kinds[i].in_short; i++)
			;
		if (i >= count)
			return NULL;
		step->kind = &kinds[i];
		step->n = 1;
	}
	gup_kunit_fault_reached = false;
	gup_kunit_fault_warming = false;
	k = step->kind;
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s, n=%u", k->name, step->n);
	return step;
}

/*
 * The fault-injection knobs that make every allocation of a pin path
 * failable, as `echo N > /sys/kernel/debug/failslab/ignore-gfp-wait` sets
 * them (syzkaller sets the same): sleeping allocations and order-0 pages
 * may fail, and a failure prints no stack (verbose 0). Their debugfs
 * files keep a pointer to the value they show (the inode's i_private),
 * which is what the sweep sets, and restores when the case ends.
 */
enum gup_kunit_knob_type { GUP_KUNIT_BOOL, GUP_KUNIT_U32, GUP_KUNIT_ULONG };

struct gup_kunit_knob {
	const char *dir;
	const char *name;
	enum gup_kunit_knob_type type;
	unsigned long value;
};

static const struct gup_kunit_knob gup_kunit_knobs[] = {
	{ "failslab", "ignore-gfp-wait", GUP_KUNIT_BOOL, 0 },
	{ "failslab", "verbose", GUP_KUNIT_ULONG, 0 },
	{ "fail_page_alloc", "ignore-gfp-wait", GUP_KUNIT_BOOL, 0 },
	{ "fail_page_alloc", "ignore-gfp-highmem", GUP_KUNIT_BOOL, 0 },
	{ "fail_page_alloc", "min-order", GUP_KUNIT_U32, 0 },
	{ "fail_page_alloc", "verbose", GUP_KUNIT_ULONG, 0 },
};

/**
 * struct gup_kunit_knobs - the knobs a case set, to restore.
 * @where: the value of each knob of gup_kunit_knobs.
 * @old: what each held before.
 */
struct gup_kunit_knobs {
	void *where[ARRAY_SIZE(gup_kunit_knobs)];
	unsigned long old[ARRAY_SIZE(gup_kunit_knobs)];
};

static unsigned long gup_kunit_knob_swap(const struct gup_kunit_knob *k,
					 void *where, unsigned long value)
{
	unsigned long old;

	switch (k->type) {
	case GUP_KUNIT_BOOL:
		old = READ_ONCE(*(bool *)where);
		WRITE_ONCE(*(bool *)where, value);
		break;
	case GUP_KUNIT_U32:
		old = READ_ONCE(*(u32 *)where);
		WRITE_ONCE(*(u32 *)where, value);
		break;
	default:
		old = READ_ONCE(*(unsigned long *)where);
		WRITE_ONCE(*(unsigned long *)where, value);
	}
	return old;
}

static void *gup_kunit_knob_find(const struct gup_kunit_knob *k)
{
	struct dentry *dir = debugfs_lookup(k->dir, NULL);
	struct dentry *file;
	void *where = NULL;

	if (!dir)
		return NULL;
	file = debugfs_lookup(k->name, dir);
	if (file) {
		where = d_inode(file)->i_private;
		dput(file);
	}
	dput(dir);
	return where;
}

static void gup_kunit_knobs_put(struct gup_kunit_knobs *saved)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(gup_kunit_knobs); i++)
		gup_kunit_knob_swap(&gup_kunit_knobs[i], saved->where[i],
				    saved->old[i]);
	kfree(saved);
}

static void gup_kunit_knobs_restore(struct kunit_resource *res)
{
	gup_kunit_knobs_put(res->data);
}

/* Set the knobs for the case; its end restores them. */
static void gup_kunit_knobs_set(struct kunit *test)
{
	struct gup_kunit_knobs *saved = kzalloc(sizeof(*saved), GFP_KERNEL);
	size_t i;

	KUNIT_ASSERT_NOT_NULL(test, saved);
	for (i = 0; i < ARRAY_SIZE(gup_kunit_knobs); i++) {
		saved->where[i] = gup_kunit_knob_find(&gup_kunit_knobs[i]);
		if (!saved->where[i]) {
			kfree(saved);
			kunit_skip(test, GUP_KUNIT_NEEDS_FAULT_INJECTION);
		}
	}
	for (i = 0; i < ARRAY_SIZE(gup_kunit_knobs); i++)
		saved->old[i] = gup_kunit_knob_swap(&gup_kunit_knobs[i],
						    saved->where[i],
						    gup_kunit_knobs[i].value);
	if (!kunit_alloc_resource(test, NULL, gup_kunit_knobs_restore,
				  GFP_KERNEL, saved)) {
		gup_kunit_knobs_put(saved);
		KUNIT_FAIL(test, "no memory for a resource");
	}
}

/**
 * gup_kunit_fault_arm() - make the step's n-th failure point fail.
 * @test: the case, whose parameter is a struct gup_kunit_fault_step.
 *
 * Everything the case sets up comes before, and the call under test right
 * after; gup_kunit_fault_disarm() right after that. In the warm-up round
 * of gup_kunit_fault_run(), nothing.
 */
void gup_kunit_fault_arm(struct kunit *test)
{
	const struct gup_kunit_fault_step *step = test->param_value;

	if (gup_kunit_fault_warming)
		return;
	gup_kunit_knobs_set(test);
	WRITE_ONCE(current->fail_nth, step->n);
}

/**
 * gup_kunit_fault_run() - run one step of a sweep, warmed up and steady.
 * @test: the case.
 * @round: the case's round: set up, call, check, clean up.
 * @ctx: its context.
 *
 * The n-th failure point of a call must be the same allocation at every
 * step of a sweep and in every run, or a sweep would skip a point or say
 * a different thing of it each time. What an allocation may or may not
 * need below it varies with what ran before: whether a slab cache's
 * per-CPU slab has a free object or needs a new slab page (a page
 * allocation, and a failure point), whether fork() finds a thread stack
 * in the per-CPU cache, what an RCU callback has yet to free. So the
 * step runs on one CPU, the first online one, where its frees go back
 * to; first a warm-up round, the same call on the same kind of memory,
 * mapped at GUP_KUNIT_FAULT_WARM_AT, with nothing armed (it must succeed
 * in full); then, once the files it closed are released and RCU's
 * callbacks have run, the round under test, whose memory the kernel
 * places as it would for the first mapping of the case.
 */
void gup_kunit_fault_run(struct kunit *test, gup_kunit_fault_round_fn round,
			 const void *ctx)
{
	gup_kunit_on_cpu(test, cpumask_first(cpu_online_mask));
	gup_kunit_fault_warming = true;
	round(test, ctx, GUP_KUNIT_FAULT_WARM_AT);
	gup_kunit_fault_warming = false;
	flush_delayed_fput();
	rcu_barrier();
	round(test, ctx, 0);
}

/**
 * gup_kunit_fault_disarm() - end the injection; was a failure injected?
 * @test: the case.
 * @what: the call, for the report line.
 * @ret: what the call returned: a count of pages, or an errno.
 * @npages: how many pages it was asked for.
 *
 * Prints "fault: WHAT KIND n=N injected|not-reached ret=RET
 * complete|partial|error" into the case's KTAP, which tools/fault.py
 * reads, and tells the sweep whether to go on; in the warm-up round,
 * nothing. A sweep at
 * GUP_KUNIT_FAULT_MAX_N that still reaches its point is cut short: the
 * case fails, so that an incomplete sweep never passes.
 *
 * Return: whether the n-th failure point was reached, and so failed;
 * false in the warm-up round.
 */
bool gup_kunit_fault_disarm(struct kunit *test, const char *what, long ret,
			    long npages)
{
	const struct gup_kunit_fault_step *step = test->param_value;
	bool reached = !READ_ONCE(current->fail_nth);

	if (gup_kunit_fault_warming)
		return false;
	WRITE_ONCE(current->fail_nth, 0);
	gup_kunit_fault_reached = reached;
	kunit_info(test, "fault: %s %s n=%u %s ret=%ld %s\n", what,
		   step->kind->name, step->n,
		   reached ? "injected" : "not-reached", ret,
		   ret < 0 ? "error" : ret == npages ? "complete" : "partial");
	if (reached && step->n >= GUP_KUNIT_FAULT_MAX_N)
		KUNIT_FAIL(test, "sweep cut short: more than %d failure points",
			   GUP_KUNIT_FAULT_MAX_N);
	return reached;
}

/**
 * gup_kunit_fault_expect_result() - what a call may return after a failure.
 * @test: the case.
 * @reached: whether a failure was injected.
 * @ret: what the call returned.
 * @npages: how many pages it was asked for.
 *
 * A call that met no failure pins everything. One that did returns every
 * page, a partial count (its pages: the first ones asked for, checked by
 * gup_kunit_fault_expect_pages()), or a negative errno; never 0 for a
 * request of pages, which no pin API documents.
 */
void gup_kunit_fault_expect_result(struct kunit *test, bool reached, long ret,
				   long npages)
{
	if (!reached)
		KUNIT_EXPECT_EQ_MSG(test, ret, npages,
				    "no failure was injected, yet not every page was returned");
	KUNIT_EXPECT_NE_MSG(test, ret, 0L, "0 pages of %ld, and no error",
			    npages);
	KUNIT_EXPECT_LE(test, ret, npages);
	if (ret < 0)
		KUNIT_EXPECT_GE_MSG(test, ret, (long)-MAX_ERRNO,
				    "not an errno: %ld", ret);
}

/*
 * Expect the @nr pages a call returned to be the first ones asked for
 * from @addr: each mapped there, at its index, and, for a pin, pinned.
 */
void gup_kunit_fault_expect_pages(struct kunit *test, unsigned long addr,
				  struct page **pages, long nr, bool pinned)
{
	long i;

	if (nr <= 0)
		return;
	gup_kunit_expect_mapped(test, addr, pages, nr);
	for (i = 0; pinned && i < nr; i++)
		KUNIT_EXPECT_TRUE_MSG(test, gup_kunit_page_pinned(pages[i]),
				      "page %ld returned but not pinned", i);
}

/* The state that every call must leave as it found it, failed or not. */
void gup_kunit_fault_snap(struct gup_kunit_fault_before *b)
{
	gup_kunit_snap_counters(&b->s);
	b->isolated_anon = gup_kunit_node_stat(NR_ISOLATED_ANON);
	b->isolated_file = gup_kunit_node_stat(NR_ISOLATED_FILE);
}

/*
 * A small folio mapped at page @i of @addr after its pins are gone: on
 * the LRU, holding only the references of its mappings and caches, and,
 * if @anon_exclusive, still exclusive to the mm (a failure path must not
 * leave PG_anon_exclusive cleared, or the next write copies the page that
 * a device may have pinned).
 */
static void gup_kunit_fault_expect_page(struct kunit *test, unsigned long addr,
					long i, bool anon_exclusive)
{
	struct page *page;
	struct folio *folio;

	/* GUP-fast alone: a lookup that faulted would add a page itself */
	if (get_user_pages_fast_only(addr + i * PAGE_SIZE, 1, 0, &page) != 1)
		return;		/* never faulted in: the failure came first */
	folio = page_folio(page);
	KUNIT_EXPECT_FALSE_MSG(test, folio_maybe_dma_pinned(folio),
			       "page %ld still pinned", i);
	if (!is_zero_page(page) && !folio_test_hugetlb(folio)) {
		KUNIT_EXPECT_TRUE_MSG(test, folio_test_lru(folio),
				      "page %ld left off the LRU", i);
		if (!folio_test_large(folio))
			KUNIT_EXPECT_EQ_MSG(test, folio_ref_count(folio) - 1,
					    folio_expected_ref_count(folio),
					    "page %ld: references left", i);
	}
	if (anon_exclusive && folio_test_anon(folio)) {
		/* hugetlb and a PMD-mapped THP keep it in the head page */
		struct page *flagged = folio_test_hugetlb(folio) ||
				       (folio_test_large(folio) &&
					folio_entire_mapcount(folio)) ?
				       &folio->page : page;

		KUNIT_EXPECT_TRUE_MSG(test, PageAnonExclusive(flagged),
				      "page %ld lost PG_anon_exclusive", i);
	}
	put_page(page);
}

/**
 * gup_kunit_fault_expect_restored() - nothing left behind by a call.
 * @test: the case.
 * @b: the snapshot taken before the call.
 * @addr: the memory it was asked for, @npages pages.
 * @npages: how many.
 * @anon_exclusive: its anonymous pages are the mm's own (a private
 *	mapping that never forked), so each must still be exclusive.
 *
 * Once the case has released what the call returned: no pin held, no
 * folio isolated, and each page mapped in the range as a page nobody
 * holds (gup_kunit_fault_expect_page()).
 */
void gup_kunit_fault_expect_restored(struct kunit *test,
				     const struct gup_kunit_fault_before *b,
				     unsigned long addr, long npages,
				     bool anon_exclusive)
{
	long i;

	GUP_KUNIT_EXPECT_PINS_HELD(test, &b->s, 0);
	KUNIT_EXPECT_EQ_MSG(test, gup_kunit_node_stat(NR_ISOLATED_ANON),
			    b->isolated_anon, "NR_ISOLATED_ANON");
	KUNIT_EXPECT_EQ_MSG(test, gup_kunit_node_stat(NR_ISOLATED_FILE),
			    b->isolated_file, "NR_ISOLATED_FILE");
	lru_add_drain_all();
	for (i = 0; i < npages; i++)
		gup_kunit_fault_expect_page(test, addr, i, anon_exclusive);
}
