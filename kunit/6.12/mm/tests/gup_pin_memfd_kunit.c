// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of memfd_pin_folios() (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_memfd: memfd_pin_folios(), which udmabuf and the GPU drivers of
 * virtual machines use to pin the folios of a memfd for as long as user
 * space wants, on the two kinds of memfd: shmem (memfd_create()) and
 * hugetlb (MFD_HUGETLB, from the boot-time pool). The files are made as
 * memfd_create() makes them (shmem_file_setup(), hugetlb_file_setup()
 * with VM_NORESERVE) and sized as ftruncate() would. The cases check the
 * folios returned and the offset into the first, ranges that start or end
 * inside a folio, @max_folios, folios allocated on demand, the refusals,
 * that each folio is pinned exactly once and unpin_folios() releases
 * exactly that, the hugetlb pool's counts, and the long-term semantics:
 * folios in ZONE_MOVABLE are migrated before the pin, and a migration
 * that fails leaves no pin behind.
 */

#include <linux/delay.h>
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/hugetlb.h>
#include <linux/kthread.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/shmem_fs.h>
#include <linux/statfs.h>
#include <linux/swap.h>
#include "gup_kunit.h"

#define GUP_KUNIT_MEMFD_MAX	8

/**
 * struct gup_kunit_memfd - a file of a case and the folios pinned in it.
 * @file: the file; NULL for GUP_KUNIT_NO_FILE.
 * @folios: what memfd_pin_folios() returned.
 * @nr: how many of @folios are still pinned.
 *
 * A KUnit action releases the pins, then the file (synchronously, so that
 * its folios are back in their pool when the release returns).
 */
struct gup_kunit_memfd {
	struct file *file;
	struct folio *folios[GUP_KUNIT_MEMFD_MAX];
	long nr;
};

static void gup_kunit_memfd_release(void *data)
{
	struct gup_kunit_memfd *m = data;

	unpin_folios(m->folios, m->nr);
	m->nr = 0;
	if (m->file)
		__fput_sync(m->file);
	m->file = NULL;
}

/* A file of @kind and @size bytes for the case, closed when it ends. */
static struct gup_kunit_memfd *gup_kunit_memfd(struct kunit *test,
					       enum gup_kunit_file_kind kind,
					       loff_t size)
{
	struct gup_kunit_memfd *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	struct file *file;

	KUNIT_ASSERT_NOT_NULL(test, m);
	file = gup_kunit_open(test, kind, size);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(file), "file kind %d: %ld", kind,
			       PTR_ERR(file));
	m->file = file;
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							gup_kunit_memfd_release,
							m), 0);
	return m;
}

/* memfd_pin_folios() into the case's array; the case's end unpins. */
static long gup_kunit_memfd_pin(struct gup_kunit_memfd *m, loff_t start,
				loff_t end, unsigned int max, pgoff_t *offset)
{
	long ret = memfd_pin_folios(m->file, start, end, m->folios, max,
				    offset);

	m->nr = ret > 0 ? ret : 0;
	return ret;
}

/* Unpin and close now: the hugetlb pool checks need the file gone. */
static void gup_kunit_memfd_close(struct kunit *test, struct gup_kunit_memfd *m)
{
	kunit_release_action(test, gup_kunit_memfd_release, m);
}

/*
 * Allocate pages [@first, @first + @n) of a shmem memfd and tag them, as
 * a write() would. @movable: let them land in ZONE_MOVABLE, as user
 * memory may; else keep them out of it, as a pin would.
 */
static void gup_kunit_memfd_fill(struct kunit *test, struct gup_kunit_memfd *m,
				 pgoff_t first, long n, bool movable)
{
	unsigned int flags = movable ? 0 : memalloc_pin_save();
	struct folio *folio;
	u64 *kaddr;
	long i;

	for (i = 0; i < n; i++) {
		folio = shmem_read_folio(m->file->f_mapping, first + i);
		if (IS_ERR(folio))
			break;
		kaddr = kmap_local_folio(folio, 0);
		kaddr[0] = GUP_KUNIT_TAG(first + i);
		kunmap_local(kaddr);
		folio_mark_dirty(folio);
		folio_put(folio);
	}
	if (!movable)
		memalloc_pin_restore(flags);
	KUNIT_ASSERT_EQ(test, i, n);
}

/* Expect the folios to still carry the tags gup_kunit_memfd_fill() wrote. */
static void gup_kunit_memfd_expect_tags(struct kunit *test,
					struct gup_kunit_memfd *m)
{
	u64 *kaddr;
	long i;

	for (i = 0; i < m->nr; i++) {
		kaddr = kmap_local_folio(m->folios[i], 0);
		KUNIT_EXPECT_EQ_MSG(test, kaddr[0],
				    GUP_KUNIT_TAG(folio_index(m->folios[i])),
				    "folio %ld", i);
		kunmap_local(kaddr);
	}
}

/*
 * Expect folios [0, @nr) of the case to be the file's folios that hold
 * bytes @start onwards, one after the other, each in the page cache.
 */
