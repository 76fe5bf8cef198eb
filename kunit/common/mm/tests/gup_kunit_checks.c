// SPDX-License-Identifier: GPL-2.0
/*
 * The GUP pin KUnit suites' test library: the checks that both trees'
 * gup_pin_grab suites share, each one case body, run through this
 * kernel's grab primitives as gup_kunit_mm.h spells them.
 */

#include <linux/mm.h>
#include <linux/page-isolation.h>
#include <trace/events/page_ref.h>
#include "gup_kunit.h"

/* ------------------------------------------------------------------ */
/* Checks that both trees' gup_pin_grab cases share                    */
/* ------------------------------------------------------------------ */

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

/**
 * gup_kunit_check_split_retry() - a grab racing a split.
 * @test: the case.
 * @c: the grab's flags and refs.
 *
 * A page that leaves its large folio between try_get_folio()'s
 * page_folio() and its reference: GUP-fast's grab must drop the
 * references it took on the old folio and grab the page's new folio
 * instead. The old folio is THP-size; the page, its last tail page, moves
 * to a small folio, as after a split.
 */
void gup_kunit_check_split_retry(struct kunit *test,
				 const struct gup_kunit_split_case *c)
{
	bool pin = c->flags & FOLL_PIN;
	struct gup_kunit_folio *old = gup_kunit_alloc(test,
						      PMD_SHIFT - PAGE_SHIFT);
	struct gup_kunit_folio *new = gup_kunit_alloc(test, 0);
	struct page *page = gup_kunit_folio_page(old, true);
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
	got = gup_kunit_try_grab_fast(page, c->refs, c->flags);
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
void gup_kunit_check_split_retry(struct kunit *test,
				 const struct gup_kunit_split_case *c)
{
	kunit_skip(test, "needs CONFIG_DEBUG_PAGE_REF to fake the split");
}
#endif /* CONFIG_DEBUG_PAGE_REF */

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
		kunit_skip(test, "needs a pageblock outside ZONE_MOVABLE");
	return f;
}

/**
 * gup_kunit_check_fast_grab() - GUP-fast's grab adds exactly what it should.
 * @test: the case.
 * @c: the folio's order, @refs, and the page grabbed through.
 * @flags: FOLL_GET or FOLL_PIN.
 *
 * FOLL_GET adds @refs references, whatever the order. FOLL_PIN adds
 * @refs * GUP_PIN_COUNTING_BIAS references to a small folio, @refs
 * references and @refs pincount to a large one, and counts @refs pins.
 */
void gup_kunit_check_fast_grab(struct kunit *test,
			       const struct gup_kunit_grab_case *c,
			       unsigned int flags)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, c->order);
	bool pin = flags & FOLL_PIN;
	struct gup_kunit_snap s;
	struct folio *got;

	gup_kunit_snap(f->folio, &s);
	got = gup_kunit_try_grab_fast(gup_kunit_folio_page(f, c->last),
				      c->refs, flags);
	KUNIT_ASSERT_PTR_EQ(test, got, f->folio);
	if (pin)
		f->pins += c->refs;
	else
		f->gets += c->refs;
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s,
			       pin ? gup_kunit_pin_refs(f->folio, c->refs) :
			       c->refs, pin ? c->refs : 0, pin ? c->refs : 0, 0);
	KUNIT_EXPECT_EQ(test, folio_maybe_dma_pinned(f->folio), pin);
}

/* GUP-fast's pin of the zero page returns its folio, untouched, uncounted. */
void gup_kunit_check_fast_grab_of_zero_page(struct kunit *test)
{
	struct folio *zero = page_folio(ZERO_PAGE(0));
	struct gup_kunit_snap s;

	gup_kunit_snap(zero, &s);
	KUNIT_EXPECT_PTR_EQ(test,
			    gup_kunit_try_grab_fast(ZERO_PAGE(0), 3, FOLL_PIN),
			    zero);
	GUP_KUNIT_EXPECT_DELTA(test, zero, &s, 0, 0, 0, 0);
}

/*
 * A folio whose refcount is zero is being freed: GUP-fast's grab must
 * refuse it (add-unless-zero fails), without a warning, changing nothing.
 */
void gup_kunit_check_fast_grab_refuses_freed(struct kunit *test,
					     unsigned int order)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, order);
	struct page *page = gup_kunit_folio_page(f, true);
	struct folio *got_pin, *got_get;
	struct gup_kunit_snap s;

	folio_ref_dec(f->folio);		/* forge a free folio */
	gup_kunit_snap(f->folio, &s);
	got_pin = gup_kunit_try_grab_fast(page, 1, FOLL_PIN);
	got_get = gup_kunit_try_grab_fast(page, 1, FOLL_GET);
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

