/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The shared test API of the GUP pin KUnit suites (CONFIG_GUP_KUNIT_TEST).
 *
 * The suites are one file each, <suite>_kunit.c, and link (and so run) in
 * the order of mm/tests/Makefile: gup_pin_final_kunit.o last, so that its
 * suite checks what the others leave behind. This library is:
 *
 *   gup_kunit.c          its core: counters, snapshots, the console probe,
 *                        the resources a case owns (folios, pgmaps)
 *   gup_kunit_checks.c   the case bodies that both trees' gup_pin_grab share
 *   gup_kunit_umem.c     user memory: mappings, pins, the ways into GUP
 *   gup_kunit_disk.c     files on the ext4 of the virtio disk
 *   gup_kunit_fault.c    fault injection: sweeps of every failure point
 *   gup_kunit_race.c     races: two operations on two CPUs, round by round
 *
 * gup_kunit_mm.h holds what differs between kernels (how to grab one page,
 * read a pincount, attach a user address space, and, where a kernel needs
 * them, the longer helpers of its gup_kunit_mm.c); nothing here does.
 *
 * mm/tests/.kunitconfig is the configuration, and its comment the one
 * command line, with which every case runs; a case that lacks what it
 * needs skips with one of the GUP_KUNIT_NEEDS_* reasons below.
 *
 * Every case restores what it changed: each folio, pgmap or pin array a
 * case gets is a KUnit resource whose release undoes exactly what the case
 * still holds, so that a broken kernel shows up as failed expectations
 * rather than as a "Bad page state" in a later case.
 */
#ifndef _MM_GUP_KUNIT_H
#define _MM_GUP_KUNIT_H

#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/kthread.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/vmstat.h>
#include "gup_kunit_mm.h"

/*
 * KUNIT_ARRAY_PARAM() for a table of @type whose rows name themselves in
 * ->name, the description of each parameter (what KUNIT_ARRAY_PARAM_DESC()
 * of 6.12 does; 6.1 does not have it): defines @prefix##_gen_params.
 */
