// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of pin_user_pages*() on real user address spaces.
 *
 * Included by mm/gup_kunit.c (itself included at the end of mm/gup.c),
 * after the helpers it uses: the counter snapshots and their EXPECT
 * macros, the WARN accounting and the case start line. Not built on its
 * own.
 */

#include <linux/anon_inodes.h>
#include <linux/major.h>
#include <linux/migrate.h>
#include <linux/namei.h>
#include <linux/shmem_fs.h>
#ifdef CONFIG_X86_VSYSCALL_EMULATION
#include <asm/vsyscall.h>
#endif

/* ------------------------------------------------------------------ */
/* gup_pin_user: pin_user_pages*() on a real user address space        */
/* ------------------------------------------------------------------ */

/*
 * Each case runs in its own kthread (kunit_try_catch), which has no mm.
 * The suite's init gives it a fresh user address space, the way 6.12's
 * kunit_attach_mm() does: mm_alloc(), the mmap layout, kthread_use_mm().
 * When the case thread exits, exit_mm() drops the mm and with it every
 * mapping. Cleanup may run in another thread after an aborted case, so
 * resources release pins (struct pages) and never touch current->mm.
 */
static int gup_kunit_user_init(struct kunit *test)
{
	struct mm_struct *mm;

	if (current->mm)
		return -EBUSY;
	mm = mm_alloc();
	if (!mm)
		return -ENOMEM;
	mm->task_size = TASK_SIZE;
	arch_pick_mmap_layout(mm, &current->signal->rlim[RLIMIT_STACK]);
	kthread_use_mm(mm);
	return gup_kunit_case_init(test);
}

/**
 * struct gup_kunit_pins - pages a case pinned, as a KUnit resource.
 * @pages: the array that pin_user_pages*() filled.
 * @nr: how many of them are still pinned.
 * @foll_get: they were taken with FOLL_GET (released with put_page()).
 */
struct gup_kunit_pins {
	struct page **pages;
	long nr;
	bool foll_get;
};

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

static struct gup_kunit_pins *gup_kunit_pins(struct kunit *test, long n)
{
	struct gup_kunit_pins *p;

	p = kunit_alloc_resource(test, gup_kunit_pins_init,
				 gup_kunit_pins_release, GFP_KERNEL,
				 (void *)n);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	return p;
}

/* Record a pin_user_pages*() result: only what was pinned is released. */
static void gup_kunit_pins_got(struct gup_kunit_pins *p, long ret)
{
	p->nr = ret > 0 ? ret : 0;
}

/* Release the pins now, as a driver would when the DMA is done. */
static void gup_kunit_unpin(struct gup_kunit_pins *p)
{
	unpin_user_pages(p->pages, p->nr);
	p->nr = 0;
}

static unsigned long gup_kunit_mmap(struct kunit *test, unsigned long len,
				    unsigned long prot, unsigned long flags)
{
	unsigned long addr;

	if (flags & MAP_HUGETLB)
		addr = ksys_mmap_pgoff(0, len, prot, flags, -1, 0);
	else
		addr = vm_mmap(NULL, 0, len, prot, flags, 0);
	if (IS_ERR_VALUE(addr) && (flags & MAP_HUGETLB))
		kunit_skip(test, "no hugetlb pages (boot with hugepages=N)");
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "mmap: %ld",
			       (long)addr);
	return addr;
}

/* Write a pattern that names each page, so that moved data is detected. */
static void gup_kunit_fill(struct kunit *test, unsigned long addr,
			   long npages)
{
	long i;

	for (i = 0; i < npages; i++) {
		u64 tag = 0x70696e00ULL + i;

		KUNIT_ASSERT_EQ(test, copy_to_user((void __user *)(addr +
					i * PAGE_SIZE + 8), &tag, sizeof(tag)),
				0UL);
	}
}

/* Expect the pattern of gup_kunit_fill() in the pages themselves. */
static void gup_kunit_expect_filled(struct kunit *test, struct page **pages,
				    long npages)
{
	long i;

	for (i = 0; i < npages; i++) {
		u64 *p = kmap_local_page(pages[i]);
		u64 tag = p[1];

		kunmap_local(p);
		KUNIT_EXPECT_EQ_MSG(test, tag, 0x70696e00ULL + i,
				    "data of page %ld lost", i);
	}
}

/* Expect each pinned page to be the one mapped at its address now. */
static void gup_kunit_expect_mapped(struct kunit *test, unsigned long addr,
				    struct page **pages, long npages)
{
	long i;

	for (i = 0; i < npages; i++) {
		struct page *now;

		if (get_user_pages_fast(addr + i * PAGE_SIZE, 1, 0, &now) != 1) {
			KUNIT_FAIL(test, "page %ld is not mapped", i);
			continue;
		}
		KUNIT_EXPECT_PTR_EQ_MSG(test, now, pages[i],
					"page %ld: mapping and pin disagree", i);
		put_page(now);
	}
}

/* Expect each of @npages pages mapped at @addr to be mapped and unpinned. */
static void gup_kunit_expect_none_pinned(struct kunit *test, unsigned long addr,
					 long npages)
{
	long i;

	for (i = 0; i < npages; i++) {
		struct page *now;

		if (get_user_pages_fast(addr + i * PAGE_SIZE, 1, 0, &now) != 1) {
			KUNIT_FAIL(test, "page %ld is not mapped", i);
			continue;
		}
		KUNIT_EXPECT_FALSE_MSG(test, page_maybe_dma_pinned(now),
				       "page %ld", i);
		put_page(now);
	}
}

/* Counters only: the user cases check them across many folios. */
static void gup_kunit_snap_counters(struct gup_kunit_snap *s)
{
	s->ref = 0;
	s->pincount = -1;
	s->acquired = gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED);
	s->released = gup_kunit_node_stat(NR_FOLL_PIN_RELEASED);
}

/*
 * The refcount of each page mapped at @addr, less the reference taken to
 * look. LRU batches hold references too, so drain them first.
 */
static void gup_kunit_user_refs(struct kunit *test, unsigned long addr,
				long npages, int *refs)
{
	long i;

	lru_add_drain_all();
	for (i = 0; i < npages; i++) {
		struct page *page;

		KUNIT_ASSERT_EQ(test, get_user_pages_fast(addr + i * PAGE_SIZE,
							  1, 0, &page), 1);
		refs[i] = page_ref_count(page) - 1;
		put_page(page);
	}
}

#define GUP_KUNIT_NPAGES	8
#define GUP_KUNIT_RW		(PROT_READ | PROT_WRITE)
#define GUP_KUNIT_ANON		(MAP_PRIVATE | MAP_ANONYMOUS)

/*
 * pin_user_pages_fast() of faulted anonymous memory: the pages returned
 * are the ones mapped there, each gains GUP_PIN_COUNTING_BIAS and reads
 * as pinned, the mm is marked as having pinned pages, the counters move
 * by exactly one per page, and the unpin restores every refcount.
 */
static void pin_user_pages_fast_pins_mapped_anon_pages(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				  p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++) {
		KUNIT_EXPECT_EQ(test, page_ref_count(p->pages[i]),
				ref0[i] + (int)GUP_PIN_COUNTING_BIAS);
		KUNIT_EXPECT_TRUE(test, page_maybe_dma_pinned(p->pages[i]));
	}
	KUNIT_EXPECT_TRUE(test, test_bit(MMF_HAS_PINNED, &current->mm->flags));
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, GUP_KUNIT_NPAGES, 0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, GUP_KUNIT_NPAGES, GUP_KUNIT_NPAGES);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++) {
		struct page *page = p->pages[i];

		KUNIT_EXPECT_FALSE(test, page_maybe_dma_pinned(page));
		KUNIT_EXPECT_EQ(test, page_ref_count(page), ref0[i]);
	}
}

