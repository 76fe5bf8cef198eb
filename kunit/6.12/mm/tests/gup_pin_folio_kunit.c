// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the folio pin and unpin calls (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_folio: folio_add_pin(), the extra pin that the legacy O_DIRECT
 * code (fs/direct-io.c) takes on a folio it already pinned, and the unpin
 * family that works on folios rather than pages: unpin_folio() and
 * unpin_folios() (the release of memfd_pin_folios()), unpin_user_folio()
 * (the block layer's and io_uring's). Each case checks the exact
 * refcount, pincount and NR_FOLL_PIN_ACQUIRED / NR_FOLL_PIN_RELEASED
 * deltas, on small folios, large folios and the zero folio.
 */

#include <trace/events/page_ref.h>
#include "gup_kunit.h"

KUNIT_ARRAY_PARAM(gup_kunit_order, gup_kunit_orders, gup_kunit_order_desc);

/* Pin @refs times the case's folio @f, as the slow path would. */
static void gup_kunit_pin_folio(struct kunit *test, struct gup_kunit_folio *f,
				int refs)
{
	KUNIT_ASSERT_EQ(test, try_grab_folio(f->folio, refs, FOLL_PIN), 0);
	f->pins += refs;
}

/* ------------------------------------------------------------------ */
/* folio_add_pin()                                                     */
/* ------------------------------------------------------------------ */

/*
 * folio_add_pin() on a pinned folio adds exactly one pin, counted as one
 * pin acquired: unpinning both pins leaves the folio and the counters
 * where they were before the first pin, as fs/direct-io.c, which releases
 * each extra pin with unpin_user_page(), expects.
 */
static void folio_add_pin_adds_one_counted_pin(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_snap s0, s;

	gup_kunit_snap(f->folio, &s0);
	gup_kunit_pin_folio(test, f, 1);
	gup_kunit_snap(f->folio, &s);

	folio_add_pin(f->folio);
	f->pins++;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s,
			       gup_kunit_pin_refs(f->folio, 1), 1, 1, 0);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));

	unpin_folio(f->folio);
	unpin_folio(f->folio);
	f->pins -= 2;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s0, 0, 0, 2, 2);
	KUNIT_EXPECT_FALSE(test, folio_maybe_dma_pinned(f->folio));
}

/*
 * The zero folio is never pinned: folio_add_pin() leaves it alone, and so
 * does the unpin that releases the extra "pin".
 */
static void folio_add_pin_of_zero_folio_changes_nothing(struct kunit *test)
{
	struct folio *zero = page_folio(ZERO_PAGE(0));
	struct gup_kunit_snap s;

	gup_kunit_snap(zero, &s);
	folio_add_pin(zero);
	GUP_KUNIT_EXPECT_DELTA(test, zero, &s, 0, 0, 0, 0);
	unpin_folio(zero);
	GUP_KUNIT_EXPECT_DELTA(test, zero, &s, 0, 0, 0, 0);
}

/*
 * folio_add_pin() is for a folio that is pinned already: on a small folio
 * it WARNs when the refcount is below the one pin's
 * GUP_PIN_COUNTING_BIAS. The edge, in a table: exactly one pin's
 * references (a pinned folio whose other references are gone) is
 * silent, one fewer WARNs. The pin is added in both rows and released.
 */
struct gup_kunit_add_pin_case {
	const char *name;
	int refs;
	int warnings;
};

static const struct gup_kunit_add_pin_case gup_kunit_add_pin_cases[] = {
	{ "a pin's references", GUP_PIN_COUNTING_BIAS, 0 },
	{ "one reference short of a pin", GUP_PIN_COUNTING_BIAS - 1, 1 },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_add_pin, gup_kunit_add_pin_cases,
			    struct gup_kunit_add_pin_case);

