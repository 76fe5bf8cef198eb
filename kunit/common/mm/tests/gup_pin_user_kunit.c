// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of pin_user_pages*() on real user memory
 * (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_user: pin_user_pages*() and get_user_pages*() on a user address
 * space that each case gets for itself (gup_kunit_user_init()): anonymous,
 * THP, hugetlb and shmem memory, VM_PFNMAP and the gate area, holes and
 * protections, FOLL_LONGTERM migration and its failures, device-coherent
 * pages, munmap, MADV_DONTNEED and MADV_PAGEOUT while pinned, fork() and
 * COW unsharing.
 */

#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/pagemap.h>
#include <linux/shmem_fs.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include <trace/events/pagemap.h>
#include <asm/tlbflush.h>
#ifdef CONFIG_X86_VSYSCALL_EMULATION
#include <asm/vsyscall.h>
#endif
#include "gup_kunit.h"

/*
 * pin_user_pages_fast() of faulted anonymous memory: the pages returned
 * are the ones mapped there, each gains GUP_PIN_COUNTING_BIAS and reads
 * as pinned, the mm is marked as having pinned pages, the counters move
 * by exactly one per page, and the unpin restores every refcount.
 */
static void pin_user_pages_fast_pins_mapped_anon_pages(struct kunit *test)
{
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	unsigned long addr = gup_kunit_fill_and_snap(test, ref0, &s);
	long ret;

	ret = pin_user_pages_fast(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				  p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, true);
	KUNIT_EXPECT_TRUE(test, test_bit(MMF_HAS_PINNED, &current->mm->flags));
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, GUP_KUNIT_NPAGES, 0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, GUP_KUNIT_NPAGES, GUP_KUNIT_NPAGES);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, false);
}

/* get_user_pages_fast() takes one plain reference per page: no pin. */
static void get_user_pages_fast_takes_references_not_pins(struct kunit *test)
{
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	unsigned long addr = gup_kunit_fill_and_snap(test, ref0, &s);
	long i, ret;

	p->foll_get = true;
	ret = get_user_pages_fast(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				  p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++) {
		KUNIT_EXPECT_EQ(test, page_ref_count(p->pages[i]), ref0[i] + 1);
		KUNIT_EXPECT_FALSE(test, gup_kunit_page_pinned(p->pages[i]));
	}
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, 0, 0);
}

/*
 * A read-only pin of private anonymous memory that was never written
 * returns the shared zero page, without touching its refcount or counting
 * a pin; unpinning it is a no-op. GUP-fast and the slow path.
 */
static void pin_user_pages_read_of_unwritten_memory_is_zero_page(struct kunit *test)
{
	const enum gup_kunit_path *path = test->param_value;
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    PROT_READ, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int zero_ref = page_ref_count(ZERO_PAGE(0));
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(*path, addr, GUP_KUNIT_NPAGES, 0, p->pages);
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

/*
 * A read-only long-term pin of never-written private memory, GUP-fast and
 * the slow path. Where the kernel pins what is mapped (6.1), that is the
 * zero page, which may stay where it is: no migration, no pin counted.
 * Since 84209e87c696 ("mm/gup: reliable R/O long-term pinning in COW
 * mappings", v6.2) GUP breaks COW first, as a write fault would (a later
 * write would otherwise replace the page under the DMA): the pins are of
 * fresh, exclusive anonymous pages, now mapped, each counted, and GUP-fast
 * leaves the zero page to the slow path.
 */
static void pin_user_pages_longterm_read_of_unwritten_memory(struct kunit *test)
{
	const enum gup_kunit_path *path = test->param_value;
	unsigned long addr = gup_kunit_mmap(test, GUP_KUNIT_NPAGES * PAGE_SIZE,
					    PROT_READ, GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	bool unshares = gup_kunit_longterm_ro_pin_unshares();
	long pinned = unshares ? GUP_KUNIT_NPAGES : 0;
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(*path, addr, GUP_KUNIT_NPAGES, FOLL_LONGTERM,
			       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++) {
		struct page *page = p->pages[i];

		KUNIT_EXPECT_EQ_MSG(test, is_zero_page(page), !unshares,
				    "page %ld", i);
		KUNIT_EXPECT_EQ_MSG(test, PageAnon(page) && PageAnonExclusive(page),
				    unshares, "page %ld", i);
		KUNIT_EXPECT_EQ_MSG(test, gup_kunit_page_pinned(page), unshares,
				    "page %ld", i);
		KUNIT_EXPECT_TRUE_MSG(test, gup_kunit_longterm_pinnable(page),
				      "page %ld", i);
	}
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, pinned, 0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, pinned, pinned);
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
	ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
			       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, mapped);
	for (i = 0; i < min(ret, mapped); i++)
		KUNIT_EXPECT_TRUE(test, gup_kunit_page_pinned(p->pages[i]));
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
	enum gup_kunit_path path;
	long offset;		/* first page, in pages from the mapping */
	long npages;
};