#define GUP_KUNIT_ARRAY_PARAM_NAMED(prefix, array, type)		\
	static void prefix##_desc(const type row[], char *desc)		\
	{								\
		strscpy(desc, row->name, KUNIT_PARAM_DESC_SIZE);	\
	}								\
	KUNIT_ARRAY_PARAM(prefix, array, prefix##_desc)

/*
 * What a case needs beyond mm/tests/.kunitconfig, as the skip reason of a
 * case that does not find it: each names the argument of the run that
 * the comment of .kunitconfig documents.
 */
#define GUP_KUNIT_NEEDS_MOVABLE \
	"needs a ZONE_MOVABLE: pass --kernel_args=movablecore=512M"
#define GUP_KUNIT_PASS_HUGEPAGES	"pass --kernel_args=hugepages=16"
#define GUP_KUNIT_NEEDS_HUGETLB \
	"needs a hugetlb pool: " GUP_KUNIT_PASS_HUGEPAGES
#define GUP_KUNIT_NEEDS_GATE_AREA \
	"needs a readable gate area: pass --kernel_args=vsyscall=emulate"
#define GUP_KUNIT_NEEDS_PRAM \
	"needs RAM that the page allocator leaves alone: pass --kernel_args=memmap=2M!1G"
#define GUP_KUNIT_NEEDS_TWO_CPUS \
	"needs two CPUs: pass --qemu_args='-smp 2'"
#define GUP_KUNIT_NEEDS_DISK \
	"needs an empty ext4 on a virtio disk vda: make gup-ext4.img as mm/tests/.kunitconfig says and pass --qemu_args='-drive file=gup-ext4.img,if=virtio,format=raw,snapshot=on'"
#define GUP_KUNIT_NEEDS_SWAP \
	"needs swap space, which only user space can turn on (swapon(2))"
#define GUP_KUNIT_NEEDS_FAULT_INJECTION \
	"needs CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC and CONFIG_FAULT_INJECTION_DEBUG_FS"

/* ------------------------------------------------------------------ */
/* Counters and snapshots                                              */
/* ------------------------------------------------------------------ */

long gup_kunit_node_stat(enum node_stat_item item);

/**
 * struct gup_kunit_snap - a folio's pin state and the global pin counters.
 * @ref: the folio's refcount.
 * @pincount: its exact pincount; -1 for small folios, which have none.
 * @acquired: NR_FOLL_PIN_ACQUIRED.
 * @released: NR_FOLL_PIN_RELEASED.
 */
struct gup_kunit_snap {
	int ref;
	int pincount;
	long acquired;
	long released;
};

void gup_kunit_snap(struct folio *folio, struct gup_kunit_snap *s);
void gup_kunit_snap_counters(struct gup_kunit_snap *s);

/* The pincount that a snapshot records: -1 for a small folio. */
static inline int gup_kunit_snap_pincount(struct folio *folio)
{
	return folio_test_large(folio) ? gup_kunit_pincount(folio) : -1;
}

/*
 * GUP-fast's grab of @refs references or pins, with interrupts off, as
 * GUP-fast runs it: this kernel's grab (gup_kunit_grab_fast_irqs_off()).
 */
static inline struct folio *gup_kunit_try_grab_fast(struct page *page,
						    int refs,
						    unsigned int flags)
{
	unsigned long irqflags;
	struct folio *folio;

	local_irq_save(irqflags);
	folio = gup_kunit_grab_fast_irqs_off(page, refs, flags);
	local_irq_restore(irqflags);
	return folio;
}

/* May a device be writing to @page: folio_maybe_dma_pinned() of its folio. */
static inline bool gup_kunit_page_pinned(struct page *page)
{
	return folio_maybe_dma_pinned(page_folio(page));
}

/* What @refs pins add to the folio's refcount. */
static inline long gup_kunit_pin_refs(struct folio *folio, long refs)
{
	return folio_test_large(folio) ? refs : refs * GUP_PIN_COUNTING_BIAS;
}

/*
 * Expect the folio to differ from snapshot @s by exactly @dref references
 * and @dpin pincount (ignored for small folios, which have none).
 * Macros, so that a failure names the line of the case.
 */
#define GUP_KUNIT_EXPECT_FOLIO(test, f, s, dref, dpin)			\
do {									\
	struct kunit *__gk_t = (test);					\
	struct folio *__gk_f = (f);					\
	const struct gup_kunit_snap *__gk_s = (s);			\
	long __gk_ref = folio_ref_count(__gk_f);			\
	long __gk_pin = gup_kunit_snap_pincount(__gk_f);		\
									\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_ref - __gk_s->ref, (long)(dref), \
			    "refcount %ld, was %d", __gk_ref, __gk_s->ref); \
	if (__gk_s->pincount >= 0)					\
		KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_pin - __gk_s->pincount, \
				    (long)(dpin), "pincount %ld, was %d", \
				    __gk_pin, __gk_s->pincount);	\
} while (0)

/*
 * Expect NR_FOLL_PIN_ACQUIRED / NR_FOLL_PIN_RELEASED to have moved by
 * exactly @dacq / @drel since snapshot @s. The counters are global, so a
 * case that uses several folios checks them once, from one snapshot.
 */
#define GUP_KUNIT_EXPECT_COUNTERS(test, s, dacq, drel)			\
do {									\
	struct kunit *__gk_t = (test);					\
	const struct gup_kunit_snap *__gk_s = (s);			\
	long __gk_acq = gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED);	\
	long __gk_rel = gup_kunit_node_stat(NR_FOLL_PIN_RELEASED);	\
									\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_acq - __gk_s->acquired,	\
			    (long)(dacq), "NR_FOLL_PIN_ACQUIRED delta");	\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_rel - __gk_s->released,	\
			    (long)(drel), "NR_FOLL_PIN_RELEASED delta");	\
} while (0)

/*
 * The invariant of every user-memory case: whatever a call did, retries
 * and migrations included, the pins it still holds explain the counters
 * exactly: NR_FOLL_PIN_ACQUIRED - NR_FOLL_PIN_RELEASED moved by @held.
 */
#define GUP_KUNIT_EXPECT_PINS_HELD(test, s, held)			\
do {									\
	struct kunit *__gk_t = (test);					\
	const struct gup_kunit_snap *__gk_s = (s);			\
	long __gk_net = gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED) -	\
			__gk_s->acquired -				\
			(gup_kunit_node_stat(NR_FOLL_PIN_RELEASED) -	\
			 __gk_s->released);				\
									\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_net, (long)(held),		\
			    "pins acquired - released since the snapshot"); \
} while (0)

