// SPDX-License-Identifier: GPL-2.0
/*
 * The shared test API of the GUP pin KUnit suites: see gup_kunit.h.
 */

#include <linux/anon_inodes.h>
#include <linux/blkdev.h>
#include <linux/buffer_head.h>
#include <linux/delay.h>
#include <linux/file.h>
#include <linux/fs_context.h>
#include <linux/highmem.h>
#include <linux/ioport.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include <linux/syscalls.h>
#include <linux/page-isolation.h>
#include <trace/events/page_ref.h>
#include <trace/events/printk.h>
#include "gup_kunit.h"

/* ------------------------------------------------------------------ */
/* Counters and snapshots                                              */
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
long gup_kunit_node_stat(enum node_stat_item item)
{
	long a, b = gup_kunit_node_stat_once(item);

	do {
		a = b;
		b = gup_kunit_node_stat_once(item);
	} while (a != b);
	return a;
}

/* Snapshot the pin counters only: a case that checks many folios. */
void gup_kunit_snap_counters(struct gup_kunit_snap *s)
{
	s->ref = 0;
	s->pincount = -1;
	s->acquired = gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED);
	s->released = gup_kunit_node_stat(NR_FOLL_PIN_RELEASED);
}

void gup_kunit_snap(struct folio *folio, struct gup_kunit_snap *s)
{
	gup_kunit_snap_counters(s);
	s->ref = folio_ref_count(folio);
	s->pincount = gup_kunit_snap_pincount(folio);
}

/* ------------------------------------------------------------------ */
/* Warnings                                                            */
/* ------------------------------------------------------------------ */

atomic_t gup_kunit_warnings = ATOMIC_INIT(0);
atomic_t gup_kunit_fs_reports = ATOMIC_INIT(0);

static void gup_kunit_console_probe(void *ignore, const char *buf,
				    size_t len)
{
	if (strnstr(buf, "WARNING:", len))
		atomic_inc(&gup_kunit_warnings);
	if (strnstr(buf, "EXT4-fs warning", len) ||
	    strnstr(buf, "EXT4-fs error", len))
		atomic_inc(&gup_kunit_fs_reports);
}

/* Count the WARNINGs on the console while the suite runs. */
int gup_kunit_suite_init(struct kunit_suite *suite)
{
	return register_trace_console(gup_kunit_console_probe, NULL);
}

void gup_kunit_suite_exit(struct kunit_suite *suite)
{
	unregister_trace_console(gup_kunit_console_probe, NULL);
	tracepoint_synchronize_unregister();
}

/* Re-arm WARN_ON_ONCE() sites and count from zero. */
void gup_kunit_warn_reset(void)
{
	generic_bug_clear_once();
	atomic_set(&gup_kunit_warnings, 0);
}

/*
 * Name the case on the console before it runs: KUnit prints a case's name
 * only with its result, so without this a case that crashes the kernel
 * could not be named. Then count warnings from zero.
 */
int gup_kunit_case_init(struct kunit *test)
{
	kunit_info(test, "start\n");
	gup_kunit_warn_reset();
	atomic_set(&gup_kunit_fs_reports, 0);
	return 0;
}

/*
 * A warning that appears while a case runs fails it, unless the case
 * expected it and said so with GUP_KUNIT_EXPECT_WARNINGS().
 */
void gup_kunit_case_exit(struct kunit *test)
{
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&gup_kunit_warnings), 0,
			    "unexpected WARNING on the console during the case");
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&gup_kunit_fs_reports), 0,
			    "unexpected EXT4-fs warning or error during the case");
}

/* ------------------------------------------------------------------ */
/* Folios owned by a case                                              */
/* ------------------------------------------------------------------ */

atomic_t gup_kunit_alive = ATOMIC_INIT(0);

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

/* Drop what the case still holds; free the folio if that leaves it idle. */
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
	    gup_kunit_snap_pincount(folio) <= 0) {
		folio_put(folio);
		atomic_dec(&gup_kunit_alive);
	} else {
		pr_err("gup_kunit: leaking folio pfn %#lx: ref %d pincount %d\n",
		       folio_pfn(folio), folio_ref_count(folio),
		       gup_kunit_snap_pincount(folio));
	}
	kfree(f);
}

