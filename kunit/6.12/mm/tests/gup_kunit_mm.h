/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The mm internals that the GUP pin tests use, as this kernel spells them.
 *
 * The suites check behaviour that every kernel with FOLL_PIN shares: a pin
 * adds GUP_PIN_COUNTING_BIAS to a small folio and one exact pincount to a
 * large one, and the unpin family undoes it. How a test grabs one page,
 * reads a pincount or shares an anonymous page as fork() does depends on
 * the kernel; this header is the one place that knows, and gup_kunit.h
 * includes it. The helpers longer than a line are in gup_kunit_mm.c.
 */
#ifndef _MM_GUP_KUNIT_MM_H
#define _MM_GUP_KUNIT_MM_H

#include <kunit/test.h>
#include <linux/blkdev.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/mount.h>
#include <linux/rmap.h>
#include "../internal.h"

/* The largest folio order the page allocator hands out. */
#define GUP_KUNIT_MAX_ORDER	MAX_PAGE_ORDER

/* The exact pin count of a large folio. */
static inline int gup_kunit_pincount(struct folio *folio)
{
	return atomic_read(&folio->_pincount);
}

/*
 * The slow path's grab of one page (follow_page_pte() and the huge-page
 * walkers): try_grab_folio() of the page's folio, one reference or pin.
 */
static inline bool gup_kunit_try_grab_page(struct page *page,
					   unsigned int flags)
{
	return !try_grab_folio(page_folio(page), 1, flags);
}

/*
 * GUP-fast's grab of @refs references or pins: try_grab_folio_fast(),
 * which insists on running with interrupts off, as GUP-fast does
 * (gup_kunit_try_grab_fast() turns them off).
 */
static inline struct folio *gup_kunit_grab_fast_irqs_off(struct page *page,
							 int refs,
							 unsigned int flags)
{
	return try_grab_folio_fast(page, refs, flags);
}

/* May @page be pinned long-term where it is, without migrating it? */
static inline bool gup_kunit_longterm_pinnable(struct page *page)
{
	return folio_is_longterm_pinnable(page_folio(page));
}

/* Take @folio off the LRU for reclaim_pages(); true on success. */
static inline bool gup_kunit_isolate_lru(struct folio *folio)
{
	return folio_isolate_lru(folio);
}

/* The ID mapping of a mount, as this kernel's vfs_mknod() wants it. */
static inline struct mnt_idmap *gup_kunit_idmap(struct vfsmount *mnt)
{
	return mnt_idmap(mnt);
}

/*
 * vm_mmap() into the case's address space, at @addr if it is free (0:
 * where the kernel picks); -errno as an address on error.
 */
static inline unsigned long gup_kunit_vm_mmap_at(struct kunit *test,
						 struct file *file,
						 unsigned long addr,
						 unsigned long len,
						 unsigned long prot,
						 unsigned long flags)
{
	addr = kunit_vm_mmap(test, file, addr, len, prot, flags, 0);
	return addr ? addr : -ENOMEM;
}

static inline unsigned long gup_kunit_vm_mmap(struct kunit *test,
					      struct file *file,
					      unsigned long len,
					      unsigned long prot,
					      unsigned long flags)
{
	return gup_kunit_vm_mmap_at(test, file, 0, len, prot, flags);
}

/*
 * Give the case's kthread a user address space: kunit_vm_mmap() attaches
 * one (kunit_attach_mm()) on first use. The case's first mapping is one
 * page that nothing else uses.
 */
static inline int gup_kunit_attach_mm(struct kunit *test)
{
	unsigned long addr;

	if (current->mm)
		return 0;
	addr = gup_kunit_vm_mmap(test, NULL, PAGE_SIZE, PROT_READ,
				 MAP_PRIVATE | MAP_ANONYMOUS);
	return IS_ERR_VALUE(addr) ? (int)addr : 0;
}

/*
 * GUP-fast alone, never the slow path: gup_fast_fallback() with
 * FOLL_FAST_ONLY, which pin_user_pages_fast_only() was until it lost its
 * last caller. It pins what is mapped and never faults.
 */
static inline long gup_kunit_pin_fast_only(unsigned long start,
					   unsigned long nr_pages,
					   unsigned int gup_flags,
					   struct page **pages)
{
	return gup_fast_fallback(start, nr_pages,
				 gup_flags | FOLL_PIN | FOLL_FAST_ONLY, pages);
}

