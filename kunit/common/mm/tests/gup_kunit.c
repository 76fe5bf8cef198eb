// SPDX-License-Identifier: GPL-2.0
/*
 * The GUP pin KUnit suites' test library, its core (see gup_kunit.h):
 * exact pin counters and snapshots, the console probe that counts
 * WARNINGs, and the resources a case owns (folios, ZONE_DEVICE pgmaps),
 * whose release undoes what the case still holds.
 */

#include <linux/hugetlb.h>
#include <linux/ioport.h>
#include <linux/slab.h>
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

/* Snapshot the hugetlb pool of the default huge page size. */
void gup_kunit_pool(struct gup_kunit_pool *p)
{
	struct hstate *h = &default_hstate;

	spin_lock_irq(&hugetlb_lock);
	p->nr = h->nr_huge_pages;
	p->free = h->free_huge_pages;
	p->resv = h->resv_huge_pages;
	p->surplus = h->surplus_huge_pages;
	spin_unlock_irq(&hugetlb_lock);
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

/**
 * gup_kunit_expect_report() - declare a console report the case provokes.
 * @test: the case.
 * @text: what each line of the report that the case provokes contains.
 *
 * A WARNING, BUG, KASAN, kmemleak, lockdep or filesystem report on the
 * console while a case runs fails the case, unless the case declared a
 * text that the report's line contains; a declared text that no report
 * of the case contains fails it too. The declaration is a diagnostic line
 * of the case's KTAP, "expected report: TEXT", which the harness reads
 * (tools/ktap_report.py). GUP_KUNIT_EXPECT_WARNINGS() and
 * GUP_KUNIT_EXPECT_FS_REPORTS() declare what they count.
 */
void gup_kunit_expect_report(struct kunit *test, const char *text)
{
	kunit_info(test, "expected report: %s\n", text);
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