/**
 * gup_kunit_alloc() - a folio for the case, freed when the case ends.
 * @test: the case.
 * @order: its order.
 *
 * Return: the folio's resource, with one reference (the allocation's).
 */
struct gup_kunit_folio *gup_kunit_alloc(struct kunit *test,
					unsigned int order)
{
	struct gup_kunit_folio *f;

	f = kunit_alloc_resource(test, gup_kunit_folio_init,
				 gup_kunit_folio_release, GFP_KERNEL,
				 (void *)(unsigned long)order);
	KUNIT_ASSERT_NOT_ERR_OR_NULL_MSG(test, f, "order-%u folio", order);
	return f;
}

int gup_kunit_pin_pages(struct kunit *test, struct gup_kunit_folio *f,
			struct page **pages, int per_folio)
{
	int j;

	for (j = 0; j < per_folio; j++) {
		struct page *page = folio_page(f->folio,
					       j % folio_nr_pages(f->folio));

		KUNIT_ASSERT_TRUE(test, gup_kunit_try_grab_page(page, FOLL_PIN));
		f->pins++;
		pages[j] = page;
	}
	return per_folio;
}

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

#ifdef CONFIG_DEVICE_PRIVATE

/* ------------------------------------------------------------------ */
/* ZONE_DEVICE pgmaps owned by a case                                  */
/* ------------------------------------------------------------------ */

