/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The mm internals that the GUP pin tests use, as this kernel spells them.
 *
 * The suites check behaviour that every kernel with FOLL_PIN shares: a pin
 * adds GUP_PIN_COUNTING_BIAS to a small folio and one exact pincount to a
 * large one, and the unpin family undoes it. How a test grabs one page,
 * reads a pincount or shares an anonymous page as fork() does depends on
 * the kernel; this header is the one place that knows, and gup_kunit.h
 * includes it.
 */
#ifndef _MM_GUP_KUNIT_MM_H
#define _MM_GUP_KUNIT_MM_H

#include <kunit/test.h>
#include <linux/blkdev.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/mount.h>
#include <linux/rmap.h>
#include <linux/sched/mm.h>
#include "../internal.h"

/* The largest folio order the page allocator hands out. */
#define GUP_KUNIT_MAX_ORDER	(MAX_ORDER - 1)

/* The exact pin count of a large folio: its compound_pincount. */
static inline int gup_kunit_pincount(struct folio *folio)
{
	return atomic_read(folio_pincount_ptr(folio));
}

/* The slow path's grab of one page (follow_page_mask()): try_grab_page(). */
static inline bool gup_kunit_try_grab_page(struct page *page,
					   unsigned int flags)
{
	return try_grab_page(page, flags);
}

/*
 * GUP-fast's grab of @refs references or pins: try_grab_folio(), with
 * interrupts off (gup_kunit_try_grab_fast() turns them off): it runs so
 * in GUP-fast, and folio_ref_try_add_rcu() insists on an atomic context
 * on some configurations.
 */
static inline struct folio *gup_kunit_grab_fast_irqs_off(struct page *page,
							 int refs,
							 unsigned int flags)
{
	return try_grab_folio(page, refs, flags);
}

/* May @page be pinned long-term where it is, without migrating it? */
static inline bool gup_kunit_longterm_pinnable(struct page *page)
{
	return is_longterm_pinnable_page(page);
}

/* Take @folio off the LRU for reclaim_pages(); true on success. */
static inline bool gup_kunit_isolate_lru(struct folio *folio)
{
	return folio_isolate_lru(folio) == 0;
}

/*
 * Give the case's kthread a user address space, the way 6.12's
 * kunit_attach_mm() does: exit_mm() drops it, and every mapping with it,
 * when the case's thread exits.
 */
static inline int gup_kunit_attach_mm(struct kunit *test)
{
	struct mm_struct *mm;

	if (current->mm)
		return 0;
	mm = mm_alloc();
	if (!mm)
		return -ENOMEM;
	mm->task_size = TASK_SIZE;
	arch_pick_mmap_layout(mm, &current->signal->rlim[RLIMIT_STACK]);
	kthread_use_mm(mm);
	return 0;
}

/* The ID mapping of a mount, as this kernel's vfs_mknod() wants it. */
static inline struct user_namespace *gup_kunit_idmap(struct vfsmount *mnt)
{
	return mnt_user_ns(mnt);
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
	int err = gup_kunit_attach_mm(test);

	return err ? err : vm_mmap(file, addr, len, prot, flags, 0);
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
 * GUP-fast alone, never the slow path: pin_user_pages_fast_only(). It
 * pins what is mapped and never faults.
 */
static inline long gup_kunit_pin_fast_only(unsigned long start,
					   unsigned long nr_pages,
					   unsigned int gup_flags,
					   struct page **pages)
{
	return pin_user_pages_fast_only(start, nr_pages, gup_flags, pages);
}

/* pin_user_pages() with mmap_lock held, without the vmas array. */
static inline long gup_kunit_pin_user_pages(unsigned long start,
					    unsigned long nr_pages,
					    unsigned int gup_flags,
					    struct page **pages)
{
	return pin_user_pages(start, nr_pages, gup_flags, pages, NULL);
}

/* get_user_pages() with mmap_lock held, without the vmas array. */
static inline long gup_kunit_get_user_pages(unsigned long start,
					    unsigned long nr_pages,
					    unsigned int gup_flags,
					    struct page **pages)
{
	return get_user_pages(start, nr_pages, gup_flags, pages, NULL);
}

/* pin_user_pages_remote() of @mm, mmap_lock held: no vmas, no *locked. */
static inline long gup_kunit_pin_user_pages_remote(struct mm_struct *mm,
						   unsigned long start,
						   unsigned long nr_pages,
						   unsigned int gup_flags,
						   struct page **pages)
{
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages,
				     NULL, NULL);
}

/*
 * May pin_user_pages_unlocked() pin long-term? Not in 6.1: it refuses
 * FOLL_LONGTERM with a WARN (get_user_pages_unlocked(), mm/gup.c:2367);
 * d64e2dbc33a1 ("mm/gup: simplify the external interface functions and
 * consolidate invariants", v6.3) lets it.
 */
#define GUP_KUNIT_UNLOCKED_LONGTERM	false

/* What fork()'s copy_present_pte() does to an anonymous page it shares. */
static inline int gup_kunit_dup_anon_rmap(struct page *page,
					  struct vm_area_struct *vma)
{
	return page_try_dup_anon_rmap(page, false, vma);
}

/* The child's exit unmaps an anonymous page that fork() shared. */
static inline void gup_kunit_remove_anon_rmap(struct page *page,
					      struct vm_area_struct *vma)
{
	page_remove_rmap(page, vma, false);
}

/*
 * Does a read-only FOLL_LONGTERM pin in a COW mapping break COW first, as
 * a write fault would (84209e87c696, "mm/gup: reliable R/O long-term
 * pinning in COW mappings", v6.2)? Not in 6.1: it pins what is mapped, the zero page included.
 */
static inline bool gup_kunit_longterm_ro_pin_unshares(void)
{
	return false;
}

/*
 * Does migrating a mapped page drain this CPU's LRU batches? Yes in 6.1:
 * __migrate_folio_move() calls lru_add_drain() after it puts the new folio on
 * the LRU, whenever the old one was mapped.
 */
static inline bool gup_kunit_migration_drains_this_cpu(void)
{
	return true;
}

/*
 * Set @q's largest request to @sectors, as a write of max_sectors_kb in
 * its sysfs folder does (io_pages too); *@old gets the value it had.
 * Return: 0.
 */
static inline int gup_kunit_max_sectors(struct request_queue *q,
					unsigned int sectors, unsigned int *old)
{
	spin_lock_irq(&q->queue_lock);
	*old = q->limits.max_sectors;
	q->limits.max_sectors = sectors;
	if (q->disk)
		q->disk->bdi->io_pages = sectors >> (PAGE_SHIFT - SECTOR_SHIFT);
	spin_unlock_irq(&q->queue_lock);
	return 0;
}

#endif /* _MM_GUP_KUNIT_MM_H */