static const struct gup_kunit_lt_case gup_kunit_lt_cases[] = {
	{ "anon slow", false, GUP_KUNIT_SLOW, 0, GUP_KUNIT_NPAGES },
	{ "anon fast", false, GUP_KUNIT_FAST, 0, GUP_KUNIT_NPAGES },
	{ "hugetlb slow aligned", true, GUP_KUNIT_SLOW, 0,
	  2 * GUP_KUNIT_HPAGE_NR },
	{ "hugetlb slow unaligned", true, GUP_KUNIT_SLOW, 3,
	  GUP_KUNIT_HPAGE_NR },
	{ "hugetlb fast aligned", true, GUP_KUNIT_FAST, 0,
	  2 * GUP_KUNIT_HPAGE_NR },
	{ "hugetlb fast unaligned", true, GUP_KUNIT_FAST, 3,
	  GUP_KUNIT_HPAGE_NR },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_lt, gup_kunit_lt_cases,
			    struct gup_kunit_lt_case);

static void pin_user_pages_longterm_migrates_movable_pages(struct kunit *test)
{
	const struct gup_kunit_lt_case *c = test->param_value;
	unsigned long len = c->hugetlb ? 2 * PMD_SIZE :
			    (c->offset + c->npages) * PAGE_SIZE;
	unsigned long addr = gup_kunit_mmap_movable(test, len, c->hugetlb ?
						    MAP_HUGETLB : 0, c->offset,
						    c->npages);
	unsigned long start = addr + c->offset * PAGE_SIZE;
	struct gup_kunit_pins *p = gup_kunit_pins(test, c->npages);
	struct gup_kunit_snap s;
	long i, ret;

	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(c->path, start, c->npages,
			       FOLL_WRITE | FOLL_LONGTERM, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, c->npages);
	for (i = 0; i < c->npages; i++) {
		if (!gup_kunit_longterm_pinnable(p->pages[i]) ||
		    !gup_kunit_page_pinned(p->pages[i])) {
			KUNIT_FAIL(test, "page %ld: zone %d, pinned %d", i,
				   page_zonenum(p->pages[i]),
				   gup_kunit_page_pinned(p->pages[i]));
			break;
		}
	}
	gup_kunit_expect_mapped(test, start, p->pages, c->npages);
	gup_kunit_expect_filled(test, p->pages, c->npages);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, c->npages);
	if (c->hugetlb)
		KUNIT_EXPECT_EQ(test,
				gup_kunit_pincount(page_folio(p->pages[0])),
				(int)min(c->npages, GUP_KUNIT_HPAGE_NR - c->offset));
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

/* ------------------------------------------------------------------ */
/* The other entry points, error paths, memory kinds, lifecycle        */
/* ------------------------------------------------------------------ */

/*
 * pin_user_pages_remote() on the caller's own mm (6.1 signature: vmas and
 * locked both NULL, so the caller holds mmap_read_lock throughout): the
 * pages mapped there, + GUP_PIN_COUNTING_BIAS each, balanced by the unpin.
 */
static void pin_user_pages_remote_pins_pages_of_given_mm(struct kunit *test)
{
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	unsigned long addr = gup_kunit_fill_and_snap(test, ref0, &s);
	long ret;

	mmap_read_lock(current->mm);
	ret = gup_kunit_pin_user_pages_remote(current->mm, addr,
					      GUP_KUNIT_NPAGES, FOLL_WRITE,
					      p->pages);
	mmap_read_unlock(current->mm);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_filled(test, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, true);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, false);
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

/* GUP-fast alone (FOLL_FAST_ONLY) pins all of faulted memory. */
static void gup_fast_only_pins_faulted_pages(struct kunit *test)
{
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	unsigned long addr = gup_kunit_fill_and_snap(test, ref0, &s);
	long ret;

	ret = gup_kunit_pin_by(GUP_KUNIT_FAST_ONLY, addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
			       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_expect_mapped(test, addr, p->pages, GUP_KUNIT_NPAGES);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, true);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, false);
}