static void gup_kunit_memfd_expect_folios(struct kunit *test,
					  struct gup_kunit_memfd *m,
					  loff_t start, long nr)
{
	struct folio *folio, *cached;
	loff_t pos;
	long i;

	pos = ALIGN_DOWN(start, folio_size(m->folios[0]));
	for (i = 0; i < nr; i++) {
		folio = m->folios[i];
		KUNIT_EXPECT_PTR_EQ_MSG(test, folio->mapping,
					m->file->f_mapping, "folio %ld", i);
		KUNIT_EXPECT_EQ_MSG(test, folio_pos(folio), pos, "folio %ld", i);
		cached = filemap_get_folio(m->file->f_mapping,
					   folio_index(folio));
		KUNIT_EXPECT_PTR_EQ_MSG(test, cached, folio, "folio %ld", i);
		if (!IS_ERR(cached))
			folio_put(cached);
		pos += folio_size(folio);
	}
}

/*
 * Expect each folio of the case to hold exactly one pin: releasing the
 * pins with unpin_folios() drops a small folio's refcount by exactly
 * GUP_PIN_COUNTING_BIAS and a large folio's pincount from 1 to 0.
 */
static void gup_kunit_memfd_expect_one_pin_each(struct kunit *test,
						struct gup_kunit_memfd *m)
{
	struct gup_kunit_snap s[GUP_KUNIT_MEMFD_MAX];
	struct folio *folios[GUP_KUNIT_MEMFD_MAX];
	long i, nr = m->nr;

	if (!nr)
		return;
	lru_add_drain_all();	/* no LRU batch reference moves meanwhile */
	for (i = 0; i < nr; i++) {
		folios[i] = m->folios[i];
		gup_kunit_snap(folios[i], &s[i]);
		KUNIT_EXPECT_TRUE_MSG(test, folio_maybe_dma_pinned(folios[i]),
				      "folio %ld", i);
		if (folio_test_large(folios[i]))
			KUNIT_EXPECT_EQ_MSG(test, s[i].pincount, 1,
					    "folio %ld", i);
	}
	unpin_folios(m->folios, nr);
	m->nr = 0;
	for (i = 0; i < nr; i++)
		GUP_KUNIT_EXPECT_FOLIO(test, folios[i], &s[i],
				       -gup_kunit_pin_refs(folios[i], 1), -1);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s[0], 0, nr);
}

/* ------------------------------------------------------------------ */
/* Ranges                                                              */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_range_case - one call of memfd_pin_folios().
 * @name: what the range is.
 * @kind: shmem or hugetlb.
 * @size: the memfd's size.
 * @start: first byte of the range.
 * @end: last byte of the range (inclusive).
 * @max: max_folios.
 * @filled: the pages of the range are allocated before the call; else
 *	memfd_pin_folios() allocates them.
 * @nr: the folios it must pin.
 * @offset: the offset of @start into the first folio.
 */
struct gup_kunit_range_case {
	const char *name;
	enum gup_kunit_file_kind kind;
	loff_t size;
	loff_t start;
	loff_t end;
	unsigned int max;
	bool filled;
	long nr;
	pgoff_t offset;
};

#define P	PAGE_SIZE
#define HP	PMD_SIZE

static const struct gup_kunit_range_case gup_kunit_range_cases[] = {
	{ "shmem, whole file", GUP_KUNIT_SHMEM, 8 * P, 0, 8 * P - 1, 8,
	  true, 8, 0 },
	{ "shmem, mid-page to mid-page", GUP_KUNIT_SHMEM, 8 * P, P + 100,
	  5 * P + 7, 8, true, 5, 100 },
	{ "shmem, not yet allocated", GUP_KUNIT_SHMEM, 8 * P, 0, 8 * P - 1,
	  8, false, 8, 0 },
	{ "shmem, one byte", GUP_KUNIT_SHMEM, 8 * P, 3 * P + 5, 3 * P + 5, 8,
	  false, 1, 5 },
	{ "shmem, max_folios 3 of 5", GUP_KUNIT_SHMEM, 8 * P, 2 * P + 1,
	  7 * P - 1, 3, true, 3, 1 },
	{ "hugetlb, whole file", GUP_KUNIT_HUGETLB_RESERVED, 2 * HP, 0,
	  2 * HP - 1, 8, false, 2, 0 },
	{ "hugetlb, inside the first folio", GUP_KUNIT_HUGETLB_RESERVED,
	  2 * HP, P, 2 * P - 1, 8, false, 1, P },
	{ "hugetlb, across the folio boundary", GUP_KUNIT_HUGETLB_RESERVED,
	  2 * HP, HP - P, HP + P - 1, 8, false, 2, HP - P },
	{ "hugetlb, max_folios 1 of 2", GUP_KUNIT_HUGETLB_RESERVED, 2 * HP,
	  0, 2 * HP - 1, 1, false, 1, 0 },
	{ "hugetlb, inside the second folio", GUP_KUNIT_HUGETLB_RESERVED,
	  2 * HP, HP + P, 2 * HP - 1, 8, false, 1, P },
};

KUNIT_ARRAY_PARAM_DESC(gup_kunit_range, gup_kunit_range_cases, name);

/*
 * memfd_pin_folios() returns the folios that hold the range, in order,
 * each once however many of its pages the range covers, at most
 * @max_folios of them, allocating what is not there yet (out of
 * ZONE_MOVABLE, so with no migration), and the offset of @start into the
 * first; each is pinned exactly once, counted once.
 */