static void gup_kunit_page_free(struct page *page)
{
	struct gup_kunit_devmem *d = container_of(page->pgmap,
						  struct gup_kunit_devmem,
						  pgmap);

	WRITE_ONCE(d->freed, page);
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

static int gup_kunit_pram_found(struct resource *res, void *arg)
{
	struct resource **found = arg;

	if (resource_size(res) < SZ_2M)
		return 0;
	*found = request_mem_region(res->start, SZ_2M, "gup_kunit");
	return *found ? 1 : -EBUSY;
}

/*
 * SZ_2M of RAM that no driver claims: the legacy persistent memory that
 * memmap=2M!1G on the command line sets aside (E820 type 12, in
 * iomem_resource as "Persistent Memory (legacy)" once PCI has reserved
 * the E820 ranges). Real memory outside the page allocator, for a pgmap.
 */
static struct resource *gup_kunit_request_pram(void)
{
	struct resource *found = NULL;
	int ret;

	ret = walk_iomem_res_desc(IORES_DESC_PERSISTENT_MEMORY_LEGACY,
				  IORESOURCE_MEM, 0, -1, &found,
				  gup_kunit_pram_found);
	if (ret < 0)
		return ERR_PTR(ret);
	return found ? found : ERR_PTR(-ENODEV);
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
 * memunmap_pages() waits until every DEVICE_PRIVATE or COHERENT page
 * handed out is free again, so such a page that a broken kernel leaked
 * would hang the case forever: then leak the pgmap instead, and say so.
 * The pages of other types hold no reference on their pgmap.
 */
static void gup_kunit_devmem_release(struct kunit_resource *kres)
{
	struct gup_kunit_devmem *d = kres->data;
	bool held = d->pgmap.type == MEMORY_DEVICE_PRIVATE ||
		    d->pgmap.type == MEMORY_DEVICE_COHERENT;

	if (held && atomic_read(&d->frees) != d->inits) {
		pr_err("gup_kunit: leaking pgmap: %d pages handed out, %d freed\n",
		       d->inits, atomic_read(&d->frees));
		return;
	}
	memunmap_pages(&d->pgmap);
	release_mem_region(d->res->start, resource_size(d->res));
	kfree(d);
	atomic_dec(&gup_kunit_alive);
}

/**
 * gup_kunit_devmem() - a ZONE_DEVICE pgmap for the case.
 * @test: the case; it is skipped if the pgmap cannot be made.
 * @type: its memory_type, maybe or'ed with GUP_KUNIT_DEVMEM_RAM.
 *
 * Return: the pgmap, released when the case ends.
 */
struct gup_kunit_devmem *gup_kunit_devmem(struct kunit *test,
					  unsigned long type)
{
	struct kunit_resource *kres;

	kres = kunit_alloc_and_get_resource(test, gup_kunit_devmem_init,
					    gup_kunit_devmem_release,
					    GFP_KERNEL, (void *)type);
	if (!kres && (type & GUP_KUNIT_DEVMEM_RAM))
		kunit_skip(test, GUP_KUNIT_NEEDS_PRAM);
	if (!kres)
		kunit_skip(test, "needs room for a ZONE_DEVICE pgmap of type %lu",
			   type);
	kunit_put_resource(kres);
	return kres->data;
}

/* The first page of @d, handed out as its driver would (refcount 1). */
struct page *gup_kunit_devmem_page(struct gup_kunit_devmem *d)
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

#endif /* CONFIG_DEVICE_PRIVATE */

/* ------------------------------------------------------------------ */
/* User memory                                                         */
/* ------------------------------------------------------------------ */

/*
 * Each case runs in its own kthread, which has no mm: give it one. When
 * the case's thread exits, the mm goes, and every mapping with it.
 */
int gup_kunit_user_init(struct kunit *test)
{
	int err = gup_kunit_attach_mm(test);

	return err ? err : gup_kunit_case_init(test);
}

static int gup_kunit_pins_init(struct kunit_resource *res, void *context)
{
	struct gup_kunit_pins *p = kzalloc(sizeof(*p), GFP_KERNEL);
	long n = (long)context;

	if (!p)
		return -ENOMEM;
	p->pages = kcalloc(n, sizeof(*p->pages), GFP_KERNEL);
	if (!p->pages) {
		kfree(p);
		return -ENOMEM;
	}
	res->data = p;
	return 0;
}

static void gup_kunit_pins_release(struct kunit_resource *res)
{
	struct gup_kunit_pins *p = res->data;
	long i;

	if (p->nr > 0 && p->foll_get)
		for (i = 0; i < p->nr; i++)
			put_page(p->pages[i]);
	else if (p->nr > 0)
		unpin_user_pages(p->pages, p->nr);
	kfree(p->pages);
	kfree(p);
}

/* An array for @n pinned pages, whose pins the case's end releases. */
struct gup_kunit_pins *gup_kunit_pins(struct kunit *test, long n)
{
	struct gup_kunit_pins *p;

	p = kunit_alloc_resource(test, gup_kunit_pins_init,
				 gup_kunit_pins_release, GFP_KERNEL,
				 (void *)n);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	return p;
}

/* Release the pins now, as a driver would when the DMA is done. */
void gup_kunit_unpin(struct gup_kunit_pins *p)
{
	unpin_user_pages(p->pages, p->nr);
	p->nr = 0;
}

/* Pin through GUP-fast (pin_user_pages_fast()) or the slow path. */
long gup_kunit_pin_path(bool fast, unsigned long start, long npages,
			unsigned int flags, struct page **pages)
{
	long ret;

	if (fast)
		return pin_user_pages_fast(start, npages, flags, pages);
	mmap_read_lock(current->mm);
	ret = gup_kunit_pin_user_pages(start, npages, flags, pages);
	mmap_read_unlock(current->mm);
	return ret;
}

/* Pin on one of the ways into GUP (enum gup_kunit_path). */
long gup_kunit_pin_by(enum gup_kunit_path path, unsigned long start,
		      long npages, unsigned int flags, struct page **pages)
{
	if (path == GUP_KUNIT_FAST_ONLY)
		return gup_kunit_pin_fast_only(start, npages, flags, pages);
	return gup_kunit_pin_path(path == GUP_KUNIT_FAST, start, npages, flags,
				  pages);
}

/**
 * gup_kunit_mmap_driver() - map one page of a driver's file.
 * @test: the case.
 * @name: the file's name.
 * @fops: the driver's file operations; its ->mmap() fills the mapping.
 * @priv: the file's private_data, for ->mmap().
 *
 * As user space would mmap() a device node: MAP_SHARED, read-write.
 *
 * Return: the address of the mapping, unmapped when the case ends.
 */
unsigned long gup_kunit_mmap_driver(struct kunit *test, const char *name,
				    const struct file_operations *fops,
				    void *priv)
{
	unsigned long addr;
	struct file *file;

	file = anon_inode_getfile(name, fops, priv, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(file));
	addr = gup_kunit_vm_mmap(test, file, PAGE_SIZE, GUP_KUNIT_RW,
				 MAP_SHARED);
	fput(file);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "mmap: %ld",
			       (long)addr);
	return addr;
}

/* Map user memory for the case; MAP_HUGETLB maps the hugetlb pool. */
unsigned long gup_kunit_mmap(struct kunit *test, unsigned long len,
			     unsigned long prot, unsigned long flags)
{
	unsigned long addr;

	if (flags & MAP_HUGETLB) {
		KUNIT_ASSERT_EQ(test, gup_kunit_attach_mm(test), 0);
		addr = ksys_mmap_pgoff(0, len, prot, flags, -1, 0);
		if (IS_ERR_VALUE(addr))
			kunit_skip(test, GUP_KUNIT_NEEDS_HUGETLB);
	} else {
		addr = gup_kunit_vm_mmap(test, NULL, len, prot, flags);
	}
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "mmap: %ld",
			       (long)addr);
	return addr;
}