/*
 * GUP-fast alone never faults: of memory whose second half was
 * never touched it pins the faulted first half and returns that count
 * (never -errno), and the untouched half stays unmapped.
 */
static void gup_fast_only_never_faults(struct kunit *test)
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
	ret = gup_kunit_pin_by(GUP_KUNIT_FAST_ONLY, addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
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
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);
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
	enum gup_kunit_path path;
};

static const struct gup_kunit_access_case gup_kunit_access_cases[] = {
	{ "write pin of PROT_READ, slow", PROT_READ, FOLL_WRITE,
	  GUP_KUNIT_SLOW },
	{ "write pin of PROT_READ, fast", PROT_READ, FOLL_WRITE,
	  GUP_KUNIT_FAST },
	{ "read pin of PROT_NONE, slow", PROT_NONE, 0, GUP_KUNIT_SLOW },
	{ "read pin of PROT_NONE, fast", PROT_NONE, 0, GUP_KUNIT_FAST },
	{ "write pin of PROT_NONE, fast", PROT_NONE, FOLL_WRITE,
	  GUP_KUNIT_FAST },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_access, gup_kunit_access_cases,
			    struct gup_kunit_access_case);

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
	ret = gup_kunit_pin_by(c->path, addr, GUP_KUNIT_NPAGES, c->flags,
			       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EFAULT);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

KUNIT_ARRAY_PARAM(gup_kunit_path, gup_kunit_paths, gup_kunit_path_desc);

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
	const enum gup_kunit_path *path = test->param_value;
	const struct gup_kunit_lt_case *c = &gup_kunit_lt_cases[0];
	const long last = c->npages - 1;
	unsigned long addr = gup_kunit_mmap_movable(test, c->npages * PAGE_SIZE,
						    0, 0, c->npages);
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
	ret = gup_kunit_pin_by(*path, addr, c->npages,
			       FOLL_WRITE | FOLL_LONGTERM, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-ENOMEM);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_node_stat(NR_ISOLATED_ANON), isolated);
	gup_kunit_expect_mapped(test, addr + last * PAGE_SIZE, &page, 1);
	kaddr = kmap_local_page(page);
	tag = kaddr[1];
	kunmap_local(kaddr);
	KUNIT_EXPECT_EQ(test, tag, GUP_KUNIT_TAG(last));
	lru_add_drain_all();
	KUNIT_EXPECT_TRUE(test, PageLRU(page));
	KUNIT_EXPECT_EQ(test, page_ref_count(page), ref0[last]);
	gup_kunit_expect_mapped(test, addr, NULL, c->npages);
}

/*
 * Which per-CPU LRU batches a long-term pin drains before it migrates a
 * page out of ZONE_MOVABLE. A page that waits in a batch cannot be
 * isolated, and the batch's reference would make migration fail, so
 * collect_longterm_unpinnable_*() drains when the page's count shows a
 * reference beyond its mappings and the pin: first this CPU's batch
 * (lru_add_drain()), then, only if that did not account for it, every
 * CPU's (lru_add_drain_all(), which queues a work item on each CPU with
 * a batch and waits for them all). Each row leaves a bystander page in
 * the other CPU's batch, which only lru_add_drain_all() moves to the LRU,
 * and one in this CPU's batch, which the pin of a page already on the LRU
 * must not drain unless migration itself drains this CPU
 * (gup_kunit_migration_drains_this_cpu()). Anything that runs on this CPU
 * may drain its batch too (a full batch, an munmap()), so the case
 * watches the mm_lru_insertion tracepoint for the bystander's move to the
 * LRU by the pinning task itself.
 * (A THP row, never drained for, would need MADV_HUGEPAGE, which wakes
 * khugepaged, whose every pass starts with lru_add_drain_all().)
 */
enum gup_kunit_drain_target {
	GUP_KUNIT_ON_LRU,		/* on the LRU already */
	GUP_KUNIT_BATCHED_HERE,		/* in the batch of the pinning CPU */
	GUP_KUNIT_BATCHED_THERE,	/* in the other CPU's batch */
};

struct gup_kunit_drain_case {
	const char *name;
	enum gup_kunit_drain_target target;
	bool drains_all;
};