static void memfd_pin_folios_pins_each_folio_of_range_once(struct kunit *test)
{
	const struct gup_kunit_range_case *c = test->param_value;
	struct gup_kunit_memfd *m = gup_kunit_memfd(test, c->kind, c->size);
	pgoff_t offset = ULONG_MAX;
	struct gup_kunit_snap s;
	long ret;

	if (c->filled)
		gup_kunit_memfd_fill(test, m, c->start >> PAGE_SHIFT,
				     (c->end >> PAGE_SHIFT) -
				     (c->start >> PAGE_SHIFT) + 1, false);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_memfd_pin(m, c->start, c->end, c->max, &offset);
	KUNIT_ASSERT_EQ(test, ret, c->nr);
	KUNIT_EXPECT_EQ(test, offset, c->offset);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, c->nr, 0);
	gup_kunit_memfd_expect_folios(test, m, c->start, c->nr);
	if (c->filled)
		gup_kunit_memfd_expect_tags(test, m);
	gup_kunit_memfd_expect_one_pin_each(test, m);
}

/*
 * fallocate() leaves shmem folios in the page cache that were never
 * cleared nor marked uptodate. memfd_pin_folios() hands them out zeroed
 * and uptodate: a device must not read what the pages held before. The
 * case fills the folios with 0xaa first, as a stale page would be.
 */
static void memfd_pin_folios_clears_fallocated_folios(struct kunit *test)
{
	const long npages = 4;
	struct gup_kunit_memfd *m = gup_kunit_memfd(test, GUP_KUNIT_SHMEM,
						    npages * P);
	pgoff_t offset;
	long i, ret;

	KUNIT_ASSERT_EQ(test, vfs_fallocate(m->file, 0, 0, npages * P), 0);
	for (i = 0; i < npages; i++) {
		struct folio *folio = filemap_get_folio(m->file->f_mapping, i);

		KUNIT_ASSERT_FALSE(test, IS_ERR(folio));
		KUNIT_EXPECT_FALSE(test, folio_test_uptodate(folio));
		memset_page(folio_page(folio, 0), 0, 0xaa, PAGE_SIZE);
		folio_put(folio);
	}
	ret = gup_kunit_memfd_pin(m, 0, npages * P - 1, npages, &offset);
	KUNIT_ASSERT_EQ(test, ret, npages);
	for (i = 0; i < npages; i++) {
		void *kaddr = kmap_local_folio(m->folios[i], 0);
		bool zero = !memchr_inv(kaddr, 0, PAGE_SIZE);

		kunmap_local(kaddr);
		KUNIT_EXPECT_TRUE_MSG(test, zero, "folio %ld", i);
		KUNIT_EXPECT_TRUE_MSG(test, folio_test_uptodate(m->folios[i]),
				      "folio %ld", i);
	}
}

/* ------------------------------------------------------------------ */
/* Refusals                                                            */
/* ------------------------------------------------------------------ */

struct gup_kunit_bad_case {
	const char *name;
	enum gup_kunit_file_kind kind;
	loff_t start;
	loff_t end;
	unsigned int max;
};

static const struct gup_kunit_bad_case gup_kunit_bad_cases[] = {
	{ "start after end", GUP_KUNIT_SHMEM, 2 * P, P, 8 },
	{ "negative start", GUP_KUNIT_SHMEM, -(loff_t)P, P, 8 },
	{ "start -1", GUP_KUNIT_SHMEM, -1, P, 8 },
	{ "max_folios 0", GUP_KUNIT_SHMEM, 0, P - 1, 0 },
	{ "end at i_size", GUP_KUNIT_SHMEM, 0, 8 * P, 8 },
	{ "hugetlb end at i_size", GUP_KUNIT_HUGETLB, 0, HP, 8 },
	{ "no file", GUP_KUNIT_NO_FILE, 0, P - 1, 8 },
	{ "anon inode", GUP_KUNIT_ANON_INODE, 0, P - 1, 8 },
	{ "block device", GUP_KUNIT_BLOCK_DEVICE, 0, P - 1, 8 },
};

KUNIT_ARRAY_PARAM_DESC(gup_kunit_bad, gup_kunit_bad_cases, name);

/*
 * A bad range, no memfd or a file that is not a memfd: -EINVAL, nothing
 * pinned, nothing allocated in the file.
 */
static void memfd_pin_folios_refuses_bad_arguments(struct kunit *test)
{
	const struct gup_kunit_bad_case *c = test->param_value;
	struct gup_kunit_memfd *m = gup_kunit_memfd(test, c->kind,
						    c->kind == GUP_KUNIT_HUGETLB ?
						    HP : 8 * P);
	unsigned long nrpages = m->file ? m->file->f_mapping->nrpages : 0;
	pgoff_t offset = ULONG_MAX;
	struct gup_kunit_snap s;

	gup_kunit_snap_counters(&s);
	KUNIT_EXPECT_EQ(test, gup_kunit_memfd_pin(m, c->start, c->end, c->max,
						  &offset), -EINVAL);
	KUNIT_EXPECT_EQ(test, offset, ULONG_MAX);
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, 0, 0);
	if (m->file)
		KUNIT_EXPECT_EQ(test, m->file->f_mapping->nrpages, nrpages);
}