/* get_user_pages_fast() takes one plain reference per page: no pin. */
static void get_user_pages_fast_takes_references_not_pins(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_snap_counters(&s);
	p->foll_get = true;
	ret = get_user_pages_fast(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				  p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++) {
		KUNIT_EXPECT_EQ(test, page_ref_count(p->pages[i]), ref0[i] + 1);
		KUNIT_EXPECT_FALSE(test, page_maybe_dma_pinned(p->pages[i]));
	}
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, 0, 0);
}

/*
 * A read-only pin of private anonymous memory that was never written
 * returns the shared zero page, without touching its refcount or counting
 * a pin; unpinning it is a no-op.
 */
static void pin_user_pages_read_of_unwritten_memory_is_zero_page(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    PROT_READ, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int zero_ref = page_ref_count(ZERO_PAGE(0));
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast(addr, GUP_KUNIT_NPAGES, 0, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++)
		KUNIT_EXPECT_TRUE(test, is_zero_page(p->pages[i]));
	KUNIT_EXPECT_EQ(test, page_ref_count(ZERO_PAGE(0)), zero_ref);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, 0, 0);
	gup_kunit_unpin(p);
	KUNIT_EXPECT_EQ(test, page_ref_count(ZERO_PAGE(0)), zero_ref);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, 0, 0);
}

/* An address with nothing mapped: -EFAULT, and nothing is pinned. */
static void pin_user_pages_unmapped_address_fails(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, PAGE_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	long ret;

	KUNIT_ASSERT_EQ(test, vm_munmap(addr, PAGE_SIZE), 0);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast(addr, 1, FOLL_WRITE, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EFAULT);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, 0, 0);
}

/*
 * A range that starts mapped and runs into a hole: the pages before the
 * hole are pinned and counted, exactly, and nothing after it.
 */
static void pin_user_pages_range_into_hole_pins_prefix(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	const long mapped = GUP_KUNIT_NPAGES / 2;
	struct gup_kunit_snap s;
	long i, ret;

	KUNIT_ASSERT_EQ(test, vm_munmap(addr + mapped * PAGE_SIZE,
					(GUP_KUNIT_NPAGES - mapped) *
					PAGE_SIZE), 0);
	gup_kunit_snap_counters(&s);
	mmap_read_lock(current->mm);
	ret = pin_user_pages(addr, GUP_KUNIT_NPAGES, FOLL_WRITE, p->pages,
			     NULL);
	mmap_read_unlock(current->mm);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, mapped);
	for (i = 0; i < min(ret, mapped); i++)
		KUNIT_EXPECT_TRUE(test, page_maybe_dma_pinned(p->pages[i]));
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, mapped, 0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, mapped, mapped);
}

/*
 * Long-term pins of memory that sits where it must not be pinned for long
 * (ZONE_MOVABLE): the pages are migrated first. The table covers small
 * anonymous pages and hugetlb pages, through the slow path
 * (pin_user_pages()) and GUP-fast (pin_user_pages_fast(), which refuses
 * such pages itself and falls back to the slow path), from the start of a
 * huge page and from the middle of one.
 */
struct gup_kunit_lt_case {
	const char *name;
	bool hugetlb;
	bool fast;
	long offset;		/* first page, in pages from the mapping */
	long npages;
};

#define GUP_KUNIT_HPAGE_NR	(1L << (PMD_SHIFT - PAGE_SHIFT))

static const struct gup_kunit_lt_case gup_kunit_lt_cases[] = {
	{ "anon slow", false, false, 0, GUP_KUNIT_NPAGES },
	{ "anon fast", false, true, 0, GUP_KUNIT_NPAGES },
	{ "hugetlb slow aligned", true, false, 0, 2 * GUP_KUNIT_HPAGE_NR },
	{ "hugetlb slow unaligned", true, false, 3, GUP_KUNIT_HPAGE_NR },
	{ "hugetlb fast aligned", true, true, 0, 2 * GUP_KUNIT_HPAGE_NR },
	{ "hugetlb fast unaligned", true, true, 3, GUP_KUNIT_HPAGE_NR },
};

static void gup_kunit_lt_desc(const struct gup_kunit_lt_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_lt, gup_kunit_lt_cases, gup_kunit_lt_desc);

/* Whether every page of [@start, @start + @npages pages) is in ZONE_MOVABLE. */
static bool gup_kunit_all_movable(struct kunit *test, unsigned long start,
				  long npages)
{
	bool movable = true;
	struct page *page;
	long i;

	for (i = 0; i < npages && movable; i++) {
		if (get_user_pages_fast(start + i * PAGE_SIZE, 1, 0, &page) != 1)
			return false;
		movable = page_zonenum(page) == ZONE_MOVABLE;
		put_page(page);
	}
	return movable;
}

/*
 * Map and fill memory whose pages sit in ZONE_MOVABLE. hugetlb's free
 * list is LIFO, and every long-term pin migrates pool pages out of
 * ZONE_MOVABLE for good, so a fault may be handed one of those: keep that
 * mapping (its pages stay in use until the case's mm goes away) and map
 * again, so that the next fault gets a page the pin must migrate.
 */
static unsigned long gup_kunit_mmap_movable(struct kunit *test,
					    const struct gup_kunit_lt_case *c,
					    unsigned long len)
{
	unsigned long flags = GUP_KUNIT_ANON | (c->hugetlb ? MAP_HUGETLB : 0);
	int tries;

	for (tries = 0; tries < 8; tries++) {
		unsigned long addr = gup_kunit_mmap(test, len, GUP_KUNIT_RW,
						    flags);
		unsigned long start = addr + c->offset * PAGE_SIZE;

		gup_kunit_fill(test, start, c->npages);
		if (gup_kunit_all_movable(test, start, c->npages))
			return addr;
	}
	kunit_skip(test, "memory not in ZONE_MOVABLE (movablecore=, hugepages=)");
	return 0;
}

static void pin_user_pages_longterm_migrates_movable_pages(struct kunit *test)
{
	const struct gup_kunit_lt_case *c = test->param_value;
	unsigned long len = c->hugetlb ? 2 * PMD_SIZE :
			    (c->offset + c->npages) * PAGE_SIZE;
	unsigned long addr = gup_kunit_mmap_movable(test, c, len);
	unsigned long start = addr + c->offset * PAGE_SIZE;
	struct gup_kunit_pins *p = gup_kunit_pins(test, c->npages);
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_snap_counters(&s);
	if (c->fast) {
		ret = pin_user_pages_fast(start, c->npages,
					  FOLL_WRITE | FOLL_LONGTERM, p->pages);
	} else {
		mmap_read_lock(current->mm);
		ret = pin_user_pages(start, c->npages,
				     FOLL_WRITE | FOLL_LONGTERM, p->pages,
				     NULL);
		mmap_read_unlock(current->mm);
	}
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, c->npages);
	for (i = 0; i < c->npages; i++) {
		if (!is_longterm_pinnable_page(p->pages[i]) ||
		    !page_maybe_dma_pinned(p->pages[i])) {
			KUNIT_FAIL(test, "page %ld: zone %d, pinned %d", i,
				   page_zonenum(p->pages[i]),
				   page_maybe_dma_pinned(p->pages[i]));
			break;
		}
	}
	gup_kunit_expect_mapped(test, start, p->pages, c->npages);
	gup_kunit_expect_filled(test, p->pages, c->npages);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, c->npages);
	if (c->hugetlb)
		KUNIT_EXPECT_EQ(test,
				atomic_read(folio_pincount_ptr(page_folio(p->pages[0]))),
				(int)min(c->npages, GUP_KUNIT_HPAGE_NR - c->offset));
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

