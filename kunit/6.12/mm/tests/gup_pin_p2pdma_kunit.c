// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of GUP and PCI peer-to-peer DMA pages (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_p2pdma: a page of a MEMORY_DEVICE_PCI_P2PDMA pgmap is device
 * memory (a PCI BAR) that only callers that can DMA to it may get:
 * without FOLL_PCI_P2PDMA, try_grab_folio() refuses it with -EREMOTEIO,
 * try_grab_folio_fast() with NULL, and pin_user_pages*() of a mapping of
 * it with -EREMOTEIO on both paths; with the flag, it is pinned like any
 * ZONE_DEVICE page. A long-term pin may not ask for it at all: the pgmap
 * must stay hot-unpluggable.
 *
 * A real P2PDMA page needs a PCI device BAR handed to
 * pci_p2pdma_add_resource(), whose devres lives until the device's driver
 * unbinds: a case could not undo it. The cases make the pgmap themselves,
 * over RAM set aside with memmap=, with the type that GUP checks; user
 * space maps a page as p2pmem_alloc_mmap() does, with vm_insert_page().
 */

#include "gup_kunit.h"

#ifdef CONFIG_DEVICE_PRIVATE	/* the pgmap helpers of gup_kunit.c */

#define GUP_KUNIT_P2PDMA	(MEMORY_DEVICE_PCI_P2PDMA | GUP_KUNIT_DEVMEM_RAM)

/* A page of a P2PDMA pgmap of the case's own, at refcount 1 (its driver's). */
static struct page *gup_kunit_p2pdma_page(struct kunit *test)
{
	struct page *page;

	if (!IS_ENABLED(CONFIG_PCI_P2PDMA))
		kunit_skip(test, "needs CONFIG_PCI_P2PDMA");
	page = gup_kunit_devmem_page(gup_kunit_devmem(test, GUP_KUNIT_P2PDMA));
	KUNIT_ASSERT_TRUE(test, is_pci_p2pdma_page(page));
	KUNIT_ASSERT_EQ(test, page_ref_count(page), 1);
	return page;
}

struct gup_kunit_p2p_case {
	const char *name;
	unsigned int flags;
};

static const struct gup_kunit_p2p_case gup_kunit_p2p_cases[] = {
	{ "FOLL_GET", FOLL_GET },
	{ "FOLL_PIN", FOLL_PIN },
};

KUNIT_ARRAY_PARAM_DESC(gup_kunit_p2p, gup_kunit_p2p_cases, name);

/*
 * The slow path's grab: -EREMOTEIO and nothing changed without
 * FOLL_PCI_P2PDMA; with it, one reference or one pin, which a put undoes.
 */
static void try_grab_folio_of_p2pdma_page_needs_flag(struct kunit *test)
{
	const struct gup_kunit_p2p_case *c = test->param_value;
	struct page *page = gup_kunit_p2pdma_page(test);
	struct folio *folio = page_folio(page);
	bool pin = c->flags & FOLL_PIN;
	struct gup_kunit_snap s;

	gup_kunit_snap(folio, &s);
	KUNIT_EXPECT_EQ(test, try_grab_folio(folio, 1, c->flags), -EREMOTEIO);
	GUP_KUNIT_EXPECT_DELTA(test, folio, &s, 0, 0, 0, 0);

	KUNIT_ASSERT_EQ(test, try_grab_folio(folio, 1,
					     c->flags | FOLL_PCI_P2PDMA), 0);
	GUP_KUNIT_EXPECT_DELTA(test, folio, &s,
			       pin ? gup_kunit_pin_refs(folio, 1) : 1, 0,
			       pin ? 1 : 0, 0);
	KUNIT_EXPECT_EQ(test, folio_maybe_dma_pinned(folio), pin);
	gup_put_folio(folio, 1, c->flags);
	GUP_KUNIT_EXPECT_DELTA(test, folio, &s, 0, 0, pin ? 1 : 0, pin ? 1 : 0);
}

/* GUP-fast's grab: NULL without FOLL_PCI_P2PDMA, the folio with it. */
static void try_grab_folio_fast_of_p2pdma_page_needs_flag(struct kunit *test)
{
	const struct gup_kunit_p2p_case *c = test->param_value;
	struct page *page = gup_kunit_p2pdma_page(test);
	struct folio *folio = page_folio(page);
	bool pin = c->flags & FOLL_PIN;
	struct gup_kunit_snap s;
	struct folio *got;

	gup_kunit_snap(folio, &s);
	KUNIT_EXPECT_NULL(test, gup_kunit_try_grab_fast(page, 1, c->flags));
	GUP_KUNIT_EXPECT_DELTA(test, folio, &s, 0, 0, 0, 0);

	got = gup_kunit_try_grab_fast(page, 1, c->flags | FOLL_PCI_P2PDMA);
	KUNIT_ASSERT_PTR_EQ(test, got, folio);
	GUP_KUNIT_EXPECT_DELTA(test, folio, &s,
			       pin ? gup_kunit_pin_refs(folio, 1) : 1, 0,
			       pin ? 1 : 0, 0);
	gup_put_folio(folio, 1, c->flags);
	GUP_KUNIT_EXPECT_DELTA(test, folio, &s, 0, 0, pin ? 1 : 0, pin ? 1 : 0);
}