/**
 * struct gup_kunit_pool - the counts of the default hstate's hugetlb pool.
 * @nr: nr_huge_pages.
 * @free: free_huge_pages.
 * @resv: resv_huge_pages.
 * @surplus: surplus_huge_pages.
 */
struct gup_kunit_pool {
	unsigned long nr, free, resv, surplus;
};

void gup_kunit_pool(struct gup_kunit_pool *p);

/*
 * Expect the hugetlb pool to differ from snapshot @p0 by exactly @dfree
 * free and @dresv reserved huge pages, with as many pages and surplus.
 */
#define GUP_KUNIT_EXPECT_POOL(test, p0, dfree, dresv)			\
do {									\
	struct kunit *__gk_t = (test);					\
	const struct gup_kunit_pool *__gk_p0 = (p0);			\
	struct gup_kunit_pool __gk_p;					\
									\
	gup_kunit_pool(&__gk_p);					\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_p.nr, __gk_p0->nr,		\
			    "nr_huge_pages");				\
	KUNIT_EXPECT_EQ_MSG(__gk_t, __gk_p.surplus, __gk_p0->surplus,	\
			    "surplus_huge_pages");			\
	KUNIT_EXPECT_EQ_MSG(__gk_t, (long)(__gk_p.free - __gk_p0->free), \
			    (long)(dfree), "free_huge_pages delta");	\
	KUNIT_EXPECT_EQ_MSG(__gk_t, (long)(__gk_p.resv - __gk_p0->resv), \
			    (long)(dresv), "resv_huge_pages delta");	\
} while (0)

/* Both of the above, for a case with a single folio. */
#define GUP_KUNIT_EXPECT_DELTA(test, f, s, dref, dpin, dacq, drel)	\
do {									\
	struct kunit *__gk_test = (test);				\
	const struct gup_kunit_snap *__gk_snap = (s);			\
									\
	GUP_KUNIT_EXPECT_FOLIO(__gk_test, f, __gk_snap, dref, dpin);	\
	GUP_KUNIT_EXPECT_COUNTERS(__gk_test, __gk_snap, dacq, drel);	\
} while (0)

/* ------------------------------------------------------------------ */
/* Warnings: every suite counts the WARNINGs that its cases cause      */
/* ------------------------------------------------------------------ */

extern atomic_t gup_kunit_warnings;
extern atomic_t gup_kunit_fs_reports;

int gup_kunit_suite_init(struct kunit_suite *suite);
void gup_kunit_suite_exit(struct kunit_suite *suite);
void gup_kunit_warn_reset(void);
int gup_kunit_case_init(struct kunit *test);
void gup_kunit_case_exit(struct kunit *test);
void gup_kunit_expect_report(struct kunit *test, const char *text);

/*
 * Expect exactly @n WARNINGs since the case started (or the last reset),
 * each a console report that contains @text, then count from zero again:
 * a case that warns on purpose says how often and where, once, here, and
 * the suite's .exit still fails it for any warning after that.
 */
#define GUP_KUNIT_EXPECT_WARNINGS_AT(test, n, text)			\
do {									\
	struct kunit *__gk_wt = (test);					\
	int __gk_n = (n);						\
									\
	KUNIT_EXPECT_EQ_MSG(__gk_wt, atomic_read(&gup_kunit_warnings),	\
			    __gk_n, "WARNINGs on the console");		\
	if (__gk_n)							\
		gup_kunit_expect_report(__gk_wt, (text));		\
	gup_kunit_warn_reset();						\
} while (0)

#define GUP_KUNIT_EXPECT_WARNINGS(test, n)				\
	GUP_KUNIT_EXPECT_WARNINGS_AT(test, n, "WARNING:")

/*
 * The same for filesystem complaints ("EXT4-fs warning", "EXT4-fs error"),
 * each a report that contains @text: expect exactly @n since the case
 * started or the last check.
 */
