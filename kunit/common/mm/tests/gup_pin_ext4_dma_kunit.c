// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of DMA into the pages of an ext4 file (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_ext4_dma: the failure that pin tracking exists for ("DMA and
 * get_user_pages()", LPC 2018), on a real ext4 on a real disk. A driver
 * takes a page of a MAP_SHARED mapping of a file for its device to write
 * into. Writeback cleans the page; reclaim finds it clean and has ext4
 * release its buffer heads; the device writes again; the driver dirties
 * the page and drops it. With get_user_pages(), ext4 then meets a dirty
 * page without buffers: a WARNING in ext4_dirty_folio(), and at writeback
 * "EXT4-fs warning ... does not have buffers attached", which cleans the
 * page without writing it: fsync() returns 0 and the device's last write
 * is lost. With pin_user_pages(), reclaim sees folio_maybe_dma_pinned()
 * and leaves the folio and its buffers alone (d824ec2a1546, "mm: do not
 * reclaim private data from pinned page"), and the write reaches the disk.
 *
 * Both outcomes are asserted: the suite fails if a kernel stops protecting
 * pinned pages, and also if it starts protecting pages taken with
 * FOLL_GET. Two more cases show what a pin does not promise. Punching a
 * hole takes the page out of the file, pinned or not, and the device's
 * later writes to it are lost. Writeback writes a pinned page with
 * whatever it holds at the time and cleans it, so a write that the device
 * makes after that reaches the disk only once the release dirties the
 * page again.
 *
 * The device is the test itself: it writes through kmap_local_page(),
 * never through the user mapping, whose write fault would give the page
 * its buffers back (->page_mkwrite()). The disk is the virtio disk that
 * the QEMU configuration attaches, an empty ext4 made on the host; without
 * it the cases skip. See docs/scenario.md.
 */

#include <linux/buffer_head.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include "gup_kunit.h"

/**
 * struct gup_kunit_dma - one page of an ext4 file, taken for a device.
 * @file: the file, one page long, on the disk.
 * @block: the disk block of that page.
 * @addr: where the case maps it, MAP_SHARED.
 * @p: the page, pinned or (@p->foll_get) gotten.
 * @folio: its folio.
 */
struct gup_kunit_dma {
	struct file *file;
	sector_t block;
	unsigned long addr;
	struct gup_kunit_pins *p;
	struct folio *folio;
};

/*
 * Map a new file of one page and take the page for writing, as a driver
 * does: get_user_pages() (@foll_get) or pin_user_pages(), FOLL_WRITE. The
 * write fault runs ext4's ->page_mkwrite(), which attaches buffers and
 * dirties the page.
 */
static void gup_kunit_dma_take(struct kunit *test, struct gup_kunit_dma *d,
			       bool foll_get)
{
	long ret;

	d->file = gup_kunit_ext4_file(test, 1, &d->block);
	d->addr = gup_kunit_vm_mmap(test, d->file, PAGE_SIZE, GUP_KUNIT_RW,
				    MAP_SHARED);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(d->addr), "mmap: %ld",
			       (long)d->addr);
	d->p = gup_kunit_pins(test, 1);
	d->p->foll_get = foll_get;
	mmap_read_lock(current->mm);
	if (foll_get)
		ret = gup_kunit_get_user_pages(d->addr, 1, FOLL_WRITE,
					       d->p->pages);
	else
		ret = gup_kunit_pin_user_pages(d->addr, 1, FOLL_WRITE,
					       d->p->pages);
	mmap_read_unlock(current->mm);
	gup_kunit_pins_got(d->p, ret);
	KUNIT_ASSERT_EQ(test, ret, 1L);
	d->folio = page_folio(d->p->pages[0]);
	KUNIT_ASSERT_NOT_NULL(test, folio_buffers(d->folio));
	KUNIT_ASSERT_TRUE(test, folio_test_dirty(d->folio));
}