/* ------------------------------------------------------------------ */
/* The other entry points, error paths, memory kinds, lifecycle        */
/* ------------------------------------------------------------------ */

/*
 * Expect each of @npages pinned pages to hold exactly GUP_PIN_COUNTING_BIAS
 * references more than @ref0 (an order-0 folio counts a pin that way) and
 * to read as pinned. LRU batches (mark_page_accessed() of FOLL_TOUCH
 * callers) hold references too: drain them first.
 */
static void gup_kunit_expect_biased(struct kunit *test, struct page **pages,
				    long npages, const int *ref0)
{
	long i;

	lru_add_drain_all();
	for (i = 0; i < npages; i++) {
		KUNIT_EXPECT_EQ_MSG(test, page_ref_count(pages[i]),
				    ref0[i] + (int)GUP_PIN_COUNTING_BIAS,
				    "page %ld", i);
		KUNIT_EXPECT_TRUE_MSG(test, page_maybe_dma_pinned(pages[i]),
				      "page %ld", i);
	}
}

/* Expect each page to be back at its refcount of @ref0, unpinned. */
static void gup_kunit_expect_unbiased(struct kunit *test, struct page **pages,
				      long npages, const int *ref0)
{
	long i;

	lru_add_drain_all();
	for (i = 0; i < npages; i++) {
		KUNIT_EXPECT_EQ_MSG(test, page_ref_count(pages[i]), ref0[i],
				    "page %ld", i);
		KUNIT_EXPECT_FALSE_MSG(test, page_maybe_dma_pinned(pages[i]),
				       "page %ld", i);
	}
}

/*
 * pin_user_pages_remote() on the caller's own mm (6.1 signature: vmas and
 * locked both NULL, so the caller holds mmap_read_lock throughout): the
 * pages mapped there, + GUP_PIN_COUNTING_BIAS each, balanced by the unpin.
 */
static void pin_user_pages_remote_pins_pages_of_given_mm(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	long ret;

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_snap_counters(&s);
	mmap_read_lock(current->mm);
	ret = pin_user_pages_remote(current->mm, addr, GUP_KUNIT_NPAGES,
				    FOLL_WRITE, p->pages, NULL, NULL);
	mmap_read_unlock(current->mm);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_filled(test, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_expect_unbiased(test, p->pages, GUP_KUNIT_NPAGES, ref0);
}

/*
 * pin_user_pages_unlocked() takes mmap_lock itself and faults in memory
 * that was never touched: a write pin gets fresh anonymous pages (never
 * the zero page), exactly the ones now mapped, and each holds
 * GUP_PIN_COUNTING_BIAS more references than after the unpin.
 */
static void pin_user_pages_unlocked_faults_in_and_pins(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int pinned[GUP_KUNIT_NPAGES], ref1[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_unlocked(addr, GUP_KUNIT_NPAGES, p->pages,
				      FOLL_WRITE);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++)
		KUNIT_EXPECT_FALSE_MSG(test, is_zero_page(p->pages[i]),
				       "page %ld", i);
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	lru_add_drain_all();
	for (i = 0; i < GUP_KUNIT_NPAGES; i++)
		pinned[i] = page_ref_count(p->pages[i]);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref1);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++)
		KUNIT_EXPECT_EQ_MSG(test, pinned[i] - ref1[i],
				    (int)GUP_PIN_COUNTING_BIAS, "page %ld", i);
}

/* pin_user_pages_fast_only() of faulted memory pins all of it. */
static void pin_user_pages_fast_only_pins_faulted_pages(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	long ret;

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast_only(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_expect_unbiased(test, p->pages, GUP_KUNIT_NPAGES, ref0);
}

/*
 * pin_user_pages_fast_only() never faults: of memory whose second half was
 * never touched it pins the faulted first half and returns that count
 * (never -errno), and the untouched half stays unmapped.
 */
static void pin_user_pages_fast_only_never_faults(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	const long faulted = GUP_KUNIT_NPAGES / 2;
	struct gup_kunit_snap s;
	struct page *page;
	long ret;

	gup_kunit_fill(test, addr, faulted);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast_only(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, faulted);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, p->nr);
	KUNIT_EXPECT_EQ(test, get_user_pages_fast_only(addr + faulted *
						       PAGE_SIZE, 1, 0, &page),
			0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

/*
 * Expected warning: WARN_ON_ONCE(gup_flags & FOLL_GET) in
 * pin_user_pages_fast(). FOLL_GET and FOLL_PIN are mutually exclusive, so
 * the call is refused with -EINVAL before anything is pinned. The suite's
 * .exit fails a case that leaves warnings behind, so this case checks the
 * count itself (exactly one) and then resets it.
 */
static void pin_user_pages_fast_with_foll_get_warns_and_fails(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, PAGE_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	long ret;

	gup_kunit_fill(test, addr, 1);
	gup_kunit_snap_counters(&s);
	/* With both flags, a grab takes a plain reference: put it back. */
	p->foll_get = true;
	ret = pin_user_pages_fast(addr, 1, FOLL_WRITE | FOLL_GET, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EINVAL);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_warnings), 1);
	gup_kunit_warn_reset();
}

/*
 * A pin that the mapping's protection does not allow, without FOLL_FORCE:
 * check_vma_flags() refuses it with -EFAULT, both through GUP-fast (which
 * finds no usable PTE and falls back) and the slow path, and nothing is
 * pinned. The PROT_READ mapping is read-faulted first, so that GUP-fast
 * meets a present, read-only PTE.
 */
struct gup_kunit_access_case {
	const char *name;
	unsigned long prot;
	unsigned int flags;
	bool fast;
};

static const struct gup_kunit_access_case gup_kunit_access_cases[] = {
	{ "write pin of PROT_READ, slow", PROT_READ, FOLL_WRITE, false },
	{ "write pin of PROT_READ, fast", PROT_READ, FOLL_WRITE, true },
	{ "read pin of PROT_NONE, slow", PROT_NONE, 0, false },
	{ "read pin of PROT_NONE, fast", PROT_NONE, 0, true },
	{ "write pin of PROT_NONE, fast", PROT_NONE, FOLL_WRITE, true },
};

static void gup_kunit_access_desc(const struct gup_kunit_access_case *c,
				  char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_access, gup_kunit_access_cases,
		  gup_kunit_access_desc);

static void pin_user_pages_beyond_protection_fails(struct kunit *test)
{
	const struct gup_kunit_access_case *c = test->param_value;
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    c->prot, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	struct gup_kunit_snap s;
	long i, ret;
	u64 val;

	for (i = 0; (c->prot & PROT_READ) && i < GUP_KUNIT_NPAGES; i++)
		KUNIT_ASSERT_EQ(test, copy_from_user(&val, (void __user *)(addr +
					i * PAGE_SIZE), sizeof(val)), 0UL);
	gup_kunit_snap_counters(&s);
	if (c->fast) {
		ret = pin_user_pages_fast(addr, GUP_KUNIT_NPAGES, c->flags,
					  p->pages);
	} else {
		mmap_read_lock(current->mm);
		ret = pin_user_pages(addr, GUP_KUNIT_NPAGES, c->flags,
				     p->pages, NULL);
		mmap_read_unlock(current->mm);
	}
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EFAULT);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

