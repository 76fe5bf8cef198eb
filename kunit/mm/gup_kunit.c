// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of FOLL_PIN accounting in mm/gup.c.
 *
 * This file is #included at the end of mm/gup.c (CONFIG_GUP_KUNIT_TEST), so
 * that it can call gup_put_folio() and the other static helpers directly.
 * It is not built on its own.
 *
 * Suites:
 *
 * gup_pin: try_grab_page(), try_grab_folio() and gup_put_folio() on folios
 *   that the test allocates itself (order 0 up to MAX_ORDER - 1, the zero
 *   page): the exact refcount, compound pincount and NR_FOLL_PIN_ACQUIRED /
 *   NR_FOLL_PIN_RELEASED deltas of every grab and put, the
 *   GUP_PIN_COUNTING_BIAS arithmetic of any interleaving of gets and pins,
 *   folio_maybe_dma_pinned() at its boundaries, is_longterm_pinnable_page(),
 *   the unpin_user_page*() family with batching and dirtying, and
 *   concurrent pinning.
 *
 * gup_pin_warn: the cases that make mm/gup.c WARN on purpose (refused grabs
 *   of a folio whose refcount is zero or negative, refcount overflow). Each
 *   declares the warning it provokes and checks that exactly that many
 *   appeared on the console.
 *
 * gup_pin_devmap: ZONE_DEVICE pages (FS_DAX, DEVICE_PRIVATE, DEVICE_COHERENT)
 *   in pgmaps that each case creates: the FS_DAX idle wakeup, ->page_free(),
 *   long-term pins of coherent memory.
 *
 * gup_pin_user (gup_kunit_user.c): pin_user_pages*() on real user address
 *   spaces that each case creates.
 *
 * gup_pin_selftest: not a test of the kernel but of the harness: under the
 *   boot parameter gup.kunit_selftest=panic|oops|hang it crashes or hangs
 *   the kernel, so that the harness can show it reports that as a failure;
 *   with =leak it leaks a kmalloc() object for gup_pin_final to find.
 *   It is not part of the normal run (its suite name does not match the
 *   default filter) and does nothing without the parameter.
 *
 * Every case restores what it changed: each folio is a KUnit resource whose
 * release drops the references and pins that the case still holds, and
 * frees the folio only if its counts are then back to a single reference,
 * so that a broken kernel shows up as failed expectations, not as a "Bad
 * page state" in a later case.
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/ioport.h>
#include <linux/kthread.h>
#include <linux/memremap.h>
#include <linux/mman.h>
#include <linux/moduleparam.h>
#include <linux/mount.h>
#include <linux/page-isolation.h>
#include <linux/pagemap.h>
#include <linux/prandom.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/mm.h>
#include <linux/swap.h>
#include <linux/syscalls.h>
#include <linux/vmstat.h>
#include <linux/wait_bit.h>
#include <trace/events/page_ref.h>
#include <trace/events/printk.h>
#ifdef CONFIG_X86
#include <asm/e820/api.h>
#endif

/* ------------------------------------------------------------------ */
/* Counters                                                            */
/* ------------------------------------------------------------------ */

static long gup_kunit_node_stat_once(enum node_stat_item item)
{
	struct pglist_data *pgdat;
	long sum = 0;
	int cpu;

	for_each_online_pgdat(pgdat) {
		sum += atomic_long_read(&pgdat->vm_stat[item]);
		for_each_possible_cpu(cpu)
			sum += per_cpu_ptr(pgdat->per_cpu_nodestats,
					   cpu)->vm_node_stat_diff[item];
	}
	return sum;
}

/**
 * gup_kunit_node_stat() - exact value of a node vmstat item, all nodes.
 * @item: the node_stat_item to read.
 *
 * global_node_page_state() lags by the per-cpu deltas. Sum the node
 * counters and every CPU's delta instead. A concurrent fold of a delta
 * into the node counter can make one such sum miss the delta, so sum until
 * two consecutive sums agree.
 *
 * Return: the counter's exact value.
 */
static long gup_kunit_node_stat(enum node_stat_item item)
{
	long a, b = gup_kunit_node_stat_once(item);

	do {
		a = b;
		b = gup_kunit_node_stat_once(item);
	} while (a != b);
	return a;
}

/* ------------------------------------------------------------------ */
/* Snapshots of a folio's pin state                                    */
/* ------------------------------------------------------------------ */

struct gup_kunit_snap {
	int ref;
	int pincount;		/* -1 for small folios, which have none */
	long acquired;
	long released;
};

static void gup_kunit_snap(struct folio *folio, struct gup_kunit_snap *s)
{
	s->ref = folio_ref_count(folio);
	s->pincount = folio_test_large(folio) ?
		atomic_read(folio_pincount_ptr(folio)) : -1;
	s->acquired = gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED);
	s->released = gup_kunit_node_stat(NR_FOLL_PIN_RELEASED);
}

/*
 * Expect the folio to differ from snapshot @s by exactly @dref references
 * and @dpin compound pincount (ignored for small folios, which have none).
 * Macros, so that a failure names the line of the case.
 */
#define GUP_KUNIT_EXPECT_FOLIO(test, f, s, dref, dpin)			\
do {									\
	struct kunit *__gk_t = (test);					\
	struct folio *__gk_f = (f);					\
	const struct gup_kunit_snap *__gk_s = (s);			\
	long __gk_ref = folio_ref_count(__gk_f);			\
	long __gk_pin = folio_test_large(__gk_f) ?			\
		atomic_read(folio_pincount_ptr(__gk_f)) : -1;		\
									\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_ref - __gk_s->ref, (long)(dref), \
			    "refcount %ld, was %d", __gk_ref, __gk_s->ref); \
	if (__gk_s->pincount >= 0)					\
		KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_pin - __gk_s->pincount, \
				    (long)(dpin), "pincount %ld, was %d", \
				    __gk_pin, __gk_s->pincount);	\
} while (0)

/*
 * Expect NR_FOLL_PIN_ACQUIRED / NR_FOLL_PIN_RELEASED to have moved by
 * exactly @dacq / @drel since snapshot @s. The counters are global, so a
 * case that uses several folios checks them once, from one snapshot.
 */
#define GUP_KUNIT_EXPECT_COUNTERS(test, s, dacq, drel)			\
do {									\
	struct kunit *__gk_t = (test);					\
	const struct gup_kunit_snap *__gk_s = (s);			\
	long __gk_acq = gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED);	\
	long __gk_rel = gup_kunit_node_stat(NR_FOLL_PIN_RELEASED);	\
									\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_acq - __gk_s->acquired,	\
			    (long)(dacq), "NR_FOLL_PIN_ACQUIRED delta");	\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_rel - __gk_s->released,	\
			    (long)(drel), "NR_FOLL_PIN_RELEASED delta");	\
} while (0)

/*
 * The invariant of every user-memory case: whatever a call did, retries
 * and migrations included, the pins it still holds explain the counters
 * exactly: NR_FOLL_PIN_ACQUIRED - NR_FOLL_PIN_RELEASED moved by @held.
 */
#define GUP_KUNIT_EXPECT_PINS_HELD(test, s, held)			\
do {									\
	struct kunit *__gk_t = (test);					\
	const struct gup_kunit_snap *__gk_s = (s);			\
	long __gk_net = gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED) -	\
			__gk_s->acquired -				\
			(gup_kunit_node_stat(NR_FOLL_PIN_RELEASED) -	\
			 __gk_s->released);				\
									\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_net, (long)(held),		\
			    "pins acquired - released since the snapshot"); \
} while (0)

/* Both of the above, for a case with a single folio. */
#define GUP_KUNIT_EXPECT_DELTA(test, f, s, dref, dpin, dacq, drel)	\
do {									\
	struct kunit *__gk_test = (test);				\
	const struct gup_kunit_snap *__gk_snap = (s);			\
									\
	GUP_KUNIT_EXPECT_FOLIO(__gk_test, f, __gk_snap, dref, dpin);	\
	GUP_KUNIT_EXPECT_COUNTERS(__gk_test, __gk_snap, dacq, drel);	\
} while (0)

/* ------------------------------------------------------------------ */
/* Warnings and case start lines                                       */
/* ------------------------------------------------------------------ */

static atomic_t gup_kunit_warnings = ATOMIC_INIT(0);

static void gup_kunit_console_probe(void *ignore, const char *buf,
				    size_t len)
{
	if (strnstr(buf, "WARNING:", len))
		atomic_inc(&gup_kunit_warnings);
}

static int gup_kunit_suite_init(struct kunit_suite *suite)
{
	return register_trace_console(gup_kunit_console_probe, NULL);
}

static void gup_kunit_suite_exit(struct kunit_suite *suite)
{
	unregister_trace_console(gup_kunit_console_probe, NULL);
	tracepoint_synchronize_unregister();
}

/* Re-arm WARN_ON_ONCE() sites and count from zero. */
static void gup_kunit_warn_reset(void)
{
	generic_bug_clear_once();
	atomic_set(&gup_kunit_warnings, 0);
}

/*
 * Name the case on the console before it runs: 6.1 prints a case's name
 * only with its result, so without this a case that crashes the kernel
 * could not be named in the report. Then count warnings from zero.
 */
static int gup_kunit_case_init(struct kunit *test)
{
	kunit_info(test, "start\n");
	gup_kunit_warn_reset();
	return 0;
}

/*
 * Cases outside gup_pin_warn expect no warning at all: one that appears
 * while the case runs fails it, with the count in the message.
 */
static void gup_kunit_case_exit(struct kunit *test)
{
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&gup_kunit_warnings), 0,
			    "unexpected WARNING on the console during the case");
}

/* ------------------------------------------------------------------ */
/* Folios owned by a case                                              */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_folio - a folio allocated by a case, as a KUnit resource.
 * @folio: the folio.
 * @pins: FOLL_PIN references the case holds and has not released.
 * @gets: plain references the case holds and has not released.
 *
 * A case updates @pins and @gets whenever it grabs or puts, so that the
 * release function can undo exactly what is still outstanding, however
 * the case ended.
 */
struct gup_kunit_folio {
	struct folio *folio;
	long pins;
	long gets;
};

/* Folios and pgmaps the suites allocated and have not freed (gup_pin_final). */
static atomic_t gup_kunit_alive = ATOMIC_INIT(0);

static int gup_kunit_folio_init(struct kunit_resource *res, void *context)
{
	unsigned int order = (unsigned long)context;
	struct gup_kunit_folio *f;
	struct page *page;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	if (order)
		page = alloc_pages(GFP_KERNEL | __GFP_COMP | __GFP_NOWARN,
				   order);
	else
		page = alloc_page(GFP_KERNEL);
	if (!page) {
		kfree(f);
		return -ENOMEM;
	}
	f->folio = page_folio(page);
	res->data = f;
	atomic_inc(&gup_kunit_alive);
	return 0;
}