/* The device writes @byte over the first @len bytes of the page. */
static void gup_kunit_dma_write(struct gup_kunit_dma *d, int byte, size_t len)
{
	void *addr = kmap_local_page(d->p->pages[0]);

	memset(addr, byte, len);
	kunmap_local(addr);
	flush_dcache_page(d->p->pages[0]);
}

/* The DMA is done: dirty the page and let it go, the driver's way. */
static void gup_kunit_dma_release(struct gup_kunit_dma *d)
{
	struct page *page = d->p->pages[0];

	if (d->p->foll_get) {
		set_page_dirty_lock(page);
		put_page(page);
	} else {
		unpin_user_pages_dirty_lock(&page, 1, true);
	}
	d->p->nr = 0;
}

/* The byte that fills the page on the disk, or -1. */
static int gup_kunit_dma_on_disk(struct kunit *test, struct gup_kunit_dma *d)
{
	return gup_kunit_disk_byte(test, d->file, d->block, 0, PAGE_SIZE);
}

/* Unmap the page and read it back from the disk through the file. */
static int gup_kunit_dma_read_back(struct kunit *test, struct gup_kunit_dma *d)
{
	KUNIT_EXPECT_EQ(test, vm_munmap(d->addr, PAGE_SIZE), 0);
	return gup_kunit_file_byte_from_disk(test, d->file, 0);
}

/*
 * The 2018 sequence up to the second DMA: the device writes B, fsync()
 * writes B to the disk and cleans the page, and MADV_PAGEOUT reclaims it.
 * Reclaim gets as far as unmapping the folio; the device's reference
 * keeps it in the page cache.
 */
static void gup_kunit_dma_sync_and_page_out(struct kunit *test,
					    struct gup_kunit_dma *d)
{
	gup_kunit_dma_write(d, 'B', PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, vfs_fsync(d->file, 0), 0);
	KUNIT_ASSERT_EQ(test, gup_kunit_dma_on_disk(test, d), 'B');
	KUNIT_ASSERT_FALSE(test, folio_test_dirty(d->folio));
	KUNIT_ASSERT_EQ(test, gup_kunit_pageout(d->addr), 0);
	KUNIT_EXPECT_FALSE(test, folio_mapped(d->folio));
	KUNIT_EXPECT_PTR_EQ(test, d->folio->mapping, d->file->f_mapping);
}

/*
 * The 2018 failure, as it is today: reclaim strips the buffers of the
 * gotten page, ext4 WARNs when the driver dirties it and, at writeback,
 * reports the page and cleans it unwritten. fsync() returns 0 and the
 * disk keeps B: the device's last write is lost.
 */
static void get_user_pages_loses_dma_once_reclaim_strips_buffers(struct kunit *test)
{
	struct gup_kunit_dma d;

	gup_kunit_dma_take(test, &d, true);
	gup_kunit_dma_sync_and_page_out(test, &d);
	KUNIT_EXPECT_NULL(test, folio_buffers(d.folio));
	gup_kunit_dma_write(&d, 'C', PAGE_SIZE);
	gup_kunit_dma_release(&d);
	GUP_KUNIT_EXPECT_WARNINGS_AT(test, 1, "ext4_dirty_folio");
	KUNIT_EXPECT_EQ(test, vfs_fsync(d.file, 0), 0);
	GUP_KUNIT_EXPECT_FS_REPORTS(test, 1, "does not have buffers attached");
	KUNIT_EXPECT_EQ(test, gup_kunit_dma_on_disk(test, &d), 'B');
	KUNIT_EXPECT_EQ(test, gup_kunit_dma_read_back(test, &d), 'B');
}

/*
 * The same sequence with a pin: reclaim unmaps the pinned folio but keeps
 * it and its buffers, the release dirties it as ext4 expects, and fsync()
 * writes the device's last write, C, to the disk. No pin is left.
 */