/* ------------------------------------------------------------------ */
/* The hugetlb pool                                                    */
/* ------------------------------------------------------------------ */

static const enum gup_kunit_file_kind gup_kunit_hugetlb_kinds[] = {
	GUP_KUNIT_HUGETLB, GUP_KUNIT_HUGETLB_RESERVED,
};

static void gup_kunit_hugetlb_desc(const enum gup_kunit_file_kind *kind,
				   char *desc)
{
	strscpy(desc, *kind == GUP_KUNIT_HUGETLB ?
		"memfd, no reservation" : "hugetlbfs file, reserved",
		KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_hugetlb, gup_kunit_hugetlb_kinds,
		  gup_kunit_hugetlb_desc);

/*
 * Pinning a hugetlb memfd takes its folios from the pool: free pages go
 * down by the folios allocated, and a reservation, the file's own or one
 * made for the allocation, is consumed by each. Unpinning and closing
 * the file gives the pool back exactly what it had: no folio, no
 * reservation leaked or stolen from another file.
 */
static void memfd_pin_folios_hugetlb_leaves_pool_as_it_was(struct kunit *test)
{
	const enum gup_kunit_file_kind *kind = test->param_value;
	struct gup_kunit_pool p0;
	struct gup_kunit_memfd *m;
	pgoff_t offset;
	long ret;

	gup_kunit_pool(&p0);
	m = gup_kunit_memfd(test, *kind, 2 * HP);
	GUP_KUNIT_EXPECT_POOL(test, &p0, 0,
			      *kind == GUP_KUNIT_HUGETLB_RESERVED ? 2 : 0);
	ret = gup_kunit_memfd_pin(m, 0, 2 * HP - 1, 2, &offset);
	KUNIT_ASSERT_EQ(test, ret, 2L);
	GUP_KUNIT_EXPECT_POOL(test, &p0, -2, 0);
	gup_kunit_memfd_close(test, m);
	GUP_KUNIT_EXPECT_POOL(test, &p0, 0, 0);
}

/*
 * A hugetlb file one folio larger than what the pool can give it outside
 * ZONE_MOVABLE: the folios before the last are allocated and pinned; the
 * last finds no folio, and memfd_pin_folios() fails with -ENOMEM,
 * unpinning what it pinned. The file keeps its n - 1 folios. A memfd has
 * no reservation, so one is made for the folio that fails and undone:
 * none is left, not even when the next folio of the file (allocated
 * first) has one. A hugetlbfs file reserved its folios when it was made,
 * and keeps the failed folio's reservation: memfd_alloc_folio() must undo
 * exactly what it made. Once the file is closed, the pool is as it was.
 */
struct gup_kunit_oop_case {
	const char *name;
	enum gup_kunit_file_kind kind;
	bool last_first;	/* pin the file's last folio alone first */
};

static const struct gup_kunit_oop_case gup_kunit_oop_cases[] = {
	{ "memfd, no reservation", GUP_KUNIT_HUGETLB, false },
	{ "hugetlbfs file, reserved", GUP_KUNIT_HUGETLB_RESERVED, false },
	{ "memfd, its last folio allocated first", GUP_KUNIT_HUGETLB, true },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_oop, gup_kunit_oop_cases,
			    struct gup_kunit_oop_case);

static void memfd_pin_folios_hugetlb_out_of_pages_leaks_nothing(struct kunit *test)
{
	const struct gup_kunit_oop_case *c = test->param_value;
	bool reserved = c->kind == GUP_KUNIT_HUGETLB_RESERVED;
	struct gup_kunit_memfd *m = kunit_kzalloc(test, sizeof(*m),
						  GFP_KERNEL);
	struct gup_kunit_pool p0;
	struct gup_kunit_snap s;
	struct folio **folios;
	long n, nr, ret;
	pgoff_t offset;

	/* One folio at least, so that the last one fails and not the first. */
	gup_kunit_pool_make_unmovable(test, 1);
	n = gup_kunit_pool_unmovable() + 1;
	nr = n;
	folios = kunit_kcalloc(test, n, sizeof(*folios), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, folios);
	KUNIT_ASSERT_NOT_NULL(test, m);
	gup_kunit_pool(&p0);
	/* Not gup_kunit_open(): it would move pool pages out of the way. */
	m->file = hugetlb_file_setup("gup_kunit", n * HP,
				     reserved ? 0 : VM_NORESERVE,
				     HUGETLB_ANONHUGE_INODE, 0);
	if (reserved && PTR_ERR_OR_ZERO(m->file) == -ENOMEM)
		kunit_skip(test, GUP_KUNIT_NEEDS_HUGETLB " (%ld free folios)", n);
	KUNIT_ASSERT_FALSE(test, IS_ERR(m->file));
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							gup_kunit_memfd_release,
							m), 0);
	if (c->last_first) {
		/* folio n - 1 now; folio n - 2 is then the one that fails */
		ret = memfd_pin_folios(m->file, (n - 1) * HP, n * HP - 1,
				       folios, 1, &offset);
		KUNIT_ASSERT_EQ(test, ret, 1L);
		unpin_folios(folios, 1);
		nr = n - 1;
	}
	gup_kunit_snap_counters(&s);
	ret = memfd_pin_folios(m->file, 0, nr * HP - 1, folios, nr, &offset);
	if (ret > 0)		/* a broken kernel: release what it pinned */
		unpin_folios(folios, ret);
	KUNIT_EXPECT_EQ(test, ret, (long)-ENOMEM);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	/* n - 1 folios in the page cache; the failed one's reservation, if any */
	GUP_KUNIT_EXPECT_POOL(test, &p0, -(n - 1), reserved ? 1 : 0);
	gup_kunit_memfd_close(test, m);
	GUP_KUNIT_EXPECT_POOL(test, &p0, 0, 0);
}