/* The tag that gup_kunit_fill() writes into page @i. */
#define GUP_KUNIT_TAG(i)	(0x70696e00ULL + (i))

/* Write a tag into each page, that names it, so that moved data is seen. */
void gup_kunit_fill(struct kunit *test, unsigned long addr, long npages)
{
	long i;

	for (i = 0; i < npages; i++) {
		u64 tag = GUP_KUNIT_TAG(i);

		KUNIT_ASSERT_EQ(test, copy_to_user((void __user *)(addr +
					i * PAGE_SIZE + 8), &tag, sizeof(tag)),
				0UL);
	}
}

/* The tag in a page, read through the kernel mapping, as a device would. */
u64 gup_kunit_tag(struct page *page)
{
	u64 *p = kmap_local_page(page);
	u64 tag = p[1];

	kunmap_local(p);
	return tag;
}

/* Expect the tags of gup_kunit_fill() in the pages themselves. */
void gup_kunit_expect_filled(struct kunit *test, struct page **pages,
			     long npages)
{
	long i;

	for (i = 0; i < npages; i++)
		KUNIT_EXPECT_EQ_MSG(test, gup_kunit_tag(pages[i]),
				    GUP_KUNIT_TAG(i), "data of page %ld lost", i);
}

/*
 * The page mapped at page @i of @addr, with a reference, or NULL (and the
 * case failed) if nothing is.
 */
struct page *gup_kunit_mapped(struct kunit *test, unsigned long addr, long i)
{
	struct page *page;

	if (get_user_pages_fast(addr + i * PAGE_SIZE, 1, 0, &page) == 1)
		return page;
	KUNIT_FAIL(test, "page %ld is not mapped", i);
	return NULL;
}

/*
 * Expect each of @npages pages at @addr to be mapped, and to be the page
 * of @pages at its index; with @pages NULL, to be mapped and not pinned.
 */
void gup_kunit_expect_mapped(struct kunit *test, unsigned long addr,
			     struct page **pages, long npages)
{
	struct page *now;
	long i;

	for (i = 0; i < npages; i++) {
		now = gup_kunit_mapped(test, addr, i);
		if (!now)
			continue;
		if (pages)
			KUNIT_EXPECT_PTR_EQ_MSG(test, now, pages[i],
						"page %ld: mapping and pin disagree",
						i);
		else
			KUNIT_EXPECT_FALSE_MSG(test, gup_kunit_page_pinned(now),
					       "page %ld", i);
		put_page(now);
	}
}