/* pin_user_pages() with mmap_lock held. */
static inline long gup_kunit_pin_user_pages(unsigned long start,
					    unsigned long nr_pages,
					    unsigned int gup_flags,
					    struct page **pages)
{
	return pin_user_pages(start, nr_pages, gup_flags, pages);
}

/* get_user_pages() with mmap_lock held. */
static inline long gup_kunit_get_user_pages(unsigned long start,
					    unsigned long nr_pages,
					    unsigned int gup_flags,
					    struct page **pages)
{
	return get_user_pages(start, nr_pages, gup_flags, pages);
}

/* pin_user_pages_remote() of @mm, mmap_lock held throughout. */
static inline long gup_kunit_pin_user_pages_remote(struct mm_struct *mm,
						   unsigned long start,
						   unsigned long nr_pages,
						   unsigned int gup_flags,
						   struct page **pages)
{
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages,
				     NULL);
}

/*
 * May pin_user_pages_unlocked() pin long-term? Yes since d64e2dbc33a1
 * ("mm/gup: simplify the external interface functions and consolidate
 * invariants", v6.3).
 */
#define GUP_KUNIT_UNLOCKED_LONGTERM	true

/* What fork()'s copy_present_ptes() does to an anonymous page it shares. */
static inline int gup_kunit_dup_anon_rmap(struct page *page,
					  struct vm_area_struct *vma)
{
	return folio_try_dup_anon_rmap_pte(page_folio(page), page, vma);
}

/* The child's exit unmaps an anonymous page that fork() shared. */
static inline void gup_kunit_remove_anon_rmap(struct page *page,
					      struct vm_area_struct *vma)
{
	folio_remove_rmap_pte(page_folio(page), page, vma);
}

/*
 * Does a read-only FOLL_LONGTERM pin in a COW mapping break COW first, as
 * a write fault would (84209e87c696, "mm/gup: reliable R/O long-term
 * pinning in COW mappings", v6.2)? Yes in 6.12: gup_must_unshare() asks
 * for it for any page that is not anonymous, the zero page included.
 */
static inline bool gup_kunit_longterm_ro_pin_unshares(void)
{
	return true;
}

/*
 * Does migrating a mapped page drain this CPU's LRU batches? Not in 6.12:
 * migrate_folio_move() drains only when the old folio was mlocked
 * (PAGE_WAS_MLOCKED), so a batch that a long-term pin finds is drained
 * only by collect_longterm_unpinnable_folios() itself.
 */
static inline bool gup_kunit_migration_drains_this_cpu(void)
{
	return false;
}

/* ------------------------------------------------------------------ */
/* Files (gup_kunit_mm.c)                                              */
/* ------------------------------------------------------------------ */

/* What a case pins: a memfd, or a file that is not one. */
enum gup_kunit_file_kind {
	GUP_KUNIT_NO_FILE,
	GUP_KUNIT_SHMEM,		/* memfd_create() */
	GUP_KUNIT_HUGETLB,		/* memfd_create(MFD_HUGETLB) */
	GUP_KUNIT_HUGETLB_RESERVED,	/* a hugetlbfs file, pages reserved */
	GUP_KUNIT_ANON_INODE,		/* e.g. an eventfd */
	GUP_KUNIT_BLOCK_DEVICE,		/* /dev/ram1, with page cache */
	GUP_KUNIT_EXT4,			/* a file on the virtio disk's ext4 */
};

struct file *gup_kunit_open(struct kunit *test, enum gup_kunit_file_kind kind,
			    loff_t size);
void gup_kunit_fput(void *file);
struct file *gup_kunit_file(struct kunit *test, enum gup_kunit_file_kind kind,
			    loff_t size);
long gup_kunit_pool_unmovable(void);
void gup_kunit_pool_make_unmovable(struct kunit *test, long n);

/*
 * Set @q's largest request to @sectors, as a write of max_sectors_kb in
 * its sysfs folder does (0: the device's own limit); *@old gets the value
 * it had. Return: 0, or the error of the update.
 */
static inline int gup_kunit_max_sectors(struct request_queue *q,
					unsigned int sectors, unsigned int *old)
{
	struct queue_limits lim = queue_limits_start_update(q);

	*old = lim.max_user_sectors;
	lim.max_user_sectors = sectors;
	return queue_limits_commit_update_frozen(q, &lim);
}

#endif /* _MM_GUP_KUNIT_MM_H */