/* GUP-fast (pin_user_pages_fast()) or the slow path (pin_user_pages()). */
static const bool gup_kunit_paths[] = { true, false };

static void gup_kunit_path_desc(const bool *fast, char *desc)
{
	strscpy(desc, *fast ? "GUP-fast" : "slow path", KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_path, gup_kunit_paths, gup_kunit_path_desc);

static long gup_kunit_pin_path(bool fast, unsigned long start, long npages,
			       unsigned int flags, struct page **pages)
{
	long ret;

	if (fast)
		return pin_user_pages_fast(start, npages, flags, pages);
	mmap_read_lock(current->mm);
	ret = pin_user_pages(start, npages, flags, pages, NULL);
	mmap_read_unlock(current->mm);
	return ret;
}

/*
 * A long-term pin whose migration cannot be done: one page of the range,
 * in ZONE_MOVABLE, has a reference that migration cannot account for (as
 * a driver's get_page() would be), so migrate_pages() gives up on it.
 * The call fails with -ENOMEM and leaves nothing behind: no pin on any
 * page of the range (the ones that did move, and the one that did not),
 * the page that could not move still mapped, on the LRU and holding its
 * data, and NR_ISOLATED_ANON back where it was. GUP-fast refuses
 * ZONE_MOVABLE pages for FOLL_LONGTERM and falls back to the same path.
 */
static void pin_user_pages_longterm_failed_migration_leaves_no_pin(struct kunit *test)
{
	const bool *fast = test->param_value;
	const struct gup_kunit_lt_case *c = &gup_kunit_lt_cases[0];
	const long last = c->npages - 1;
	unsigned long addr = gup_kunit_mmap_movable(test, c,
						    c->npages * PAGE_SIZE);
	struct gup_kunit_pins *held = gup_kunit_pins(test, 1);
	struct gup_kunit_pins *p = gup_kunit_pins(test, c->npages);
	int ref0[GUP_KUNIT_NPAGES];
	long isolated, ret;
	struct gup_kunit_snap s;
	struct page *page;
	u64 *kaddr, tag;

	held->foll_get = true;
	gup_kunit_pins_got(held, get_user_pages_fast(addr + last * PAGE_SIZE,
						     1, 0, held->pages));
	KUNIT_ASSERT_EQ(test, held->nr, 1L);
	page = held->pages[0];
	gup_kunit_user_refs(test, addr, c->npages, ref0);
	isolated = gup_kunit_node_stat(NR_ISOLATED_ANON);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_path(*fast, addr, c->npages,
				 FOLL_WRITE | FOLL_LONGTERM, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-ENOMEM);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_node_stat(NR_ISOLATED_ANON), isolated);
	gup_kunit_expect_mapped(test, addr + last * PAGE_SIZE, &page, 1);
	kaddr = kmap_local_page(page);
	tag = kaddr[1];
	kunmap_local(kaddr);
	KUNIT_EXPECT_EQ(test, tag, 0x70696e00ULL + last);
	lru_add_drain_all();
	KUNIT_EXPECT_TRUE(test, PageLRU(page));
	KUNIT_EXPECT_EQ(test, page_ref_count(page), ref0[last]);
	gup_kunit_expect_none_pinned(test, addr, c->npages);
}

/*
 * Share an exclusive anonymous page with an imaginary child, as fork()'s
 * copy_present_pte() does: write-protect the PTE, take the child's
 * reference and mapcount with page_try_dup_anon_rmap(). The page is then
 * COW-shared: mapped read-only, not exclusive, mapcount 2. The child's
 * share is a KUnit resource, dropped when the case ends; it touches only
 * the struct page, never the mm, which may be gone by then.
 */
static void gup_kunit_child_release(struct kunit_resource *res)
{
	struct page *page = res->data;

	atomic_dec(&page->_mapcount);
	put_page(page);
}

static int gup_kunit_child_init(struct kunit_resource *res, void *page)
{
	res->data = page;
	return 0;
}

static struct page *gup_kunit_cow_share(struct kunit *test, unsigned long addr)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct page *page = NULL;
	spinlock_t *ptl;		/* the PT lock of addr, from follow_pte() */
	void *child;
	pte_t *ptep;
	int ret = -ENOENT;

	mmap_write_lock(mm);
	raw_write_seqcount_begin(&mm->write_protect_seq);
	vma = vma_lookup(mm, addr);
	if (vma && !follow_pte(mm, addr, &ptep, &ptl)) {
		page = vm_normal_page(vma, addr, *ptep);
		if (page && PageAnon(page)) {
			get_page(page);
			ret = page_try_dup_anon_rmap(page, false, vma);
			if (ret)
				put_page(page);
			else
				ptep_set_wrprotect(mm, addr, ptep);
		}
		pte_unmap_unlock(ptep, ptl);
		if (!ret)
			flush_tlb_page(vma, addr);
	}
	raw_write_seqcount_end(&mm->write_protect_seq);
	mmap_write_unlock(mm);
	KUNIT_ASSERT_EQ_MSG(test, ret, 0, "cannot COW-share %#lx", addr);
	child = kunit_alloc_resource(test, gup_kunit_child_init,
				     gup_kunit_child_release, GFP_KERNEL, page);
	KUNIT_ASSERT_NOT_NULL(test, child);
	return page;
}

/*
 * A read-only pin (FOLL_PIN without FOLL_WRITE) of an anonymous page that
 * is COW-shared (here with a child, as after fork()) must not pin the
 * shared page: a later write fault of either process would replace it
 * under the DMA. GUP unshares first (FAULT_FLAG_UNSHARE): the page pinned
 * is a new, exclusive copy holding the same data, now mapped at the
 * address, while the shared page is left to the child, unpinned. GUP-fast
 * refuses the shared page and falls back to the slow path.
 */