static void gup_kunit_folio_release(struct kunit_resource *res)
{
	struct gup_kunit_folio *f = res->data;
	struct folio *folio = f->folio;

	if (f->pins)
		gup_put_folio(folio, f->pins, FOLL_PIN);
	if (f->gets)
		folio_put_refs(folio, f->gets);
	folio_clear_dirty(folio);
	if (folio_ref_count(folio) == 1 &&
	    (!folio_test_large(folio) ||
	     !atomic_read(folio_pincount_ptr(folio)))) {
		folio_put(folio);
		atomic_dec(&gup_kunit_alive);
	} else {
		pr_err("gup_kunit: leaking folio pfn %#lx: ref %d pincount %d\n",
		       folio_pfn(folio), folio_ref_count(folio),
		       folio_test_large(folio) ?
		       atomic_read(folio_pincount_ptr(folio)) : 0);
	}
	kfree(f);
}

static struct gup_kunit_folio *gup_kunit_alloc(struct kunit *test,
					       unsigned int order)
{
	struct gup_kunit_folio *f;

	f = kunit_alloc_resource(test, gup_kunit_folio_init,
				 gup_kunit_folio_release, GFP_KERNEL,
				 (void *)(unsigned long)order);
	KUNIT_ASSERT_NOT_ERR_OR_NULL_MSG(test, f, "order-%u folio", order);
	return f;
}

/*
 * try_grab_folio() is called from GUP-fast with interrupts disabled, and
 * folio_ref_try_add_rcu() insists on an atomic context on some configs.
 */
static struct folio *gup_kunit_try_grab_folio(struct page *page, int refs,
					      unsigned int flags)
{
	unsigned long irqflags;
	struct folio *folio;

	local_irq_save(irqflags);
	folio = try_grab_folio(page, refs, flags);
	local_irq_restore(irqflags);
	return folio;
}

/* ------------------------------------------------------------------ */
/* Parameters                                                          */
/* ------------------------------------------------------------------ */

/* Folio orders: small, the smallest large ones, PMD order, the largest. */
static const unsigned int gup_kunit_orders[] = {
	0, 1, 2, PMD_SHIFT - PAGE_SHIFT, MAX_ORDER - 1,
};

static void gup_kunit_order_desc(const unsigned int *order, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "order %u", *order);
}

KUNIT_ARRAY_PARAM(gup_kunit_order, gup_kunit_orders, gup_kunit_order_desc);

static const unsigned int gup_kunit_large_orders[] = {
	1, 2, 3, PMD_SHIFT - PAGE_SHIFT, MAX_ORDER - 1,
};

KUNIT_ARRAY_PARAM(gup_kunit_large_order, gup_kunit_large_orders,
		  gup_kunit_order_desc);

/* A large folio, grabbed through the head, a middle or the last page. */
struct gup_kunit_grab_case {
	unsigned int order;
	int refs;
	bool last;		/* grab through the last tail page */
};

static const struct gup_kunit_grab_case gup_kunit_grab_cases[] = {
	{ 0, 1, false }, { 0, 3, false },
	{ 1, 1, false }, { 1, 1, true }, { 2, 5, true },
	{ PMD_SHIFT - PAGE_SHIFT, 1, false },
	{ PMD_SHIFT - PAGE_SHIFT, 512, true },
	{ MAX_ORDER - 1, 1, true }, { MAX_ORDER - 1, 7, false },
};

static void gup_kunit_grab_desc(const struct gup_kunit_grab_case *c,
				char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "order %u refs %d via %s page",
		 c->order, c->refs, c->last ? "last" : "head");
}

KUNIT_ARRAY_PARAM(gup_kunit_grab, gup_kunit_grab_cases, gup_kunit_grab_desc);

static struct page *gup_kunit_grab_page(struct gup_kunit_folio *f, bool last)
{
	return folio_page(f->folio, last ? folio_nr_pages(f->folio) - 1 : 0);
}

/* Pin accounting of @refs pins: what a pin adds to the folio's refcount. */
static long gup_kunit_pin_refs(struct folio *folio, long refs)
{
	return folio_test_large(folio) ? refs : refs * GUP_PIN_COUNTING_BIAS;
}

/* ------------------------------------------------------------------ */
/* try_grab_page()                                                     */
/* ------------------------------------------------------------------ */

/* FOLL_GET takes one plain reference, on folios of any order, no pin. */
static void try_grab_page_get_adds_one_reference(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_ASSERT_TRUE(test, try_grab_page(gup_kunit_grab_page(f, true),
					      FOLL_GET));
	f->gets++;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 1, 0, 0, 0);
	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
}

/* FOLL_PIN on an order-0 folio adds GUP_PIN_COUNTING_BIAS references. */
static void try_grab_page_pin_small_folio_adds_bias(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_ASSERT_TRUE(test, try_grab_page(&f->folio->page, FOLL_PIN));
	f->pins++;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, GUP_PIN_COUNTING_BIAS, 0,
			       1, 0);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
}

/*
 * FOLL_PIN on a large folio, through its head or a tail page, adds one
 * reference and one exact pincount to the folio.
 */
static void try_grab_page_pin_large_folio_counts_exactly(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_snap s;
	bool last;

	for (last = false; ; last = true) {
		gup_kunit_snap(f->folio, &s);
		KUNIT_ASSERT_TRUE(test,
				  try_grab_page(gup_kunit_grab_page(f, last),
						FOLL_PIN));
		f->pins++;
		GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 1, 1, 1, 0);
		if (last)
			break;
	}
	KUNIT_EXPECT_EQ(test, atomic_read(folio_pincount_ptr(f->folio)), 2);
}

/* Neither FOLL_GET nor FOLL_PIN: success, and nothing changes. */
static void try_grab_page_without_flags_changes_nothing(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_EXPECT_TRUE(test, try_grab_page(gup_kunit_grab_page(f, true), 0));
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

/* Pinning the zero page succeeds without touching it or the counters. */
static void try_grab_page_pin_zero_page_changes_nothing(struct kunit *test)
{
	struct folio *zero = page_folio(ZERO_PAGE(0));
	struct gup_kunit_snap s;

	gup_kunit_snap(zero, &s);
	KUNIT_EXPECT_TRUE(test, try_grab_page(ZERO_PAGE(0), FOLL_PIN));
	GUP_KUNIT_EXPECT_DELTA(test, zero, &s, 0, 0, 0, 0);
	/* Nothing to undo: unpinning the zero page is a no-op too. */
}

/* ------------------------------------------------------------------ */
/* try_grab_folio()                                                    */
/* ------------------------------------------------------------------ */

/* FOLL_GET with refs = N adds N plain references, whatever the order. */
static void try_grab_folio_get_adds_refs(struct kunit *test)
{
	const struct gup_kunit_grab_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_ASSERT_PTR_EQ(test,
			    gup_kunit_try_grab_folio(gup_kunit_grab_page(f, c->last),
						     c->refs, FOLL_GET),
			    f->folio);
	f->gets += c->refs;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, c->refs, 0, 0, 0);
}

/*
 * FOLL_PIN with refs = N: N * GUP_PIN_COUNTING_BIAS references on a small
 * folio; N references and N pincount on a large one; N pins counted.
 */
static void try_grab_folio_pin_adds_refs(struct kunit *test)
{
	const struct gup_kunit_grab_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_ASSERT_PTR_EQ(test,
			    gup_kunit_try_grab_folio(gup_kunit_grab_page(f, c->last),
						     c->refs, FOLL_PIN),
			    f->folio);
	f->pins += c->refs;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s,
			       gup_kunit_pin_refs(f->folio, c->refs), c->refs,
			       c->refs, 0);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
}

/* Pinning the zero page returns its folio, untouched and not counted. */
static void try_grab_folio_pin_zero_page_changes_nothing(struct kunit *test)
{
	struct folio *zero = page_folio(ZERO_PAGE(0));
	struct gup_kunit_snap s;

	gup_kunit_snap(zero, &s);
	KUNIT_EXPECT_PTR_EQ(test,
			    gup_kunit_try_grab_folio(ZERO_PAGE(0), 3, FOLL_PIN),
			    zero);
	GUP_KUNIT_EXPECT_DELTA(test, zero, &s, 0, 0, 0, 0);
}

/*
 * A folio whose refcount is zero is being freed: try_grab_folio() must
 * refuse it (folio_ref_try_add_rcu() fails) and change nothing.
 */
static void try_grab_folio_refuses_zero_refcount(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct page *page = gup_kunit_grab_page(f, true);
	struct folio *got_pin, *got_get;
	struct gup_kunit_snap s;

	folio_ref_dec(f->folio);		/* forge a free folio */
	gup_kunit_snap(f->folio, &s);
	got_pin = gup_kunit_try_grab_folio(page, 1, FOLL_PIN);
	got_get = gup_kunit_try_grab_folio(page, 1, FOLL_GET);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
	/* Undo whatever a broken kernel did, then restore the reference. */
	if (got_pin)
		f->pins++;
	if (got_get)
		f->gets++;
	folio_ref_inc(f->folio);
	KUNIT_EXPECT_NULL(test, got_pin);
	KUNIT_EXPECT_NULL(test, got_get);
}

/* try_grab_folio() racing with a split: the grab flags and refs. */
struct gup_kunit_split_case {
	const char *name;
	unsigned int flags;
	int refs;
};

static const struct gup_kunit_split_case gup_kunit_split_cases[] = {
	{ "FOLL_GET", FOLL_GET, 1 },
	{ "FOLL_PIN", FOLL_PIN, 3 },
};

static void gup_kunit_split_desc(const struct gup_kunit_split_case *c,
				 char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s refs %d", c->name, c->refs);
}

KUNIT_ARRAY_PARAM(gup_kunit_split, gup_kunit_split_cases,
		  gup_kunit_split_desc);

#ifdef CONFIG_DEBUG_PAGE_REF
/**
 * struct gup_kunit_split - a split of a large folio, faked mid-grab.
 * @head: the head page of the folio that try_get_folio() first finds.
 * @page: the page being grabbed, a tail page of @head's folio.
 * @new_head: what @page->compound_head becomes: the folio that the page
 *	belongs to "after the split".
 * @fired: set once the split has been faked.
 *
 * try_get_folio() reads page_folio(page), takes its references, then must
 * read page_folio(page) again: a split in between leaves the references on
 * a folio the page no longer belongs to (c24d37322548). The window is a
 * few instructions wide and needs a concurrent split_huge_page(), so no
 * test hits it by chance. The page_ref_mod_unless tracepoint of
 * CONFIG_DEBUG_PAGE_REF fires inside folio_ref_try_add_rcu(), in that
 * window, on the CPU doing the grab: a probe on it moves the page to
 * another folio there, deterministically, with no hook in mm/gup.c.
 */