static const struct gup_kunit_drain_case gup_kunit_drain_cases[] = {
	{ "page on the LRU", GUP_KUNIT_ON_LRU, false },
	{ "page in this CPU's batch", GUP_KUNIT_BATCHED_HERE, false },
	{ "page in another CPU's batch", GUP_KUNIT_BATCHED_THERE, true },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_drain, gup_kunit_drain_cases,
			    struct gup_kunit_drain_case);

/* Did @task move @folio from an LRU batch to the LRU? */
struct gup_kunit_lru_watch {
	struct folio *folio;
	struct task_struct *task;
	atomic_t moved;
};

static void gup_kunit_lru_probe(void *data, struct folio *folio)
{
	struct gup_kunit_lru_watch *w = data;

	if (folio == w->folio && current == w->task)
		atomic_inc(&w->moved);
}

/*
 * Map one page of ZONE_MOVABLE, faulted in on @cpu, so that it waits in
 * that CPU's LRU batch; the case is back on @home at return.
 */
static unsigned long gup_kunit_movable_faulted_on(struct kunit *test,
						  int cpu, int home)
{
	int tries;

	for (tries = 0; tries < 8; tries++) {
		unsigned long addr = gup_kunit_mmap(test, PAGE_SIZE,
						    GUP_KUNIT_RW,
						    GUP_KUNIT_ANON);

		gup_kunit_on_cpu(test, cpu);
		gup_kunit_fill(test, addr, 1);
		gup_kunit_on_cpu(test, home);
		if (folio_zonenum(gup_kunit_user_folio(test, addr)) ==
		    ZONE_MOVABLE)
			return addr;
	}
	kunit_skip(test, GUP_KUNIT_NEEDS_MOVABLE);
	return 0;
}

/*
 * Set up a row of the drain case: the page to pin, mapped at *@addr where
 * @c puts it, and the bystanders, *@bystander in the other CPU's batch and
 * *@local in this CPU's. Anything else may drain a batch at any time (a
 * case's mm torn down late on the other CPU, another task's drain of
 * every CPU), so return whether all three were where the row needs them
 * once set up; if not, the caller unmaps them and tries again.
 */
static bool gup_kunit_drain_setup(struct kunit *test,
				  const struct gup_kunit_drain_case *c,
				  int other, int home, unsigned long *addr,
				  unsigned long *bystander, unsigned long *local)
{
	*bystander = gup_kunit_mmap(test, PAGE_SIZE, GUP_KUNIT_RW,
				    GUP_KUNIT_ANON);
	gup_kunit_on_cpu(test, other);
	gup_kunit_fill(test, *bystander, 1);
	gup_kunit_on_cpu(test, home);

	*addr = gup_kunit_movable_faulted_on(test, c->target ==
					     GUP_KUNIT_BATCHED_THERE ? other :
					     home, home);
	if (c->target == GUP_KUNIT_ON_LRU)
		lru_add_drain();
	*local = gup_kunit_mmap(test, PAGE_SIZE, GUP_KUNIT_RW, GUP_KUNIT_ANON);
	gup_kunit_fill(test, *local, 1);
	return gup_kunit_lru_batched(gup_kunit_user_folio(test, *addr)) ==
	       (c->target != GUP_KUNIT_ON_LRU) &&
	       gup_kunit_lru_batched(gup_kunit_user_folio(test, *bystander)) &&
	       gup_kunit_lru_batched(gup_kunit_user_folio(test, *local));
}