static void pin_user_pages_read_of_cow_shared_page_unshares(struct kunit *test)
{
	const bool *fast = test->param_value;
	unsigned long addr = gup_kunit_mmap(test, PAGE_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	struct page *shared;
	long ret;

	gup_kunit_fill(test, addr, 1);
	shared = gup_kunit_cow_share(test, addr);
	KUNIT_ASSERT_FALSE(test, PageAnonExclusive(shared));
	KUNIT_ASSERT_EQ(test, page_mapcount(shared), 2);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_path(*fast, addr, 1, 0, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 1);
	KUNIT_EXPECT_PTR_NE(test, p->pages[0], shared);
	KUNIT_EXPECT_TRUE(test, PageAnonExclusive(p->pages[0]));
	KUNIT_EXPECT_TRUE(test, page_maybe_dma_pinned(p->pages[0]));
	gup_kunit_expect_mapped(test, addr, p->pages, 1);
	gup_kunit_expect_filled(test, p->pages, 1);
	KUNIT_EXPECT_FALSE(test, page_maybe_dma_pinned(shared));
	KUNIT_EXPECT_EQ(test, page_mapcount(shared), 1);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

#ifdef CONFIG_DEVICE_PRIVATE
/*
 * Move the anonymous page mapped at @addr into a device-coherent page of
 * @d, the way a driver migrates memory to its device (migrate_vma_*(), as
 * lib/test_hmm.c does): the user mapping then maps the device page, which
 * holds the same data. Return the device page.
 */
static struct page *gup_kunit_migrate_to_coherent(struct kunit *test,
						  struct gup_kunit_devmem *d,
						  unsigned long addr)
{
	struct page *dpage = gup_kunit_devmem_page(d);
	unsigned long src = 0, dst = 0;
	struct migrate_vma args = {
		.start = addr,
		.end = addr + PAGE_SIZE,
		.src = &src,
		.dst = &dst,
		.pgmap_owner = d,
		.flags = MIGRATE_VMA_SELECT_SYSTEM,
	};
	struct page *now;
	int ret;

	mmap_read_lock(current->mm);
	args.vma = vma_lookup(current->mm, addr);
	ret = args.vma ? migrate_vma_setup(&args) : -EFAULT;
	if (!ret && (src & MIGRATE_PFN_MIGRATE)) {
		lock_page(dpage);
		copy_highpage(dpage, migrate_pfn_to_page(src));
		dst = migrate_pfn(page_to_pfn(dpage));
	}
	if (!ret) {
		migrate_vma_pages(&args);
		migrate_vma_finalize(&args);
	}
	mmap_read_unlock(current->mm);
	if (!dst)
		put_page(dpage);	/* never handed over: back to the driver */
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_ASSERT_EQ(test, get_user_pages_fast(addr, 1, 0, &now), 1);
	put_page(now);
	KUNIT_ASSERT_PTR_EQ_MSG(test, now, dpage, "migration to the device failed");
	KUNIT_ASSERT_TRUE(test, is_device_coherent_page(now));
	return dpage;
}

/*
 * A long-term pin of device-coherent memory (device RAM that the CPU maps
 * like its own, and that the device must always be able to take back):
 * the page is migrated to system memory first, by
 * migrate_device_coherent_page(), with the pin turned into a plain
 * reference meanwhile. The call pins the new system page, which user
 * space now maps with the data, and the device page goes back to its
 * driver (->page_free(), once). GUP-fast refuses the device page for
 * FOLL_LONGTERM and falls back to the slow path.
 */
static void pin_user_pages_longterm_migrates_device_coherent_page(struct kunit *test)
{
	const bool *fast = test->param_value;
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
				MEMORY_DEVICE_COHERENT | GUP_KUNIT_DEVMEM_RAM);
	unsigned long addr = gup_kunit_mmap(test, 2 * PAGE_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 2);
	struct gup_kunit_snap s;
	struct page *dpage;
	long ret;

	gup_kunit_fill(test, addr, 2);
	dpage = gup_kunit_migrate_to_coherent(test, d, addr);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_path(*fast, addr, 2, FOLL_WRITE | FOLL_LONGTERM,
				 p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 2L);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 2);
	KUNIT_EXPECT_PTR_NE(test, p->pages[0], dpage);
	KUNIT_EXPECT_FALSE(test, is_zone_device_page(p->pages[0]));
	KUNIT_EXPECT_TRUE(test, is_longterm_pinnable_page(p->pages[0]));
	KUNIT_EXPECT_TRUE(test, page_maybe_dma_pinned(p->pages[0]));
	gup_kunit_expect_mapped(test, addr, p->pages, 2);
	gup_kunit_expect_filled(test, p->pages, 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

/*
 * When the device-coherent page cannot be migrated (its driver holds a
 * reference that migration cannot account for), the long-term pin fails
 * with -EBUSY and leaves no pin behind: not on the device page, which
 * stays mapped with its data, and not on the pages after it in the range,
 * which __get_user_pages() had pinned already and the error path must
 * unpin.
 */
static void pin_user_pages_longterm_failed_coherent_migration_leaves_no_pin(struct kunit *test)
{
	const bool *fast = test->param_value;
	const long npages = 4;
	struct gup_kunit_devmem *d = gup_kunit_devmem(test,
				MEMORY_DEVICE_COHERENT | GUP_KUNIT_DEVMEM_RAM);
	unsigned long addr = gup_kunit_mmap(test, npages * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, npages);
	struct gup_kunit_snap s;
	struct page *dpage;
	long ret;

	gup_kunit_fill(test, addr, npages);
	dpage = gup_kunit_migrate_to_coherent(test, d, addr);
	get_page(dpage);	/* the driver's reference */
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_path(*fast, addr, npages,
				 FOLL_WRITE | FOLL_LONGTERM, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EBUSY);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_expect_mapped(test, addr, &dpage, 1);
	gup_kunit_expect_filled(test, &dpage, 1);
	gup_kunit_expect_none_pinned(test, addr, npages);
	/* Hand the device page back, so that the pgmap can go. */
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 0);
	put_page(dpage);
	KUNIT_EXPECT_EQ(test, vm_munmap(addr, npages * PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&d->frees), 1);
}
#endif /* CONFIG_DEVICE_PRIVATE */

#ifdef CONFIG_TRANSPARENT_HUGEPAGE
/*
 * A PMD-mapped THP: pinning all HPAGE_PMD_NR subpages counts exactly on
 * the huge folio, one reference and one compound pincount per subpage
 * (a large folio has an exact pincount, no bias), and each returned page
 * is the subpage mapped at its address. The unpin returns both counts.
 */
static void pin_user_pages_thp_counts_exactly_on_huge_folio(struct kunit *test)
{
	const bool *fast = test->param_value;
	unsigned long addr = gup_kunit_mmap(test, 2 * HPAGE_PMD_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	unsigned long start = ALIGN(addr, HPAGE_PMD_SIZE);
	struct gup_kunit_pins *p = gup_kunit_pins(test, HPAGE_PMD_NR);
	struct gup_kunit_snap s;
	struct folio *folio;
	struct page *page;
	long ret;

	KUNIT_ASSERT_EQ(test, do_madvise(current->mm, start, HPAGE_PMD_SIZE,
					 MADV_HUGEPAGE), 0);
	gup_kunit_fill(test, start, HPAGE_PMD_NR);
	KUNIT_ASSERT_EQ(test, get_user_pages_fast(start, 1, 0, &page), 1);
	folio = page_folio(page);
	put_page(page);
	if (!folio_test_large(folio))
		kunit_skip(test, "no THP at %#lx", start);
	lru_add_drain_all();
	gup_kunit_snap(folio, &s);
	ret = gup_kunit_pin_path(*fast, start, HPAGE_PMD_NR, FOLL_WRITE,
				 p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)HPAGE_PMD_NR);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, HPAGE_PMD_NR);
	GUP_KUNIT_EXPECT_FOLIO(test, folio, &s, HPAGE_PMD_NR, HPAGE_PMD_NR);
	gup_kunit_expect_mapped(test, start, p->pages, HPAGE_PMD_NR);
	gup_kunit_expect_filled(test, p->pages, HPAGE_PMD_NR);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	GUP_KUNIT_EXPECT_FOLIO(test, folio, &s, 0, 0);
}
#endif /* CONFIG_TRANSPARENT_HUGEPAGE */

/*
 * A short-term pin of a hugetlb range that starts three pages into the
 * first huge page and ends exactly at the end of the mapping (the second
 * huge page): the first folio gets GUP_KUNIT_HPAGE_NR - 3 pins, the
 * second GUP_KUNIT_HPAGE_NR, one reference each, and every page returned
 * is the subpage mapped at its address, holding its data.
 */