struct gup_kunit_split {
	struct page *head;
	struct page *page;
	unsigned long new_head;
	atomic_t fired;
};

static void gup_kunit_split_probe(void *data, struct page *page, int v,
				  int ret)
{
	struct gup_kunit_split *split = data;

	if (page != split->head || !ret || atomic_xchg(&split->fired, 1))
		return;
	WRITE_ONCE(split->page->compound_head, split->new_head);
}

/*
 * A page that leaves its large folio between try_get_folio()'s page_folio()
 * and its reference: the grab drops the references it took on the old
 * folio and grabs the page's new folio instead. The old folio is THP-size;
 * the page, its last tail page, moves to a small folio, as after a split.
 */
static void try_grab_folio_retries_when_page_leaves_folio(struct kunit *test)
{
	const struct gup_kunit_split_case *c = test->param_value;
	bool pin = c->flags & FOLL_PIN;
	struct gup_kunit_folio *old = gup_kunit_alloc(test,
						      PMD_SHIFT - PAGE_SHIFT);
	struct gup_kunit_folio *new = gup_kunit_alloc(test, 0);
	struct page *page = gup_kunit_grab_page(old, true);
	unsigned long old_head = READ_ONCE(page->compound_head);
	struct gup_kunit_split split = {
		.head = &old->folio->page,
		.page = page,
		.new_head = (unsigned long)&new->folio->page | 1,
		.fired = ATOMIC_INIT(0),
	};
	struct gup_kunit_folio *held = NULL;
	struct gup_kunit_snap s_old, s_new;
	struct folio *got;
	long leaked;

	gup_kunit_snap(old->folio, &s_old);
	gup_kunit_snap(new->folio, &s_new);
	KUNIT_ASSERT_EQ(test,
			register_trace_page_ref_mod_unless(gup_kunit_split_probe,
							   &split), 0);
	got = gup_kunit_try_grab_folio(page, c->refs, c->flags);
	unregister_trace_page_ref_mod_unless(gup_kunit_split_probe, &split);
	tracepoint_synchronize_unregister();
	WRITE_ONCE(page->compound_head, old_head);

	/* Record what the grab holds, so that the release undoes it. */
	if (got == old->folio)
		held = old;
	else if (got == new->folio)
		held = new;
	if (held && pin)
		held->pins += c->refs;
	else if (held)
		held->gets += c->refs;

	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&split.fired), 1,
			    "the probe never saw the grab's reference");
	KUNIT_EXPECT_PTR_EQ_MSG(test, got, new->folio,
				"the grab must return the page's new folio");
	GUP_KUNIT_EXPECT_FOLIO(test, old->folio, &s_old, 0, 0);
	GUP_KUNIT_EXPECT_FOLIO(test, new->folio, &s_new,
			       pin ? gup_kunit_pin_refs(new->folio, c->refs) :
			       c->refs, 0);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s_old, pin ? c->refs : 0, 0);

	/* References a broken kernel left on the old folio: drop them too. */
	leaked = folio_ref_count(old->folio) - s_old.ref;
	if (held == old)
		leaked -= pin ? gup_kunit_pin_refs(old->folio, c->refs) :
			  c->refs;
	if (leaked > 0)
		old->gets += leaked;
}
#else
static void try_grab_folio_retries_when_page_leaves_folio(struct kunit *test)
{
	kunit_skip(test, "needs CONFIG_DEBUG_PAGE_REF to fake the split");
}
#endif /* CONFIG_DEBUG_PAGE_REF */

/*
 * Pageblock migratetypes that forbid long-term pins. The whole pageblock
 * belongs to the case (a pageblock-order folio), so changing its type
 * cannot misfile free pages; the type is restored under the zone lock.
 */
struct gup_kunit_mt_case {
	const char *name;
	int migratetype;
	bool pinnable;
};

static const struct gup_kunit_mt_case gup_kunit_mt_cases[] = {
	{ "MIGRATE_MOVABLE", MIGRATE_MOVABLE, true },
	{ "MIGRATE_UNMOVABLE", MIGRATE_UNMOVABLE, true },
#ifdef CONFIG_CMA
	{ "MIGRATE_CMA", MIGRATE_CMA, false },
#endif
#ifdef CONFIG_MEMORY_ISOLATION
	{ "MIGRATE_ISOLATE", MIGRATE_ISOLATE, false },
#endif
};

static void gup_kunit_mt_desc(const struct gup_kunit_mt_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_mt, gup_kunit_mt_cases, gup_kunit_mt_desc);

static int gup_kunit_set_mt(struct page *page, int mt)
{
	struct zone *zone = page_zone(page);
	unsigned long flags;
	int old;

	spin_lock_irqsave(&zone->lock, flags);
	old = get_pageblock_migratetype(page);
	set_pageblock_migratetype(page, mt);
	spin_unlock_irqrestore(&zone->lock, flags);
	return old;
}

static struct gup_kunit_folio *gup_kunit_alloc_pageblock(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, pageblock_order);

	KUNIT_ASSERT_EQ(test, folio_pfn(f->folio) % pageblock_nr_pages, 0UL);
	if (folio_zonenum(f->folio) == ZONE_MOVABLE)
		kunit_skip(test, "pageblock landed in ZONE_MOVABLE");
	return f;
}

/* is_longterm_pinnable_page() by pageblock migratetype in a normal zone. */
static void is_longterm_pinnable_page_by_migratetype(struct kunit *test)
{
	const struct gup_kunit_mt_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc_pageblock(test);
	struct page *page = gup_kunit_grab_page(f, true);
	bool pinnable;
	int old;

	old = gup_kunit_set_mt(page, c->migratetype);
	pinnable = is_longterm_pinnable_page(page);
	gup_kunit_set_mt(page, old);
	KUNIT_EXPECT_EQ(test, pinnable, c->pinnable);
}

/* The zero page may always be "pinned" long-term: pins of it are no-ops. */
static void is_longterm_pinnable_page_zero_page(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, is_longterm_pinnable_page(ZERO_PAGE(0)));
}

/* Pages of ZONE_MOVABLE must be migrated before a long-term pin. */
static void is_longterm_pinnable_page_movable_zone(struct kunit *test)
{
	struct page *page = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_NOWARN);
	bool zone_movable, pinnable;

	KUNIT_ASSERT_NOT_NULL(test, page);
	zone_movable = page_zonenum(page) == ZONE_MOVABLE;
	pinnable = is_longterm_pinnable_page(page);
	__free_page(page);
	if (!zone_movable)
		kunit_skip(test, "no ZONE_MOVABLE (boot with movablecore=)");
	KUNIT_EXPECT_FALSE(test, pinnable);
}

/*
 * GUP-fast may not pin long-term a page that must first be migrated:
 * try_grab_folio(FOLL_PIN | FOLL_LONGTERM) refuses it, changing nothing,
 * while a short-term pin of the same page is granted.
 */
static void try_grab_folio_longterm_refuses_unpinnable(struct kunit *test)
{
	const struct gup_kunit_mt_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc_pageblock(test);
	struct page *page = gup_kunit_grab_page(f, true);
	struct folio *longterm, *shortterm;
	struct gup_kunit_snap s;
	int old;

	old = gup_kunit_set_mt(page, c->migratetype);
	gup_kunit_snap(f->folio, &s);
	longterm = gup_kunit_try_grab_folio(page, 1, FOLL_PIN | FOLL_LONGTERM);
	if (longterm)
		f->pins++;
	gup_kunit_set_mt(page, old);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, c->pinnable ? 1 : 0,
			       c->pinnable ? 1 : 0, c->pinnable ? 1 : 0, 0);
	KUNIT_EXPECT_EQ(test, !!longterm, c->pinnable);

	shortterm = gup_kunit_try_grab_folio(page, 1, FOLL_PIN);
	if (shortterm)
		f->pins++;
	KUNIT_EXPECT_PTR_EQ(test, shortterm, f->folio);
}

/*
 * The same refusal for a page of ZONE_MOVABLE (movablecore= on the
 * command line): GUP-fast must leave it to the slow path, which migrates.
 */
static void try_grab_folio_longterm_refuses_movable_zone(struct kunit *test)
{
	struct page *page = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_NOWARN);
	struct folio *longterm, *shortterm;
	struct gup_kunit_snap s;

	KUNIT_ASSERT_NOT_NULL(test, page);
	if (page_zonenum(page) != ZONE_MOVABLE) {
		__free_page(page);
		kunit_skip(test, "no ZONE_MOVABLE (boot with movablecore=)");
	}
	gup_kunit_snap(page_folio(page), &s);
	longterm = gup_kunit_try_grab_folio(page, 1, FOLL_PIN | FOLL_LONGTERM);
	if (longterm)
		gup_put_folio(longterm, 1, FOLL_PIN);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0,
			       longterm ? 1 : 0, longterm ? 1 : 0);
	shortterm = gup_kunit_try_grab_folio(page, 1, FOLL_PIN);
	if (shortterm)
		gup_put_folio(shortterm, 1, FOLL_PIN);
	__free_page(page);
	KUNIT_EXPECT_NULL(test, longterm);
	KUNIT_EXPECT_NOT_NULL(test, shortterm);
}

/* ------------------------------------------------------------------ */
/* gup_put_folio()                                                     */
/* ------------------------------------------------------------------ */

/* gup_put_folio(refs = N) is the exact inverse of try_grab_folio(N). */
static void gup_put_folio_undoes_grab(struct kunit *test)
{
	const struct gup_kunit_grab_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	struct page *page = gup_kunit_grab_page(f, c->last);
	struct gup_kunit_snap s;
	unsigned int flags[] = { FOLL_PIN, FOLL_GET };
	int i;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		gup_kunit_snap(f->folio, &s);
		KUNIT_ASSERT_PTR_EQ(test,
				    gup_kunit_try_grab_folio(page, c->refs,
							     flags[i]),
				    f->folio);
		gup_put_folio(f->folio, c->refs, flags[i]);
		GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0,
				       flags[i] == FOLL_PIN ? c->refs : 0,
				       flags[i] == FOLL_PIN ? c->refs : 0);
	}
	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
}