static void pin_user_pages_longterm_drains_only_the_lru_batches_it_needs(struct kunit *test)
{
	const struct gup_kunit_drain_case *c = test->param_value;
	int other = gup_kunit_other_cpu(test);
	int home = raw_smp_processor_id();
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_lru_watch watch = { .task = current };
	unsigned long addr, bystander, local;
	bool local_drained = c->target != GUP_KUNIT_ON_LRU ||
			     gup_kunit_migration_drains_this_cpu();
	int tries;
	long ret;

	for (tries = 1; !gup_kunit_drain_setup(test, c, other, home, &addr,
					       &bystander, &local); tries++) {
		KUNIT_ASSERT_LT_MSG(test, tries, 8,
				    "a batch was drained under the case %d times",
				    tries);
		vm_munmap(addr, PAGE_SIZE);
		vm_munmap(bystander, PAGE_SIZE);
		vm_munmap(local, PAGE_SIZE);
	}
	watch.folio = gup_kunit_user_folio(test, local);

	KUNIT_ASSERT_EQ(test, register_trace_mm_lru_insertion(gup_kunit_lru_probe,
							      &watch), 0);
	ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, addr, 1, FOLL_WRITE | FOLL_LONGTERM,
			       p->pages);
	unregister_trace_mm_lru_insertion(gup_kunit_lru_probe, &watch);
	tracepoint_synchronize_unregister();
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	KUNIT_EXPECT_EQ_MSG(test,
			    gup_kunit_lru_batched(gup_kunit_user_folio(test,
								       bystander)),
			    !c->drains_all,
			    "the other CPU's batch was%s drained",
			    c->drains_all ? " not" : "");
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&watch.moved) > 0, local_drained,
			    "this CPU's batch was%s drained by the pin",
			    local_drained ? " not" : "");
	KUNIT_EXPECT_TRUE(test, gup_kunit_longterm_pinnable(p->pages[0]));
	KUNIT_EXPECT_TRUE(test, gup_kunit_page_pinned(p->pages[0]));
	gup_kunit_expect_mapped(test, addr, p->pages, 1);
	gup_kunit_expect_filled(test, p->pages, 1);
	gup_kunit_unpin(p);
}

/*
 * What fork()'s copy_present_pte() does to the exclusive anonymous page
 * mapped at @addr, under the locks that copy_page_range() holds (mmap
 * write lock, write_protect_seq, PT lock): try to share it with an
 * (imaginary) child, gup_kunit_dup_anon_rmap(). Return its result; in
 * *@exclusive, whether the page was still exclusive afterwards. If it
 * shared the page and @keep, the PTE is write-protected as after fork()
 * and *@shared is the page, with the child's reference; if it shared the
 * page and not @keep, the share is undone before the locks are dropped,
 * so that the mm is as it was.
 */
static int gup_kunit_fork_share(unsigned long addr, bool keep,
				struct page **shared, bool *exclusive)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct page *page;
	spinlock_t *ptl;		/* the PT lock of addr */
	pte_t *ptep;
	int ret = -ENOENT;

	mmap_write_lock(mm);
	raw_write_seqcount_begin(&mm->write_protect_seq);
	vma = vma_lookup(mm, addr);
	ptep = vma ? get_locked_pte(mm, addr, &ptl) : NULL;
	if (ptep) {
		page = vm_normal_page(vma, addr, ptep_get(ptep));
		if (page && PageAnon(page)) {
			ret = gup_kunit_dup_anon_rmap(page, vma);
			*exclusive = PageAnonExclusive(page);
		}
		if (!ret && keep) {
			get_page(page);
			ptep_set_wrprotect(mm, addr, ptep);
			*shared = page;
		} else if (!ret) {
			atomic_dec(&page->_mapcount);
			SetPageAnonExclusive(page);
		}
		pte_unmap_unlock(ptep, ptl);
		if (!ret && keep)
			flush_tlb_page(vma, addr);
	}
	raw_write_seqcount_end(&mm->write_protect_seq);
	mmap_write_unlock(mm);
	return ret;
}

/*
 * The imaginary child's share of a page that gup_kunit_cow_share() shared:
 * a KUnit resource. The case ends it with gup_kunit_child_exit(), while
 * the case's mm still exists, as the child's exit would: its rmap and its
 * reference go. Should the case end early, the release drops them with no
 * mm to hand; the page's mapped-page statistics are then off by one.
 */
static void gup_kunit_child_release(struct kunit_resource *res)
{
	struct page *page = res->data;

	if (!page)
		return;
	atomic_dec(&page->_mapcount);
	put_page(page);
}

static int gup_kunit_child_init(struct kunit_resource *res, void *page)
{
	res->data = page;
	return 0;
}

/*
 * Share the exclusive anonymous page at @addr with an imaginary child, as
 * fork() does. The page is then COW-shared: mapped read-only, not
 * exclusive, mapcount 2, until gup_kunit_child_exit().
 */
