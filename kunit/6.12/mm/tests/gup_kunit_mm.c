// SPDX-License-Identifier: GPL-2.0
/*
 * The helpers of gup_kunit_mm.h that are more than a line: the files that
 * this kernel's cases pin (memfds, hugetlbfs files, a block device, an
 * anon inode, a file on ext4), and a hugetlb pool that memfd_pin_folios() can allocate
 * from.
 */

#include <linux/anon_inodes.h>
#include <linux/blkdev.h>
#include <linux/file.h>
#include <linux/hugetlb.h>
#include <linux/major.h>
#include <linux/shmem_fs.h>
#include "gup_kunit.h"

static const struct file_operations gup_kunit_anon_fops;

/* Free folios of the hugetlb pool outside ZONE_MOVABLE. */
long gup_kunit_pool_unmovable(void)
{
	struct hstate *h = &default_hstate;
	struct folio *folio;
	long n = 0;
	int nid;

	spin_lock_irq(&hugetlb_lock);
	for_each_node_state(nid, N_MEMORY)
		list_for_each_entry(folio, &h->hugepage_freelists[nid], lru)
			n += folio_zonenum(folio) != ZONE_MOVABLE;
	spin_unlock_irq(&hugetlb_lock);
	return n;
}

/*
 * memfd_alloc_folio() takes hugetlb folios from outside ZONE_MOVABLE
 * only, and hugepages= builds the boot-time pool in ZONE_MOVABLE when
 * there is one (movablecore=). A long-term pin of a hugetlb mapping
 * migrates its folios out of ZONE_MOVABLE, and the pool keeps the new
 * ones: do that until @n free folios of the pool are outside.
 */
void gup_kunit_pool_make_unmovable(struct kunit *test, long n)
{
	long missing = n - gup_kunit_pool_unmovable();
	long npages = missing * GUP_KUNIT_HPAGE_NR;
	struct gup_kunit_pins *p;
	unsigned long addr;
	long ret;

	if (missing <= 0)
		return;
	addr = gup_kunit_mmap(test, missing * PMD_SIZE, GUP_KUNIT_RW,
			      GUP_KUNIT_ANON | MAP_HUGETLB);
	p = gup_kunit_pins(test, npages);
	/* Fault it in first: a long-term pin faults in outside ZONE_MOVABLE. */
	gup_kunit_fill(test, addr, npages);
	ret = gup_kunit_pin_by(GUP_KUNIT_SLOW, addr, npages,
			       FOLL_WRITE | FOLL_LONGTERM, p->pages);
	gup_kunit_pins_got(p, ret);
	gup_kunit_unpin(p);
	KUNIT_ASSERT_EQ(test, vm_munmap(addr, missing * PMD_SIZE), 0);
	if (gup_kunit_pool_unmovable() < n)
		kunit_skip(test, GUP_KUNIT_NEEDS_HUGETLB " (%ld free folios outside ZONE_MOVABLE)",
			   n);
}

/**
 * gup_kunit_open() - a new file of some kind, as its users make it.
 * @test: the case; skipped if the kind cannot be had on this boot.
 * @kind: what file.
 * @size: its size, for the memfds.
 *
 * Return: the file (NULL for GUP_KUNIT_NO_FILE), or an ERR_PTR(); the
 * caller closes it.
 */
struct file *gup_kunit_open(struct kunit *test, enum gup_kunit_file_kind kind,
			    loff_t size)
{
	struct file *file;

	switch (kind) {
	case GUP_KUNIT_SHMEM:
		return shmem_file_setup("gup_kunit", size, VM_NORESERVE);
	case GUP_KUNIT_HUGETLB:
	case GUP_KUNIT_HUGETLB_RESERVED:
		gup_kunit_pool_make_unmovable(test, size / PMD_SIZE);
		return hugetlb_file_setup("gup_kunit", size,
					  kind == GUP_KUNIT_HUGETLB ?
					  VM_NORESERVE : 0,
					  HUGETLB_ANONHUGE_INODE, 0);
	case GUP_KUNIT_ANON_INODE:
		return anon_inode_getfile("[gup_kunit]", &gup_kunit_anon_fops,
					  NULL, O_RDWR);
	case GUP_KUNIT_BLOCK_DEVICE:
		file = bdev_file_open_by_dev(MKDEV(RAMDISK_MAJOR, 1),
					     BLK_OPEN_READ | BLK_OPEN_WRITE,
					     NULL, NULL);
		if (IS_ERR(file))
			kunit_skip(test, "needs /dev/ram1 (CONFIG_BLK_DEV_RAM_COUNT >= 2): %ld",
				   PTR_ERR(file));
		return file;
	case GUP_KUNIT_EXT4:
		return get_file(gup_kunit_ext4_file(test, size >> PAGE_SHIFT,
						    NULL));
	case GUP_KUNIT_NO_FILE:
		break;
	}
	return NULL;
}

/* A KUnit action: close @file now, not from a task_work. */
void gup_kunit_fput(void *file)
{
	__fput_sync(file);
}

/* A file of @kind and @size bytes, closed (synchronously) when the case ends. */
struct file *gup_kunit_file(struct kunit *test, enum gup_kunit_file_kind kind,
			    loff_t size)
{
	struct file *file = gup_kunit_open(test, kind, size);

	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR_OR_NULL(file), "file kind %d: %ld",
			       kind, PTR_ERR(file));
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gup_kunit_fput,
							file), 0);
	return file;
}