static void pin_user_pages_keeps_dma_across_reclaim(struct kunit *test)
{
	struct gup_kunit_snap s;
	struct gup_kunit_dma d;

	gup_kunit_snap_counters(&s);
	gup_kunit_dma_take(test, &d, false);
	gup_kunit_dma_sync_and_page_out(test, &d);
	KUNIT_EXPECT_NOT_NULL(test, folio_buffers(d.folio));
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(d.folio));
	gup_kunit_dma_write(&d, 'C', PAGE_SIZE);
	gup_kunit_dma_release(&d);
	GUP_KUNIT_EXPECT_PINS_HELD(test, &s, 0);
	KUNIT_EXPECT_EQ(test, vfs_fsync(d.file, 0), 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_dma_on_disk(test, &d), 'C');
	KUNIT_EXPECT_EQ(test, gup_kunit_dma_read_back(test, &d), 'C');
}

/* The page is gotten with FOLL_GET, or pinned. */
static const bool gup_kunit_foll_get[] = { true, false };

static void gup_kunit_foll_get_desc(const bool *foll_get, char *desc)
{
	strscpy(desc, *foll_get ? "get_user_pages" : "pin_user_pages",
		KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gup_kunit_foll_get, gup_kunit_foll_get,
		  gup_kunit_foll_get_desc);

/*
 * What a pin does not promise: punching a hole over the page takes it out
 * of the file whether it is pinned or not (truncation does not wait for
 * DMA). The device's later write, and the dirtying at the release, go to a
 * page that no file owns: the file reads back a hole, and nothing
 * complains.
 */
static void punch_hole_drops_taken_page_and_later_dma(struct kunit *test)
{
	const bool *foll_get = test->param_value;
	struct gup_kunit_dma d;

	gup_kunit_dma_take(test, &d, *foll_get);
	gup_kunit_dma_write(&d, 'B', PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, vfs_fallocate(d.file, FALLOC_FL_PUNCH_HOLE |
					    FALLOC_FL_KEEP_SIZE, 0, PAGE_SIZE),
			0);
	KUNIT_EXPECT_NULL(test, d.folio->mapping);
	KUNIT_EXPECT_EQ(test, folio_maybe_dma_pinned(d.folio), !*foll_get);
	gup_kunit_dma_write(&d, 'C', PAGE_SIZE);
	gup_kunit_dma_release(&d);
	KUNIT_EXPECT_EQ(test, vfs_fsync(d.file, 0), 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_dma_read_back(test, &d), 0);
}

/*
 * What a pin does not promise either: writeback does not wait for the
 * DMA. fsync() in the middle of it writes the page as it is, half B and
 * half A, and cleans it; the pin keeps neither the page dirty nor the
 * writeback away. The rest of the DMA then reaches the disk only when the
 * release dirties the page again.
 */
static void writeback_of_pinned_page_writes_what_it_holds(struct kunit *test)
{
	struct gup_kunit_dma d;

	gup_kunit_dma_take(test, &d, false);
	gup_kunit_dma_write(&d, 'B', PAGE_SIZE / 2);
	KUNIT_EXPECT_EQ(test, vfs_fsync(d.file, 0), 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_disk_byte(test, d.file, d.block, 0,
						  PAGE_SIZE / 2), 'B');
	KUNIT_EXPECT_EQ(test, gup_kunit_disk_byte(test, d.file, d.block,
						  PAGE_SIZE / 2, PAGE_SIZE / 2),
			'A');
	KUNIT_EXPECT_FALSE(test, folio_test_dirty(d.folio));
	KUNIT_EXPECT_TRUE(test, folio_maybe_dma_pinned(d.folio));
	gup_kunit_dma_write(&d, 'B', PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, vfs_fsync(d.file, 0), 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_dma_on_disk(test, &d), -1);
	gup_kunit_dma_release(&d);
	KUNIT_EXPECT_EQ(test, vfs_fsync(d.file, 0), 0);
	KUNIT_EXPECT_EQ(test, gup_kunit_dma_on_disk(test, &d), 'B');
	KUNIT_EXPECT_EQ(test, gup_kunit_dma_read_back(test, &d), 'B');
}

/*
 * A long-term pin (RDMA registering a file mapping) of page-cache pages
 * in ZONE_MOVABLE migrates them first, as for anonymous memory: the pins
 * hold copies outside ZONE_MOVABLE, with the file's data, which the file
 * now caches, and each isolated folio was counted in NR_ISOLATED_FILE and
 * given back. Read-only, which 6.12 allows for any file.
 */
static void pin_user_pages_longterm_migrates_file_pages(struct kunit *test)
{
	const long npages = 16;
	struct file *file = gup_kunit_ext4_file(test, npages, NULL);
	struct gup_kunit_pins *p = gup_kunit_pins(test, npages);
	struct page *before[16];
	long i, ret, isolated, movable = 0;
	unsigned long addr;

	for (i = 0; i < npages; i++) {
		before[i] = find_get_page(file->f_mapping, i);
		KUNIT_ASSERT_NOT_NULL(test, before[i]);
		movable += page_zonenum(before[i]) == ZONE_MOVABLE;
		put_page(before[i]);
	}
	if (!movable)
		kunit_skip(test, GUP_KUNIT_NEEDS_MOVABLE " (no page of the file is in it)");
	addr = gup_kunit_vm_mmap(test, file, npages * PAGE_SIZE, PROT_READ,
				 MAP_SHARED);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_VALUE(addr), "mmap: %ld",
			       (long)addr);
	isolated = gup_kunit_node_stat(NR_ISOLATED_FILE);
	ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, addr, npages, FOLL_LONGTERM, p->pages);
	gup_kunit_pins_got(p, ret);
	KUNIT_ASSERT_EQ(test, ret, npages);
	KUNIT_EXPECT_EQ(test, gup_kunit_node_stat(NR_ISOLATED_FILE), isolated);
	for (i = 0; i < npages; i++) {
		struct page *cached = find_get_page(file->f_mapping, i);
		char *kaddr = kmap_local_page(p->pages[i]);
		char first = kaddr[0], last = kaddr[PAGE_SIZE - 1];

		kunmap_local(kaddr);
		KUNIT_EXPECT_NE_MSG(test, page_zonenum(p->pages[i]), ZONE_MOVABLE,
				    "page %ld", i);
		KUNIT_EXPECT_PTR_EQ_MSG(test, cached, p->pages[i], "page %ld", i);
		KUNIT_EXPECT_EQ_MSG(test, first, 'A', "page %ld", i);
		KUNIT_EXPECT_EQ_MSG(test, last, 'A', "page %ld", i);
		if (cached)
			put_page(cached);
	}
	gup_kunit_unpin(p);
	/* Not left to the thread's exit: the file's release waits for it. */
	KUNIT_EXPECT_EQ(test, vm_munmap(addr, npages * PAGE_SIZE), 0);
}

static struct kunit_case gup_pin_ext4_dma_cases[] = {
	KUNIT_CASE(get_user_pages_loses_dma_once_reclaim_strips_buffers),
	KUNIT_CASE(pin_user_pages_keeps_dma_across_reclaim),
	KUNIT_CASE_PARAM(punch_hole_drops_taken_page_and_later_dma,
			 gup_kunit_foll_get_gen_params),
	KUNIT_CASE(writeback_of_pinned_page_writes_what_it_holds),
	KUNIT_CASE(pin_user_pages_longterm_migrates_file_pages),
	{}
};

static struct kunit_suite gup_pin_ext4_dma_suite = {
	.name = "gup_pin_ext4_dma",
	.suite_init = gup_kunit_suite_init,
	.suite_exit = gup_kunit_suite_exit,
	.init = gup_kunit_user_init,
	.exit = gup_kunit_case_exit,
	.test_cases = gup_pin_ext4_dma_cases,
};

kunit_test_suite(gup_pin_ext4_dma_suite);