/* Unpinning the zero folio is a no-op: it was never pinned. */
static void gup_put_folio_zero_folio_is_noop(struct kunit *test)
{
	struct folio *zero = page_folio(ZERO_PAGE(0));
	struct gup_kunit_snap s;

	gup_kunit_snap(zero, &s);
	gup_put_folio(zero, 5, FOLL_PIN);
	unpin_user_page(ZERO_PAGE(0));
	GUP_KUNIT_EXPECT_DELTA(test, zero, &s, 0, 0, 0, 0);
}

/*
 * The put that drops the last reference frees the folio: pin a folio the
 * case then releases, so that only the pin holds it, and unpin. Preemption
 * stays off so the freed page cannot be reallocated before it is looked at.
 */
static void gup_put_folio_final_put_frees_folio(struct kunit *test)
{
	struct page *page = alloc_page(GFP_KERNEL);
	struct folio *folio;
	long acquired, released;
	int ref_pinned, ref_after;

	KUNIT_ASSERT_NOT_NULL(test, page);
	folio = page_folio(page);
	acquired = gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED);
	released = gup_kunit_node_stat(NR_FOLL_PIN_RELEASED);
	if (!try_grab_page(page, FOLL_PIN)) {
		__free_page(page);
		KUNIT_FAIL(test, "try_grab_page(FOLL_PIN) refused a new page");
		return;
	}
	preempt_disable();
	folio_put(folio);		/* the pin is now the only holder */
	ref_pinned = folio_ref_count(folio);
	gup_put_folio(folio, 1, FOLL_PIN);
	ref_after = folio_ref_count(folio);
	preempt_enable();
	KUNIT_EXPECT_EQ(test, ref_pinned, (int)GUP_PIN_COUNTING_BIAS);
	KUNIT_EXPECT_EQ(test, ref_after, 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED) -
			acquired, 1L);
	KUNIT_EXPECT_EQ(test, gup_kunit_node_stat(NR_FOLL_PIN_RELEASED) -
			released, 1L);
}

/* ------------------------------------------------------------------ */
/* GUP_PIN_COUNTING_BIAS arithmetic                                    */
/* ------------------------------------------------------------------ */

/*
 * Interleavings of gets (G), pins (P), puts of a get (g) and unpins (p),
 * applied through try_grab_page() and gup_put_folio().
 */
struct gup_kunit_seq_case {
	unsigned int order;
	const char *ops;
};

static const struct gup_kunit_seq_case gup_kunit_seq_cases[] = {
	{ 0, "PPP" }, { 0, "GPGP" }, { 0, "PGgP" }, { 0, "GGGPpPgg" },
	{ 0, "PPPPpppp" }, { 2, "PPP" }, { 2, "GPGP" }, { 2, "PGgPpp" },
	{ PMD_SHIFT - PAGE_SHIFT, "GPPgGpP" },
};

static void gup_kunit_seq_desc(const struct gup_kunit_seq_case *c, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "order %u %s", c->order, c->ops);
}

KUNIT_ARRAY_PARAM(gup_kunit_seq, gup_kunit_seq_cases, gup_kunit_seq_desc);

/*
 * Apply one operation; return false (and fail) if the kernel refused it.
 * The expected state is base + pins * bias + gets (small folios) or
 * base + pins + gets with pincount == pins (large folios).
 */
static bool gup_kunit_apply(struct kunit *test, struct gup_kunit_folio *f,
			    char op, struct page *page)
{
	switch (op) {
	case 'G':
		if (!try_grab_page(page, FOLL_GET))
			return false;
		f->gets++;
		break;
	case 'P':
		if (!try_grab_page(page, FOLL_PIN))
			return false;
		f->pins++;
		break;
	case 'g':
		gup_put_folio(f->folio, 1, FOLL_GET);
		f->gets--;
		break;
	case 'p':
		unpin_user_page(page);
		f->pins--;
		break;
	}
	return true;
}

static bool gup_kunit_state_is(struct kunit *test, struct gup_kunit_folio *f,
			       const struct gup_kunit_snap *base,
			       const char *what, int step)
{
	struct folio *folio = f->folio;
	long ref = (long)base->ref + gup_kunit_pin_refs(folio, f->pins) +
		   f->gets;
	long pincount = folio_test_large(folio) ? f->pins : -1;
	long now_pincount = folio_test_large(folio) ?
		atomic_read(folio_pincount_ptr(folio)) : -1;

	if (folio_ref_count(folio) == ref && now_pincount == pincount)
		return true;
	KUNIT_FAIL(test, "%s step %d: ref %d pincount %ld, want %ld %ld (pins %ld gets %ld)",
		   what, step, folio_ref_count(folio), now_pincount, ref,
		   pincount, f->pins, f->gets);
	return false;
}

/* Every interleaving in the table lands exactly, step by step. */
static void pin_bias_interleavings_land_exactly(struct kunit *test)
{
	const struct gup_kunit_seq_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	struct page *page = gup_kunit_grab_page(f, true);
	struct gup_kunit_snap base;
	const char *op;
	long pins = 0;

	gup_kunit_snap(f->folio, &base);
	for (op = c->ops; *op; op++) {
		KUNIT_ASSERT_TRUE(test, gup_kunit_apply(test, f, *op, page));
		pins += *op == 'P';
		if (!gup_kunit_state_is(test, f, &base, c->ops, op - c->ops))
			return;
	}
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &base,
			       gup_kunit_pin_refs(f->folio, f->pins) + f->gets,
			       f->pins, pins, pins - f->pins);
}

#define GUP_KUNIT_RANDOM_OPS	2000

/*
 * A seeded pseudo-random walk of GUP_KUNIT_RANDOM_OPS gets, pins, puts and
 * unpins on each order, checked after every step, then unwound in a
 * pseudo-random order back to the base state. The seed is fixed, so a
 * failure is reproducible; it is printed with the failure.
 */
static void pin_bias_random_walk_lands_exactly(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct page *page = gup_kunit_grab_page(f, true);
	struct gup_kunit_snap base;
	struct rnd_state rnd;
	const u64 seed = 0x6775705f70696eULL + *order;	/* "gup_pin" */
	int i;

	prandom_seed_state(&rnd, seed);
	gup_kunit_snap(f->folio, &base);
	for (i = 0; i < GUP_KUNIT_RANDOM_OPS; i++) {
		u32 r = prandom_u32_state(&rnd) % 4;
		char op = "GPgp"[r];

		if ((op == 'g' && !f->gets) || (op == 'p' && !f->pins))
			op = op == 'g' ? 'G' : 'P';
		KUNIT_ASSERT_TRUE_MSG(test, gup_kunit_apply(test, f, op, page),
				      "seed %llx step %d", seed, i);
		if (!gup_kunit_state_is(test, f, &base, "walk", i))
			return;
	}
	/* Unwind in random order. */
	for (i = 0; f->pins || f->gets; i++) {
		bool unpin = f->pins && (!f->gets ||
					 (prandom_u32_state(&rnd) & 1));

		gup_kunit_apply(test, f, unpin ? 'p' : 'g', page);
		if (!gup_kunit_state_is(test, f, &base, "unwind", i))
			return;
	}
	KUNIT_EXPECT_EQ(test, folio_ref_count(f->folio), base.ref);
	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
}

/* ------------------------------------------------------------------ */
/* folio_maybe_dma_pinned()                                            */
/* ------------------------------------------------------------------ */

/* false when never pinned, true after one pin, false after its unpin. */
static void folio_maybe_dma_pinned_follows_one_pin(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct page *page = gup_kunit_grab_page(f, true);

	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
	KUNIT_EXPECT_FALSE(test, page_maybe_dma_pinned(page));
	KUNIT_ASSERT_TRUE(test, try_grab_page(page, FOLL_PIN));
	f->pins++;
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
	KUNIT_EXPECT_TRUE(test, page_maybe_dma_pinned(page));
	KUNIT_EXPECT_TRUE(test, page_maybe_dma_pinned(&f->folio->page));
	unpin_user_page(page);
	f->pins--;
	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
	KUNIT_EXPECT_FALSE(test, page_maybe_dma_pinned(page));
}

/*
 * The documented false positive of small folios: with no pin at all, a
 * refcount of GUP_PIN_COUNTING_BIAS plain references reads as "maybe
 * pinned"; one reference less does not.
 */
static void folio_maybe_dma_pinned_small_false_positive_at_bias(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	int extra = GUP_PIN_COUNTING_BIAS - 2;

	folio_ref_add(f->folio, extra);
	f->gets += extra;
	KUNIT_ASSERT_EQ(test, folio_ref_count(f->folio),
			(int)GUP_PIN_COUNTING_BIAS - 1);
	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
	folio_ref_inc(f->folio);
	f->gets++;
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
}

/*
 * Large folios count pins exactly: no number of plain references makes
 * them look pinned, and a single pin always does.
 */
static void folio_maybe_dma_pinned_large_is_exact(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	int extra = 4 * GUP_PIN_COUNTING_BIAS;

	folio_ref_add(f->folio, extra);
	f->gets += extra;
	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
	KUNIT_ASSERT_TRUE(test, try_grab_page(gup_kunit_grab_page(f, true),
					      FOLL_PIN));
	f->pins++;
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
}

/*
 * Because the pincount of a large folio is exact, pins add one reference
 * each: 2^21 pins, which would overflow a small folio's refcount
 * (2^21 * GUP_PIN_COUNTING_BIAS = 2^31), leave it far from INT_MAX.
 */
static void pin_large_folio_many_pins_do_not_overflow(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 2);
	const int refs = 1 << 21;
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_ASSERT_PTR_EQ(test,
			    gup_kunit_try_grab_folio(gup_kunit_grab_page(f, true),
						     refs, FOLL_PIN),
			    f->folio);
	f->pins += refs;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, refs, refs, refs, 0);
	KUNIT_EXPECT_GT(test, folio_ref_count(f->folio), 0);
}

/* ------------------------------------------------------------------ */
/* unpin_user_page*()                                                  */
/* ------------------------------------------------------------------ */

/*
 * Pin every page of @n folios of @order (or a subset through @pages) and
 * return the number of pages pinned in @pages.
 */
static int gup_kunit_pin_pages(struct kunit *test, struct gup_kunit_folio **f,
			       int nfolios, struct page **pages, int per_folio)
{
	int i, j, n = 0;

	for (i = 0; i < nfolios; i++) {
		for (j = 0; j < per_folio; j++) {
			struct page *page = folio_page(f[i]->folio,
				j % folio_nr_pages(f[i]->folio));

			KUNIT_ASSERT_TRUE(test, try_grab_page(page, FOLL_PIN));
			f[i]->pins++;
			pages[n++] = page;
		}
	}
	return n;
}