/* p2pmem_alloc_mmap()'s way: the page in a VM_MIXEDMAP mapping. */
static int gup_kunit_p2pdma_mmap(struct file *file, struct vm_area_struct *vma)
{
	return vm_insert_page(vma, vma->vm_start, file->private_data);
}

static const struct file_operations gup_kunit_p2pdma_fops = {
	.mmap = gup_kunit_p2pdma_mmap,
};

/* Map the case's P2PDMA page into its address space; return the address. */
static unsigned long gup_kunit_map_p2pdma(struct kunit *test,
					  struct page *page)
{
	return gup_kunit_mmap_driver(test, "gup_kunit_p2pdma",
				     &gup_kunit_p2pdma_fops, page);
}

KUNIT_ARRAY_PARAM(gup_kunit_path, gup_kunit_paths, gup_kunit_path_desc);

/*
 * pin_user_pages*() of a mapped P2PDMA page: -EREMOTEIO and nothing held
 * without FOLL_PCI_P2PDMA (GUP-fast hands it to the slow path, which
 * refuses it); with the flag, the page mapped there, pinned once, and
 * the unpin restores it.
 */
static void pin_user_pages_of_p2pdma_page_needs_flag(struct kunit *test)
{
	const enum gup_kunit_path *path = test->param_value;
	struct page *page = gup_kunit_p2pdma_page(test);
	unsigned long addr = gup_kunit_map_p2pdma(test, page);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct gup_kunit_snap s;
	long ret;

	gup_kunit_snap(page_folio(page), &s);
	ret = gup_kunit_pin_by(*path, addr, 1, FOLL_WRITE, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EREMOTEIO);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	GUP_KUNIT_EXPECT_FOLIO(test, page_folio(page), &s, 0, 0);

	ret = gup_kunit_pin_by(*path, addr, 1, FOLL_WRITE | FOLL_PCI_P2PDMA,
			       p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	KUNIT_EXPECT_PTR_EQ(test, p->pages[0], page);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 1);
	GUP_KUNIT_EXPECT_FOLIO(test, page_folio(page), &s,
			       GUP_PIN_COUNTING_BIAS, 0);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	GUP_KUNIT_EXPECT_FOLIO(test, page_folio(page), &s, 0, 0);
}

/*
 * FOLL_LONGTERM | FOLL_PCI_P2PDMA is a caller bug (the pgmap must stay
 * hot-unpluggable): is_valid_gup_args() refuses it, with a WARN_ON_ONCE(),
 * and nothing is pinned. pin_user_pages_fast() returns
 * -EINVAL; pin_user_pages() returns 0 pages, as every pin_user_pages*()
 * but the fast one has done on invalid arguments since d64e2dbc33a1
 * ("mm/gup: simplify the external interface functions and consolidate
 * invariants"), v6.3.
 */
static void pin_user_pages_longterm_p2pdma_is_refused(struct kunit *test)
{
	struct page *page = gup_kunit_p2pdma_page(test);
	unsigned long addr = gup_kunit_map_p2pdma(test, page);
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	const unsigned int flags = FOLL_WRITE | FOLL_LONGTERM |
				   FOLL_PCI_P2PDMA;
	struct gup_kunit_snap s;
	long ret;

	gup_kunit_snap(page_folio(page), &s);
	ret = gup_kunit_pin_by(GUP_KUNIT_FAST, addr, 1, flags, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-EINVAL);
	GUP_KUNIT_EXPECT_WARNINGS(test, 1);

	ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, addr, 1, flags, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, 0L);
	/*
	 * Whether this WARN_ON_ONCE() prints again depends on whether the
	 * compiler inlined is_valid_gup_args() into both entry points, each
	 * copy with its own "once": the first call counted it exactly.
	 */
	gup_kunit_warn_reset();
	GUP_KUNIT_EXPECT_DELTA(test, page_folio(page), &s, 0, 0, 0, 0);
}

#endif /* CONFIG_DEVICE_PRIVATE */

static struct kunit_case gup_pin_p2pdma_cases[] = {
#ifdef CONFIG_DEVICE_PRIVATE
	KUNIT_CASE_PARAM(try_grab_folio_of_p2pdma_page_needs_flag,
			 gup_kunit_p2p_gen_params),
	KUNIT_CASE_PARAM(try_grab_folio_fast_of_p2pdma_page_needs_flag,
			 gup_kunit_p2p_gen_params),
	KUNIT_CASE_PARAM(pin_user_pages_of_p2pdma_page_needs_flag,
			 gup_kunit_path_gen_params),
	KUNIT_CASE(pin_user_pages_longterm_p2pdma_is_refused),
#endif
	{}
};

static struct kunit_suite gup_pin_p2pdma_suite = {
	.name = "gup_pin_p2pdma",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_p2pdma_cases,
};

kunit_test_suite(gup_pin_p2pdma_suite);