static struct kunit_resource *gup_kunit_cow_share(struct kunit *test,
						  unsigned long addr)
{
	struct kunit_resource *child;
	struct page *page = NULL;
	bool exclusive;

	KUNIT_ASSERT_EQ_MSG(test, gup_kunit_fork_share(addr, true, &page,
						       &exclusive), 0,
			    "cannot COW-share %#lx", addr);
	child = kunit_alloc_and_get_resource(test, gup_kunit_child_init,
					     gup_kunit_child_release,
					     GFP_KERNEL, page);
	KUNIT_ASSERT_NOT_NULL(test, child);
	kunit_put_resource(child);
	return child;
}

/*
 * The child exits: it unmaps the page it shared (mapped in @addr's VMA),
 * under a PT lock, as zap_pte_range() does: the rmap's statistics are
 * per-CPU and need preemption off.
 */
static void gup_kunit_child_exit(struct kunit_resource *child,
				 unsigned long addr)
{
	struct mm_struct *mm = current->mm;
	struct page *page = child->data;
	struct vm_area_struct *vma;
	spinlock_t *ptl;		/* the PT lock of addr */
	pte_t *ptep;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, addr);
	ptep = vma ? get_locked_pte(mm, addr, &ptl) : NULL;
	if (ptep) {
		gup_kunit_remove_anon_rmap(page, vma);
		pte_unmap_unlock(ptep, ptl);
		put_page(page);
		child->data = NULL;
	}
	mmap_read_unlock(mm);
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
	const enum gup_kunit_path *path = test->param_value;
	unsigned long addr = gup_kunit_mmap(test, PAGE_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct kunit_resource *child;
	struct gup_kunit_snap s;
	struct page *shared;
	long ret;

	gup_kunit_fill(test, addr, 1);
	child = gup_kunit_cow_share(test, addr);
	shared = child->data;
	KUNIT_ASSERT_FALSE(test, PageAnonExclusive(shared));
	KUNIT_ASSERT_EQ(test, folio_mapcount(page_folio(shared)), 2);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(*path, addr, 1, 0, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 1);
	KUNIT_EXPECT_PTR_NE(test, p->pages[0], shared);
	KUNIT_EXPECT_TRUE(test, PageAnonExclusive(p->pages[0]));
	KUNIT_EXPECT_TRUE(test, gup_kunit_page_pinned(p->pages[0]));
	gup_kunit_expect_mapped(test, addr, p->pages, 1);
	gup_kunit_expect_filled(test, p->pages, 1);
	KUNIT_EXPECT_FALSE(test, gup_kunit_page_pinned(shared));
	KUNIT_EXPECT_EQ(test, folio_mapcount(page_folio(shared)), 1);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_child_exit(child, addr);
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
	const enum gup_kunit_path *path = test->param_value;
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
	ret = gup_kunit_pin_by(*path, addr, 2, FOLL_WRITE | FOLL_LONGTERM,
			       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 2L);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 2);
	KUNIT_EXPECT_PTR_NE(test, p->pages[0], dpage);
	KUNIT_EXPECT_FALSE(test, is_zone_device_page(p->pages[0]));
	KUNIT_EXPECT_TRUE(test, gup_kunit_longterm_pinnable(p->pages[0]));
	KUNIT_EXPECT_TRUE(test, gup_kunit_page_pinned(p->pages[0]));
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
	const enum gup_kunit_path *path = test->param_value;
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
	ret = gup_kunit_pin_by(*path, addr, npages,
			       FOLL_WRITE | FOLL_LONGTERM, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EBUSY);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_expect_mapped(test, addr, &dpage, 1);
	gup_kunit_expect_filled(test, &dpage, 1);
	gup_kunit_expect_mapped(test, addr, NULL, npages);
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
	const enum gup_kunit_path *path = test->param_value;
	unsigned long addr = gup_kunit_mmap(test, 2 * HPAGE_PMD_SIZE,
					    GUP_KUNIT_RW, GUP_KUNIT_ANON);
	unsigned long start = ALIGN(addr, HPAGE_PMD_SIZE);
	struct gup_kunit_pins *p = gup_kunit_pins(test, HPAGE_PMD_NR);
	struct gup_kunit_snap s;
	struct folio *folio;
	long ret;

	KUNIT_ASSERT_EQ(test, do_madvise(current->mm, start, HPAGE_PMD_SIZE,
					 MADV_HUGEPAGE), 0);
	gup_kunit_fill(test, start, HPAGE_PMD_NR);
	folio = gup_kunit_user_folio(test, start);
	if (!folio_test_large(folio))
		kunit_skip(test, "needs a THP: none at %#lx", start);
	lru_add_drain_all();
	gup_kunit_snap(folio, &s);
	ret = gup_kunit_pin_by(*path, start, HPAGE_PMD_NR, FOLL_WRITE,
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
	const enum gup_kunit_path *path = test->param_value;
	const long off = 3, npages = 2 * GUP_KUNIT_HPAGE_NR - off;
	unsigned long addr = gup_kunit_mmap(test, 2 * PMD_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON | MAP_HUGETLB);
	unsigned long start = addr + off * PAGE_SIZE;
	struct gup_kunit_pins *p = gup_kunit_pins(test, npages);
	struct gup_kunit_snap s0, s1;
	struct folio *f0, *f1;
	long ret;

	gup_kunit_fill(test, start, npages);
	f0 = gup_kunit_user_folio(test, addr);
	f1 = gup_kunit_user_folio(test, addr + PMD_SIZE);
	gup_kunit_snap(f0, &s0);
	gup_kunit_snap(f1, &s1);
	ret = gup_kunit_pin_by(*path, start, npages, FOLL_WRITE, p->pages);
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
	enum gup_kunit_path path;
};