/*
 * The refcount of each page mapped at @addr, less the reference taken to
 * look. LRU batches hold references too, so drain them first.
 */
void gup_kunit_user_refs(struct kunit *test, unsigned long addr, long npages,
			 int *refs)
{
	struct page *page;
	long i;

	lru_add_drain_all();
	for (i = 0; i < npages; i++) {
		page = gup_kunit_mapped(test, addr, i);
		KUNIT_ASSERT_NOT_NULL(test, page);
		refs[i] = page_ref_count(page) - 1;
		put_page(page);
	}
}

/* The folio mapped at @addr. */
struct folio *gup_kunit_user_folio(struct kunit *test, unsigned long addr)
{
	struct page *page = gup_kunit_mapped(test, addr, 0);

	KUNIT_ASSERT_NOT_NULL(test, page);
	put_page(page);
	return page_folio(page);
}

/**
 * gup_kunit_other_cpu() - bind the case to one CPU and name another.
 * @test: the case; skipped unless two CPUs are online.
 *
 * For the cases about the per-CPU LRU batches: they fault pages in on
 * either CPU (gup_kunit_on_cpu()) and call GUP on the first online CPU,
 * where this leaves them. The binding goes with the case's kthread.
 *
 * Return: the second online CPU.
 */
int gup_kunit_other_cpu(struct kunit *test)
{
	int home = cpumask_first(cpu_online_mask);
	int other = cpumask_next(home, cpu_online_mask);

	if (other >= nr_cpu_ids)
		kunit_skip(test, GUP_KUNIT_NEEDS_TWO_CPUS);
	gup_kunit_on_cpu(test, home);
	return other;
}

/* Move the case to @cpu, and keep it there. */
void gup_kunit_on_cpu(struct kunit *test, int cpu)
{
	KUNIT_ASSERT_EQ(test, set_cpus_allowed_ptr(current, cpumask_of(cpu)),
			0);
	KUNIT_ASSERT_EQ(test, raw_smp_processor_id(), cpu);
}

/**
 * gup_kunit_fill_and_snap() - the usual start of a user-memory case.
 * @test: the case.
 * @refs: GUP_KUNIT_NPAGES entries: each page's refcount.
 * @s: a snapshot of the pin counters, taken last.
 *
 * Map GUP_KUNIT_NPAGES pages of private anonymous memory, fault them in
 * with gup_kunit_fill()'s tags, record their refcounts.
 *
 * Return: the address of the mapping.
 */
unsigned long gup_kunit_fill_and_snap(struct kunit *test, int *refs,
				      struct gup_kunit_snap *s)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, refs);
	gup_kunit_snap_counters(s);
	return addr;
}

/*
 * Expect each of @npages small pages to hold exactly its refcount of
 * @ref0, plus GUP_PIN_COUNTING_BIAS if @pinned, and to read as pinned if
 * and only if @pinned. LRU batches (mark_page_accessed() of FOLL_TOUCH
 * callers) hold references too: drain them first.
 */
void gup_kunit_expect_biased(struct kunit *test, struct page **pages,
			     long npages, const int *ref0, bool pinned)
{
	int bias = pinned ? GUP_PIN_COUNTING_BIAS : 0;
	long i;

	lru_add_drain_all();
	for (i = 0; i < npages; i++) {
		KUNIT_EXPECT_EQ_MSG(test, page_ref_count(pages[i]),
				    ref0[i] + bias, "page %ld", i);
		KUNIT_EXPECT_EQ_MSG(test, gup_kunit_page_pinned(pages[i]),
				    pinned, "page %ld", i);
	}
}

/* ------------------------------------------------------------------ */
/* A file on a real ext4                                               */
/* ------------------------------------------------------------------ */

/*
 * The virtio disk that the QEMU configuration attaches: an ext4 made on
 * the host, opened with snapshot=on, so that every boot starts from the
 * same empty filesystem. KUnit runs before prepare_namespace(), with no
 * devtmpfs mounted: the mount goes through a device node on rootfs, made
 * for it and removed right after.
 */