/* unpin_user_pages() of consecutive pages of one large folio. */
static void unpin_user_pages_releases_one_folio_batch(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	int n = min_t(int, folio_nr_pages(f->folio), 16);
	struct page **pages = kunit_kcalloc(test, n, sizeof(*pages),
					    GFP_KERNEL);
	struct gup_kunit_snap s;

	KUNIT_ASSERT_NOT_NULL(test, pages);
	gup_kunit_snap(f->folio, &s);
	gup_kunit_pin_pages(test, &f, 1, pages, n);
	unpin_user_pages(pages, n);
	f->pins -= n;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, n, n);
}

/*
 * unpin_user_pages() of an array that alternates between folios of
 * different orders: each run of pages of one folio is released from that
 * folio, and nothing else.
 */
static void unpin_user_pages_releases_mixed_folios(struct kunit *test)
{
	static const unsigned int orders[] = { 0, 2, 0, 3, 1 };
	struct gup_kunit_folio *f[ARRAY_SIZE(orders)];
	struct gup_kunit_snap s[ARRAY_SIZE(orders)];
	struct page *pages[ARRAY_SIZE(orders) * 3 + 2];
	struct gup_kunit_snap counters;
	int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(orders); i++) {
		f[i] = gup_kunit_alloc(test, orders[i]);
		gup_kunit_snap(f[i]->folio, &s[i]);
	}
	gup_kunit_snap(f[0]->folio, &counters);
	/* Runs of 1..3 pages per folio, and folio 0 again at the end. */
	for (i = 0; i < ARRAY_SIZE(orders); i++)
		n += gup_kunit_pin_pages(test, &f[i], 1, pages + n, 1 + i % 3);
	n += gup_kunit_pin_pages(test, &f[0], 1, pages + n, 2);
	unpin_user_pages(pages, n);
	for (i = 0; i < ARRAY_SIZE(orders); i++) {
		f[i]->pins = 0;
		GUP_KUNIT_EXPECT_FOLIO(test, f[i]->folio, &s[i], 0, 0);
	}
	GUP_KUNIT_EXPECT_COUNTERS(test, &counters, n, n);
}

/* unpin_user_pages() with npages = 0 touches nothing. */
static void unpin_user_pages_zero_pages_is_noop(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct page *pages[1];
	struct gup_kunit_snap s;

	gup_kunit_pin_pages(test, &f, 1, pages, 1);
	gup_kunit_snap(f->folio, &s);
	unpin_user_pages(pages, 0);
	unpin_user_pages_dirty_lock(pages, 0, true);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
	KUNIT_EXPECT_FALSE(test, folio_test_dirty(f->folio));
}

struct gup_kunit_dirty_case {
	unsigned int order;
	bool make_dirty;
	bool was_dirty;
};

static const struct gup_kunit_dirty_case gup_kunit_dirty_cases[] = {
	{ 0, false, false }, { 0, true, false }, { 0, true, true },
	{ 2, false, false }, { 2, true, false }, { 2, true, true },
	{ PMD_SHIFT - PAGE_SHIFT, true, false },
};

static void gup_kunit_dirty_desc(const struct gup_kunit_dirty_case *c,
				 char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "order %u make_dirty %d %s",
		 c->order, c->make_dirty, c->was_dirty ? "dirty" : "clean");
}

KUNIT_ARRAY_PARAM(gup_kunit_dirty, gup_kunit_dirty_cases,
		  gup_kunit_dirty_desc);

/*
 * unpin_user_pages_dirty_lock(): make_dirty false leaves a clean folio
 * clean; true dirties a clean folio and keeps a dirty one dirty; all pins
 * of every page passed are released.
 */
static void unpin_user_pages_dirty_lock_dirties_and_releases(struct kunit *test)
{
	const struct gup_kunit_dirty_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	int n = min_t(int, folio_nr_pages(f->folio), 4) + 1;
	struct page *pages[5];
	struct gup_kunit_snap s;

	if (c->was_dirty)
		folio_set_dirty(f->folio);
	gup_kunit_snap(f->folio, &s);
	gup_kunit_pin_pages(test, &f, 1, pages, n);
	unpin_user_pages_dirty_lock(pages, n, c->make_dirty);
	f->pins -= n;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, n, n);
	KUNIT_EXPECT_EQ(test, folio_test_dirty(f->folio),
			c->make_dirty || c->was_dirty);
}

/*
 * unpin_user_pages_dirty_lock(make_dirty = true) over an array that spans
 * several clean folios dirties every one of them, not only the first
 * batch, and releases every pin.
 */
static void unpin_user_pages_dirty_lock_dirties_every_folio(struct kunit *test)
{
	static const unsigned int orders[] = { 0, 2, 0, 1 };
	struct gup_kunit_folio *f[ARRAY_SIZE(orders)];
	struct gup_kunit_snap s[ARRAY_SIZE(orders)];
	struct page *pages[ARRAY_SIZE(orders) * 2];
	struct gup_kunit_snap counters;
	int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(orders); i++) {
		f[i] = gup_kunit_alloc(test, orders[i]);
		gup_kunit_snap(f[i]->folio, &s[i]);
	}
	gup_kunit_snap(f[0]->folio, &counters);
	for (i = 0; i < ARRAY_SIZE(orders); i++)
		n += gup_kunit_pin_pages(test, &f[i], 1, pages + n, 2);
	unpin_user_pages_dirty_lock(pages, n, true);
	for (i = 0; i < ARRAY_SIZE(orders); i++) {
		f[i]->pins = 0;
		GUP_KUNIT_EXPECT_FOLIO(test, f[i]->folio, &s[i], 0, 0);
		KUNIT_EXPECT_TRUE_MSG(test, folio_test_dirty(f[i]->folio),
				      "folio %d of %zu left clean", i,
				      ARRAY_SIZE(orders));
	}
	GUP_KUNIT_EXPECT_COUNTERS(test, &counters, n, n);
}

static const bool gup_kunit_make_dirty[] = { true, false };

static void gup_kunit_make_dirty_desc(const bool *make_dirty, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "make_dirty %s",
		 *make_dirty ? "true" : "false");
}

KUNIT_ARRAY_PARAM(gup_kunit_make_dirty, gup_kunit_make_dirty,
		  gup_kunit_make_dirty_desc);

/*
 * unpin_user_page_range_dirty_lock() over a range that starts in the
 * middle of one large folio and ends in the middle of the next (the two
 * folios are physically contiguous halves of one allocation): each folio
 * loses exactly its pins, and both are dirtied if and only if make_dirty.
 */
static void unpin_user_page_range_dirty_lock_spans_folios(struct kunit *test)
{
	const bool *make_dirty = test->param_value;
	const unsigned int half = 2;	/* two order-2 folios */
	struct page *block, *second;
	struct folio *a, *b;
	struct gup_kunit_snap sa, sb;
	int i, start = 1, n = 6;	/* pages 1..6 of 0..7 */

	block = alloc_pages(GFP_KERNEL, half + 1);	/* not compound */
	KUNIT_ASSERT_NOT_NULL(test, block);
	second = block + (1 << half);
	set_page_count(second, 1);
	prep_compound_page(block, half);
	prep_compound_page(second, half);
	a = page_folio(block);
	b = page_folio(second);
	gup_kunit_snap(a, &sa);
	gup_kunit_snap(b, &sb);
	for (i = start; i < start + n; i++)
		if (!try_grab_page(block + i, FOLL_PIN))
			KUNIT_FAIL(test, "pin of page %d refused", i);
	unpin_user_page_range_dirty_lock(block + start, n, *make_dirty);
	GUP_KUNIT_EXPECT_FOLIO(test, a, &sa, 0, 0);
	GUP_KUNIT_EXPECT_FOLIO(test, b, &sb, 0, 0);
	GUP_KUNIT_EXPECT_COUNTERS(test, &sa, n, n);
	KUNIT_EXPECT_EQ(test, folio_test_dirty(a), *make_dirty);
	KUNIT_EXPECT_EQ(test, folio_test_dirty(b), *make_dirty);
	folio_clear_dirty(a);
	folio_clear_dirty(b);
	if (folio_ref_count(a) == 1 && folio_ref_count(b) == 1 &&
	    !atomic_read(folio_pincount_ptr(a)) &&
	    !atomic_read(folio_pincount_ptr(b))) {
		folio_put(a);
		folio_put(b);
	}
}

/* ------------------------------------------------------------------ */
/* Concurrency                                                         */
/* ------------------------------------------------------------------ */

#define GUP_KUNIT_THREADS	4
#define GUP_KUNIT_ROUNDS	20000

struct gup_kunit_racer {
	struct page *page;
	struct completion done;
	struct completion *go;
	int refused;
};

static int gup_kunit_racer_fn(void *data)
{
	struct gup_kunit_racer *r = data;
	int i;

	wait_for_completion(r->go);
	for (i = 0; i < GUP_KUNIT_ROUNDS; i++) {
		if (!try_grab_page(r->page, FOLL_PIN)) {
			r->refused++;
			continue;
		}
		if (i & 1)
			cond_resched();
		unpin_user_page(r->page);
	}
	complete(&r->done);
	return 0;
}

/* Several threads pinning and unpinning one folio end exactly at base. */
static void pin_concurrent_threads_end_at_base(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_racer r[GUP_KUNIT_THREADS];
	struct gup_kunit_snap s;
	struct completion go;
	int i;

	init_completion(&go);
	gup_kunit_snap(f->folio, &s);
	for (i = 0; i < GUP_KUNIT_THREADS; i++) {
		struct task_struct *t;

		r[i].page = gup_kunit_grab_page(f, i & 1);
		r[i].go = &go;
		r[i].refused = 0;
		init_completion(&r[i].done);
		t = kthread_run(gup_kunit_racer_fn, &r[i], "gup_kunit/%d", i);
		if (IS_ERR(t)) {
			complete_all(&go);
			while (--i >= 0)
				wait_for_completion(&r[i].done);
			KUNIT_FAIL(test, "kthread_run failed");
			return;
		}
	}
	complete_all(&go);
	for (i = 0; i < GUP_KUNIT_THREADS; i++) {
		wait_for_completion(&r[i].done);
		KUNIT_EXPECT_EQ(test, r[i].refused, 0);
	}
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0,
			       GUP_KUNIT_THREADS * GUP_KUNIT_ROUNDS,
			       GUP_KUNIT_THREADS * GUP_KUNIT_ROUNDS);
}

