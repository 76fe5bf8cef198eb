// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of pin_user_pages*() on real user address spaces.
 *
 * Included by mm/gup_kunit.c (itself included at the end of mm/gup.c),
 * after the helpers it uses: the counter snapshots and their EXPECT
 * macros, the WARN accounting and the case start line. Not built on its
 * own.
 */

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

static void pin_user_pages_longterm_migrates_movable_pages(struct kunit *test)
{
	const struct gup_kunit_lt_case *c = test->param_value;
	unsigned long len = c->hugetlb ? 2 * PMD_SIZE :
			    (c->offset + c->npages) * PAGE_SIZE;
	unsigned long addr = gup_kunit_mmap(test, len, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON |
					    (c->hugetlb ? MAP_HUGETLB : 0));
	unsigned long start = addr + c->offset * PAGE_SIZE;
	struct gup_kunit_pins *p = gup_kunit_pins(test, c->npages);
	struct gup_kunit_snap s;
	struct page *before;
	long i, ret;

	gup_kunit_fill(test, start, c->npages);
	KUNIT_ASSERT_EQ(test, get_user_pages_fast(start, 1, 0, &before), 1);
	put_page(before);
	if (page_zonenum(before) != ZONE_MOVABLE)
		kunit_skip(test, "memory not in ZONE_MOVABLE (movablecore=)");

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

static struct kunit_case gup_pin_user_cases[] = {
	KUNIT_CASE(pin_user_pages_fast_pins_mapped_anon_pages),
	KUNIT_CASE(get_user_pages_fast_takes_references_not_pins),
	KUNIT_CASE(pin_user_pages_read_of_unwritten_memory_is_zero_page),
	KUNIT_CASE(pin_user_pages_unmapped_address_fails),
	KUNIT_CASE(pin_user_pages_range_into_hole_pins_prefix),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_migrates_movable_pages,
			 gup_kunit_lt_gen_params),
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
