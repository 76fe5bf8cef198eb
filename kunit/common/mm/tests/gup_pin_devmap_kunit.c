// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of pins of ZONE_DEVICE pages (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_devmap: FS_DAX, DEVICE_PRIVATE and DEVICE_COHERENT pages, in
 * pgmaps that each case creates: the FS_DAX idle wakeup, ->page_free() at
 * the final put, and the refusal of long-term pins of coherent memory.
 */

#include <linux/wait_bit.h>
#include "gup_kunit.h"

#ifdef CONFIG_DEVICE_PRIVATE

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
	pins += gup_kunit_try_grab_page(page, FOLL_PIN);
	pins += gup_kunit_try_grab_page(page, FOLL_PIN);
	KUNIT_ASSERT_EQ(test, pins, 2);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s,
			       2 * GUP_PIN_COUNTING_BIAS, 0, 2, 0);
	KUNIT_EXPECT_TRUE(test, gup_kunit_page_pinned(page));
	KUNIT_EXPECT_FALSE(test, gup_kunit_unpin_wakes_waiter(page));
	KUNIT_EXPECT_TRUE(test, gup_kunit_unpin_wakes_waiter(page));
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0, 2, 2);
	KUNIT_EXPECT_FALSE(test, gup_kunit_page_pinned(page));
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 0);
}

/*
 * A DEVICE_PRIVATE page goes back to its driver (->page_free(), given
 * that very page) exactly once, at the put that drops the last reference:
 * not at the unpin while the driver still holds its own reference.
 */
static void devmap_private_page_free_runs_once_at_final_put(struct kunit *test)
{
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_PRIVATE);
	struct page *page = gup_kunit_devmem_page(d);
	struct gup_kunit_snap s;

	gup_kunit_snap(page_folio(page), &s);
	KUNIT_ASSERT_EQ(test, s.ref, 1);
	KUNIT_ASSERT_TRUE(test, gup_kunit_try_grab_page(page, FOLL_PIN));
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s,
			       GUP_PIN_COUNTING_BIAS, 0, 1, 0);
	unpin_user_page(page);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0, 1, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 0);
	put_page(page);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
	KUNIT_EXPECT_PTR_EQ(test, d->freed, page);
	KUNIT_EXPECT_EQ(test, page_ref_count(page), 0);
}

/*
 * A DEVICE_PRIVATE page that held anonymous memory (migrate_vma moves an
 * anonymous page to the device, and its PG_anon_exclusive with it) goes
 * back to its driver without PG_anon_exclusive. The flag says that no
 * other process can map the page, which is what lets GUP pin it without
 * unsharing it first: left set on a free page, it would vouch for the
 * page's next anonymous use before any rmap was set up. The anonymous
 * state is made by hand, as __page_set_anon_rmap() would leave it (the
 * free path does not look at the anon_vma).
 */
static void devmap_private_anon_page_is_freed_not_exclusive(struct kunit *test)
{
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_PRIVATE);
	struct page *page = gup_kunit_devmem_page(d);

	page->mapping = (void *)PAGE_MAPPING_ANON;
	SetPageAnonExclusive(page);
	KUNIT_ASSERT_TRUE(test, PageAnonExclusive(page));
	put_page(page);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
	KUNIT_EXPECT_NULL(test, page->mapping);
	KUNIT_EXPECT_FALSE(test, test_bit(PG_anon_exclusive, &page->flags));
}

/*
 * Once an FS_DAX pgmap exists, every put of a ZONE_DEVICE page goes
 * through the devmap-managed hook, which must leave the pages of other
 * types to the normal put: the unpin of a DEVICE_PRIVATE page then still
 * drops its pin's references, and its driver's final put frees it.
 */
static void devmap_private_unpin_beside_fsdax_drops_its_references(struct kunit *test)
{
	struct gup_kunit_devmem *dax = gup_kunit_devmem(test,
							MEMORY_DEVICE_FS_DAX);
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_PRIVATE);
	struct page *page = gup_kunit_devmem_page(d);
	struct gup_kunit_snap s;

	gup_kunit_snap(page_folio(page), &s);
	KUNIT_ASSERT_TRUE(test, gup_kunit_try_grab_page(page, FOLL_PIN));
	unpin_user_page(page);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0, 1, 1);
	put_page(page);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&dax->frees), 0);
}

/*
 * A MEMORY_DEVICE_GENERIC page is in use from the start (refcount 1). Its
 * final put gives it back to its driver (->page_free(), once), clears its
 * stale mapping, and resets its refcount to 1, ready to be handed out
 * again; only DEVICE_PRIVATE and COHERENT pages rest at 0.
 */