static const struct gup_kunit_shmem_case gup_kunit_shmem_cases[] = {
	{ "GUP-fast only", GUP_KUNIT_FAST_ONLY },
	{ "slow path", GUP_KUNIT_SLOW },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_shmem, gup_kunit_shmem_cases,
			    struct gup_kunit_shmem_case);

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
	addr2 = gup_kunit_vm_mmap(test, file, len, GUP_KUNIT_RW, MAP_SHARED);
	fput(file);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(addr2));

	gup_kunit_fill(test, addr, GUP_KUNIT_NPAGES);
	/* Fault in the second mapping too: it holds a reference per page. */
	gup_kunit_user_refs(test, addr2, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_user_refs(test, addr, GUP_KUNIT_NPAGES, ref0);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(c->path, addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
			       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, true);
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
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, false);
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
	long ret;

	addr = gup_kunit_mmap_driver(test, "gup_kunit_pfnmap",
				     &gup_kunit_pfnmap_fops, &f->folio->page);
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
	ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, addr, 1, 0, p->pages);
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
 * Is there a gate area that user space may read? vsyscall=xonly, x86-64's
 * default, leaves one that is execute-only: GUP refuses it (-EFAULT)
 * whatever the flags, so there is nothing to pin.
 */
static bool gup_kunit_gate_area_readable(void)
{
	struct vm_area_struct *vma = get_gate_vma(current->mm);

	return vma && (vma->vm_flags & VM_READ) &&
	       in_gate_area(current->mm, VSYSCALL_ADDR);
}

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

	if (!gup_kunit_gate_area_readable())
		kunit_skip(test, GUP_KUNIT_NEEDS_GATE_AREA);
	mmap_read_lock(current->mm);
	ret = gup_kunit_get_user_pages(VSYSCALL_ADDR, 1, 0, &page);
	mmap_read_unlock(current->mm);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	put_page(page);

	gup_kunit_snap(page_folio(page), &s);
	ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, VSYSCALL_ADDR, 1, 0, p->pages);
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
	const enum gup_kunit_path *path = test->param_value;
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	long ret;

	if (!gup_kunit_gate_area_readable())
		kunit_skip(test, GUP_KUNIT_NEEDS_GATE_AREA);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(*path, VSYSCALL_ADDR, 1, FOLL_WRITE,
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
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	unsigned long addr = gup_kunit_fill_and_snap(test, ref0, &s);
	struct page *page;
	long i, ret;

	ret = pin_user_pages_fast(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				  p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	KUNIT_ASSERT_EQ(test, vm_munmap(addr, GUP_KUNIT_NPAGES * PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, get_user_pages_fast(addr, 1, 0, &page),
			-EFAULT);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++)
		ref0[i]--;	/* the mapping's reference went with it */
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, true);
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
	struct gup_kunit_pins *p = gup_kunit_pins(test, GUP_KUNIT_NPAGES);
	int ref0[GUP_KUNIT_NPAGES];
	struct gup_kunit_snap s;
	unsigned long addr = gup_kunit_fill_and_snap(test, ref0, &s);
	long i, ret;

	ret = pin_user_pages_fast(addr, GUP_KUNIT_NPAGES, FOLL_WRITE,
				  p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, (long)GUP_KUNIT_NPAGES);
	KUNIT_ASSERT_EQ(test, do_madvise(current->mm, addr,
					 GUP_KUNIT_NPAGES * PAGE_SIZE,
					 MADV_DONTNEED), 0);
	for (i = 0; i < GUP_KUNIT_NPAGES; i++)
		ref0[i]--;	/* the mapping's reference went with it */
	gup_kunit_expect_biased(test, p->pages, GUP_KUNIT_NPAGES, ref0, true);
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
		KUNIT_EXPECT_FALSE_MSG(test, gup_kunit_page_pinned(now),
				       "page %ld", i);
		put_page(now);
	}
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, GUP_KUNIT_NPAGES);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