static void gup_kunit_mntput(void *mnt)
{
	mntput(mnt);
}

/* Free huge pages of the hugetlbfs mount that @file is on (its size=). */
static u64 gup_kunit_mount_free(struct kunit *test, struct file *file)
{
	struct kstatfs st;

	KUNIT_ASSERT_EQ(test, vfs_statfs(&file->f_path, &st), 0);
	return st.f_bfree;
}

/*
 * A hugetlbfs mount with size= holds at most that many huge pages (its
 * subpool). memfd_pin_folios() charges a folio it allocates for a file
 * there to the mount, and sets the folio's subpool, so that freeing the
 * folio gives the page back. The case pins a folio of a file on a mount
 * of two pages, unpins it and truncates the file: both pages are free
 * again.
 */
static void memfd_pin_folios_hugetlb_charges_the_mount_and_gives_back(struct kunit *test)
{
	struct file_system_type *fs = get_fs_type("hugetlbfs");
	struct gup_kunit_memfd *m = kunit_kzalloc(test, sizeof(*m),
						  GFP_KERNEL);
	struct vfsmount *mnt;
	char opt[32];
	pgoff_t offset;

	KUNIT_ASSERT_NOT_NULL(test, fs);
	KUNIT_ASSERT_NOT_NULL(test, m);
	gup_kunit_pool_make_unmovable(test, 1);
	snprintf(opt, sizeof(opt), "size=%lu", 2 * HP);
	mnt = vfs_kern_mount(fs, 0, "hugetlbfs", opt);
	put_filesystem(fs);
	KUNIT_ASSERT_FALSE(test, IS_ERR(mnt));
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gup_kunit_mntput,
							mnt), 0);
	m->file = file_open_root_mnt(mnt, "gup_kunit", O_CREAT | O_RDWR, 0600);
	KUNIT_ASSERT_FALSE(test, IS_ERR(m->file));
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							gup_kunit_memfd_release,
							m), 0);
	KUNIT_ASSERT_EQ(test, vfs_truncate(&m->file->f_path, HP), 0L);
	KUNIT_ASSERT_EQ(test, gup_kunit_mount_free(test, m->file), 2ULL);

	KUNIT_ASSERT_EQ(test, gup_kunit_memfd_pin(m, 0, HP - 1, 1, &offset), 1L);
	KUNIT_EXPECT_EQ(test, gup_kunit_mount_free(test, m->file), 1ULL);
	unpin_folios(m->folios, m->nr);
	m->nr = 0;
	KUNIT_ASSERT_EQ(test, vfs_truncate(&m->file->f_path, 0), 0L);
	KUNIT_EXPECT_EQ(test, gup_kunit_mount_free(test, m->file), 2ULL);
}

/*
 * Reserve every free folio of the hugetlb pool that is not reserved yet,
 * to a hugetlbfs file that the case closes at its end: no other file can
 * make a reservation until then.
 */
static void gup_kunit_pool_reserve_all(struct kunit *test)
{
	struct gup_kunit_memfd *m = kunit_kzalloc(test, sizeof(*m),
						  GFP_KERNEL);
	struct gup_kunit_pool p;

	KUNIT_ASSERT_NOT_NULL(test, m);
	gup_kunit_pool(&p);
	m->file = hugetlb_file_setup("gup_kunit", (p.free - p.resv) * HP, 0,
				     HUGETLB_ANONHUGE_INODE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(m->file));
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							gup_kunit_memfd_release,
							m), 0);
}

/*
 * A hugetlb memfd has no reservations (VM_NORESERVE), so
 * memfd_alloc_folio() makes one for each folio it allocates. When every
 * free folio of the pool is reserved to another file it cannot, and
 * memfd_pin_folios() fails with -ENOMEM: nothing pinned, nothing in the
 * page cache, the pool as it was.
 */
static void memfd_pin_folios_hugetlb_without_a_reservation_fails(struct kunit *test)
{
	struct gup_kunit_memfd *m = gup_kunit_memfd(test, GUP_KUNIT_HUGETLB,
						    HP);
	struct gup_kunit_pool p0;
	struct gup_kunit_snap s;
	pgoff_t offset;

	gup_kunit_pool_reserve_all(test);
	gup_kunit_pool(&p0);
	gup_kunit_snap_counters(&s);
	KUNIT_EXPECT_EQ(test, gup_kunit_memfd_pin(m, 0, HP - 1, 1, &offset),
			(long)-ENOMEM);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	KUNIT_EXPECT_EQ(test, m->file->f_mapping->nrpages, 0UL);
	GUP_KUNIT_EXPECT_POOL(test, &p0, 0, 0);
}