#define GUP_KUNIT_DISK		"vda"
#define GUP_KUNIT_DISK_NODE	"/gup_kunit_vda"

static int gup_kunit_disk_node(dev_t devt)
{
	struct dentry *dentry;
	struct path path;
	int err;

	dentry = kern_path_create(AT_FDCWD, GUP_KUNIT_DISK_NODE, &path, 0);
	if (IS_ERR(dentry))
		return PTR_ERR(dentry);
	err = vfs_mknod(gup_kunit_idmap(path.mnt), d_inode(path.dentry), dentry,
			S_IFBLK | 0600, devt);
	done_path_create(&path, dentry);
	return err;
}

static void gup_kunit_disk_node_remove(void)
{
	struct dentry *dentry;
	struct path parent;

	dentry = kern_path_locked(GUP_KUNIT_DISK_NODE, &parent);
	if (IS_ERR(dentry))
		return;
	if (d_really_is_positive(dentry))
		vfs_unlink(gup_kunit_idmap(parent.mnt), d_inode(parent.dentry),
			   dentry, NULL);
	inode_unlock(d_inode(parent.dentry));
	dput(dentry);
	path_put(&parent);
}

static struct vfsmount *gup_kunit_mount_ext4(struct file_system_type *type,
					     dev_t devt)
{
	struct fs_context *fc;
	struct vfsmount *mnt;
	int err;

	fc = fs_context_for_mount(type, SB_KERNMOUNT);
	if (IS_ERR(fc))
		return ERR_CAST(fc);
	err = gup_kunit_disk_node(devt);
	if (!err)
		err = vfs_parse_fs_string(fc, "source", GUP_KUNIT_DISK_NODE,
					  strlen(GUP_KUNIT_DISK_NODE));
	mnt = err ? ERR_PTR(err) : fc_mount(fc);
	gup_kunit_disk_node_remove();
	put_fs_context(fc);
	return mnt;
}

static void gup_kunit_mnt_release(struct kunit_resource *res)
{
	mntput(res->data);
}

/* The ext4 of the virtio disk, mounted for the case; skip without one. */
static struct vfsmount *gup_kunit_ext4(struct kunit *test)
{
	struct file_system_type *type;
	struct vfsmount *mnt;
	struct device *disk;
	dev_t devt;

	disk = class_find_device_by_name(&block_class, GUP_KUNIT_DISK);
	if (!disk)
		kunit_skip(test, GUP_KUNIT_NEEDS_DISK);
	devt = disk->devt;
	put_device(disk);
	type = get_fs_type("ext4");
	if (!type)
		kunit_skip(test, "needs CONFIG_EXT4_FS");
	mnt = gup_kunit_mount_ext4(type, devt);
	put_filesystem(type);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(mnt),
			       "%s does not mount as ext4 (%ld): not the clean ext4 image of tools/mkdisk.py",
			       GUP_KUNIT_DISK, PTR_ERR(mnt));
	if (!kunit_alloc_resource(test, NULL, gup_kunit_mnt_release,
				  GFP_KERNEL, mnt)) {
		mntput(mnt);
		KUNIT_FAIL(test, "no memory for a resource");
	}
	return mnt;
}

/*
 * Close the case's file: first wait for its mappings to go. A case that
 * ends early leaves its mapping to the exit of its thread, which may still
 * be under way, and a vma's fput() from a kthread is deferred; an open
 * file at the unmount would be a busy inode.
 */
static void gup_kunit_file_release(struct kunit_resource *res)
{
	unsigned long timeout = jiffies + 10 * HZ;
	struct file *file = res->data;

	while (file_count(file) > 1 && time_before(jiffies, timeout)) {
		flush_delayed_fput();
		usleep_range(1000, 2000);
	}
	__fput_sync(file);
}

/**
 * gup_kunit_ext4_file() - a new file on a real ext4, written to the disk.
 * @test: the case; skipped if the kernel has no disk or no ext4.
 * @npages: the file's size in pages, each filled with 'A'.
 * @blocks: NULL, or @npages entries: the disk block of each page.
 *
 * The file, named after the case, is written and fsync()ed, so that its
 * blocks are allocated and on the disk before the case maps it. It is
 * closed, and the filesystem unmounted, when the case ends.
 *
 * Return: the file, open read-write.
 */