/* ------------------------------------------------------------------ */
/* Reclaim of a pinned page-cache folio (mm/vmscan.c)                 */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_file - a page-cache file of a filesystem of our own.
 * @mnt: an internal mount of a pseudo filesystem (no device, no name).
 * @inode: an anonymous inode on it, whose mapping uses gup_kunit_aops.
 * @releases: how many times reclaim asked to release a folio's private
 *	data (->release_folio()).
 */
struct gup_kunit_file {
	struct vfsmount *mnt;
	struct inode *inode;
	atomic_t releases;
};

/* Private data of our folios: a pointer back to the file, as fs data. */
static bool gup_kunit_release_folio(struct folio *folio, gfp_t gfp)
{
	struct gup_kunit_file *file = folio_get_private(folio);

	atomic_inc(&file->releases);
	return false;		/* the filesystem still needs it: keep it */
}

static void gup_kunit_invalidate_folio(struct folio *folio, size_t offset,
				       size_t len)
{
	folio_detach_private(folio);
}

static const struct address_space_operations gup_kunit_aops = {
	.dirty_folio = noop_dirty_folio,
	.release_folio = gup_kunit_release_folio,
	.invalidate_folio = gup_kunit_invalidate_folio,
};

static int gup_kunit_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, 0x67757066) ? 0 : -ENOMEM;	/* "gupf" */
}

static struct file_system_type gup_kunit_fs_type = {
	.name = "gup_kunit",
	.init_fs_context = gup_kunit_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

static int gup_kunit_file_init(struct kunit_resource *res, void *context)
{
	struct gup_kunit_file *file = kzalloc(sizeof(*file), GFP_KERNEL);

	if (!file)
		return -ENOMEM;
	file->mnt = kern_mount(&gup_kunit_fs_type);
	if (IS_ERR(file->mnt)) {
		int err = PTR_ERR(file->mnt);

		kfree(file);
		return err;
	}
	file->inode = alloc_anon_inode(file->mnt->mnt_sb);
	if (IS_ERR(file->inode)) {
		int err = PTR_ERR(file->inode);

		kern_unmount(file->mnt);
		kfree(file);
		return err;
	}
	file->inode->i_mapping->a_ops = &gup_kunit_aops;
	res->data = file;
	return 0;
}

/* iput() truncates the page cache (->invalidate_folio() detaches). */
static void gup_kunit_file_release(struct kunit_resource *res)
{
	struct gup_kunit_file *file = res->data;

	iput(file->inode);
	kern_unmount(file->mnt);
	kfree(file);
}

/*
 * Reclaim must leave a DMA-pinned page-cache folio alone: once unmapped
 * it cannot be newly pinned, but the pins it has may still be written
 * through, so shrink_folio_list() activates it before it would write it
 * back or ask the filesystem to release its private data (buffer heads,
 * say) that the DMA's completion will need. The folio here is clean, has
 * private data and one FOLL_PIN; reclaim_pages() (the MADV_PAGEOUT path)
 * must reclaim nothing, never call ->release_folio(), and leave the folio
 * in the page cache with its private data and its pin.
 */
static void reclaim_keeps_pinned_file_folio_and_its_private_data(struct kunit *test)
{
	struct kunit_resource *kres;
	struct gup_kunit_file *file;
	struct gup_kunit_snap s;
	struct folio *folio;
	LIST_HEAD(list);
	bool pinned;

	kres = kunit_alloc_and_get_resource(test, gup_kunit_file_init,
					    gup_kunit_file_release,
					    GFP_KERNEL, NULL);
	KUNIT_ASSERT_NOT_NULL(test, kres);
	file = kres->data;
	kunit_put_resource(kres);
	folio = __filemap_get_folio(file->inode->i_mapping, 0,
				    FGP_LOCK | FGP_CREAT, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, folio);
	folio_attach_private(folio, file);
	folio_mark_uptodate(folio);
	folio_unlock(folio);

	gup_kunit_snap(folio, &s);
	pinned = gup_kunit_try_grab_folio(&folio->page, 1, FOLL_PIN) == folio;
	KUNIT_EXPECT_TRUE(test, pinned);
	lru_add_drain_all();
	if (pinned && !folio_isolate_lru(folio)) {
		list_add(&folio->lru, &list);
		KUNIT_EXPECT_EQ(test, reclaim_pages(&list), 0UL);
	} else {
		KUNIT_FAIL(test, "cannot isolate the folio from the LRU");
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&file->releases), 0);
	KUNIT_EXPECT_PTR_EQ(test, folio_get_private(folio), (void *)file);
	KUNIT_EXPECT_PTR_EQ(test, folio->mapping, file->inode->i_mapping);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(folio));
	if (pinned)
		unpin_user_page(&folio->page);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	folio_put(folio);
}

static struct kunit_case gup_pin_cases[] = {
	KUNIT_CASE_PARAM(try_grab_page_get_adds_one_reference,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(try_grab_page_pin_small_folio_adds_bias),
	KUNIT_CASE_PARAM(try_grab_page_pin_large_folio_counts_exactly,
			 gup_kunit_large_order_gen_params),
	KUNIT_CASE_PARAM(try_grab_page_without_flags_changes_nothing,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(try_grab_page_pin_zero_page_changes_nothing),
	KUNIT_CASE_PARAM(try_grab_folio_get_adds_refs,
			 gup_kunit_grab_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_pin_adds_refs,
			 gup_kunit_grab_gen_params),
	KUNIT_CASE(try_grab_folio_pin_zero_page_changes_nothing),
	KUNIT_CASE_PARAM(try_grab_folio_refuses_zero_refcount,
			 gup_kunit_order_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_longterm_refuses_unpinnable,
			 gup_kunit_mt_gen_params),
	KUNIT_CASE(try_grab_folio_longterm_refuses_movable_zone),
	KUNIT_CASE_PARAM(try_grab_folio_retries_when_page_leaves_folio,
			 gup_kunit_split_gen_params),
	KUNIT_CASE_PARAM(is_longterm_pinnable_page_by_migratetype,
			 gup_kunit_mt_gen_params),
	KUNIT_CASE(is_longterm_pinnable_page_zero_page),
	KUNIT_CASE(is_longterm_pinnable_page_movable_zone),
	KUNIT_CASE_PARAM(gup_put_folio_undoes_grab, gup_kunit_grab_gen_params),
	KUNIT_CASE(gup_put_folio_zero_folio_is_noop),
	KUNIT_CASE(gup_put_folio_final_put_frees_folio),
	KUNIT_CASE_PARAM(pin_bias_interleavings_land_exactly,
			 gup_kunit_seq_gen_params),
	KUNIT_CASE_PARAM(pin_bias_random_walk_lands_exactly,
			 gup_kunit_order_gen_params),
	KUNIT_CASE_PARAM(folio_maybe_dma_pinned_follows_one_pin,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(folio_maybe_dma_pinned_small_false_positive_at_bias),
	KUNIT_CASE_PARAM(folio_maybe_dma_pinned_large_is_exact,
			 gup_kunit_large_order_gen_params),
	KUNIT_CASE(pin_large_folio_many_pins_do_not_overflow),
	KUNIT_CASE_PARAM(unpin_user_pages_releases_one_folio_batch,
			 gup_kunit_large_order_gen_params),
	KUNIT_CASE(unpin_user_pages_releases_mixed_folios),
	KUNIT_CASE(unpin_user_pages_zero_pages_is_noop),
	KUNIT_CASE_PARAM(unpin_user_pages_dirty_lock_dirties_and_releases,
			 gup_kunit_dirty_gen_params),
	KUNIT_CASE(unpin_user_pages_dirty_lock_dirties_every_folio),
	KUNIT_CASE_PARAM(unpin_user_page_range_dirty_lock_spans_folios,
			 gup_kunit_make_dirty_gen_params),
	KUNIT_CASE_PARAM(pin_concurrent_threads_end_at_base,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(reclaim_keeps_pinned_file_folio_and_its_private_data),
	{}
};

static struct kunit_suite gup_pin_suite = {
	.name = "gup_pin",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_case_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_cases,
};

/* ------------------------------------------------------------------ */
/* gup_pin_warn: cases that WARN on purpose                            */
/* ------------------------------------------------------------------ */

/*
 * Expected warning: WARN_ON_ONCE(folio_ref_count(folio) <= 0) in
 * try_grab_page(), once per flag. A folio whose refcount is zero is being
 * freed: neither a get nor a pin may resurrect it, and nothing changes.
 */
static void try_grab_page_refuses_zero_refcount(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct page *page = gup_kunit_grab_page(f, true);
	bool got_pin, got_get;
	struct gup_kunit_snap s;

	folio_ref_dec(f->folio);
	gup_kunit_snap(f->folio, &s);
	got_pin = try_grab_page(page, FOLL_PIN);
	KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_warnings), 1);
	gup_kunit_warn_reset();
	got_get = try_grab_page(page, FOLL_GET);
	KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_warnings), 1);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
	f->pins += got_pin;
	f->gets += got_get;
	folio_ref_inc(f->folio);
	KUNIT_EXPECT_FALSE(test, got_pin);
	KUNIT_EXPECT_FALSE(test, got_get);
}

/*
 * Forge an order-0 refcount of @ref (from 1), for the overflow cases.
 * The forged references are tracked as gets, so cleanup drops them.
 */
static void gup_kunit_forge_ref(struct gup_kunit_folio *f, int ref)
{
	int add = ref - folio_ref_count(f->folio);

	folio_ref_add(f->folio, add);
	f->gets += add;
}

/*
 * Overflow: the pin that crosses the sign bit. 6.1's try_grab_page() checks
 * only for a refcount that is already zero or negative, not for a pending
 * overflow, so a pin of a folio at INT_MAX - GUP_PIN_COUNTING_BIAS + 1
 * references is granted and wraps the refcount to INT_MIN. The folio
 * still reads as pinned (folio_maybe_dma_pinned() compares unsigned), and
 * the unpin undoes the wrap exactly. No warning.
 */
static void pin_crossing_sign_bit_wraps_once(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct gup_kunit_snap s;

	gup_kunit_forge_ref(f, INT_MAX - (int)GUP_PIN_COUNTING_BIAS + 1);
	gup_kunit_snap(f->folio, &s);
	KUNIT_ASSERT_TRUE(test, try_grab_page(&f->folio->page, FOLL_PIN));
	f->pins++;
	KUNIT_EXPECT_EQ(test, folio_ref_count(f->folio), INT_MIN);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
	KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_warnings), 0);
	unpin_user_page(&f->folio->page);
	f->pins--;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 1, 1);
}