/*
 * Write 0xaa over every free folio of the hugetlb pool outside
 * ZONE_MOVABLE, the folios memfd_alloc_folio() takes: what a folio's last
 * user might have left in it.
 */
static void gup_kunit_pool_scribble(void)
{
	struct hstate *h = &default_hstate;
	struct folio *folio;
	int nid;

	spin_lock_irq(&hugetlb_lock);
	for_each_node_state(nid, N_MEMORY)
		list_for_each_entry(folio, &h->hugepage_freelists[nid], lru)
			if (folio_zonenum(folio) != ZONE_MOVABLE)
				memset(folio_address(folio), 0xaa,
				       folio_size(folio));
	spin_unlock_irq(&hugetlb_lock);
}

/*
 * The folios that memfd_pin_folios() allocates for a hugetlb memfd come
 * from the pool with whatever their last user left in them: they are
 * handed out cleared, or the device and the memfd's users would read
 * another process's data, and uptodate, as the page cache requires.
 */
static void memfd_pin_folios_hugetlb_clears_new_folios(struct kunit *test)
{
	struct gup_kunit_memfd *m = gup_kunit_memfd(test, GUP_KUNIT_HUGETLB,
						    2 * HP);
	pgoff_t offset;
	long i;

	gup_kunit_pool_scribble();
	KUNIT_ASSERT_EQ(test, gup_kunit_memfd_pin(m, 0, 2 * HP - 1, 2, &offset),
			2L);
	for (i = 0; i < 2; i++) {
		KUNIT_EXPECT_NULL_MSG(test,
				      memchr_inv(folio_address(m->folios[i]), 0,
						 folio_size(m->folios[i])),
				      "folio %ld", i);
		KUNIT_EXPECT_TRUE_MSG(test, folio_test_uptodate(m->folios[i]),
				      "folio %ld", i);
	}
}

/**
 * struct gup_kunit_pinner - a memfd_pin_folios() of one folio in a kthread.
 * @file: the memfd.
 * @folio: the folio pinned.
 * @ret: what memfd_pin_folios() returned.
 * @done: completed when it has returned.
 */
struct gup_kunit_pinner {
	struct file *file;
	struct folio *folio;
	long ret;
	struct completion done;
};

static int gup_kunit_pinner_fn(void *data)
{
	struct gup_kunit_pinner *pinner = data;
	pgoff_t offset;

	pinner->ret = memfd_pin_folios(pinner->file, 0, HP - 1, &pinner->folio,
				       1, &offset);
	complete(&pinner->done);
	return 0;
}

/* How many tasks wait for @lock. */
static int gup_kunit_mutex_waiters(struct mutex *lock)
{
	unsigned long flags;
	int n;

	raw_spin_lock_irqsave(&lock->wait_lock, flags);
	n = list_count_nodes(&lock->wait_list);
	raw_spin_unlock_irqrestore(&lock->wait_lock, flags);
	return n;
}

/* A pinner of the first folio of @file, not started yet. */
static struct gup_kunit_pinner *gup_kunit_pinner(struct kunit *test,
						 struct file *file)
{
	struct gup_kunit_pinner *pinner = kzalloc(sizeof(*pinner), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, pinner);
	pinner->file = file;
	init_completion(&pinner->done);
	return pinner;
}

/*
 * Start @pinner; wait until it has returned, or waits for @lock with
 * @waiters - 1 others: memfd_alloc_folio() allocates a hugetlb folio
 * under the fault mutex of its index, as the fault path does, so a
 * pinner of an unfaulted folio must wait there while the case holds it.
 * Return false (the case failed, and the pinner is freed) if it could not
 * be started. No assertion here: the caller holds @lock.
 */
static bool gup_kunit_pinner_start(struct kunit *test,
				   struct gup_kunit_pinner *pinner,
				   struct mutex *lock, int waiters)
{
	unsigned long timeout = jiffies + 10 * HZ;
	struct task_struct *t;

	t = kthread_run(gup_kunit_pinner_fn, pinner, "gup_kunit_pinner");
	if (IS_ERR(t)) {
		KUNIT_FAIL(test, "kthread_run: %ld", PTR_ERR(t));
		kfree(pinner);
		return false;
	}
	while (!completion_done(&pinner->done) &&
	       gup_kunit_mutex_waiters(lock) < waiters &&
	       time_before(jiffies, timeout))
		usleep_range(100, 200);
	KUNIT_EXPECT_FALSE_MSG(test, completion_done(&pinner->done),
			       "pinner %d returned %ld without waiting for the fault mutex",
			       waiters, pinner->ret);
	KUNIT_EXPECT_GE_MSG(test, gup_kunit_mutex_waiters(lock), waiters,
			    "pinner %d does not wait for the fault mutex",
			    waiters);
	return true;
}

/*
 * Wait for a pinner to return; count its pin as the case's, to release.
 * A pinner that never returns is left, with its memory, to its thread.
 */
