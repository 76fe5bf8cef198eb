// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of memfd_pin_folios() racing (CONFIG_GUP_KUNIT_TEST, two
 * CPUs).
 *
 * gup_pin_race_memfd: gup_pin_race's rounds (gup_kunit_race.c) for the
 * pin of memfds that udmabuf uses: two memfd_pin_folios() of the same
 * unfaulted range at once, each round on a new memfd, shmem and hugetlb;
 * and memfd_pin_folios() against a hole punched over the range. After
 * every round: each index has one folio, and whoever pinned it pinned
 * that one; no pin is left; once the memfd is closed, the hugetlb pool
 * is as it was.
 */

#include <linux/types.h>
#include <linux/file.h>
#include <linux/falloc.h>
#include <linux/hugetlb.h>
#include <linux/pagemap.h>
#include "gup_kunit.h"

#define GUP_KUNIT_RACE_MEMFD_NR	2

/**
 * struct gup_kunit_race_memfd - a memfd that two sides pin.
 * @test: the case, for the memfd's close.
 * @kind: shmem or hugetlb.
 * @punch: side B punches holes: a pinned folio may have left the cache.
 * @file: this round's memfd.
 * @size: its size: GUP_KUNIT_RACE_MEMFD_NR folios.
 * @pool: the hugetlb pool before the round.
 * @s0: the pin counters at the start.
 * @wrong: a folio pinned that the page cache does not hold, or NULL.
 * @index: its index.
 * @err: the first error of memfd_pin_folios(), or 0.
 */
struct gup_kunit_race_memfd {
	struct kunit *test;
	enum gup_kunit_file_kind kind;
	bool punch;
	struct file *file;
	loff_t size;
	struct gup_kunit_pool pool;
	struct gup_kunit_snap s0;
	struct folio *wrong;
	long index;
	long err;
};

/* A new, unfaulted memfd for the round; the pool as it is now. */
static int gup_kunit_race_memfd_prepare(struct kunit *test, void *ctx,
					int round)
{
	struct gup_kunit_race_memfd *m = ctx;

	gup_kunit_pool(&m->pool);
	m->file = gup_kunit_open(test, m->kind, m->size);
	KUNIT_ASSERT_FALSE(test, IS_ERR(m->file));
	return 0;
}

/*
 * Pin the whole memfd, check each folio against the page cache, release
 * them. The page cache holds one folio per index: a pinner that added a
 * folio of its own for an index that the other filled pinned a folio
 * that no one else will see. (A hole punched since may have taken the
 * folio out of the cache: then the index is empty, side B adds none.)
 */
static int gup_kunit_race_memfd_pin(struct gup_kunit_race_memfd *m)
{
	struct folio *folios[GUP_KUNIT_RACE_MEMFD_NR], *cached;
	pgoff_t offset;
	long i, ret;

	ret = memfd_pin_folios(m->file, 0, m->size - 1, folios,
			       GUP_KUNIT_RACE_MEMFD_NR, &offset);
	if (ret < 0) {
		m->err = m->err ?: ret;
		return 0;
	}
	for (i = 0; i < ret; i++) {
		cached = filemap_get_folio(m->file->f_mapping,
					   i * (folio_size(folios[i]) >>
						PAGE_SHIFT));
		if (IS_ERR(cached) ? !m->punch : cached != folios[i]) {
			if (!m->wrong) {
				m->wrong = folios[i];
				m->index = i;
			}
		}
		if (!IS_ERR(cached))
			folio_put(cached);
	}
	unpin_folios(folios, ret);
	return 0;
}

static int gup_kunit_race_memfd_a(void *ctx, int round, unsigned long i)
{
	return gup_kunit_race_memfd_pin(ctx);
}

static int gup_kunit_race_memfd_b(void *ctx, int round)
{
	return gup_kunit_race_memfd_pin(ctx);
}

/* Side B of the hole punch: free the range's folios, keep the size. */
static int gup_kunit_race_memfd_punch(void *ctx, int round)
{
	struct gup_kunit_race_memfd *m = ctx;

	return vfs_fallocate(m->file, FALLOC_FL_PUNCH_HOLE |
			     FALLOC_FL_KEEP_SIZE, 0, m->size);
}