/*
 * Expected warnings: one from try_grab_page() (refcount <= 0) for each of
 * FOLL_PIN and FOLL_GET, one from try_get_folio() (refcount < 0) for each
 * of try_grab_folio()'s FOLL_PIN and FOLL_GET. After the wrap, every grab
 * is refused, so there is never a second wrap, and a refused grab changes
 * neither the refcount nor the counters.
 */
static void grab_after_wrap_is_refused(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct page *page = &f->folio->page;
	unsigned int flags[] = { FOLL_PIN, FOLL_GET };
	struct gup_kunit_snap s;
	int i;

	gup_kunit_forge_ref(f, INT_MAX - (int)GUP_PIN_COUNTING_BIAS + 1);
	KUNIT_ASSERT_TRUE(test, try_grab_page(page, FOLL_PIN));
	f->pins++;
	KUNIT_ASSERT_LT(test, folio_ref_count(f->folio), 0);
	gup_kunit_snap(f->folio, &s);
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		bool page_ok;
		struct folio *folio;

		gup_kunit_warn_reset();
		page_ok = try_grab_page(page, flags[i]);
		KUNIT_EXPECT_FALSE(test, page_ok);
		KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_warnings), 1);
		if (page_ok)
			flags[i] == FOLL_PIN ? f->pins++ : f->gets++;

		gup_kunit_warn_reset();
		folio = gup_kunit_try_grab_folio(page, 1, flags[i]);
		KUNIT_EXPECT_NULL(test, folio);
		KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_warnings), 1);
		if (folio)
			flags[i] == FOLL_PIN ? f->pins++ : f->gets++;
	}
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

/*
 * Expected warning: WARN_ON(IS_ERR_VALUE(npages)) in unpin_user_pages().
 * A caller that passes pin_user_pages()' -errno result as the count must
 * not unpin anything: the pages array was never filled.
 */
static void unpin_user_pages_refuses_error_count(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct page *pages[1];
	struct gup_kunit_snap s;

	gup_kunit_pin_pages(test, &f, 1, pages, 1);
	gup_kunit_snap(f->folio, &s);
	unpin_user_pages(pages, (unsigned long)-EFAULT);
	KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_warnings), 1);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

/*
 * Expected warning: WARN_ON_ONCE(1) at the end of try_grab_folio(). A grab
 * with neither FOLL_GET nor FOLL_PIN is a caller bug: it fails, changing
 * nothing (unlike try_grab_page(), for which it is a no-op success).
 */
static void try_grab_folio_without_flags_warns_and_fails(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_EXPECT_NULL(test, gup_kunit_try_grab_folio(&f->folio->page, 1,
							 0));
	KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_warnings), 1);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

static struct kunit_case gup_pin_warn_cases[] = {
	KUNIT_CASE_PARAM(try_grab_page_refuses_zero_refcount,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(pin_crossing_sign_bit_wraps_once),
	KUNIT_CASE(grab_after_wrap_is_refused),
	KUNIT_CASE(try_grab_folio_without_flags_warns_and_fails),
	KUNIT_CASE(unpin_user_pages_refuses_error_count),
	{}
};

static struct kunit_suite gup_pin_warn_suite = {
	.name = "gup_pin_warn",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_case_init,
	.test_cases = gup_pin_warn_cases,
};

/* ------------------------------------------------------------------ */
/* gup_pin_devmap: ZONE_DEVICE pages                                   */
/* ------------------------------------------------------------------ */

#ifdef CONFIG_DEVICE_PRIVATE

/**
 * struct gup_kunit_devmem - a ZONE_DEVICE pgmap created by a case.
 * @pgmap: the pagemap, over a free physical range (one memory section).
 * @res: that range, from request_free_mem_region().
 * @frees: how many times ->page_free() ran for its pages.
 * @inits: how many of its pages the case handed out (DEVICE_PRIVATE and
 *	COHERENT pages start free, at refcount 0).
 */
struct gup_kunit_devmem {
	struct dev_pagemap pgmap;
	struct resource *res;
	atomic_t frees;
	int inits;
};

static void gup_kunit_page_free(struct page *page)
{
	struct gup_kunit_devmem *d = container_of(page->pgmap,
						  struct gup_kunit_devmem,
						  pgmap);

	atomic_inc(&d->frees);
}

static vm_fault_t gup_kunit_migrate_to_ram(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

static const struct dev_pagemap_ops gup_kunit_devmem_ops = {
	.page_free = gup_kunit_page_free,
	.migrate_to_ram = gup_kunit_migrate_to_ram,
};

/*
 * Set in the context of gup_kunit_devmem_init(): back the pgmap with real
 * memory, which the CPU can read and write (device-coherent pages that
 * user space maps and that migration copies), rather than with a free
 * physical range that nothing backs.
 */
#define GUP_KUNIT_DEVMEM_RAM	0x100UL

/*
 * Reserve SZ_2M of the RAM that the kernel command line set aside as
 * legacy persistent memory (memmap=2M!1G, E820 type 12, claimed by no
 * driver without CONFIG_X86_PMEM_LEGACY): real memory outside the page
 * allocator, for a pgmap of its own. The E820 table is read directly:
 * without CONFIG_PCI the range never makes it into iomem_resource.
 */
static struct resource *gup_kunit_request_pram(void)
{
#ifdef CONFIG_X86
	struct resource *res;
	u32 i;

	for (i = 0; i < e820_table->nr_entries; i++) {
		struct e820_entry *e = &e820_table->entries[i];

		if (e->type != E820_TYPE_PRAM || e->size < SZ_2M)
			continue;
		res = request_mem_region(e->addr, SZ_2M, "gup_kunit");
		return res ? res : ERR_PTR(-EBUSY);
	}
#endif
	return ERR_PTR(-ENODEV);
}

static int gup_kunit_devmem_init(struct kunit_resource *kres, void *context)
{
	enum memory_type type = (unsigned long)context & ~GUP_KUNIT_DEVMEM_RAM;
	struct gup_kunit_devmem *d = kzalloc(sizeof(*d), GFP_KERNEL);
	void *ret;

	if (!d)
		return -ENOMEM;
	if ((unsigned long)context & GUP_KUNIT_DEVMEM_RAM)
		d->res = gup_kunit_request_pram();
	else
		d->res = request_free_mem_region(&iomem_resource, SZ_2M,
						 "gup_kunit");
	if (IS_ERR(d->res)) {
		int err = PTR_ERR(d->res);

		kfree(d);
		return err;
	}
	d->pgmap.type = type;
	d->pgmap.range.start = d->res->start;
	d->pgmap.range.end = d->res->end;
	d->pgmap.nr_range = 1;
	d->pgmap.ops = &gup_kunit_devmem_ops;
	d->pgmap.owner = d;
	ret = memremap_pages(&d->pgmap, numa_node_id());
	if (IS_ERR(ret)) {
		release_mem_region(d->res->start, resource_size(d->res));
		kfree(d);
		return PTR_ERR(ret);
	}
	kres->data = d;
	atomic_inc(&gup_kunit_alive);
	return 0;
}

/*
 * memunmap_pages() waits until every page handed out is free again, so a
 * page that a broken kernel leaked would hang the case forever: then
 * leak the pgmap instead, and say so.
 */
static void gup_kunit_devmem_release(struct kunit_resource *kres)
{
	struct gup_kunit_devmem *d = kres->data;

	if (atomic_read(&d->frees) != d->inits) {
		pr_err("gup_kunit: leaking pgmap: %d pages handed out, %d freed\n",
		       d->inits, atomic_read(&d->frees));
		return;
	}
	memunmap_pages(&d->pgmap);
	release_mem_region(d->res->start, resource_size(d->res));
	kfree(d);
	atomic_dec(&gup_kunit_alive);
}

/*
 * A pgmap of @type for the case, released when it ends. @type may carry
 * GUP_KUNIT_DEVMEM_RAM.
 */
static struct gup_kunit_devmem *gup_kunit_devmem(struct kunit *test,
						 unsigned long type)
{
	struct kunit_resource *kres;

	kres = kunit_alloc_and_get_resource(test, gup_kunit_devmem_init,
					    gup_kunit_devmem_release,
					    GFP_KERNEL, (void *)type);
	if (!kres && (type & GUP_KUNIT_DEVMEM_RAM))
		kunit_skip(test, "no RAM for a pgmap (boot with memmap=2M!1G)");
	if (!kres)
		kunit_skip(test, "cannot create a ZONE_DEVICE pgmap of type %lu",
			   type);
	kunit_put_resource(kres);
	return kres->data;
}

/* The first page of @d, handed out as its driver would (refcount 1). */
static struct page *gup_kunit_devmem_page(struct gup_kunit_devmem *d)
{
	struct page *page = pfn_to_page(PHYS_PFN(d->pgmap.range.start));

	if (d->pgmap.type == MEMORY_DEVICE_PRIVATE ||
	    d->pgmap.type == MEMORY_DEVICE_COHERENT) {
		zone_device_page_init(page);
		unlock_page(page);	/* it comes back locked */
		d->inits++;
	}
	return page;
}

/*
 * Unpin @page with a waiter queued on its refcount, the way fs/dax waits
 * for a busy page (wait_var_event(&page->_refcount, ...)). Return whether
 * the unpin woke the waiter: var_wake_function() removes the entry of a
 * task that it wakes, so no sleeping and no timing is involved.
 */
static bool gup_kunit_unpin_wakes_waiter(struct page *page)
{
	struct wait_queue_head *wq = __var_waitqueue(&page->_refcount);
	struct wait_bit_queue_entry wbq;
	bool woken;

	init_wait_var_entry(&wbq, &page->_refcount, 0);
	prepare_to_wait_event(wq, &wbq.wq_entry, TASK_UNINTERRUPTIBLE);
	unpin_user_page(page);
	woken = list_empty_careful(&wbq.wq_entry.entry);
	finish_wait(wq, &wbq.wq_entry);
	return woken;
}

/*
 * FS_DAX pages are 1-based: refcount 1 means idle. A pin adds
 * GUP_PIN_COUNTING_BIAS; the unpin that brings the page back to 1 wakes
 * whoever waits for the page to become idle (fs/dax before truncate), and
 * an unpin that leaves it busy does not.
 */
static void devmap_fsdax_unpin_to_idle_wakes_waiter(struct kunit *test)
{
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_FS_DAX);
	struct page *page = gup_kunit_devmem_page(d);
	struct gup_kunit_snap s;
	int pins = 0;

	gup_kunit_snap(page_folio(page), &s);
	KUNIT_ASSERT_EQ(test, s.ref, 1);
	pins += try_grab_page(page, FOLL_PIN);
	pins += try_grab_page(page, FOLL_PIN);
	KUNIT_ASSERT_EQ(test, pins, 2);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s,
			       2 * GUP_PIN_COUNTING_BIAS, 0, 2, 0);
	KUNIT_EXPECT_TRUE(test, page_maybe_dma_pinned(page));
	KUNIT_EXPECT_FALSE(test, gup_kunit_unpin_wakes_waiter(page));
	KUNIT_EXPECT_TRUE(test, gup_kunit_unpin_wakes_waiter(page));
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0, 2, 2);
	KUNIT_EXPECT_FALSE(test, page_maybe_dma_pinned(page));
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 0);
}