static void folio_add_pin_warns_below_one_pins_references(struct kunit *test)
{
	const struct gup_kunit_add_pin_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct gup_kunit_snap s;

	folio_ref_add(f->folio, c->refs - 1);
	f->gets += c->refs - 1;
	gup_kunit_snap(f->folio, &s);

	folio_add_pin(f->folio);
	f->pins++;
	GUP_KUNIT_EXPECT_WARNINGS(test, c->warnings);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, GUP_PIN_COUNTING_BIAS, 0,
			       1, 0);

	unpin_folio(f->folio);
	f->pins--;
	folio_ref_sub(f->folio, c->refs - 1);
	f->gets -= c->refs - 1;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 1 - c->refs, 0, 1, 1);
}

/*
 * On a large folio, folio_add_pin() WARNs when the folio has no pin yet
 * (_pincount below 1): one pin already is silent, none WARNs. The pin is
 * added, counted exactly, in both rows and released.
 */
struct gup_kunit_add_pin_large_case {
	const char *name;
	int pins;
	int warnings;
};

static const struct gup_kunit_add_pin_large_case gup_kunit_add_pin_large_cases[] = {
	{ "large folio pinned once", 1, 0 },
	{ "large folio without a pin", 0, 1 },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_add_pin_large,
			    gup_kunit_add_pin_large_cases,
			    struct gup_kunit_add_pin_large_case);

static void folio_add_pin_warns_on_large_folio_without_pin(struct kunit *test)
{
	const struct gup_kunit_add_pin_large_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 2);
	struct gup_kunit_snap s;

	if (c->pins)
		gup_kunit_pin_folio(test, f, c->pins);
	gup_kunit_snap(f->folio, &s);

	folio_add_pin(f->folio);
	f->pins++;
	GUP_KUNIT_EXPECT_WARNINGS(test, c->warnings);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 1, 1, 1, 0);
}

/* ------------------------------------------------------------------ */
/* unpin_folio() and unpin_user_folio()                                */
/* ------------------------------------------------------------------ */

/* unpin_folio() releases exactly one of the folio's pins. */
static void unpin_folio_releases_one_pin(struct kunit *test)
{
	const unsigned int *order = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, *order);
	struct gup_kunit_snap s;

	gup_kunit_pin_folio(test, f, 3);
	gup_kunit_snap(f->folio, &s);
	unpin_folio(f->folio);
	f->pins--;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s,
			       -gup_kunit_pin_refs(f->folio, 1), -1, 0, 1);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
}

/* A folio's order and the pins unpin_user_folio() releases in one call. */
struct gup_kunit_npages_case {
	unsigned int order;
	int pinned;
	int npages;
};

static const struct gup_kunit_npages_case gup_kunit_npages_cases[] = {
	{ 0, 1, 1 }, { 0, 3, 2 }, { 1, 2, 2 }, { 2, 6, 4 },
	{ PMD_SHIFT - PAGE_SHIFT, 512, 512 },
	{ PMD_SHIFT - PAGE_SHIFT, 513, 512 },
	{ GUP_KUNIT_MAX_ORDER, 7, 5 },
};

static void gup_kunit_npages_desc(const struct gup_kunit_npages_case *c,
				  char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "order %u, %d of %d pins",
		 c->order, c->npages, c->pinned);
}

KUNIT_ARRAY_PARAM(gup_kunit_npages, gup_kunit_npages_cases,
		  gup_kunit_npages_desc);

/*
 * unpin_user_folio(folio, npages) releases @npages pins of the folio at
 * once (bio_release_pages() and io_uring release one per page of the
 * folio they pinned), and no more.
 */
static void unpin_user_folio_releases_npages_pins(struct kunit *test)
{
	const struct gup_kunit_npages_case *c = test->param_value;
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	struct gup_kunit_snap s;

	gup_kunit_pin_folio(test, f, c->pinned);
	gup_kunit_snap(f->folio, &s);
	unpin_user_folio(f->folio, c->npages);
	f->pins -= c->npages;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s,
			       -gup_kunit_pin_refs(f->folio, c->npages),
			       -c->npages, 0, c->npages);
	KUNIT_EXPECT_EQ(test, folio_maybe_dma_pinned(f->folio),
			c->pinned > c->npages);
}

/* ------------------------------------------------------------------ */
/* unpin_folios()                                                      */
/* ------------------------------------------------------------------ */

