// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of this kernel's grab primitives (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_grab: try_grab_folio(), the slow path's grab of @refs references
 * or pins on a folio it holds a stable reference to, and
 * try_grab_folio_fast(), GUP-fast's grab through a page whose folio may be
 * freed or split under it, on folios that the test allocates itself
 * (order 0 up to MAX_PAGE_ORDER, the zero page): the exact refcount,
 * pincount and NR_FOLL_PIN_ACQUIRED / NR_FOLL_PIN_RELEASED deltas of every
 * grab, the refusals (a freed folio, no FOLL_GET or FOLL_PIN, FOLL_LONGTERM
 * of a page that must first migrate), folio_is_longterm_pinnable(), and
 * the retry of a grab that races with a split of its folio.
 */

#include "gup_kunit.h"

KUNIT_ARRAY_PARAM(gup_kunit_order, gup_kunit_orders, gup_kunit_order_desc);
KUNIT_ARRAY_PARAM(gup_kunit_grab, gup_kunit_grab_cases, gup_kunit_grab_desc);
KUNIT_ARRAY_PARAM(gup_kunit_split, gup_kunit_split_cases,
		  gup_kunit_split_desc);
GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_mt, gup_kunit_mt_cases,
			    struct gup_kunit_mt_case);

/* ------------------------------------------------------------------ */
/* try_grab_folio(): the slow path                                     */
/* ------------------------------------------------------------------ */

/*
 * The slow path's grab of the folio of the page that the table names
 * (whichever page of the folio it found), with @refs and @flags.
 */
static void gup_kunit_check_slow_grab(struct kunit *test, unsigned int flags)
{
	const struct gup_kunit_grab_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	struct folio *folio = page_folio(gup_kunit_folio_page(f, c->last));
	bool pin = flags & FOLL_PIN;
	struct gup_kunit_snap s;

	gup_kunit_snap(folio, &s);
	KUNIT_ASSERT_EQ(test, try_grab_folio(folio, c->refs, flags), 0);
	if (pin)
		f->pins += c->refs;
	else
		f->gets += c->refs;
	GUP_KUNIT_EXPECT_DELTA(test, folio, &s,
			       pin ? gup_kunit_pin_refs(folio, c->refs) : c->refs,
			       pin ? c->refs : 0, pin ? c->refs : 0, 0);
	KUNIT_EXPECT_EQ(test, folio_maybe_dma_pinned(folio), pin);
}

/* FOLL_GET with refs = N adds N plain references, whatever the order. */
static void try_grab_folio_get_adds_refs(struct kunit *test)
{
	gup_kunit_check_slow_grab(test, FOLL_GET);
}

/*
 * FOLL_PIN with refs = N: N * GUP_PIN_COUNTING_BIAS references on a small
 * folio; N references and N pincount on a large one; N pins counted.
 * Changed in 6.10 by f442fa614137 ("mm: gup: stop abusing
 * try_grab_folio"): the slow path's grab took one pin at a time
 * (try_grab_page()); now it takes @refs, so a huge page's subpages are
 * pinned with one call.
 */
static void try_grab_folio_pin_adds_refs(struct kunit *test)
{
	gup_kunit_check_slow_grab(test, FOLL_PIN);
}