/*
 * A DEVICE_PRIVATE page goes back to its driver (->page_free()) exactly
 * once, at the put that drops the last reference: not at the unpin while
 * the driver still holds its own reference.
 */
static void devmap_private_page_free_runs_once_at_final_put(struct kunit *test)
{
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_PRIVATE);
	struct page *page = gup_kunit_devmem_page(d);
	struct gup_kunit_snap s;

	gup_kunit_snap(page_folio(page), &s);
	KUNIT_ASSERT_EQ(test, s.ref, 1);
	KUNIT_ASSERT_TRUE(test, try_grab_page(page, FOLL_PIN));
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s,
			       GUP_PIN_COUNTING_BIAS, 0, 1, 0);
	unpin_user_page(page);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0, 1, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 0);
	put_page(page);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
	KUNIT_EXPECT_EQ(test, page_ref_count(page), 0);
}

/*
 * Device-coherent memory must always allow eviction, so it may never be
 * pinned long-term; GUP-fast refuses FOLL_LONGTERM for it.
 */
static void is_longterm_pinnable_page_device_coherent(struct kunit *test)
{
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_COHERENT);
	struct page *page = gup_kunit_devmem_page(d);
	struct folio *longterm;
	struct gup_kunit_snap s;

	KUNIT_EXPECT_TRUE(test, is_device_coherent_page(page));
	KUNIT_EXPECT_FALSE(test, is_longterm_pinnable_page(page));
	gup_kunit_snap(page_folio(page), &s);
	longterm = gup_kunit_try_grab_folio(page, 1, FOLL_PIN | FOLL_LONGTERM);
	if (longterm)
		gup_put_folio(longterm, 1, FOLL_PIN);
	KUNIT_EXPECT_NULL(test, longterm);
	put_page(page);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
}

static struct kunit_case gup_pin_devmap_cases[] = {
	KUNIT_CASE(devmap_fsdax_unpin_to_idle_wakes_waiter),
	KUNIT_CASE(devmap_private_page_free_runs_once_at_final_put),
	KUNIT_CASE(is_longterm_pinnable_page_device_coherent),
	{}
};

static struct kunit_suite gup_pin_devmap_suite = {
	.name = "gup_pin_devmap",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_case_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_devmap_cases,
};

#else /* !CONFIG_DEVICE_PRIVATE */

static void devmap_needs_device_private(struct kunit *test)
{
	kunit_skip(test, "needs CONFIG_DEVICE_PRIVATE and CONFIG_FS_DAX");
}

static struct kunit_case gup_pin_devmap_stub_cases[] = {
	KUNIT_CASE(devmap_needs_device_private),
	{}
};

static struct kunit_suite gup_pin_devmap_suite = {
	.name = "gup_pin_devmap",
	.test_cases = gup_pin_devmap_stub_cases,
};

#endif /* CONFIG_DEVICE_PRIVATE */

/*
 * The gup_pin_user suite, in its own file: it needs a user address space
 * for every case and the helpers above.
 */
#include "gup_kunit_user.c"

/* ------------------------------------------------------------------ */
/* gup_pin_selftest: the harness's own crash and hang detection        */
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
 * Does nothing unless booted with gup.kunit_selftest=panic|oops|hang|leak,
 * and is not in the default filter: it exists so that the harness can
 * prove that a crashed or hung kernel is reported as a failure, and (leak,
 * on the make test-debug kernel) that gup_pin_final's kmemleak scan finds
 * an object that nothing references any more.
 */
static void selftest_crashes_kernel_on_request(struct kunit *test)
{
	if (!strcmp(kunit_selftest, "panic"))
		panic("gup_kunit: panic requested by gup.kunit_selftest");
	if (!strcmp(kunit_selftest, "oops"))
		WRITE_ONCE(*gup_kunit_nowhere, 1);	/* NULL pointer */
	if (!strcmp(kunit_selftest, "hang"))
		for (;;)
			msleep(1000);
	if (!strcmp(kunit_selftest, "leak")) {
		gup_kunit_leak();
		gup_kunit_scrub_stack();
		return;
	}
	kunit_skip(test, "boot with gup.kunit_selftest=panic|oops|hang|leak");
}

static struct kunit_case gup_pin_selftest_cases[] = {
	KUNIT_CASE(selftest_crashes_kernel_on_request),
	{}
};

static struct kunit_suite gup_pin_selftest_suite = {
	.name = "gup_selftest",
	.init = gup_kunit_case_init,
	.test_cases = gup_pin_selftest_cases,
};

/* ------------------------------------------------------------------ */
/* gup_pin_final: what the suites leave behind                         */
/* ------------------------------------------------------------------ */

/*
 * Coverage builds (CONFIG_GCOV_KERNEL, make coverage) print the profile of
 * the pin core on the console once every suite has run, for the host to
 * turn back into .gcda files: a KUnit kernel has no user space to copy
 * them out of debugfs.
 */
#ifdef CONFIG_GCOV_KERNEL
#include "gup_kunit_gcov.c"
#else
static void gup_kunit_gcov_dump(struct kunit_suite *suite)
{
}
#endif

/*
 * Registered last, so it runs after every other suite: the
 * suites must leave no pin behind (every pin acquired since boot has been
 * released: nothing else pins memory before user space starts) and no
 * folio or pgmap that they allocated.
 */
static void suites_leave_no_pins_behind(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED),
			gup_kunit_node_stat(NR_FOLL_PIN_RELEASED));
}

static void suites_free_every_folio_they_allocate(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_alive), 0);
}

#ifdef CONFIG_DEBUG_KMEMLEAK
/*
 * kmemleak's debugfs file, opened from a private debugfs mount: built-in
 * KUnit runs before user space, so nothing has mounted debugfs yet.
 */
static struct file *gup_kunit_kmemleak_open(void)
{
	struct file_system_type *fs = get_fs_type("debugfs");
	struct vfsmount *mnt;
	struct file *f;

	if (!fs)
		return ERR_PTR(-ENODEV);
	mnt = vfs_kern_mount(fs, 0, "debugfs", NULL);
	put_filesystem(fs);
	if (IS_ERR(mnt))
		return ERR_CAST(mnt);
	f = file_open_root_mnt(mnt, "kmemleak", O_RDWR, 0);
	mntput(mnt);		/* the open file holds the mount */
	return f;
}

/*
 * kmemleak (make test-debug): once every other suite has run, a scan finds
 * no unreferenced object. kmemleak's file has ->read and ->write only,
 * which kernel_read()/kernel_write() refuse, so the case borrows a user
 * address space (as gup_pin_user does) to pass them a user buffer. Objects
 * younger than kmemleak's minimum age (5 s) are never reported, so the
 * scan waits that long first: a wait, not a timing assertion. Each object
 * reported is printed to the console; kmemleak's own "N new suspected
 * memory leaks" line fails this case in the splat accounting too.
 */
static void suites_leak_no_kernel_memory(struct kunit *test)
{
	const size_t len = PAGE_SIZE;
	struct mm_struct *mm = mm_alloc();
	int leaks = 0, chunks = 0;
	unsigned long ubuf;
	struct file *f;
	loff_t pos = 0;
	ssize_t n;
	char *buf;

	KUNIT_ASSERT_NOT_NULL(test, mm);
	mm->task_size = TASK_SIZE;
	arch_pick_mmap_layout(mm, &current->signal->rlim[RLIMIT_STACK]);
	kthread_use_mm(mm);
	buf = kunit_kzalloc(test, len + 1, GFP_KERNEL);
	f = gup_kunit_kmemleak_open();
	ubuf = vm_mmap(NULL, 0, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, 0);
	if (!buf || IS_ERR(f) || IS_ERR_VALUE(ubuf)) {
		KUNIT_FAIL(test, "cannot set up: buf %p, file %ld, mmap %ld",
			   buf, PTR_ERR_OR_ZERO(f), (long)ubuf);
		goto out;
	}
	ssleep(DIV_ROUND_UP(5000, MSEC_PER_SEC) + 1);
	KUNIT_EXPECT_EQ(test, copy_to_user((void __user *)ubuf, "scan", 4),
			0UL);
	n = f->f_op->write(f, (const char __user *)ubuf, 4, &pos);
	KUNIT_EXPECT_EQ(test, n, 4L);
	pos = 0;
	while (chunks++ < 256 &&
	       (n = f->f_op->read(f, (char __user *)ubuf, len, &pos)) > 0) {
		char *line, *cur = buf;

		if (copy_from_user(buf, (void __user *)ubuf, n))
			break;
		buf[n] = '\0';
		while ((line = strsep(&cur, "\n"))) {
			if (!*line)
				continue;
			leaks += !!strstr(line, "unreferenced object");
			kunit_info(test, "kmemleak: %s\n", line);
		}
	}
	KUNIT_EXPECT_EQ_MSG(test, leaks, 0, "unreferenced objects");
out:
	if (!IS_ERR_OR_NULL(f))
		fput(f);
	kthread_unuse_mm(mm);
	mmput(mm);
}
#endif /* CONFIG_DEBUG_KMEMLEAK */

static struct kunit_case gup_pin_final_cases[] = {
	KUNIT_CASE(suites_leave_no_pins_behind),
	KUNIT_CASE(suites_free_every_folio_they_allocate),
#ifdef CONFIG_DEBUG_KMEMLEAK
	KUNIT_CASE(suites_leak_no_kernel_memory),
#endif
	{}
};

static struct kunit_suite gup_pin_final_suite = {
	.name = "gup_pin_final",
	.suite_exit = gup_kunit_gcov_dump,
	.init = gup_kunit_case_init,
	.test_cases = gup_pin_final_cases,
};

/*
 * One array, so that the suites run in this order and gup_pin_final last
 * (separate kunit_test_suite() arrays are emitted in no defined order).
 */
kunit_test_suites(&gup_pin_suite, &gup_pin_warn_suite, &gup_pin_devmap_suite,
		  &gup_pin_user_suite, &gup_pin_selftest_suite,
		  &gup_pin_final_suite);