static void pin_user_pages_hugetlb_to_end_of_mapping_counts_per_folio(struct kunit *test)
{
	const bool *fast = test->param_value;
	const long off = 3, npages = 2 * GUP_KUNIT_HPAGE_NR - off;
	unsigned long addr = gup_kunit_mmap(test, 2 * PMD_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON | MAP_HUGETLB);
	unsigned long start = addr + off * PAGE_SIZE;
	struct gup_kunit_pins *p = gup_kunit_pins(test, npages);
	struct gup_kunit_snap s0, s1;
	struct folio *f0, *f1;
	struct page *page;
	long ret;

	gup_kunit_fill(test, start, npages);
	KUNIT_ASSERT_EQ(test, get_user_pages_fast(addr, 1, 0, &page), 1);
	f0 = page_folio(page);
	put_page(page);
	KUNIT_ASSERT_EQ(test, get_user_pages_fast(addr + PMD_SIZE, 1, 0,
						  &page), 1);
	f1 = page_folio(page);
	put_page(page);
	gup_kunit_snap(f0, &s0);
	gup_kunit_snap(f1, &s1);
	ret = gup_kunit_pin_path(*fast, start, npages, FOLL_WRITE, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, npages);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s0, npages);
	GUP_KUNIT_EXPECT_FOLIO(test, f0, &s0, GUP_KUNIT_HPAGE_NR - off,
			       GUP_KUNIT_HPAGE_NR - off);
	GUP_KUNIT_EXPECT_FOLIO(test, f1, &s1, GUP_KUNIT_HPAGE_NR,
			       GUP_KUNIT_HPAGE_NR);
	gup_kunit_expect_mapped(test, start, p->pages, npages);
	gup_kunit_expect_filled(test, p->pages, npages);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s0, 0);
	GUP_KUNIT_EXPECT_FOLIO(test, f0, &s0, 0, 0);
	GUP_KUNIT_EXPECT_FOLIO(test, f1, &s1, 0, 0);
}

/*
 * Shared anonymous memory is shmem: the pin returns the page-cache pages
 * that every mapping of the object shares, so a second mapping of the
 * same file sees the very pages pinned, and data written through a pin
 * appears in it. GUP-fast only (faulted memory) and the slow path.
 */
struct gup_kunit_shmem_case {
	const char *name;
	bool fast_only;
};

static const struct gup_kunit_shmem_case gup_kunit_shmem_cases[] = {
	{ "GUP-fast only", true },
	{ "slow path", false },
};

static void gup_kunit_shmem_desc(const struct gup_kunit_shmem_case *c,
				 char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_shmem, gup_kunit_shmem_cases,
		  gup_kunit_shmem_desc);

static void pin_user_pages_shmem_pins_shared_pages(struct kunit *test)
{
	const struct gup_kunit_shmem_case *c = test->param_value;
	const unsigned long len = GUP_KUNIT_NPAGES * PAGE_SIZE;
	unsigned long addr = gup_kunit_mmap(test, len, GUP_KUNIT_RW,
					    MAP_SHARED | MAP_ANONYMOUS);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct vm_area_struct *vma;
	unsigned long addr2;
	struct gup_kunit_snap s;
	struct file *file;
	u64 *kaddr, tag;
	long ret;

	mmap_read_lock(current->mm);
	vma = vma_lookup(current->mm, addr);
	file = vma && vma->vm_file ? get_file(vma->vm_file) : NULL;
	mmap_read_unlock(current->mm);
	KUNIT_ASSERT_NOT_NULL(test, file);
	KUNIT_EXPECT_TRUE(test, shmem_file(file));
	addr2 = vm_mmap(file, 0, len, GUP_KUNIT_RW, MAP_SHARED, 0);
	fput(file);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(addr2));

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	/* Fault in the second mapping too: it holds a reference per page. */
	gup_kunit_user_refs(test, addr2, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_snap_counters(&s);
	if (c->fast_only)
		ret = pin_user_pages_fast_only(addr, GUP_KUNIT_NPAGES,
					       FOLL_WRITE, p->pages);
	else
		ret = gup_kunit_pin_path(false, addr, GUP_KUNIT_NPAGES,
					 FOLL_WRITE, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_mapped(test, addr2, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_filled(test, p->pages, GUP_KUNIT_NPAGES);

	kaddr = kmap_local_page(p->pages[GUP_KUNIT_NPAGES - 1]);
	WRITE_ONCE(kaddr[2], 0x646d61ULL);	/* "dma", as a device would */
	kunmap_local(kaddr);
	KUNIT_EXPECT_EQ(test, copy_from_user(&tag, (void __user *)(addr2 +
				len - PAGE_SIZE + 16), sizeof(tag)), 0UL);
	KUNIT_EXPECT_EQ(test, tag, 0x646d61ULL);

	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_expect_unbiased(test, p->pages, GUP_KUNIT_NPAGES, ref0);
}

/* A driver's mmap that maps one kernel page with remap_pfn_range(). */
static int gup_kunit_pfnmap_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct page *page = file->private_data;

	return remap_pfn_range(vma, vma->vm_start, page_to_pfn(page),
			       PAGE_SIZE, vma->vm_page_prot);
}

static const struct file_operations gup_kunit_pfnmap_fops = {
	.mmap = gup_kunit_pfnmap_mmap,
};

/*
 * A VM_IO | VM_PFNMAP mapping (remap_pfn_range() from a driver's mmap, as
 * a device BAR would be) has no pages that GUP may hand out: GUP-fast
 * skips its special PTEs, and check_vma_flags() refuses the VMA with
 * -EFAULT. Nothing is pinned, and the page behind it is untouched.
 */
static void pin_user_pages_pfnmap_fails(struct kunit *test)
{
	struct gup_kunit_folio *f = gup_kunit_alloc(test, 0);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct vm_area_struct *vma;
	struct gup_kunit_snap s;
	unsigned long addr;
	vm_flags_t vm_flags;
	struct file *file;
	long ret;

	file = anon_inode_getfile("gup_kunit_pfnmap", &gup_kunit_pfnmap_fops,
				  &f->folio->page, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(file));
	addr = vm_mmap(file, 0, PAGE_SIZE, GUP_KUNIT_RW, MAP_SHARED, 0);
	fput(file);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "mmap: %ld",
			       (long)addr);
	mmap_read_lock(current->mm);
	vma = vma_lookup(current->mm, addr);
	vm_flags = vma ? vma->vm_flags : 0;
	mmap_read_unlock(current->mm);
	KUNIT_EXPECT_EQ(test, vm_flags & (VM_IO | VM_PFNMAP),
			(vm_flags_t)(VM_IO | VM_PFNMAP));

	gup_kunit_snap(f->folio, &s);
	ret = pin_user_pages_fast(addr, 1, FOLL_WRITE, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EFAULT);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	if (p->nr)
		gup_kunit_unpin(p);
	ret = gup_kunit_pin_path(false, addr, 1, 0, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EFAULT);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	if (p->nr)
		gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_FOLIO(test, f->folio, &s, 0, 0);
	KUNIT_EXPECT_EQ(test, vm_munmap(addr, PAGE_SIZE), 0);
}

#ifdef CONFIG_X86_VSYSCALL_EMULATION
/*
 * The gate area (x86-64's vsyscall page, vsyscall=emulate) has no VMA in
 * the mm: __get_user_pages() takes it from get_gate_page(), which grabs
 * the page with the caller's flags. So in 6.1 a FOLL_PIN read pin
 * succeeds and pins the kernel's vsyscall page like any other order-0
 * page (+ GUP_PIN_COUNTING_BIAS, counted), the same page that FOLL_GET
 * returns, and the unpin restores it.
 */
