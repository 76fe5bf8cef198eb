// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the refusals that WARN (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_warn: the refcount overflow that a pin can cause, and the grabs
 * and unpins that the pin core must refuse with a WARN. Each case declares
 * the warnings it provokes (here and in the harness's list) and checks
 * that exactly that many appeared on the console.
 */

#include "gup_kunit.h"

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
 * Overflow: the pin that crosses the sign bit. The slow path's grab checks
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
	KUNIT_ASSERT_TRUE(test, gup_kunit_try_grab_page(&f->folio->page,
							FOLL_PIN));
	f->pins++;
	KUNIT_EXPECT_EQ(test, folio_ref_count(f->folio), INT_MIN);
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(f->folio));
	GUP_KUNIT_EXPECT_WARNINGS(test, 0);
	unpin_user_page(&f->folio->page);
	f->pins--;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 1, 1);
}

/*
 * Every grab of @f's page, by the slow path and by GUP-fast, with FOLL_PIN
 * and with FOLL_GET, must be refused with one warning each and change
 * neither the refcount nor the counters. A grab that is granted anyway is
 * tracked, so that cleanup drops it.
 */
static void gup_kunit_check_grabs_refused(struct kunit *test,
					  struct gup_kunit_folio *f)
{
	struct page *page = &f->folio->page;
	unsigned int flags[] = { FOLL_PIN, FOLL_GET };
	struct gup_kunit_snap s;
	int i;

	gup_kunit_snap(f->folio, &s);
	gup_kunit_warn_reset();
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		bool page_ok;
		struct folio *folio;

		page_ok = gup_kunit_try_grab_page(page, flags[i]);
		KUNIT_EXPECT_FALSE(test, page_ok);
		GUP_KUNIT_EXPECT_WARNINGS(test, 1);
		if (page_ok)
			flags[i] == FOLL_PIN ? f->pins++ : f->gets++;

		folio = gup_kunit_try_grab_fast(page, 1, flags[i]);
		KUNIT_EXPECT_NULL(test, folio);
		GUP_KUNIT_EXPECT_WARNINGS(test, 1);
		if (folio)
			flags[i] == FOLL_PIN ? f->pins++ : f->gets++;
	}
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

/*
 * Expected warnings: one from the slow path's grab (refcount <= 0) for
 * each of FOLL_PIN and FOLL_GET, one from GUP-fast's (refcount < 0) for
 * each of FOLL_PIN and FOLL_GET. After the wrap, every grab is refused,
 * so there is never a second wrap, and a refused grab changes neither the
 * refcount nor the counters.
 */
static void grab_after_wrap_is_refused(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);

	gup_kunit_forge_ref(f, INT_MAX - (int)GUP_PIN_COUNTING_BIAS + 1);
	KUNIT_ASSERT_TRUE(test, gup_kunit_try_grab_page(&f->folio->page,
							FOLL_PIN));
	f->pins++;
	KUNIT_ASSERT_LT(test, folio_ref_count(f->folio), 0);
	gup_kunit_check_grabs_refused(test, f);
}

/*
 * Expected warnings: as above. A refcount of -1 is one put too many: the
 * smallest negative refcount is refused as surely as a wrapped one, by
 * GUP-fast's "refcount < 0" as well as by the slow path's "<= 0".
 */
static void grab_of_refcount_minus_one_is_refused(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);

	folio_ref_sub(f->folio, 2);
	KUNIT_EXPECT_EQ(test, folio_ref_count(f->folio), -1);
	gup_kunit_check_grabs_refused(test, f);
	folio_ref_add(f->folio, 2);
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

	gup_kunit_pin_pages(test, f, pages, 1);
	gup_kunit_snap(f->folio, &s);
	unpin_user_pages(pages, (unsigned long)-EFAULT);
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

static struct kunit_case gup_pin_warn_cases[] = {
	KUNIT_CASE(pin_crossing_sign_bit_wraps_once),
	KUNIT_CASE(grab_after_wrap_is_refused),
	KUNIT_CASE(grab_of_refcount_minus_one_is_refused),
	KUNIT_CASE(unpin_user_pages_refuses_error_count),
	{}
};

static struct kunit_suite gup_pin_warn_suite = {
	.name = "gup_pin_warn",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_case_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_warn_cases,
};

kunit_test_suite(gup_pin_warn_suite);
