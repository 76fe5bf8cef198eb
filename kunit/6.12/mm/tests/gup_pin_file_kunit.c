// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of long-term pins of file mappings (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_file: a FOLL_LONGTERM | FOLL_WRITE pin of a shared mapping of a
 * file whose page cache needs dirty tracking would let a device write to
 * the pages behind the filesystem's back for as long as it likes, the
 * 2018 failure of "DMA and get_user_pages()" made permanent. Since v6.5
 * check_vma_flags() refuses it (writable_file_mapping_allowed()), and
 * GUP-fast hands it to the slow path (gup_fast_folio_allowed()). The
 * cases map /dev/ram1, a block device whose page cache has writeback, and
 * a file on ext4 (the disk of gup_pin_ext4_dma, which shows the failure
 * itself), and check the refusal on both paths, and what stays allowed: reads,
 * short-term writes, private mappings, and shmem and hugetlb, which have
 * no writeback to corrupt. GUP-fast alone shows what it decides before
 * the slow path has its say, for these and for a driver's page, which has
 * no mapping at all.
 */

#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/hugetlb.h>
#include "gup_kunit.h"

/**
 * struct gup_kunit_file_case - one pin of a mapping of a file.
 * @name: what is pinned.
 * @kind: the file.
 * @shared: MAP_SHARED, else MAP_PRIVATE.
 * @flags: FOLL_ flags of the pin (FOLL_PIN added).
 * @path: which of GUP's paths pins.
 * @refused: the pin must fail: -EFAULT, or nothing pinned by GUP-fast
 *	alone, which leaves what it refuses to the slow path.
 */
struct gup_kunit_file_case {
	const char *name;
	enum gup_kunit_file_kind kind;
	bool shared;
	unsigned int flags;
	enum gup_kunit_path path;
	bool refused;
};

#define LT_W	(FOLL_LONGTERM | FOLL_WRITE)

static const struct gup_kunit_file_case gup_kunit_file_cases[] = {
	{ "block device, long-term write", GUP_KUNIT_BLOCK_DEVICE, true, LT_W,
	  GUP_KUNIT_SLOW, true },
	{ "block device, long-term write, GUP-fast", GUP_KUNIT_BLOCK_DEVICE,
	  true, LT_W, GUP_KUNIT_FAST, true },
	{ "block device, long-term write, GUP-fast alone",
	  GUP_KUNIT_BLOCK_DEVICE, true, LT_W, GUP_KUNIT_FAST_ONLY, true },
	{ "block device, long-term read", GUP_KUNIT_BLOCK_DEVICE, true,
	  FOLL_LONGTERM, GUP_KUNIT_SLOW, false },
	{ "block device, long-term read, GUP-fast", GUP_KUNIT_BLOCK_DEVICE,
	  true, FOLL_LONGTERM, GUP_KUNIT_FAST, false },
	{ "block device, short-term write", GUP_KUNIT_BLOCK_DEVICE, true,
	  FOLL_WRITE, GUP_KUNIT_SLOW, false },
	{ "block device, short-term write, GUP-fast", GUP_KUNIT_BLOCK_DEVICE,
	  true, FOLL_WRITE, GUP_KUNIT_FAST, false },
	{ "block device, short-term write, GUP-fast alone",
	  GUP_KUNIT_BLOCK_DEVICE, true, FOLL_WRITE, GUP_KUNIT_FAST_ONLY,
	  false },
	{ "block device, private, long-term write", GUP_KUNIT_BLOCK_DEVICE,
	  false, LT_W, GUP_KUNIT_SLOW, false },
	{ "block device, private, long-term write, GUP-fast alone",
	  GUP_KUNIT_BLOCK_DEVICE, false, LT_W, GUP_KUNIT_FAST_ONLY, false },
	{ "ext4, long-term write", GUP_KUNIT_EXT4, true, LT_W, GUP_KUNIT_SLOW,
	  true },
	{ "ext4, long-term write, GUP-fast", GUP_KUNIT_EXT4, true, LT_W,
	  GUP_KUNIT_FAST, true },
	{ "ext4, short-term write", GUP_KUNIT_EXT4, true, FOLL_WRITE,
	  GUP_KUNIT_SLOW, false },
	{ "shmem, long-term write", GUP_KUNIT_SHMEM, true, LT_W, GUP_KUNIT_SLOW,
	  false },
	{ "shmem, long-term write, GUP-fast", GUP_KUNIT_SHMEM, true, LT_W,
	  GUP_KUNIT_FAST, false },
	{ "hugetlb, long-term write", GUP_KUNIT_HUGETLB, true, LT_W,
	  GUP_KUNIT_SLOW, false },
	{ "hugetlb, long-term write, GUP-fast", GUP_KUNIT_HUGETLB, true, LT_W,
	  GUP_KUNIT_FAST, false },
	{ "hugetlb, long-term write, GUP-fast alone", GUP_KUNIT_HUGETLB, true,
	  LT_W, GUP_KUNIT_FAST_ONLY, false },
	{ "hugetlb, short-term write, GUP-fast alone", GUP_KUNIT_HUGETLB, true,
	  FOLL_WRITE, GUP_KUNIT_FAST_ONLY, false },
};