static void pin_user_pages_gate_area_pins_vsyscall_page(struct kunit *test)
{
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	struct page *page;
	long ret;

	if (!in_gate_area(current->mm, VSYSCALL_ADDR))
		kunit_skip(test, "no gate area (boot with vsyscall=emulate)");
	mmap_read_lock(current->mm);
	ret = get_user_pages(VSYSCALL_ADDR, 1, 0, &page, NULL);
	mmap_read_unlock(current->mm);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	put_page(page);

	gup_kunit_snap(page_folio(page), &s);
	ret = gup_kunit_pin_path(false, VSYSCALL_ADDR, 1, 0, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	KUNIT_EXPECT_PTR_EQ(test, p->pages[0], page);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s,
			       GUP_PIN_COUNTING_BIAS, 0, 1, 0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0, 1, 1);
}

/*
 * The gate page is read-only to user space: get_gate_page() refuses
 * FOLL_WRITE with -EFAULT before it grabs anything; GUP-fast refuses the
 * address already (access_ok(): it is above TASK_SIZE).
 */
static void pin_user_pages_gate_area_refuses_write(struct kunit *test)
{
	const bool *fast = test->param_value;
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	long ret;

	if (!in_gate_area(current->mm, VSYSCALL_ADDR))
		kunit_skip(test, "no gate area (boot with vsyscall=emulate)");
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_path(*fast, VSYSCALL_ADDR, 1, FOLL_WRITE,
				 p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EFAULT);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}
#endif /* CONFIG_X86_VSYSCALL_EMULATION */

/*
 * munmap() of pinned anonymous memory drops only the mapping's reference:
 * the pinned pages live on with their bias (refcount ref0 - 1 +
 * GUP_PIN_COUNTING_BIAS) and their data, and the unpin, which then drops
 * the last references and frees them, still balances the counters.
 */
static void munmap_while_pinned_keeps_pages_until_unpin(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	struct page *page;
	long i, ret;

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				  p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	KUNIT_ASSERT_EQ(test, vm_munmap(addr, GUP_KUNIT_NPAGES * PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, get_user_pages_fast(addr, 1, 0, &page),
			-EFAULT);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++)
		ref0[i]--;	/* the mapping's reference went with it */
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_expect_filled(test, p->pages, GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

/*
 * MADV_DONTNEED zaps the PTEs of pinned anonymous memory as it would any
 * other: the pinned pages stay alive (mapping reference gone, bias and
 * data kept), and the next write fault maps a different, zeroed page,
 * which is not pinned: the pin and the mapping have parted.
 */
static void madv_dontneed_while_pinned_refaults_new_page(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				  p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	KUNIT_ASSERT_EQ(test, do_madvise(current->mm, addr,
					 GUP_KUNIT_NPAGES * PAGE_SIZE,
					 MADV_DONTNEED), 0);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++)
		ref0[i]--;	/* the mapping's reference went with it */
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_expect_filled(test, p->pages, GUP_KUNIT_NPAGES);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++) {
		struct page *now;
		u64 *kaddr, tag;

		if (get_user_pages_fast(addr + i * PAGE_SIZE, 1, FOLL_WRITE,
					&now) != 1) {
			KUNIT_FAIL(test, "page %ld: no refault", i);
			continue;
		}
		kaddr = kmap_local_page(now);
		tag = kaddr[1];
		kunmap_local(kaddr);
		KUNIT_EXPECT_PTR_NE_MSG(test, now, p->pages[i], "page %ld", i);
		KUNIT_EXPECT_EQ_MSG(test, tag, 0ULL, "page %ld", i);
		KUNIT_EXPECT_FALSE_MSG(test, page_maybe_dma_pinned(now),
				       "page %ld", i);
		put_page(now);
	}
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

#if defined(CONFIG_SWAP) && defined(CONFIG_BLK_DEV_RAM) && defined(CONFIG_X86_64)
/*
 * Swap for one case: the ramdisk /dev/ram0 (brd.rd_nr=1 brd.rd_size= on
 * the kernel command line) as a swap area. Built-in KUnit runs before
 * user space: there is no /dev, so the case makes a block-device node in
 * the root filesystem; and there is no in-kernel swapon(), so it calls
 * the system call's x86-64 entry with the path in its own user memory.
 */
asmlinkage long __x64_sys_swapon(const struct pt_regs *regs);
asmlinkage long __x64_sys_swapoff(const struct pt_regs *regs);

#define GUP_KUNIT_SWAP_DEV	"/gup_kunit_ram0"

static int gup_kunit_swap_mknod(void)
{
	struct dentry *dentry;
	struct path path;
	int err;

	dentry = kern_path_create(AT_FDCWD, GUP_KUNIT_SWAP_DEV, &path, 0);
	if (IS_ERR(dentry))
		return PTR_ERR(dentry) == -EEXIST ? 0 : PTR_ERR(dentry);
	err = vfs_mknod(mnt_user_ns(path.mnt), d_inode(path.dentry), dentry,
			S_IFBLK | 0600, MKDEV(RAMDISK_MAJOR, 0));
	done_path_create(&path, dentry);
	return err;
}

/* Write a version-1 swap header ("SWAPSPACE2") over the whole ramdisk. */
static int gup_kunit_swap_mkswap(void)
{
	union swap_header *hdr;
	struct file *f;
	loff_t pos = 0, size;
	ssize_t n;

	f = filp_open(GUP_KUNIT_SWAP_DEV, O_RDWR | O_LARGEFILE, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	size = i_size_read(f->f_mapping->host);
	hdr = kzalloc(PAGE_SIZE, GFP_KERNEL);
	if (!hdr || size < 16 * PAGE_SIZE) {
		kfree(hdr);
		fput(f);
		return hdr ? -ENOSPC : -ENOMEM;
	}
	hdr->info.version = 1;
	hdr->info.last_page = size / PAGE_SIZE - 1;
	memcpy(hdr->magic.magic, "SWAPSPACE2", 10);
	n = kernel_write(f, hdr, PAGE_SIZE, &pos);
	kfree(hdr);
	if (n == PAGE_SIZE)
		n = vfs_fsync(f, 0);
	fput(f);
	return n < 0 ? n : 0;
}

/* swapon() or swapoff() of the ramdisk, through a user copy of its path. */
static long gup_kunit_swap_syscall(unsigned long ubuf, bool on)
{
	struct pt_regs regs = { .di = ubuf, .si = 0 };

	if (copy_to_user((void __user *)ubuf, GUP_KUNIT_SWAP_DEV,
			 sizeof(GUP_KUNIT_SWAP_DEV)))
		return -EFAULT;
	return on ? __x64_sys_swapon(&regs) : __x64_sys_swapoff(&regs);
}

/* MADV_PAGEOUT of one page: reclaim it now, swapping if it is anon. */
static int gup_kunit_pageout(unsigned long addr)
{
	lru_add_drain_all();	/* madvise_pageout() only isolates LRU folios */
	return do_madvise(current->mm, addr, PAGE_SIZE, MADV_PAGEOUT);
}

/*
 * Reclaim must not put a DMA-pinned anonymous folio in the swap cache
 * (feb889fb40fa, "mm: don't put pinned pages into the swap cache"): it
 * could not be unmapped anyway (the pin keeps it exclusive), and a swap
 * cache reference would later make a write fault copy it away from the
 * DMA. With swap on, MADV_PAGEOUT of a pinned page leaves it mapped, out
 * of the swap cache, with its pin; MADV_PAGEOUT of its unpinned
 * neighbour swaps that one out, which shows that swap works. swapoff at
 * the end brings it back.
 */
static void pageout_does_not_swap_pinned_anon_page(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, 3 * PAGE_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON);
	unsigned long ubuf = addr + 2 * PAGE_SIZE;
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	struct page *now;
	long ret, swapon;

	KUNIT_ASSERT_EQ(test, gup_kunit_swap_mknod(), 0);
	KUNIT_ASSERT_EQ_MSG(test, gup_kunit_swap_mkswap(), 0,
			    "no ramdisk (boot with brd.rd_nr=1 brd.rd_size=)");
	gup_kunit_fill(test, addr, 2);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast(addr, 1, FOLL_WRITE, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);

	swapon = gup_kunit_swap_syscall(ubuf, true);
	KUNIT_EXPECT_EQ(test, swapon, 0L);
	KUNIT_EXPECT_EQ(test, gup_kunit_pageout(addr), 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_pageout(addr + PAGE_SIZE), 0);
	KUNIT_EXPECT_FALSE(test, PageSwapCache(p->pages[0]));
	KUNIT_EXPECT_TRUE(test, page_maybe_dma_pinned(p->pages[0]));
	KUNIT_EXPECT_EQ(test, get_user_pages_fast_only(addr, 1, 0, &now), 1);
	if (now == p->pages[0])
		put_page(now);
	else
		KUNIT_FAIL(test, "the pinned page is no longer mapped");
	KUNIT_EXPECT_EQ_MSG(test, get_user_pages_fast_only(addr + PAGE_SIZE,
							   1, 0, &now), 0,
			    "the unpinned neighbour was not swapped out");
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	if (!swapon)
		KUNIT_EXPECT_EQ(test, gup_kunit_swap_syscall(ubuf, false), 0L);
	gup_kunit_expect_filled(test, p->pages, 1);
}
#endif /* CONFIG_SWAP && CONFIG_BLK_DEV_RAM && CONFIG_X86_64 */

/*
 * What fork() does to each exclusive anonymous page of the parent, under
 * the locks that copy_page_range() holds (mmap write lock,
 * write_protect_seq, PT lock): page_try_dup_anon_rmap(). On success it
 * shares the page with the (imaginary) child; undo that before dropping
 * the locks, so that the mm is as it was. Return its result and whether
 * the page was still exclusive afterwards.
 */
static int gup_kunit_try_dup(unsigned long addr, bool *exclusive)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct page *page = NULL;
	spinlock_t *ptl;		/* the PT lock of addr, from follow_pte() */
	pte_t *ptep;
	int ret = -ENOENT;

	mmap_write_lock(mm);
	raw_write_seqcount_begin(&mm->write_protect_seq);
	vma = vma_lookup(mm, addr);
	if (vma && !follow_pte(mm, addr, &ptep, &ptl)) {
		page = vm_normal_page(vma, addr, *ptep);
		if (page && PageAnon(page)) {
			ret = page_try_dup_anon_rmap(page, false, vma);
			*exclusive = PageAnonExclusive(page);
			if (!ret) {
				atomic_dec(&page->_mapcount);
				SetPageAnonExclusive(page);
			}
		}
		pte_unmap_unlock(ptep, ptl);
	}
	raw_write_seqcount_end(&mm->write_protect_seq);
	mmap_write_unlock(mm);
	return ret;
}