/* After a round: no wrong folio, no error, no pin; close; the pool. */
static bool gup_kunit_race_memfd_check(struct kunit *test, void *ctx,
				       int round)
{
	struct gup_kunit_race_memfd *m = ctx;
	struct gup_kunit_snap s;
	bool ok = true;

	if (m->wrong) {
		KUNIT_FAIL(test, "round %d, folio %ld: pinned, not in the page cache",
			   round, m->index);
		ok = false;
	}
	if (m->err) {
		KUNIT_FAIL(test, "round %d: memfd_pin_folios() failed: %ld",
			   round, m->err);
		ok = false;
	}
	gup_kunit_snap_counters(&s);
	if (s.acquired - s.released != m->s0.acquired - m->s0.released) {
		KUNIT_FAIL(test, "round %d: %ld pins left", round,
			   (s.acquired - s.released) -
			   (m->s0.acquired - m->s0.released));
		ok = false;
	}
	gup_kunit_fput(m->file);
	flush_delayed_fput();
	m->file = NULL;
	GUP_KUNIT_EXPECT_POOL(test, &m->pool, 0, 0);
	return ok;
}

static const struct gup_kunit_race gup_kunit_race_memfd_twice = {
	.name = "memfd_pin_folios / memfd_pin_folios",
	.prepare = gup_kunit_race_memfd_prepare,
	.a = gup_kunit_race_memfd_a,
	.b = gup_kunit_race_memfd_b,
	.check = gup_kunit_race_memfd_check,
	.rounds = 40,
};

static const struct gup_kunit_race gup_kunit_race_memfd_hole = {
	.name = "hole punch / memfd_pin_folios",
	.prepare = gup_kunit_race_memfd_prepare,
	.a = gup_kunit_race_memfd_a,
	.b = gup_kunit_race_memfd_punch,
	.check = gup_kunit_race_memfd_check,
	.rounds = 40,
};

static const enum gup_kunit_file_kind gup_kunit_race_memfd_kinds[] = {
	GUP_KUNIT_SHMEM, GUP_KUNIT_HUGETLB,
};

static void gup_kunit_race_memfd_desc(const enum gup_kunit_file_kind *kind,
				      char *desc)
{
	strscpy(desc, *kind == GUP_KUNIT_HUGETLB ? "hugetlb" : "shmem",
		KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_race_memfd, gup_kunit_race_memfd_kinds,
		  gup_kunit_race_memfd_desc);

static struct gup_kunit_race_memfd *gup_kunit_race_memfd(struct kunit *test)
{
	const enum gup_kunit_file_kind *kind = test->param_value;
	struct gup_kunit_race_memfd *m = kunit_kzalloc(test, sizeof(*m),
						       GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, m);
	m->test = test;
	m->kind = *kind;
	m->size = GUP_KUNIT_RACE_MEMFD_NR *
		  (*kind == GUP_KUNIT_HUGETLB ? PMD_SIZE : PAGE_SIZE);
	if (*kind == GUP_KUNIT_HUGETLB)
		gup_kunit_pool_make_unmovable(test, 2 * GUP_KUNIT_RACE_MEMFD_NR);
	KUNIT_ASSERT_EQ(test, gup_kunit_attach_mm(test), 0);
	gup_kunit_snap_counters(&m->s0);
	return m;
}

/*
 * Two memfd_pin_folios() of the same unfaulted range of a memfd, at
 * once, as two UDMABUF_CREATE of one memfd make them: each index gets
 * one folio, which both pin; no reservation is lost.
 */
static void memfd_pin_folios_twice_at_once_pin_the_same_folios(struct kunit *test)
{
	gup_kunit_race(test, &gup_kunit_race_memfd_twice,
		       gup_kunit_race_memfd(test));
}

/*
 * memfd_pin_folios() while a hole is punched over the range: the pin
 * holds the folios it found, or allocates new ones; every folio it
 * returns is the one the page cache held at its index when it pinned it
 * (checked against the cache only where the punch has not removed it).
 */
static void memfd_pin_folios_during_hole_punch_leaves_no_pin(struct kunit *test)
{
	struct gup_kunit_race_memfd *m = gup_kunit_race_memfd(test);

	m->punch = true;
	gup_kunit_race(test, &gup_kunit_race_memfd_hole, m);
}

static struct kunit_case gup_pin_race_memfd_cases[] = {
	KUNIT_CASE_PARAM(memfd_pin_folios_twice_at_once_pin_the_same_folios,
			 gup_kunit_race_memfd_gen_params),
	KUNIT_CASE_PARAM(memfd_pin_folios_during_hole_punch_leaves_no_pin,
			 gup_kunit_race_memfd_gen_params),
	{}
};

static struct kunit_suite gup_pin_race_memfd_suite = {
	.name = "gup_pin_race_memfd",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_race_memfd_cases,
};

kunit_test_suite(gup_pin_race_memfd_suite);