#define GUP_KUNIT_EXPECT_FS_REPORTS(test, n, text)			\
do {									\
	struct kunit *__gk_ft = (test);					\
	int __gk_n = (n);						\
									\
	KUNIT_EXPECT_EQ_MSG(__gk_ft, atomic_xchg(&gup_kunit_fs_reports, 0), \
			    __gk_n, "EXT4-fs warnings and errors on the console"); \
	if (__gk_n)							\
		gup_kunit_expect_report(__gk_ft, (text));		\
} while (0)

/* ------------------------------------------------------------------ */
/* Folios owned by a case                                              */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_folio - a folio allocated by a case, as a KUnit resource.
 * @folio: the folio.
 * @pins: FOLL_PIN references the case holds and has not released.
 * @gets: plain references the case holds and has not released.
 *
 * A case updates @pins and @gets whenever it grabs or puts, so that the
 * release function can undo exactly what is still outstanding, however
 * the case ended.
 */
struct gup_kunit_folio {
	struct folio *folio;
	long pins;
	long gets;
};

/* Folios and pgmaps the suites allocated and have not freed. */
extern atomic_t gup_kunit_alive;

struct gup_kunit_folio *gup_kunit_alloc(struct kunit *test,
					unsigned int order);

/* The head page of a case's folio, or its last page. */
static inline struct page *gup_kunit_folio_page(struct gup_kunit_folio *f,
						bool last)
{
	return folio_page(f->folio, last ? folio_nr_pages(f->folio) - 1 : 0);
}

/* Folio orders: small, the smallest large ones, PMD order, the largest. */
static const unsigned int gup_kunit_orders[] __maybe_unused = {
	0, 1, 2, PMD_SHIFT - PAGE_SHIFT, GUP_KUNIT_MAX_ORDER,
};

static const unsigned int gup_kunit_large_orders[] __maybe_unused = {
	1, 2, 3, PMD_SHIFT - PAGE_SHIFT, GUP_KUNIT_MAX_ORDER,
};

static inline void gup_kunit_order_desc(const unsigned int *order,
					char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "order %u", *order);
}

/* A grab through the head or the last page of a folio of some order. */
struct gup_kunit_grab_case {
	unsigned int order;
	int refs;
	bool last;
};

static const struct gup_kunit_grab_case gup_kunit_grab_cases[] __maybe_unused = {
	{ 0, 1, false }, { 0, 3, false },
	{ 1, 1, false }, { 1, 1, true }, { 2, 5, true },
	{ PMD_SHIFT - PAGE_SHIFT, 1, false },
	{ PMD_SHIFT - PAGE_SHIFT, 512, true },
	{ GUP_KUNIT_MAX_ORDER, 1, true }, { GUP_KUNIT_MAX_ORDER, 7, false },
};

static inline void gup_kunit_grab_desc(const struct gup_kunit_grab_case *c,
				       char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "order %u refs %d via %s page",
		 c->order, c->refs, c->last ? "last" : "head");
}

/*
 * Pin every page of @per_folio pages of the case's folio @f (wrapping
 * around a smaller folio) with the slow path's grab; store them in @pages
 * and return how many.
 */
int gup_kunit_pin_pages(struct kunit *test, struct gup_kunit_folio *f,
			struct page **pages, int per_folio);

/* ------------------------------------------------------------------ */
/* Checks that both trees' gup_pin_grab cases share                    */
/* ------------------------------------------------------------------ */

/* A grab that races with a split of its folio: the grab flags and refs. */
struct gup_kunit_split_case {
	const char *name;
	unsigned int flags;
	int refs;
};

static const struct gup_kunit_split_case gup_kunit_split_cases[] __maybe_unused = {
	{ "FOLL_GET", FOLL_GET, 1 },
	{ "FOLL_PIN", FOLL_PIN, 3 },
};

static inline void gup_kunit_split_desc(const struct gup_kunit_split_case *c,
					char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s refs %d", c->name, c->refs);
}

void gup_kunit_check_fast_grab(struct kunit *test,
			       const struct gup_kunit_grab_case *c,
			       unsigned int flags);
void gup_kunit_check_fast_grab_of_zero_page(struct kunit *test);
void gup_kunit_check_fast_grab_refuses_freed(struct kunit *test,
					     unsigned int order);