/*
 * unpin_folios() of an array that names a small folio A and a large
 * folio B several times. @runs of the same folio are released with one
 * put each; NULL entries are skipped.
 */
static void gup_kunit_check_unpin_folios(struct kunit *test,
					 struct gup_kunit_folio *a,
					 struct gup_kunit_folio *b,
					 struct folio **folios, int nr)
{
	struct gup_kunit_snap sa, sb;
	int i, pins_a = 0, pins_b = 0;

	gup_kunit_snap(a->folio, &sa);
	gup_kunit_snap(b->folio, &sb);
	for (i = 0; i < nr; i++) {
		if (folios[i] == a->folio)
			pins_a++;
		else if (folios[i] == b->folio)
			pins_b++;
	}
	gup_kunit_pin_folio(test, a, pins_a);
	gup_kunit_pin_folio(test, b, pins_b);

	unpin_folios(folios, nr);
	a->pins -= pins_a;
	b->pins -= pins_b;
	GUP_KUNIT_EXPECT_FOLIO(test, a->folio, &sa, 0, 0);
	GUP_KUNIT_EXPECT_FOLIO(test, b->folio, &sb, 0, 0);
	GUP_KUNIT_EXPECT_COUNTERS(test, &sa, pins_a + pins_b, pins_a + pins_b);
}

#ifdef CONFIG_DEBUG_PAGE_REF
/**
 * struct gup_kunit_puts - the refcount drops of two folios, in order.
 * @heads: the folios' head pages.
 * @who: which of @heads each drop was on.
 * @delta: by how much each dropped the refcount.
 * @nr: how many drops were recorded.
 */
struct gup_kunit_puts {
	struct page *heads[2];
	int who[8];
	int delta[8];
	atomic_t nr;
};

/* folio_put_refs() ends in page_ref_sub_and_test(): its tracepoint. */
static void gup_kunit_put_probe(void *data, struct page *page, int v, int ret)
{
	struct gup_kunit_puts *p = data;
	int i, n;

	for (i = 0; i < 2; i++) {
		if (page != p->heads[i])
			continue;
		n = atomic_inc_return(&p->nr) - 1;
		if (n < ARRAY_SIZE(p->who)) {
			p->who[n] = i;
			p->delta[n] = v;
		}
	}
}

/*
 * Consecutive duplicates are one put: unpin_folios() of A A B A B B B
 * drops A by 2 pins, B by 1, A by 1 and B by 3, four refcount drops in
 * that order, and releases all 7 pins.
 */
static void unpin_folios_puts_consecutive_duplicates_once(struct kunit *test)
{
	struct gup_kunit_folio *a = gup_kunit_alloc(test, 0);
	struct gup_kunit_folio *b = gup_kunit_alloc(test,
						    PMD_SHIFT - PAGE_SHIFT);
	struct folio *folios[] = {
		a->folio, a->folio, b->folio, a->folio,
		b->folio, b->folio, b->folio,
	};
	static const int who[] = { 0, 1, 0, 1 };
	const int pins[] = { 2, 1, 1, 3 };
	struct gup_kunit_puts puts = {
		.heads = { &a->folio->page, &b->folio->page },
		.nr = ATOMIC_INIT(0),
	};
	struct folio *f;
	int i;

	KUNIT_ASSERT_EQ(test,
			register_trace_page_ref_mod_and_test(gup_kunit_put_probe,
							     &puts), 0);
	gup_kunit_check_unpin_folios(test, a, b, folios, ARRAY_SIZE(folios));
	unregister_trace_page_ref_mod_and_test(gup_kunit_put_probe, &puts);
	tracepoint_synchronize_unregister();

	KUNIT_ASSERT_EQ(test, atomic_read(&puts.nr), (int)ARRAY_SIZE(who));
	for (i = 0; i < ARRAY_SIZE(who); i++) {
		f = who[i] ? b->folio : a->folio;
		KUNIT_EXPECT_EQ_MSG(test, puts.who[i], who[i], "put %d", i);
		KUNIT_EXPECT_EQ_MSG(test, puts.delta[i],
				    (int)-gup_kunit_pin_refs(f, pins[i]),
				    "put %d", i);
	}
}
#endif /* CONFIG_DEBUG_PAGE_REF */