/*
 * Expected warning: one. A GUP-fast grab with neither FOLL_GET nor
 * FOLL_PIN is a caller bug: it warns and fails, changing nothing.
 */
void gup_kunit_check_fast_grab_without_flags(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct gup_kunit_snap s;

	gup_kunit_snap(f->folio, &s);
	KUNIT_EXPECT_NULL(test, gup_kunit_try_grab_fast(&f->folio->page, 1, 0));
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, 0, 0, 0, 0);
}

/* Whether a page may stay where it is for a long-term pin, by migratetype. */
void gup_kunit_check_pinnable_mt(struct kunit *test,
				 const struct gup_kunit_mt_case *c)
{
	struct gup_kunit_folio *f = gup_kunit_alloc_pageblock(test);
	struct page *page = gup_kunit_folio_page(f, true);
	bool pinnable;
	int old;

	old = gup_kunit_set_mt(page, c->migratetype);
	pinnable = gup_kunit_longterm_pinnable(page);
	gup_kunit_set_mt(page, old);
	KUNIT_EXPECT_EQ(test, pinnable, c->pinnable);
}

/* Pages of ZONE_MOVABLE must be migrated before a long-term pin. */
void gup_kunit_check_pinnable_movable(struct kunit *test)
{
	struct page *page = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_NOWARN);
	bool zone_movable, pinnable;

	KUNIT_ASSERT_NOT_NULL(test, page);
	zone_movable = page_zonenum(page) == ZONE_MOVABLE;
	pinnable = gup_kunit_longterm_pinnable(page);
	__free_page(page);
	if (!zone_movable)
		kunit_skip(test, GUP_KUNIT_NEEDS_MOVABLE);
	KUNIT_EXPECT_FALSE(test, pinnable);
}

/*
 * GUP-fast may not pin long-term a page that must first be migrated: its
 * grab with FOLL_PIN | FOLL_LONGTERM refuses it, changing nothing, while
 * a short-term pin of the same page is granted.
 */
void gup_kunit_check_fast_refusal_mt(struct kunit *test,
				     const struct gup_kunit_mt_case *c)
{
	struct gup_kunit_folio *f = gup_kunit_alloc_pageblock(test);
	struct page *page = gup_kunit_folio_page(f, true);
	struct folio *longterm, *shortterm;
	struct gup_kunit_snap s;
	int old;

	old = gup_kunit_set_mt(page, c->migratetype);
	gup_kunit_snap(f->folio, &s);
	longterm = gup_kunit_try_grab_fast(page, 1, FOLL_PIN | FOLL_LONGTERM);
	if (longterm)
		f->pins++;
	gup_kunit_set_mt(page, old);
	GUP_KUNIT_EXPECT_DELTA(test, f->folio, &s, c->pinnable ? 1 : 0,
			       c->pinnable ? 1 : 0, c->pinnable ? 1 : 0, 0);
	KUNIT_EXPECT_EQ(test, !!longterm, c->pinnable);

	shortterm = gup_kunit_try_grab_fast(page, 1, FOLL_PIN);
	if (shortterm)
		f->pins++;
	KUNIT_EXPECT_PTR_EQ(test, shortterm, f->folio);
}

/*
 * The same refusal for a page of ZONE_MOVABLE (movablecore= on the
 * command line): GUP-fast must leave it to the slow path, which migrates.
 */
void gup_kunit_check_fast_refusal_movable(struct kunit *test)
{
	struct page *page = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_NOWARN);
	struct folio *longterm, *shortterm;
	struct gup_kunit_snap s;

	KUNIT_ASSERT_NOT_NULL(test, page);
	if (page_zonenum(page) != ZONE_MOVABLE) {
		__free_page(page);
		kunit_skip(test, GUP_KUNIT_NEEDS_MOVABLE);
	}
	gup_kunit_snap(page_folio(page), &s);
	longterm = gup_kunit_try_grab_fast(page, 1, FOLL_PIN | FOLL_LONGTERM);
	if (longterm)
		gup_put_folio(longterm, 1, FOLL_PIN);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0,
			       longterm ? 1 : 0, longterm ? 1 : 0);
	shortterm = gup_kunit_try_grab_fast(page, 1, FOLL_PIN);
	if (shortterm)
		gup_put_folio(shortterm, 1, FOLL_PIN);
	__free_page(page);
	KUNIT_EXPECT_NULL(test, longterm);
	KUNIT_EXPECT_NOT_NULL(test, shortterm);
}
