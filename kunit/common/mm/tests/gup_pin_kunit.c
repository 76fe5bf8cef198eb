// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of FOLL_PIN accounting (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin: pins taken with this kernel's grab primitives (gup_kunit_mm.h)
 * on folios that the test allocates itself, and released with
 * gup_put_folio() and the unpin_user_page*() family: the exact refcount,
 * pincount and NR_FOLL_PIN_ACQUIRED / NR_FOLL_PIN_RELEASED deltas, the
 * GUP_PIN_COUNTING_BIAS arithmetic of any interleaving of gets and pins,
 * folio_maybe_dma_pinned() at its boundaries, batching and dirtying in the
 * unpin family, concurrent pinning, and reclaim of a pinned page-cache
 * folio.
 */

#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/kthread.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/prandom.h>
#include <linux/pseudo_fs.h>
#include <linux/swap.h>
#include "gup_kunit.h"

KUNIT_ARRAY_PARAM(gup_kunit_order, gup_kunit_orders, gup_kunit_order_desc);
KUNIT_ARRAY_PARAM(gup_kunit_large_order, gup_kunit_large_orders,
		  gup_kunit_order_desc);
KUNIT_ARRAY_PARAM(gup_kunit_grab, gup_kunit_grab_cases, gup_kunit_grab_desc);

/* ------------------------------------------------------------------ */
/* gup_put_folio()                                                     */
/* ------------------------------------------------------------------ */

/* gup_put_folio(refs = N) is the exact inverse of try_grab_folio(N). */
static void gup_put_folio_undoes_grab(struct kunit *test)
{
	const struct gup_kunit_grab_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	struct page *page = gup_kunit_folio_page(f, c->last);
	struct gup_kunit_snap s;
	unsigned int flags[] = { FOLL_PIN, FOLL_GET };
	int i;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		gup_kunit_snap(f->folio, &s);
		KUNIT_ASSERT_PTR_EQ(test,
				    gup_kunit_try_grab_fast(page, c->refs,
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
	if (!gup_kunit_try_grab_page(page, FOLL_PIN)) {
		__free_page(page);
		KUNIT_FAIL(test, "gup_kunit_try_grab_page(FOLL_PIN) refused a new page");
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
 * applied through gup_kunit_try_grab_page() and gup_put_folio().
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
		if (!gup_kunit_try_grab_page(page, FOLL_GET))
			return false;
		f->gets++;
		break;
	case 'P':
		if (!gup_kunit_try_grab_page(page, FOLL_PIN))
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
		gup_kunit_pincount(folio) : -1;

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
	struct page *page = gup_kunit_folio_page(f, true);
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
	struct page *page = gup_kunit_folio_page(f, true);
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
	struct page *page = gup_kunit_folio_page(f, true);

	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
	KUNIT_EXPECT_FALSE(test, gup_kunit_page_pinned(page));
	KUNIT_ASSERT_TRUE(test, gup_kunit_try_grab_page(page, FOLL_PIN));
	f->pins++;
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
	KUNIT_EXPECT_TRUE(test, gup_kunit_page_pinned(page));
	KUNIT_EXPECT_TRUE(test, gup_kunit_page_pinned(&f->folio->page));
	unpin_user_page(page);
	f->pins--;
	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
	KUNIT_EXPECT_FALSE(test, gup_kunit_page_pinned(page));
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
	KUNIT_ASSERT_TRUE(test,
			  gup_kunit_try_grab_page(gup_kunit_folio_page(f, true),
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
			    gup_kunit_try_grab_fast(gup_kunit_folio_page(f, true),
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
 * A folio of each of the @n @orders for the case, and a snapshot of each
 * in @s; then of the counters, in @counters.
 */
static void gup_kunit_alloc_each(struct kunit *test, const unsigned int *orders,
				 int n, struct gup_kunit_folio **f,
				 struct gup_kunit_snap *s,
				 struct gup_kunit_snap *counters)
{
	int i;

	for (i = 0; i < n; i++) {
		f[i] = gup_kunit_alloc(test, orders[i]);
		gup_kunit_snap(f[i]->folio, &s[i]);
	}
	gup_kunit_snap_counters(counters);
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
	gup_kunit_pin_pages(test, f, pages, n);
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

	gup_kunit_alloc_each(test, orders, ARRAY_SIZE(orders), f, s, &counters);
	/* Runs of 1..3 pages per folio, and folio 0 again at the end. */
	for (i = 0; i < ARRAY_SIZE(orders); i++)
		n += gup_kunit_pin_pages(test, f[i], pages + n, 1 + i % 3);
	n += gup_kunit_pin_pages(test, f[0], pages + n, 2);
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

	gup_kunit_pin_pages(test, f, pages, 1);
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
	gup_kunit_pin_pages(test, f, pages, n);
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

	gup_kunit_alloc_each(test, orders, ARRAY_SIZE(orders), f, s, &counters);
	for (i = 0; i < ARRAY_SIZE(orders); i++)
		n += gup_kunit_pin_pages(test, f[i], pages + n, 2);
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
		if (!gup_kunit_try_grab_page(block + i, FOLL_PIN))
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
	    !gup_kunit_pincount(a) &&
	    !gup_kunit_pincount(b)) {
		folio_put(a);
		folio_put(b);
	}
}

/*
 * The same over order-0 folios, the pages of a split_page() allocation:
 * each page of the range is a folio of its own and loses exactly its one
 * pin, whatever make_dirty; the page after the range keeps its pin.
 */
static void unpin_user_page_range_dirty_lock_unpins_each_small_folio(struct kunit *test)
{
	const bool *make_dirty = test->param_value;
	const int order = 2, n = 3;	/* pages 0..2 of 0..3 */
	struct gup_kunit_snap s[4];
	struct page *block;
	int i;

	block = alloc_pages(GFP_KERNEL, order);
	KUNIT_ASSERT_NOT_NULL(test, block);
	split_page(block, order);
	for (i = 0; i < 1 << order; i++) {
		gup_kunit_snap(page_folio(block + i), &s[i]);
		if (!gup_kunit_try_grab_page(block + i, FOLL_PIN))
			KUNIT_FAIL(test, "pin of page %d refused", i);
	}
	unpin_user_page_range_dirty_lock(block, n, *make_dirty);
	for (i = 0; i < n; i++) {
		GUP_KUNIT_EXPECT_FOLIO(test, page_folio(block + i), &s[i], 0, 0);
		KUNIT_EXPECT_EQ(test, PageDirty(block + i), *make_dirty);
	}
	GUP_KUNIT_EXPECT_FOLIO(test, page_folio(block + n), &s[n],
			       GUP_PIN_COUNTING_BIAS, 0);
	KUNIT_EXPECT_FALSE(test, PageDirty(block + n));
	unpin_user_page(block + n);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s[0], 1 << order, 1 << order);
	for (i = 0; i < 1 << order; i++) {
		ClearPageDirty(block + i);
		if (page_ref_count(block + i) == 1)
			__free_page(block + i);
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
		if (!gup_kunit_try_grab_page(r->page, FOLL_PIN)) {
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

		r[i].page = gup_kunit_folio_page(f, i & 1);
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
	pinned = gup_kunit_try_grab_fast(&folio->page, 1, FOLL_PIN) == folio;
	KUNIT_EXPECT_TRUE(test, pinned);
	lru_add_drain_all();
	if (pinned && gup_kunit_isolate_lru(folio)) {
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
	KUNIT_CASE_PARAM(unpin_user_page_range_dirty_lock_unpins_each_small_folio,
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

kunit_test_suite(gup_pin_suite);