void gup_kunit_check_fast_grab_without_flags(struct kunit *test);
void gup_kunit_check_split_retry(struct kunit *test,
				 const struct gup_kunit_split_case *c);

/*
 * Pageblock migratetypes, and whether they allow long-term pins. The
 * whole pageblock belongs to the case (a pageblock-order folio), so
 * changing its type cannot misfile free pages; the type is restored
 * under the zone lock.
 */
struct gup_kunit_mt_case {
	const char *name;
	int migratetype;
	bool pinnable;
};

static const struct gup_kunit_mt_case gup_kunit_mt_cases[] __maybe_unused = {
	{ "MIGRATE_MOVABLE", MIGRATE_MOVABLE, true },
	{ "MIGRATE_UNMOVABLE", MIGRATE_UNMOVABLE, true },
#ifdef CONFIG_CMA
	{ "MIGRATE_CMA", MIGRATE_CMA, false },
#endif
#ifdef CONFIG_MEMORY_ISOLATION
	{ "MIGRATE_ISOLATE", MIGRATE_ISOLATE, false },
#endif
};

void gup_kunit_check_pinnable_mt(struct kunit *test,
				 const struct gup_kunit_mt_case *c);
void gup_kunit_check_pinnable_movable(struct kunit *test);
void gup_kunit_check_fast_refusal_mt(struct kunit *test,
				     const struct gup_kunit_mt_case *c);
void gup_kunit_check_fast_refusal_movable(struct kunit *test);

/* ------------------------------------------------------------------ */
/* ZONE_DEVICE pgmaps owned by a case                                  */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_devmem - a ZONE_DEVICE pgmap created by a case.
 * @pgmap: the pagemap, over SZ_2M of physical address space.
 * @res: that range.
 * @frees: how many times ->page_free() ran for its pages.
 * @freed: the page that ->page_free() was last given.
 * @inits: how many of its pages the case handed out (DEVICE_PRIVATE and
 *	COHERENT pages start free, at refcount 0).
 */
struct gup_kunit_devmem {
	struct dev_pagemap pgmap;
	struct resource *res;
	atomic_t frees;
	struct page *freed;
	int inits;
};

/*
 * Or'ed into the type of gup_kunit_devmem(): back the pgmap with real
 * memory, which the CPU can read and write (device-coherent pages that
 * user space maps and that migration copies), rather than with a free
 * physical range that nothing backs.
 */
#define GUP_KUNIT_DEVMEM_RAM	0x100UL

struct gup_kunit_devmem *gup_kunit_devmem(struct kunit *test,
					  unsigned long type);
struct page *gup_kunit_devmem_page(struct gup_kunit_devmem *d);

/* ------------------------------------------------------------------ */
/* User memory                                                         */
/* ------------------------------------------------------------------ */

#define GUP_KUNIT_NPAGES	8
#define GUP_KUNIT_RW		(PROT_READ | PROT_WRITE)
#define GUP_KUNIT_ANON		(MAP_PRIVATE | MAP_ANONYMOUS)
#define GUP_KUNIT_HPAGE_NR	(1L << (PMD_SHIFT - PAGE_SHIFT))

int gup_kunit_user_init(struct kunit *test);

/**
 * struct gup_kunit_pins - pages a case pinned, as a KUnit resource.
 * @pages: the array that pin_user_pages*() filled.
 * @nr: how many of them are still pinned.
 * @foll_get: they were taken with FOLL_GET (released with put_page()).
 *
 * The release touches only struct pages, never an mm: it may run after
 * the case's address space is gone.
 */
struct gup_kunit_pins {
	struct page **pages;
	long nr;
	bool foll_get;
};

struct gup_kunit_pins *gup_kunit_pins(struct kunit *test, long n);

/* Record a pin_user_pages*() result: only what was pinned is released. */
static inline void gup_kunit_pins_got(struct gup_kunit_pins *p, long ret)
{
	p->nr = ret > 0 ? ret : 0;
}

void gup_kunit_unpin(struct gup_kunit_pins *p);
void gup_kunit_release(struct gup_kunit_pins *p);