/* Neither FOLL_GET nor FOLL_PIN: success, and nothing changes. */
static void try_grab_folio_without_flags_changes_nothing(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_EXPECT_EQ(test, try_grab_folio(f->folio, 1, 0), 0);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

/* Pinning the zero folio succeeds without touching it or the counters. */
static void try_grab_folio_pin_zero_folio_changes_nothing(struct kunit *test)
{
	struct folio *zero = page_folio(ZERO_PAGE(0));
	struct gup_kunit_snap s;

	gup_kunit_snap(zero, &s);
	KUNIT_EXPECT_EQ(test, try_grab_folio(zero, 3, FOLL_PIN), 0);
	GUP_KUNIT_EXPECT_DELTA(test, zero, &s, 0, 0, 0, 0);
	/* Nothing to undo: unpinning the zero folio is a no-op too. */
}

/*
 * Expected warning: WARN_ON_ONCE(folio_ref_count(folio) <= 0) in
 * try_grab_folio(), once per flag. A folio whose refcount is zero is being
 * freed: neither a get nor a pin may resurrect it (-ENOMEM), and nothing
 * changes.
 */
static void try_grab_folio_refuses_zero_refcount(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_snap s;
	int pin, get;

	folio_ref_dec(f->folio);
	gup_kunit_snap(f->folio, &s);
	pin = try_grab_folio(f->folio, 1, FOLL_PIN);
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	get = try_grab_folio(f->folio, 1, FOLL_GET);
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
	f->pins += !pin;
	f->gets += !get;
	folio_ref_inc(f->folio);
	KUNIT_EXPECT_EQ(test, pin, -ENOMEM);
	KUNIT_EXPECT_EQ(test, get, -ENOMEM);
}

/* ------------------------------------------------------------------ */
/* try_grab_folio_fast(): GUP-fast                                     */
/* ------------------------------------------------------------------ */

/* FOLL_GET with refs = N adds N plain references, whatever the order. */
static void try_grab_folio_fast_get_adds_refs(struct kunit *test)
{
	gup_kunit_check_fast_grab(test, test->param_value, FOLL_GET);
}

/*
 * FOLL_PIN with refs = N: N * GUP_PIN_COUNTING_BIAS references on a small
 * folio; N references and N pincount on a large one; N pins counted.
 */
static void try_grab_folio_fast_pin_adds_refs(struct kunit *test)
{
	gup_kunit_check_fast_grab(test, test->param_value, FOLL_PIN);
}

/* Pinning the zero page returns its folio, untouched and not counted. */
static void try_grab_folio_fast_pin_zero_page_changes_nothing(struct kunit *test)
{
	gup_kunit_check_fast_grab_of_zero_page(test);
}

/*
 * A folio whose refcount is zero is being freed: try_grab_folio_fast()
 * must refuse it (folio_ref_try_add() fails), without a warning, and
 * change nothing.
 */
static void try_grab_folio_fast_refuses_zero_refcount(struct kunit *test)
{
	const unsigned int *order = test->param_value;

	gup_kunit_check_fast_grab_refuses_freed(test, *order);
}

/*
 * Expected warning: WARN_ON_ONCE() of a grab with neither FOLL_GET nor
 * FOLL_PIN, at the top of try_grab_folio_fast(). It is a caller bug: the
 * grab fails, changing nothing (unlike try_grab_folio(), for which it is
 * a no-op success).
 */
static void try_grab_folio_fast_without_flags_warns_and_fails(struct kunit *test)
{
	gup_kunit_check_fast_grab_without_flags(test);
}

/*
 * try_grab_folio_fast(FOLL_PIN | FOLL_LONGTERM) refuses a page in a CMA
 * or isolated pageblock, which must first be migrated, and grants a
 * short-term pin of it.
 */
static void try_grab_folio_fast_longterm_refuses_unpinnable(struct kunit *test)
{
	gup_kunit_check_fast_refusal_mt(test, test->param_value);
}

/*
 * The same refusal for a page of ZONE_MOVABLE (movablecore= on the
 * command line): GUP-fast must leave it to the slow path, which migrates.
 */
static void try_grab_folio_fast_longterm_refuses_movable_zone(struct kunit *test)
{
	gup_kunit_check_fast_refusal_movable(test);
}

/*
 * A page that leaves its large folio (a split) between try_get_folio()'s
 * page_folio() and its reference: try_grab_folio_fast() drops the
 * references on the old folio and grabs the page's new one
 * (c24d37322548).
 */
static void try_grab_folio_fast_retries_when_page_leaves_folio(struct kunit *test)
{
	gup_kunit_check_split_retry(test, test->param_value);
}

/* ------------------------------------------------------------------ */
/* folio_is_longterm_pinnable()                                        */
/* ------------------------------------------------------------------ */

/* By pageblock migratetype, in a zone other than ZONE_MOVABLE. */
static void folio_is_longterm_pinnable_by_migratetype(struct kunit *test)
{
	gup_kunit_check_pinnable_mt(test, test->param_value);
}

/* The zero folio may always be "pinned" long-term: pins of it are no-ops. */
static void folio_is_longterm_pinnable_zero_folio(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test,
			  folio_is_longterm_pinnable(page_folio(ZERO_PAGE(0))));
}

/* Folios of ZONE_MOVABLE must be migrated before a long-term pin. */
static void folio_is_longterm_pinnable_movable_zone(struct kunit *test)
{
	gup_kunit_check_pinnable_movable(test);
}

static struct kunit_case gup_pin_grab_cases[] = {
	KUNIT_CASE_PARAM(try_grab_folio_get_adds_refs,
			 gup_kunit_grab_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_pin_adds_refs,
			 gup_kunit_grab_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_without_flags_changes_nothing,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(try_grab_folio_pin_zero_folio_changes_nothing),
	KUNIT_CASE_PARAM(try_grab_folio_refuses_zero_refcount,
			 gup_kunit_order_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_fast_get_adds_refs,
			 gup_kunit_grab_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_fast_pin_adds_refs,
			 gup_kunit_grab_gen_params),
	KUNIT_CASE(try_grab_folio_fast_pin_zero_page_changes_nothing),
	KUNIT_CASE_PARAM(try_grab_folio_fast_refuses_zero_refcount,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(try_grab_folio_fast_without_flags_warns_and_fails),
	KUNIT_CASE_PARAM(try_grab_folio_fast_longterm_refuses_unpinnable,
			 gup_kunit_mt_gen_params),
	KUNIT_CASE(try_grab_folio_fast_longterm_refuses_movable_zone),
	KUNIT_CASE_PARAM(try_grab_folio_fast_retries_when_page_leaves_folio,
			 gup_kunit_split_gen_params),
	KUNIT_CASE_PARAM(folio_is_longterm_pinnable_by_migratetype,
			 gup_kunit_mt_gen_params),
	KUNIT_CASE(folio_is_longterm_pinnable_zero_folio),
	KUNIT_CASE(folio_is_longterm_pinnable_movable_zone),
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
