// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of memfd_pin_folios() when memory runs out
 * (CONFIG_GUP_KUNIT_TEST with CONFIG_FAILSLAB and CONFIG_FAIL_PAGE_ALLOC).
 *
 * gup_pin_fault_memfd: gup_pin_fault's sweep (gup_kunit_fault.c) of
 * memfd_pin_folios(), which udmabuf uses, on shmem and hugetlb memfds,
 * unfaulted (it allocates the folios) and filled (it only pins them, and
 * migrates those in ZONE_MOVABLE). After each failure point: it pinned
 * each folio of the range once, or failed with an errno having unpinned
 * what it had pinned; unpin_folios() of what it returned releases
 * exactly that; no folio is isolated; the page cache's folios hold only
 * the cache's reference and sit on the LRU; and the hugetlb pool is as
 * it was once the memfd is closed.
 */

#include <linux/file.h>
#include <linux/hugetlb.h>
#include <linux/pagemap.h>
#include <linux/shmem_fs.h>
#include <linux/swap.h>
#include "gup_kunit.h"

#define GUP_KUNIT_FAULT_MEMFD_MAX	4

/* mem: the memfd's kind; flags: 1 if it is filled before the pin. */
static const struct gup_kunit_fault_kind gup_kunit_fault_memfd_kinds[] = {
	{ "shmem memfd", GUP_KUNIT_SHMEM, 0, 4, true },
	{ "shmem memfd, filled", GUP_KUNIT_SHMEM, 1, 4, false },
	{ "hugetlb memfd", GUP_KUNIT_HUGETLB, 0, 2, false },
	{ "hugetlb memfd, filled", GUP_KUNIT_HUGETLB, 1, 2, false },
};

GUP_KUNIT_FAULT_PARAMS(gup_kunit_fault_memfd, gup_kunit_fault_memfd_kinds,
		       ARRAY_SIZE(gup_kunit_fault_memfd_kinds));

/* Fill the memfd's folios, outside the sweep: the pin then finds them. */
static void gup_kunit_fault_memfd_fill(struct kunit *test, struct file *file,
				       const struct gup_kunit_fault_kind *k,
				       loff_t size)
{
	struct folio *folios[GUP_KUNIT_FAULT_MEMFD_MAX];
	struct folio *folio;
	pgoff_t offset;
	long i;

	if (k->mem == GUP_KUNIT_HUGETLB) {
		KUNIT_ASSERT_EQ(test, memfd_pin_folios(file, 0, size - 1, folios,
						       k->npages, &offset),
				k->npages);
		unpin_folios(folios, k->npages);
		return;
	}
	for (i = 0; i < k->npages; i++) {
		folio = shmem_read_folio(file->f_mapping, i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(folio));
		folio_put(folio);
	}
}

/* The page cache's folios: the cache's reference only, on the LRU. */
static void gup_kunit_fault_memfd_expect_cache(struct kunit *test,
					       struct file *file,
					       const struct gup_kunit_fault_kind *k)
{
	struct folio *folio;
	long i;

	if (k->mem != GUP_KUNIT_SHMEM)
		return;
	lru_add_drain_all();
	for (i = 0; i < k->npages; i++) {
		folio = filemap_get_folio(file->f_mapping, i);
		if (IS_ERR(folio))
			continue;	/* never allocated: the failure came first */
		KUNIT_EXPECT_FALSE_MSG(test, folio_maybe_dma_pinned(folio),
				       "folio %ld still pinned", i);
		KUNIT_EXPECT_TRUE_MSG(test, folio_test_lru(folio),
				      "folio %ld left off the LRU", i);
		KUNIT_EXPECT_EQ_MSG(test, folio_ref_count(folio) - 1,
				    folio_expected_ref_count(folio),
				    "folio %ld: references left", i);
		folio_put(folio);
	}
}

/* A round: memfd_pin_folios() with its n-th failure point failing. */
static void gup_kunit_fault_memfd_round(struct kunit *test, const void *ctx,
					unsigned long at)
{
	const struct gup_kunit_fault_step *step = test->param_value;
	const struct gup_kunit_fault_kind *k = step->kind;
	const loff_t size = k->npages *
			    (k->mem == GUP_KUNIT_HUGETLB ? PMD_SIZE : PAGE_SIZE);
	struct folio *folios[GUP_KUNIT_FAULT_MEMFD_MAX];
	struct gup_kunit_fault_before b;
	struct gup_kunit_pool pool;
	struct file *file;
	pgoff_t offset;
	bool reached;
	long i, ret;

	gup_kunit_pool(&pool);
	file = gup_kunit_open(test, k->mem, size);
	KUNIT_ASSERT_FALSE(test, IS_ERR(file));
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gup_kunit_fput,
							file), 0);
	if (k->flags)
		gup_kunit_fault_memfd_fill(test, file, k, size);
	gup_kunit_fault_snap(&b);
	gup_kunit_fault_arm(test);
	ret = memfd_pin_folios(file, 0, size - 1, folios, k->npages, &offset);
	reached = gup_kunit_fault_disarm(test, "memfd_pin_folios", ret,
					 k->npages);
	gup_kunit_fault_expect_result(test, reached, ret, k->npages);
	for (i = 0; i < ret; i++)
		KUNIT_EXPECT_TRUE_MSG(test, folio_maybe_dma_pinned(folios[i]),
				      "folio %ld returned but not pinned", i);
	if (ret > 0)
		unpin_folios(folios, ret);
	gup_kunit_fault_expect_restored(test, &b, 0, 0, false);
	gup_kunit_fault_memfd_expect_cache(test, file, k);
	kunit_release_action(test, gup_kunit_fput, file);
	GUP_KUNIT_EXPECT_POOL(test, &pool, 0, 0);
}

static void memfd_pin_folios_fails_cleanly(struct kunit *test)
{
	gup_kunit_fault_run(test, gup_kunit_fault_memfd_round, NULL);
}

static struct kunit_case gup_pin_fault_memfd_cases[] = {
	KUNIT_CASE_PARAM(memfd_pin_folios_fails_cleanly,
			 gup_kunit_fault_memfd_gen_params),
	{}
};

static struct kunit_suite gup_pin_fault_memfd_suite = {
	.name = "gup_pin_fault_memfd",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_fault_memfd_cases,
};

kunit_test_suite(gup_pin_fault_memfd_suite);