#ifdef CONFIG_SWAP
/*
 * Reclaim must not put a DMA-pinned anonymous folio in the swap cache
 * (feb889fb40fa, "mm: don't put pinned pages into the swap cache"): it
 * could not be unmapped anyway (the pin keeps it exclusive), and a swap
 * cache reference would later make a write fault copy it away from the
 * DMA. With swap on, MADV_PAGEOUT of a pinned page leaves it mapped, out
 * of the swap cache, with its pin; MADV_PAGEOUT of its unpinned
 * neighbour swaps that one out, which shows that swap works. Without swap
 * space there is nothing to show: the case skips.
 */
static void pageout_does_not_swap_pinned_anon_page(struct kunit *test)
{
	unsigned long addr = gup_kunit_mmap(test, 2 * PAGE_SIZE, GUP_KUNIT_RW,
					    GUP_KUNIT_ANON);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	struct page *now;
	long ret;

	if (!total_swap_pages)
		kunit_skip(test, GUP_KUNIT_NEEDS_SWAP);
	gup_kunit_fill(test, addr, 2);
	gup_kunit_snap_counters(&s);
	ret = pin_user_pages_fast(addr, 1, FOLL_WRITE, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);

	KUNIT_EXPECT_EQ(test, gup_kunit_pageout(addr), 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_pageout(addr + PAGE_SIZE), 0);
	KUNIT_EXPECT_FALSE(test, folio_test_swapcache(page_folio(p->pages[0])));
	KUNIT_EXPECT_TRUE(test, gup_kunit_page_pinned(p->pages[0]));
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
	gup_kunit_expect_filled(test, p->pages, 1);
}
#endif /* CONFIG_SWAP */

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
	KUNIT_EXPECT_EQ(test, gup_kunit_fork_share(addr, false, NULL,
						   &exclusive), -EBUSY);
	KUNIT_EXPECT_TRUE(test, exclusive);
	KUNIT_EXPECT_EQ(test, folio_mapcount(page_folio(p->pages[0])), 1);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_fork_share(addr, false, NULL,
						   &exclusive), 0);
	KUNIT_EXPECT_FALSE(test, exclusive);
}

static struct kunit_case gup_pin_user_cases[] = {
	KUNIT_CASE(pin_user_pages_fast_pins_mapped_anon_pages),
	KUNIT_CASE(get_user_pages_fast_takes_references_not_pins),
	KUNIT_CASE_PARAM(pin_user_pages_read_of_unwritten_memory_is_zero_page,
			 gup_kunit_path_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_read_of_unwritten_memory,
			 gup_kunit_path_gen_params),
	KUNIT_CASE(pin_user_pages_unmapped_address_fails),
	KUNIT_CASE(pin_user_pages_range_into_hole_pins_prefix),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_migrates_movable_pages,
			 gup_kunit_lt_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_failed_migration_leaves_no_pin,
			 gup_kunit_path_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_drains_only_the_lru_batches_it_needs,
			 gup_kunit_drain_gen_params),
#ifdef CONFIG_DEVICE_PRIVATE
	KUNIT_CASE_PARAM(pin_user_pages_longterm_migrates_device_coherent_page,
			 gup_kunit_path_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_longterm_failed_coherent_migration_leaves_no_pin,
			 gup_kunit_path_gen_params),
#endif
	KUNIT_CASE(pin_user_pages_remote_pins_pages_of_given_mm),
	KUNIT_CASE(pin_user_pages_unlocked_faults_in_and_pins),
	KUNIT_CASE(gup_fast_only_pins_faulted_pages),
	KUNIT_CASE(gup_fast_only_never_faults),
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
#ifdef CONFIG_SWAP
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

kunit_test_suite(gup_pin_user_suite);