static void gup_kunit_pinner_join(struct kunit *test,
				  struct gup_kunit_pinner *pinner,
				  struct gup_kunit_memfd *m)
{
	if (!pinner)
		return;
	if (!wait_for_completion_timeout(&pinner->done, 30 * HZ)) {
		KUNIT_FAIL(test, "memfd_pin_folios() did not return in 30 s");
		return;
	}
	if (pinner->ret == 1)
		m->folios[m->nr++] = pinner->folio;
	KUNIT_EXPECT_EQ_MSG(test, pinner->ret, 1L,
			    "a memfd_pin_folios() of the folio failed");
	kfree(pinner);
}

/*
 * Two memfd_pin_folios() of the same unfaulted folio of one hugetlb memfd,
 * as two UDMABUF_CREATE of one memfd make them: the first to take the
 * hugetlb fault mutex of the index allocates the folio and adds it to the
 * page cache, and the other, which waited for the mutex, must pin that
 * folio. It may not fail for want of a reservation (a memfd has none:
 * the first's reservation is the folio's now), nor take the reservation
 * of another file and lose it. The case stops the first pinner on the
 * fault mutex, which it holds itself, then starts the second; both must
 * wait for the mutex and pin the same folio, and once both pins are
 * released and the memfd is closed, the pool must be as it was.
 */
struct gup_kunit_twice_case {
	const char *name;
	bool other_reservation;
};

static const struct gup_kunit_twice_case gup_kunit_twice_cases[] = {
	{ "no other reservation", false },
	{ "another file's reservation", true },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_twice, gup_kunit_twice_cases,
			    struct gup_kunit_twice_case);

static void memfd_pin_folios_hugetlb_twice_at_once_pins_one_folio(struct kunit *test)
{
	const struct gup_kunit_twice_case *c = test->param_value;
	struct gup_kunit_pinner *first, *second;
	struct gup_kunit_memfd *m;
	struct gup_kunit_pool p0;
	struct gup_kunit_snap s;
	struct mutex *lock;	/* the hugetlb fault mutex of the index */
	u32 hash;

	m = gup_kunit_memfd(test, GUP_KUNIT_HUGETLB, HP);
	gup_kunit_pool_make_unmovable(test, 2);
	if (c->other_reservation)
		gup_kunit_memfd(test, GUP_KUNIT_HUGETLB_RESERVED, HP);
	first = gup_kunit_pinner(test, m->file);
	second = gup_kunit_pinner(test, m->file);
	gup_kunit_pool(&p0);
	gup_kunit_snap_counters(&s);
	hash = hugetlb_fault_mutex_hash(m->file->f_mapping, 0);
	lock = &hugetlb_fault_mutex_table[hash];
	mutex_lock(lock);
	if (!gup_kunit_pinner_start(test, first, lock, 1)) {
		kfree(second);
		first = NULL;
		second = NULL;
	} else if (!gup_kunit_pinner_start(test, second, lock, 2)) {
		second = NULL;
	}
	mutex_unlock(lock);
	gup_kunit_pinner_join(test, first, m);
	gup_kunit_pinner_join(test, second, m);

	KUNIT_EXPECT_EQ(test, m->nr, 2L);
	if (m->nr == 2)
		KUNIT_EXPECT_PTR_EQ(test, m->folios[0], m->folios[1]);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, m->nr);
	gup_kunit_memfd_close(test, m);
	GUP_KUNIT_EXPECT_POOL(test, &p0, 0, 0);
}

/*
 * memfd_pin_folios() allocates in the scope of memalloc_pin_save(), so
 * that the folios it allocates are not in ZONE_MOVABLE nor CMA, and ends
 * that scope whether it pins or fails: the caller's later allocations
 * may go anywhere again.
 */
struct gup_kunit_scope_case {
	const char *name;
	bool fails;
};

static const struct gup_kunit_scope_case gup_kunit_scope_cases[] = {
	{ "pinned", false },
	{ "failed with -ENOMEM", true },
};

GUP_KUNIT_ARRAY_PARAM_NAMED(gup_kunit_scope, gup_kunit_scope_cases,
			    struct gup_kunit_scope_case);

static void memfd_pin_folios_ends_its_allocation_scope(struct kunit *test)
{
	const struct gup_kunit_scope_case *c = test->param_value;
	struct gup_kunit_memfd *m = gup_kunit_memfd(test, GUP_KUNIT_HUGETLB,
						    HP);
	pgoff_t offset;
	long ret;

	if (c->fails)
		gup_kunit_pool_reserve_all(test);
	KUNIT_ASSERT_FALSE(test, current->flags & PF_MEMALLOC_PIN);
	ret = gup_kunit_memfd_pin(m, 0, HP - 1, 1, &offset);
	KUNIT_EXPECT_EQ(test, ret, c->fails ? (long)-ENOMEM : 1L);
	KUNIT_EXPECT_FALSE_MSG(test, current->flags & PF_MEMALLOC_PIN,
			       "PF_MEMALLOC_PIN left set");
	current->flags &= ~PF_MEMALLOC_PIN;
}

/* ------------------------------------------------------------------ */
/* Long-term semantics                                                 */
/* ------------------------------------------------------------------ */

/* Fill the whole memfd in ZONE_MOVABLE; skip if the pages landed elsewhere. */
static void gup_kunit_memfd_fill_movable(struct kunit *test,
					 struct gup_kunit_memfd *m, long n)
{
	struct folio *folio;
	long i;