/**
 * enum gup_kunit_path - the ways into GUP of a pin of user memory.
 * @GUP_KUNIT_SLOW: the slow path, pin_user_pages(), mmap_lock held.
 * @GUP_KUNIT_FAST: GUP-fast with the slow path behind it,
 *	pin_user_pages_fast().
 * @GUP_KUNIT_FAST_ONLY: GUP-fast alone (FOLL_FAST_ONLY): what it decides
 *	before the slow path has its say; it never faults.
 */
enum gup_kunit_path { GUP_KUNIT_SLOW, GUP_KUNIT_FAST, GUP_KUNIT_FAST_ONLY };

long gup_kunit_pin_by(enum gup_kunit_path path, unsigned long start,
		      long npages, unsigned int flags, struct page **pages);

/* The two ways in of a driver: pin_user_pages_fast(), pin_user_pages(). */
static const enum gup_kunit_path gup_kunit_paths[] __maybe_unused = {
	GUP_KUNIT_FAST, GUP_KUNIT_SLOW,
};

static inline void gup_kunit_path_desc(const enum gup_kunit_path *path,
				       char *desc)
{
	strscpy(desc, *path == GUP_KUNIT_SLOW ? "slow path" :
		*path == GUP_KUNIT_FAST ? "GUP-fast" : "GUP-fast alone",
		KUNIT_PARAM_DESC_SIZE);
}

unsigned long gup_kunit_mmap_at(struct kunit *test, unsigned long at,
				unsigned long len, unsigned long prot,
				unsigned long flags);
unsigned long gup_kunit_mmap(struct kunit *test, unsigned long len,
			     unsigned long prot, unsigned long flags);
unsigned long gup_kunit_mmap_driver(struct kunit *test, const char *name,
				    const struct file_operations *fops,
				    void *priv);
/* The tag that gup_kunit_fill() writes into page @i: it names the page. */
#define GUP_KUNIT_TAG(i)	(0x70696e00ULL + (i))

void gup_kunit_fill(struct kunit *test, unsigned long addr, long npages);
u64 gup_kunit_tag(struct page *page);
struct page *gup_kunit_mapped(struct kunit *test, unsigned long addr, long i);
void gup_kunit_expect_filled(struct kunit *test, struct page **pages,
			     long npages);
void gup_kunit_expect_mapped(struct kunit *test, unsigned long addr,
			     struct page **pages, long npages);
void gup_kunit_user_refs(struct kunit *test, unsigned long addr, long npages,
			 int *refs);
unsigned long gup_kunit_fill_and_snap(struct kunit *test, int *refs,
				      struct gup_kunit_snap *s);
void gup_kunit_expect_biased(struct kunit *test, struct page **pages,
			     long npages, const int *ref0, bool pinned);
struct folio *gup_kunit_user_folio(struct kunit *test, unsigned long addr);
unsigned long gup_kunit_mmap_movable(struct kunit *test, unsigned long len,
				     unsigned long flags, long offset,
				     long npages);
int gup_kunit_pageout(unsigned long addr);

