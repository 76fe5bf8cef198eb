// SPDX-License-Identifier: GPL-2.0
/*
 * The GUP pin KUnit suites' test library: user memory. The address
 * space a case gets, the pins it holds as a resource, the ways into GUP
 * (enum gup_kunit_path), mappings, tagged data, and the per-CPU LRU
 * batches.
 */

#include <linux/anon_inodes.h>
#include <linux/highmem.h>
#include <linux/mman.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include <linux/syscalls.h>
#include "gup_kunit.h"

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

/* Release what @p holds, pins or (foll_get) references, as its user would. */
void gup_kunit_release(struct gup_kunit_pins *p)
{
	long i;

	if (p->nr > 0 && p->foll_get)
		for (i = 0; i < p->nr; i++)
			put_page(p->pages[i]);
	else if (p->nr > 0)
		unpin_user_pages(p->pages, p->nr);
	p->nr = 0;
}

static void gup_kunit_pins_release(struct kunit_resource *res)
{
	struct gup_kunit_pins *p = res->data;

	gup_kunit_release(p);
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

/* Pin on one of the ways into GUP (enum gup_kunit_path). */
long gup_kunit_pin_by(enum gup_kunit_path path, unsigned long start,
		      long npages, unsigned int flags, struct page **pages)
{
	long ret;

	if (path == GUP_KUNIT_FAST_ONLY)
		return gup_kunit_pin_fast_only(start, npages, flags, pages);
	if (path == GUP_KUNIT_FAST)
		return pin_user_pages_fast(start, npages, flags, pages);
	mmap_read_lock(current->mm);
	ret = gup_kunit_pin_user_pages(start, npages, flags, pages);
	mmap_read_unlock(current->mm);
	return ret;
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

/*
 * Map user memory for the case, at @at if it is free (0: where the
 * kernel picks); MAP_HUGETLB maps the hugetlb pool.
 */
unsigned long gup_kunit_mmap_at(struct kunit *test, unsigned long at,
				unsigned long len, unsigned long prot,
				unsigned long flags)
{
	unsigned long addr;

	if (flags & MAP_HUGETLB) {
		KUNIT_ASSERT_EQ(test, gup_kunit_attach_mm(test), 0);
		addr = ksys_mmap_pgoff(at, len, prot, flags, -1, 0);
		if (IS_ERR_VALUE(addr))
			kunit_skip(test, GUP_KUNIT_NEEDS_HUGETLB);
	} else {
		addr = gup_kunit_vm_mmap_at(test, NULL, at, len, prot, flags);
	}
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "mmap: %ld",
			       (long)addr);
	return addr;
}

/* Map user memory for the case; MAP_HUGETLB maps the hugetlb pool. */
unsigned long gup_kunit_mmap(struct kunit *test, unsigned long len,
			     unsigned long prot, unsigned long flags)
{
	return gup_kunit_mmap_at(test, 0, len, prot, flags);
}

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

/* Whether every page of [@start, @start + @npages pages) is in ZONE_MOVABLE. */
static bool gup_kunit_all_movable(struct kunit *test, unsigned long start,
				  long npages)
{
	bool movable = true;
	struct page *page;
	long i;

	for (i = 0; i < npages && movable; i++) {
		page = gup_kunit_mapped(test, start, i);
		if (!page)
			return false;
		movable = page_zonenum(page) == ZONE_MOVABLE;
		put_page(page);
	}
	return movable;
}

/**
 * gup_kunit_mmap_movable() - private anonymous memory in ZONE_MOVABLE.
 * @test: the case; skipped if the memory cannot be had there.
 * @len: the length of the mapping.
 * @flags: 0, or MAP_HUGETLB for the hugetlb pool.
 * @offset: the first page to fill, in pages from the mapping.
 * @npages: how many pages to fill, with gup_kunit_fill()'s tags.
 *
 * Map and fill memory whose pages sit in ZONE_MOVABLE. hugetlb's free
 * list is LIFO, and every long-term pin migrates pool pages out of
 * ZONE_MOVABLE for good, so a fault may be handed one of those: keep that
 * mapping (its pages stay in use until the case's mm goes away) and map
 * again, so that the next fault gets a page the pin must migrate.
 *
 * Return: the address of the mapping.
 */
unsigned long gup_kunit_mmap_movable(struct kunit *test, unsigned long len,
				     unsigned long flags, long offset,
				     long npages)
{
	int tries;

	for (tries = 0; tries < 8; tries++) {
		unsigned long addr = gup_kunit_mmap(test, len, GUP_KUNIT_RW,
						    GUP_KUNIT_ANON | flags);
		unsigned long start = addr + offset * PAGE_SIZE;

		gup_kunit_fill(test, start, npages);
		if (gup_kunit_all_movable(test, start, npages))
			return addr;
	}
	if (flags & MAP_HUGETLB)
		kunit_skip(test, GUP_KUNIT_NEEDS_MOVABLE " and a hugetlb pool in it: "
			   GUP_KUNIT_PASS_HUGEPAGES);
	kunit_skip(test, GUP_KUNIT_NEEDS_MOVABLE);
	return 0;
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

/* MADV_PAGEOUT of one page: reclaim it now, swapping if it is anon. */
int gup_kunit_pageout(unsigned long addr)
{
	lru_add_drain_all();	/* madvise_pageout() only isolates LRU folios */
	return do_madvise(current->mm, addr, PAGE_SIZE, MADV_PAGEOUT);
}