static void devmap_generic_page_is_freed_back_to_refcount_one(struct kunit *test)
{
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_GENERIC);
	struct page *page = gup_kunit_devmem_page(d);

	KUNIT_ASSERT_EQ(test, page_ref_count(page), 1);
	page->mapping = (void *)PAGE_MAPPING_MOVABLE;
	put_page(page);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
	KUNIT_EXPECT_PTR_EQ(test, d->freed, page);
	KUNIT_EXPECT_EQ(test, page_ref_count(page), 1);
	KUNIT_EXPECT_NULL(test, page->mapping);
}

static const struct dev_pagemap_ops gup_kunit_ops_without_page_free = {};

struct gup_kunit_bad_ops_case {
	const char *name;
	const struct dev_pagemap_ops *ops;
};

static const struct gup_kunit_bad_ops_case gup_kunit_bad_ops_cases[] = {
	{ "no ops", NULL },
	{ "ops without page_free", &gup_kunit_ops_without_page_free },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_bad_ops, gup_kunit_bad_ops_cases,
			    struct gup_kunit_bad_ops_case);

/*
 * Expected warning: WARN_ON_ONCE() of a pgmap without ->page_free() in the
 * free of a ZONE_DEVICE page. Its final put must not call a callback that
 * is not there: it warns and leaves the page alone, at refcount 0, its
 * mapping kept. The case then gives the page its refcount back.
 */
static void devmap_free_without_page_free_warns_and_stops(struct kunit *test)
{
	const struct gup_kunit_bad_ops_case *c = test->param_value;
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_GENERIC);
	const struct dev_pagemap_ops *ops = d->pgmap.ops;
	struct page *page = gup_kunit_devmem_page(d);
	void *mapping = (void *)PAGE_MAPPING_MOVABLE;

	KUNIT_ASSERT_EQ(test, page_ref_count(page), 1);
	page->mapping = mapping;
	d->pgmap.ops = c->ops;
	put_page(page);
	d->pgmap.ops = ops;
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
	KUNIT_EXPECT_EQ(test, page_ref_count(page), 0);
	KUNIT_EXPECT_PTR_EQ(test, (void *)page->mapping, mapping);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 0);
	page->mapping = NULL;
	set_page_count(page, 1);
}

/*
 * Device-coherent memory must always allow eviction, so it may never be
 * pinned long-term; GUP-fast refuses FOLL_LONGTERM for it.
 */
static void device_coherent_page_is_not_longterm_pinnable(struct kunit *test)
{
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
						      MEMORY_DEVICE_COHERENT);
	struct page *page = gup_kunit_devmem_page(d);
	struct folio *longterm;
	struct gup_kunit_snap s;

	KUNIT_EXPECT_TRUE(test, is_device_coherent_page(page));
	KUNIT_EXPECT_FALSE(test, gup_kunit_longterm_pinnable(page));
	gup_kunit_snap(page_folio(page), &s);
	longterm = gup_kunit_try_grab_fast(page, 1, FOLL_PIN | FOLL_LONGTERM);
	if (longterm)
		unpin_user_page(page);
	KUNIT_EXPECT_NULL(test, longterm);
	put_page(page);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
}

static struct kunit_case gup_pin_devmap_cases[] = {
	KUNIT_CASE(devmap_fsdax_unpin_to_idle_wakes_waiter),
	KUNIT_CASE(devmap_private_page_free_runs_once_at_final_put),
	KUNIT_CASE(devmap_private_anon_page_is_freed_not_exclusive),
	KUNIT_CASE(devmap_private_unpin_beside_fsdax_drops_its_references),
	KUNIT_CASE(devmap_generic_page_is_freed_back_to_refcount_one),
	KUNIT_CASE_PARAM(devmap_free_without_page_free_warns_and_stops,
			 gup_kunit_bad_ops_gen_params),
	KUNIT_CASE(device_coherent_page_is_not_longterm_pinnable),
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

static struct kunit_case gup_pin_devmap_cases[] = {
	KUNIT_CASE(devmap_needs_device_private),
	{}
};

static struct kunit_suite gup_pin_devmap_suite = {
	.name = "gup_pin_devmap",
	.test_cases = gup_pin_devmap_cases,
};

#endif /* CONFIG_DEVICE_PRIVATE */

kunit_test_suite(gup_pin_devmap_suite);
