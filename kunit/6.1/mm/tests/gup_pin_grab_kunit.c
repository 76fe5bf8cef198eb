// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of this kernel's grab primitives (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_grab: try_grab_page(), the slow path's grab of one page
 * (follow_page_mask()), and try_grab_folio(), GUP-fast's grab of @refs
 * references or pins, on folios that the test allocates itself (order 0 up
 * to MAX_ORDER - 1, the zero page): the exact refcount, pincount and
 * NR_FOLL_PIN_ACQUIRED / NR_FOLL_PIN_RELEASED deltas of every grab, the
 * refusals (a freed folio, no FOLL_GET or FOLL_PIN, FOLL_LONGTERM of a
 * page that must first migrate), is_longterm_pinnable_page(), and the
 * retry of a grab that races with a split of its folio.
 */

#include "gup_kunit.h"

KUNIT_ARRAY_PARAM(gup_kunit_order, gup_kunit_orders, gup_kunit_order_desc);
KUNIT_ARRAY_PARAM(gup_kunit_large_order, gup_kunit_large_orders,
		  gup_kunit_order_desc);
KUNIT_ARRAY_PARAM(gup_kunit_grab, gup_kunit_grab_cases, gup_kunit_grab_desc);

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
	KUNIT_ASSERT_TRUE(test, try_grab_page(gup_kunit_folio_page(f, true),
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
				  try_grab_page(gup_kunit_folio_page(f, last),
						FOLL_PIN));
		f->pins++;
		GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 1, 1, 1, 0);
		if (last)
			break;
	}
	KUNIT_EXPECT_EQ(test, gup_kunit_pincount(f->folio), 2);
}

/* Neither FOLL_GET nor FOLL_PIN: success, and nothing changes. */
static void try_grab_page_without_flags_changes_nothing(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_EXPECT_TRUE(test, try_grab_page(gup_kunit_folio_page(f, true), 0));
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

/*
 * Expected warning: WARN_ON_ONCE() of FOLL_GET and FOLL_PIN both set, a
 * caller bug. The grab still goes ahead as FOLL_GET: one plain reference,
 * no pin, no counter.
 */
static void try_grab_page_warns_when_get_and_pin_are_both_set(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct gup_kunit_snap s;
	bool got;

	gup_kunit_snap(f->folio, &s);
	got = try_grab_page(&f->folio->page, FOLL_GET | FOLL_PIN);
	f->gets += got;
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	KUNIT_EXPECT_TRUE(test, got);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 1, 0, 0, 0);
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
	gup_kunit_check_fast_grab(test, test->param_value, FOLL_GET);
}

/*
 * FOLL_PIN with refs = N: N * GUP_PIN_COUNTING_BIAS references on a small
 * folio; N references and N pincount on a large one; N pins counted.
 */
static void try_grab_folio_pin_adds_refs(struct kunit *test)
{
	gup_kunit_check_fast_grab(test, test->param_value, FOLL_PIN);
}

/* Pinning the zero page returns its folio, untouched and not counted. */
static void try_grab_folio_pin_zero_page_changes_nothing(struct kunit *test)
{
	gup_kunit_check_fast_grab_of_zero_page(test);
}

/*
 * A folio whose refcount is zero is being freed: try_grab_folio() must
 * refuse it (folio_ref_try_add_rcu() fails) and change nothing.
 */
static void try_grab_folio_refuses_zero_refcount(struct kunit *test)
{
	const unsigned int *order = test->param_value;

	gup_kunit_check_fast_grab_refuses_freed(test, *order);
}

KUNIT_ARRAY_PARAM(gup_kunit_split, gup_kunit_split_cases,
		  gup_kunit_split_desc);

/*
 * A page that leaves its large folio (a split) between try_get_folio()'s
 * page_folio() and its reference: try_grab_folio() drops the references
 * on the old folio and grabs the page's new one (c24d37322548).
 */
static void try_grab_folio_retries_when_page_leaves_folio(struct kunit *test)
{
	gup_kunit_check_split_retry(test, test->param_value);
}

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_mt, gup_kunit_mt_cases,
			    struct gup_kunit_mt_case);

/*
 * try_grab_folio(FOLL_PIN | FOLL_LONGTERM) refuses a page in a CMA or
 * isolated pageblock, which must first be migrated, and grants a
 * short-term pin of it.
 */