/* NULL entries, alone or in runs, are skipped; the others released. */
static void unpin_folios_skips_null_entries(struct kunit *test)
{
	struct gup_kunit_folio *a = gup_kunit_alloc(test, 0);
	struct gup_kunit_folio *b = gup_kunit_alloc(test, 2);
	struct folio *folios[] = {
		NULL, a->folio, NULL, NULL, b->folio, NULL, a->folio, NULL,
	};

	gup_kunit_check_unpin_folios(test, a, b, folios, ARRAY_SIZE(folios));
}

/*
 * The count bounds the last run of duplicates: unpin_folios() of the
 * first of two entries that name the same folio releases one pin, though
 * the entry after the count names that folio too.
 */
static void unpin_folios_stops_at_its_count(struct kunit *test)
{
	struct gup_kunit_folio *a = gup_kunit_alloc(test, 0);
	struct folio *folios[] = { a->folio, a->folio };
	struct gup_kunit_snap s;

	gup_kunit_pin_folio(test, a, 2);
	gup_kunit_snap(a->folio, &s);
	unpin_folios(folios, 1);
	a->pins--;
	GUP_KUNIT_EXPECT_DELTA(test, a->folio, &s,
			       -gup_kunit_pin_refs(a->folio, 1), 0, 0, 1);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(a->folio));
}

/* An empty array releases nothing. */
static void unpin_folios_of_no_folios_changes_nothing(struct kunit *test)
{
	struct gup_kunit_folio *a = gup_kunit_alloc(test, 0);
	struct gup_kunit_snap s;

	gup_kunit_pin_folio(test, a, 1);
	gup_kunit_snap(a->folio, &s);
	unpin_folios(&a->folio, 0);
	GUP_KUNIT_EXPECT_DELTA(test, a->folio, &s, 0, 0, 0, 0);
}

/*
 * A caller that passes a pin call's -errno as the count gets a WARN and
 * nothing released, rather than unpinning 2^64 - errno entries.
 */
static void unpin_folios_refuses_error_count(struct kunit *test)
{
	struct gup_kunit_folio *a = gup_kunit_alloc(test, 0);
	struct gup_kunit_snap s;

	gup_kunit_pin_folio(test, a, 1);
	gup_kunit_snap(a->folio, &s);
	unpin_folios(&a->folio, (unsigned long)-EFAULT);
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	GUP_KUNIT_EXPECT_DELTA(test, a->folio, &s, 0, 0, 0, 0);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(a->folio));
}

static struct kunit_case gup_pin_folio_cases[] = {
	KUNIT_CASE_PARAM(folio_add_pin_adds_one_counted_pin,
			 gup_kunit_order_gen_params),
	KUNIT_CASE(folio_add_pin_of_zero_folio_changes_nothing),
	KUNIT_CASE_PARAM(folio_add_pin_warns_below_one_pins_references,
			 gup_kunit_add_pin_gen_params),
	KUNIT_CASE_PARAM(folio_add_pin_warns_on_large_folio_without_pin,
			 gup_kunit_add_pin_large_gen_params),
	KUNIT_CASE_PARAM(unpin_folio_releases_one_pin,
			 gup_kunit_order_gen_params),
	KUNIT_CASE_PARAM(unpin_user_folio_releases_npages_pins,
			 gup_kunit_npages_gen_params),
#ifdef CONFIG_DEBUG_PAGE_REF
	KUNIT_CASE(unpin_folios_puts_consecutive_duplicates_once),
#endif
	KUNIT_CASE(unpin_folios_skips_null_entries),
	KUNIT_CASE(unpin_folios_stops_at_its_count),
	KUNIT_CASE(unpin_folios_of_no_folios_changes_nothing),
	KUNIT_CASE(unpin_folios_refuses_error_count),
	{}
};

static struct kunit_suite gup_pin_folio_suite = {
	.name = "gup_pin_folio",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_case_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_folio_cases,
};

kunit_test_suite(gup_pin_folio_suite);