struct file *gup_kunit_ext4_file(struct kunit *test, long npages,
				 sector_t *blocks)
{
	struct vfsmount *mnt = gup_kunit_ext4(test);
	struct file *file;
	loff_t pos = 0;
	sector_t blk;
	long i;
	char *buf;

	file = file_open_root_mnt(mnt, test->name,
				  O_RDWR | O_CREAT | O_TRUNC | O_LARGEFILE,
				  0600);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(file), "open %s: %ld", test->name,
			       PTR_ERR(file));
	if (!kunit_alloc_resource(test, NULL, gup_kunit_file_release,
				  GFP_KERNEL, file)) {
		__fput_sync(file);
		KUNIT_FAIL(test, "no memory for a resource");
	}
	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(buf, 'A', PAGE_SIZE);
	for (i = 0; i < npages; i++)
		KUNIT_ASSERT_EQ(test, kernel_write(file, buf, PAGE_SIZE, &pos),
				(ssize_t)PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, vfs_fsync(file, 0), 0);
	for (i = 0; blocks && i < npages; i++) {
		blk = i;
		KUNIT_ASSERT_EQ(test, bmap(file_inode(file), &blk), 0);
		KUNIT_ASSERT_NE_MSG(test, blk, (sector_t)0, "page %ld: a hole", i);
		blocks[i] = blk;
	}
	return file;
}

/*
 * The byte that fills bytes [@off, @off + @len) of block @blk of @file's
 * disk, as the disk holds them now, or -1 if they differ. The block is
 * read from the device past every cache: past the file's page cache,
 * which may hold other data, and past the block device's own.
 */
int gup_kunit_disk_byte(struct kunit *test, struct file *file, sector_t blk,
			size_t off, size_t len)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct buffer_head *bh = sb_getblk(sb, blk);
	int byte;

	KUNIT_ASSERT_NOT_NULL(test, bh);
	lock_buffer(bh);
	clear_buffer_uptodate(bh);
	unlock_buffer(bh);
	brelse(bh);
	bh = sb_bread(sb, blk);
	KUNIT_ASSERT_NOT_NULL_MSG(test, bh, "cannot read block %llu",
				  (unsigned long long)blk);
	byte = (u8)bh->b_data[off];
	if (memchr_inv(bh->b_data + off, byte, len))
		byte = -1;
	brelse(bh);
	return byte;
}

/*
 * Page @index of @file, read back from the disk: the file's page cache is
 * evicted first (every page must be clean, unmapped and unpinned by now),
 * so that the read is what a reader after a reboot would see. Return the
 * byte that fills the page, or -1 if its bytes differ.
 */
int gup_kunit_file_byte_from_disk(struct kunit *test, struct file *file,
				  long index)
{
	struct address_space *mapping = file->f_mapping;
	loff_t pos = (loff_t)index * PAGE_SIZE;
	char *buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	int byte;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	lru_add_drain_all();
	invalidate_mapping_pages(mapping, 0, -1);
	KUNIT_EXPECT_EQ_MSG(test, mapping->nrpages, 0UL,
			    "a page of the file stays in the page cache");
	KUNIT_ASSERT_EQ(test, kernel_read(file, buf, PAGE_SIZE, &pos),
			(ssize_t)PAGE_SIZE);
	byte = (u8)buf[0];
	if (memchr_inv(buf, byte, PAGE_SIZE))
		byte = -1;
	kunit_kfree(test, buf);
	return byte;
}

/* MADV_PAGEOUT of one page: reclaim it now, swapping if it is anon. */
int gup_kunit_pageout(unsigned long addr)
{
	lru_add_drain_all();	/* madvise_pageout() only isolates LRU folios */
	return do_madvise(current->mm, addr, PAGE_SIZE, MADV_PAGEOUT);
}