/* ------------------------------------------------------------------ */
/* Fault injection: a sweep of every failure point of a call          */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_fault_kind - the memory a fault case pins.
 * @name: what it is, in the parameter's description.
 * @mem: which kind (the case's own enum).
 * @flags: the FOLL_ flags of the call.
 * @npages: how many pages the call is asked for.
 * @in_short: swept by default, not only with gup_kunit_fault.full=1.
 */
struct gup_kunit_fault_kind {
	const char *name;
	int mem;
	unsigned int flags;
	long npages;
	bool in_short;
};

/**
 * struct gup_kunit_fault_step - one parameter of a fault case.
 * @kind: the memory.
 * @n: the failure point that fails: current->fail_nth.
 */
struct gup_kunit_fault_step {
	const struct gup_kunit_fault_kind *kind;
	unsigned int n;
};

/**
 * struct gup_kunit_fault_before - what a call must leave as it found it.
 * @s: the pin counters.
 * @isolated_anon: NR_ISOLATED_ANON.
 * @isolated_file: NR_ISOLATED_FILE.
 */
struct gup_kunit_fault_before {
	struct gup_kunit_snap s;
	long isolated_anon;
	long isolated_file;
};

const void *gup_kunit_fault_next(const struct gup_kunit_fault_kind *kinds,
				 size_t count, const void *prev, char *desc);

/* The parameter generator of a fault case that sweeps @count @kinds. */
#define GUP_KUNIT_FAULT_PARAMS(name, kinds, count)			\
	static const void *name##_gen_params(const void *prev, char *desc) \
	{								\
		return gup_kunit_fault_next(kinds, count, prev, desc);	\
	}

/*
 * Where a sweep's warm-up round maps its memory (at 16 TiB): a region of
 * the address space that shares no page table with the memory of the
 * round under test, which must allocate its own.
 */
#define GUP_KUNIT_FAULT_WARM_AT		(16UL << 40)

/**
 * typedef gup_kunit_fault_round_fn - one round of a fault case.
 * @test: the case.
 * @ctx: the case's context: its call.
 * @at: where to map the memory, or 0: where the kernel picks.
 *
 * Sets up, calls between gup_kunit_fault_arm() and
 * gup_kunit_fault_disarm(), checks and cleans up.
 */
typedef void (*gup_kunit_fault_round_fn)(struct kunit *test, const void *ctx,
					 unsigned long at);

void gup_kunit_fault_run(struct kunit *test, gup_kunit_fault_round_fn round,
			 const void *ctx);
void gup_kunit_fault_arm(struct kunit *test);
bool gup_kunit_fault_disarm(struct kunit *test, const char *what, long ret,
			    long npages);
void gup_kunit_fault_expect_result(struct kunit *test, bool reached, long ret,
				   long npages);
void gup_kunit_fault_expect_pages(struct kunit *test, unsigned long addr,
				  struct page **pages, long nr, bool pinned);
void gup_kunit_fault_snap(struct gup_kunit_fault_before *b);
void gup_kunit_fault_expect_restored(struct kunit *test,
				     const struct gup_kunit_fault_before *b,
				     unsigned long addr, long npages,
				     bool anon_exclusive);

/* ------------------------------------------------------------------ */
/* Races: two operations on two CPUs at once                          */
/* ------------------------------------------------------------------ */

/**
 * struct gup_kunit_race - a pairing of two operations that race.
 * @name: its name, in the report line.
 * @prepare: NULL, or what to set up before each round, in the case's
 *	thread; non-zero (having failed the case) ends the race.
 * @a: side A, the case's thread on the first CPU: one operation,
 *	repeated while B runs; 0 or an errno, which ends the race.
 * @b: side B, a kthread on the second CPU in the case's address space:
 *	one operation per round; 0 or an errno.
 * @check: what must hold after a round, whatever the interleaving; false
 *	(having failed the case) ends the race.
 * @rounds: the rounds of make test (gup_kunit_race.rounds= overrides).
 */
struct gup_kunit_race {
	const char *name;
	int (*prepare)(struct kunit *test, void *ctx, int round);
	int (*a)(void *ctx, int round, unsigned long i);
	int (*b)(void *ctx, int round);
	bool (*check)(struct kunit *test, void *ctx, int round);
	unsigned int rounds;
};

void gup_kunit_race(struct kunit *test, const struct gup_kunit_race *race,
		    void *ctx);

/* ------------------------------------------------------------------ */
/* The per-CPU LRU batches                                             */
/* ------------------------------------------------------------------ */

int gup_kunit_other_cpu(struct kunit *test);
void gup_kunit_on_cpu(struct kunit *test, int cpu);

/*
 * Whether @folio, mapped and not isolated, waits in a CPU's LRU batch:
 * folio_add_lru() holds a reference and sets PG_lru only when the batch
 * is moved to the LRU.
 */
static inline bool gup_kunit_lru_batched(struct folio *folio)
{
	return !folio_test_lru(folio);
}

/* ------------------------------------------------------------------ */
/* A file on a real ext4 (the virtio disk of the QEMU configuration)   */
/* ------------------------------------------------------------------ */

struct file *gup_kunit_ext4_file(struct kunit *test, long npages,
				 sector_t *blocks);
void gup_kunit_ext4_page_requests(struct kunit *test, struct file *file);
int gup_kunit_disk_byte(struct kunit *test, struct file *file, sector_t blk,
			size_t off, size_t len);
int gup_kunit_file_byte_from_disk(struct kunit *test, struct file *file,
				  long index);

#endif /* _MM_GUP_KUNIT_H */