static void try_grab_folio_longterm_refuses_unpinnable(struct kunit *test)
{
	gup_kunit_check_fast_refusal_mt(test, test->param_value);
}

/*
 * The same refusal for a page of ZONE_MOVABLE (movablecore= on the
 * command line): GUP-fast must leave it to the slow path, which migrates.
 */
static void try_grab_folio_longterm_refuses_movable_zone(struct kunit *test)
{
	gup_kunit_check_fast_refusal_movable(test);
}

/* is_longterm_pinnable_page() by pageblock migratetype in a normal zone. */
static void is_longterm_pinnable_page_by_migratetype(struct kunit *test)
{
	gup_kunit_check_pinnable_mt(test, test->param_value);
}

/* The zero page may always be "pinned" long-term: pins of it are no-ops. */
static void is_longterm_pinnable_page_zero_page(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, is_longterm_pinnable_page(ZERO_PAGE(0)));
}

/* Pages of ZONE_MOVABLE must be migrated before a long-term pin. */
static void is_longterm_pinnable_page_movable_zone(struct kunit *test)
{
	gup_kunit_check_pinnable_movable(test);
}

/*
 * Expected warning: WARN_ON_ONCE(folio_ref_count(folio) <= 0) in
 * try_grab_page(), once per flag. A folio whose refcount is zero is being
 * freed: neither a get nor a pin may resurrect it, and nothing changes.
 */
static void try_grab_page_refuses_zero_refcount(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct page *page = gup_kunit_folio_page(f, true);
	bool got_pin, got_get;
	struct gup_kunit_snap s;

	folio_ref_dec(f->folio);
	gup_kunit_snap(f->folio, &s);
	got_pin = try_grab_page(page, FOLL_PIN);
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	got_get = try_grab_page(page, FOLL_GET);
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
	f->pins += got_pin;
	f->gets += got_get;
	folio_ref_inc(f->folio);
	KUNIT_EXPECT_FALSE(test, got_pin);
	KUNIT_EXPECT_FALSE(test, got_get);
}

/*
 * Expected warning: WARN_ON_ONCE(1) at the end of try_grab_folio(). A grab
 * with neither FOLL_GET nor FOLL_PIN is a caller bug: it fails, changing
 * nothing (unlike try_grab_page(), for which it is a no-op success).
 */
static void try_grab_folio_without_flags_warns_and_fails(struct kunit *test)
{
	gup_kunit_check_fast_grab_without_flags(test);
}

static struct kunit_case gup_pin_grab_cases[] = {
	KUNIT_CASE_PARAM(try_grab_page_get_adds_one_reference,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(try_grab_page_pin_small_folio_adds_bias),
	KUNIT_CASE_PARAM(try_grab_page_pin_large_folio_counts_exactly,
			 gup_kunit_large_order_gen_params),
	KUNIT_CASE_PARAM(try_grab_page_without_flags_changes_nothing,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(try_grab_page_warns_when_get_and_pin_are_both_set),
	KUNIT_CASE(try_grab_page_pin_zero_page_changes_nothing),
	KUNIT_CASE_PARAM(try_grab_page_refuses_zero_refcount,
			 gup_kunit_order_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_get_adds_refs,
			 gup_kunit_grab_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_pin_adds_refs,
			 gup_kunit_grab_gen_params),
	KUNIT_CASE(try_grab_folio_pin_zero_page_changes_nothing),
	KUNIT_CASE_PARAM(try_grab_folio_refuses_zero_refcount,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(try_grab_folio_without_flags_warns_and_fails),
	KUNIT_CASE_PARAM(try_grab_folio_longterm_refuses_unpinnable,
			 gup_kunit_mt_gen_params),
	KUNIT_CASE(try_grab_folio_longterm_refuses_movable_zone),
	KUNIT_CASE_PARAM(try_grab_folio_retries_when_page_leaves_folio,
			 gup_kunit_split_gen_params),
	KUNIT_CASE_PARAM(is_longterm_pinnable_page_by_migratetype,
			 gup_kunit_mt_gen_params),
	KUNIT_CASE(is_longterm_pinnable_page_zero_page),
	KUNIT_CASE(is_longterm_pinnable_page_movable_zone),
	{}
};

static struct kunit_suite gup_pin_grab_suite = {
	.name = "gup_pin_grab",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_case_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_grab_cases,
};

kunit_test_suite(gup_pin_grab_suite);