/*
 * fork() must not share a pinned exclusive anonymous page with the child
 * (the child's COW would otherwise let the parent's next write fault
 * replace the page under the DMA): page_try_dup_anon_rmap() refuses with
 * -EBUSY and leaves it exclusive, even for a read-only pin (FOLL_PIN
 * without FOLL_WRITE), because the mm is MMF_HAS_PINNED and the page
 * maybe-pinned. Once unpinned, the same page may be shared: 0, and no
 * longer exclusive. 6.1 has no in-kernel fork for a test, so this calls
 * the function fork uses, under fork's locks.
 */
static void fork_refuses_to_share_pinned_anon_page(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, PAGE_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	bool exclusive = false;
	long ret;

	gup_kunit_fill(test, addr, 1);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast(addr, 1, 0, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 1);
	KUNIT_ASSERT_TRUE(test, PageAnonExclusive(p->pages[0]));
	KUNIT_EXPECT_EQ(test, gup_kunit_try_dup(addr, &exclusive),
			-EBUSY);
	KUNIT_EXPECT_TRUE(test, exclusive);
	KUNIT_EXPECT_EQ(test, page_mapcount(p->pages[0]), 1);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_try_dup(addr, &exclusive), 0);
	KUNIT_EXPECT_FALSE(test, exclusive);
}

static struct kunit_case gup_pin_user_cases[] = {
	KUNIT_CASE(pin_user_pages_fast_pins_mapped_anon_pages),
	KUNIT_CASE(get_user_pages_fast_takes_references_not_pins),
	KUNIT_CASE(pin_user_pages_read_of_unwritten_memory_is_zero_page),
	KUNIT_CASE(pin_user_pages_unmapped_address_fails),
	KUNIT_CASE(pin_user_pages_range_into_hole_pins_prefix),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_migrates_movable_pages,
			 gup_kunit_lt_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_failed_migration_leaves_no_pin,
			 gup_kunit_path_gen_params),
#ifdef CONFIG_DEVICE_PRIVATE
	KUNIT_CASE_PARAM(pin_user_pages_longterm_migrates_device_coherent_page,
			 gup_kunit_path_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_failed_coherent_migration_leaves_no_pin,
			 gup_kunit_path_gen_params),
#endif
	KUNIT_CASE(pin_user_pages_remote_pins_pages_of_given_mm),
	KUNIT_CASE(pin_user_pages_unlocked_faults_in_and_pins),
	KUNIT_CASE(pin_user_pages_fast_only_pins_faulted_pages),
	KUNIT_CASE(pin_user_pages_fast_only_never_faults),
	KUNIT_CASE(pin_user_pages_fast_with_foll_get_warns_and_fails),
	KUNIT_CASE_PARAM(pin_user_pages_beyond_protection_fails,
			 gup_kunit_access_gen_params),
#ifdef CONFIG_TRANSPARENT_HUGEPAGE
	KUNIT_CASE_PARAM(pin_user_pages_thp_counts_exactly_on_huge_folio,
			 gup_kunit_path_gen_params),
#endif
	KUNIT_CASE_PARAM(pin_user_pages_hugetlb_to_end_of_mapping_counts_per_folio,
			 gup_kunit_path_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_shmem_pins_shared_pages,
			 gup_kunit_shmem_gen_params),
	KUNIT_CASE(pin_user_pages_pfnmap_fails),
#ifdef CONFIG_X86_VSYSCALL_EMULATION
	KUNIT_CASE(pin_user_pages_gate_area_pins_vsyscall_page),
	KUNIT_CASE_PARAM(pin_user_pages_gate_area_refuses_write,
			 gup_kunit_path_gen_params),
#endif
	KUNIT_CASE(munmap_while_pinned_keeps_pages_until_unpin),
	KUNIT_CASE(madv_dontneed_while_pinned_refaults_new_page),
#if defined(CONFIG_SWAP) && defined(CONFIG_BLK_DEV_RAM) && defined(CONFIG_X86_64)
	KUNIT_CASE(pageout_does_not_swap_pinned_anon_page),
#endif
	KUNIT_CASE(fork_refuses_to_share_pinned_anon_page),
	KUNIT_CASE_PARAM(pin_user_pages_read_of_cow_shared_page_unshares,
			 gup_kunit_path_gen_params),
	{}
};

static struct kunit_suite gup_pin_user_suite = {
	.name = "gup_pin_user",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_user_cases,
};