	gup_kunit_memfd_fill(test, m, 0, n, true);
	for (i = 0; i < n; i++) {
		folio = filemap_get_folio(m->file->f_mapping, i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(folio));
		folio_put(folio);
		if (folio_zonenum(folio) != ZONE_MOVABLE)
			kunit_skip(test, GUP_KUNIT_NEEDS_MOVABLE " (page %ld is not in it)",
				   i);
	}
}

/*
 * The folios of a memfd may be pinned for as long as user space wants,
 * so memfd_pin_folios() migrates those in ZONE_MOVABLE out of it first:
 * the first pins are dropped, the folios migrated, the new ones pinned
 * once each and in the page cache in their place, the data with them.
 */
static void memfd_pin_folios_migrates_folios_out_of_movable_zone(struct kunit *test)
{
	const long n = GUP_KUNIT_MEMFD_MAX;
	struct gup_kunit_memfd *m = gup_kunit_memfd(test, GUP_KUNIT_SHMEM,
						    n * P);
	struct gup_kunit_snap s;
	pgoff_t offset;
	long i, ret;

	gup_kunit_memfd_fill_movable(test, m, n);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_memfd_pin(m, 0, n * P - 1, n, &offset);
	KUNIT_ASSERT_EQ(test, ret, n);
	/* n pins, n released for the migration, n again on the new folios */
	GUP_KUNIT_EXPECT_COUNTERS(test, &s, 2 * n, n);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_NE_MSG(test, folio_zonenum(m->folios[i]),
				    ZONE_MOVABLE, "folio %ld", i);
	gup_kunit_memfd_expect_folios(test, m, 0, n);
	gup_kunit_memfd_expect_tags(test, m);
	gup_kunit_memfd_expect_one_pin_each(test, m);
}

/*
 * A folio in ZONE_MOVABLE that cannot migrate (something else holds a
 * reference, as a driver might): memfd_pin_folios() fails with -ENOMEM
 * and leaves nothing pinned, nothing isolated, every folio in its place.
 */
static void memfd_pin_folios_failed_migration_leaves_no_pin(struct kunit *test)
{
	const long n = 4;
	struct gup_kunit_memfd *m = gup_kunit_memfd(test, GUP_KUNIT_SHMEM,
						    n * P);
	struct folio *folios[4];
	long isolated0, i, ret;
	struct gup_kunit_snap s;
	pgoff_t offset;

	gup_kunit_memfd_fill_movable(test, m, n);
	for (i = 0; i < n; i++)
		folios[i] = filemap_get_folio(m->file->f_mapping, i);
	lru_add_drain_all();
	isolated0 = gup_kunit_node_stat(NR_ISOLATED_FILE);
	gup_kunit_snap_counters(&s);
	ret = gup_kunit_memfd_pin(m, 0, n * P - 1, n, &offset);
	KUNIT_EXPECT_EQ(test, ret, (long)-ENOMEM);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_node_stat(NR_ISOLATED_FILE), isolated0);
	lru_add_drain_all();	/* the putback goes through the LRU batches */
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_FALSE_MSG(test, folio_maybe_dma_pinned(folios[i]),
				       "folio %ld", i);
		KUNIT_EXPECT_TRUE_MSG(test, folio_test_lru(folios[i]),
				      "folio %ld", i);
		KUNIT_EXPECT_PTR_EQ_MSG(test, folios[i]->mapping,
					m->file->f_mapping, "folio %ld", i);
		folio_put(folios[i]);
	}
}

static struct kunit_case gup_pin_memfd_cases[] = {
	KUNIT_CASE_PARAM(memfd_pin_folios_pins_each_folio_of_range_once,
			 gup_kunit_range_gen_params),
	KUNIT_CASE(memfd_pin_folios_clears_fallocated_folios),
	KUNIT_CASE_PARAM(memfd_pin_folios_refuses_bad_arguments,
			 gup_kunit_bad_gen_params),
	KUNIT_CASE_PARAM(memfd_pin_folios_hugetlb_leaves_pool_as_it_was,
			 gup_kunit_hugetlb_gen_params),
	KUNIT_CASE_PARAM(memfd_pin_folios_hugetlb_out_of_pages_leaks_nothing,
			 gup_kunit_oop_gen_params),
	KUNIT_CASE(memfd_pin_folios_hugetlb_without_a_reservation_fails),
	KUNIT_CASE(memfd_pin_folios_hugetlb_charges_the_mount_and_gives_back),
	KUNIT_CASE(memfd_pin_folios_hugetlb_clears_new_folios),
	KUNIT_CASE_PARAM(memfd_pin_folios_hugetlb_twice_at_once_pins_one_folio,
			 gup_kunit_twice_gen_params),
	KUNIT_CASE_PARAM(memfd_pin_folios_ends_its_allocation_scope,
			 gup_kunit_scope_gen_params),
	KUNIT_CASE(memfd_pin_folios_migrates_folios_out_of_movable_zone),
	KUNIT_CASE(memfd_pin_folios_failed_migration_leaves_no_pin),
	{}
};

static struct kunit_suite gup_pin_memfd_suite = {
	.name = "gup_pin_memfd",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_memfd_cases,
};

kunit_test_suite(gup_pin_memfd_suite);