KUNIT_ARRAY_PARAM_DESC(gup_kunit_file, gup_kunit_file_cases, name);

/*
 * Map the file, fault its pages in (writing, so that GUP-fast finds them
 * writable and the refusal is the dirty-tracking one), and pin them: a
 * refused pin fails with -EFAULT and leaves no pin held on either path;
 * an allowed one pins the very pages mapped, one pin each. GUP-fast alone
 * (FOLL_FAST_ONLY) shows what gup_fast_folio_allowed() itself decides,
 * which pin_user_pages_fast() hides by falling back to the slow path: it
 * pins nothing that is refused, and all of what is allowed.
 */
static void pin_user_pages_longterm_write_of_file_mapping(struct kunit *test)
{
	const struct gup_kunit_file_case *c = test->param_value;
	bool huge = c->kind == GUP_KUNIT_HUGETLB;
	unsigned long len = huge ? PMD_SIZE : GUP_KUNIT_NPAGES * PAGE_SIZE;
	long npages = GUP_KUNIT_NPAGES;
	struct gup_kunit_pins *p = gup_kunit_pins(test, npages);
	struct gup_kunit_snap s;
	unsigned long addr;
	struct file *file;
	long ret;

	if (huge)	/* the long-term pin must not have to migrate */
		gup_kunit_pool_make_unmovable(test, 1);
	file = gup_kunit_file(test, c->kind, len);
	addr = gup_kunit_vm_mmap(test, file, len, GUP_KUNIT_RW,
				 c->shared ? MAP_SHARED : MAP_PRIVATE);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "mmap: %ld",
			       (long)addr);
	gup_kunit_fill(test, addr, npages);
	if (c->path == GUP_KUNIT_FAST_ONLY && !c->refused) {
		/* GUP-fast cannot migrate: the slow path moves what it must. */
		ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, addr, npages, c->flags,
				       p->pages);
		gup_kunit_pins_got(p, ret);
		KUNIT_ASSERT_EQ(test, ret, npages);
		gup_kunit_unpin(p);
	}

	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(c->path, addr, npages, c->flags, p->pages);
	gup_kunit_pins_got(p, ret);
	if (c->refused) {
		KUNIT_EXPECT_EQ(test, ret, c->path == GUP_KUNIT_FAST_ONLY ? 0L :
				(long)-EFAULT);
		GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
		gup_kunit_expect_mapped(test, addr, NULL, npages);
		return;
	}
	KUNIT_ASSERT_EQ(test, ret, npages);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, npages);
	gup_kunit_expect_mapped(test, addr, p->pages, npages);
	gup_kunit_expect_filled(test, p->pages, npages);
	KUNIT_EXPECT_EQ(test, PageAnon(p->pages[0]), !c->shared);
	gup_kunit_unpin(p);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
}

/* A driver's ->mmap(): the page of its file, inserted by vm_insert_page(). */
static int gup_kunit_driver_mmap(struct file *file, struct vm_area_struct *vma)
{
	return vm_insert_page(vma, vma->vm_start, file->private_data);
}

static const struct file_operations gup_kunit_driver_fops = {
	.mmap = gup_kunit_driver_mmap,
};

static void gup_kunit_put_page(void *page)
{
	put_page(page);
}

/*
 * A page that a driver maps into a process with vm_insert_page() is in no
 * page cache and not anonymous: its folio has no mapping, as a page cache
 * folio that truncation has just removed would have. GUP-fast cannot tell
 * the two apart, so gup_fast_folio_allowed() leaves the page to the slow
 * path, which pins it.
 */
static void gup_fast_leaves_a_page_without_mapping_to_the_slow_path(struct kunit *test)
{
	struct gup_kunit_pins *p = gup_kunit_pins(test, 1);
	struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	struct gup_kunit_snap s;
	unsigned long addr;
	struct file *file;
	long ret;

	KUNIT_ASSERT_NOT_NULL(test, page);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							gup_kunit_put_page,
							page), 0);
	file = anon_inode_getfile("[gup_kunit_driver]", &gup_kunit_driver_fops,
				  page, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(file));
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							gup_kunit_fput,
							file), 0);
	addr = gup_kunit_vm_mmap(test, file, PAGE_SIZE, GUP_KUNIT_RW,
				 MAP_SHARED);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "mmap: %ld",
			       (long)addr);
	KUNIT_ASSERT_NULL(test, page_folio(page)->mapping);

	gup_kunit_snap_counters(&s);
	ret = gup_kunit_pin_by(GUP_KUNIT_FAST_ONLY, addr, 1, 0, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_EXPECT_EQ(test, ret, 0L);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	gup_kunit_unpin(p);

	ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, addr, 1, 0, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	KUNIT_EXPECT_PTR_EQ(test, p->pages[0], page);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 1);
	gup_kunit_unpin(p);
}

static struct kunit_case gup_pin_file_cases[] = {
	KUNIT_CASE_PARAM(pin_user_pages_longterm_write_of_file_mapping,
			 gup_kunit_file_gen_params),
	KUNIT_CASE(gup_fast_leaves_a_page_without_mapping_to_the_slow_path),
	{}
};

static struct kunit_suite gup_pin_file_suite = {
	.name = "gup_pin_file",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_file_cases,
};

kunit_test_suite(gup_pin_file_suite);
