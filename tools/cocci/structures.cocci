// SPDX-License-Identifier: GPL-2.0
// gup-pin-kunit audit (tools/audit.py): pinned pages that a caller keeps
// in a structure and releases in another function, followed for the
// structures the project knows. Each structure has store rules (where
// the pages of a pin call go in) and release rules (the release calls of
// the function that takes them out); tools/audit.py links a pin site to
// a structure stored in the same function or in a caller of it. One
// "AUDIT {json}" line each.
//
//  ib_umem     infiniband: sg_alloc_append_table_from_pages() into
//              umem->sgt_append; released per sg_page() by a function
//              taking a struct ib_umem * (__ib_umem_release)
//  pfn         vfio type1: the pages are kept as page_to_pfn(); released
//              by the functions of the file that turn a pfn back into a
//              page (put_pfn)
//  io_uring_buf io_uring's registered buffers: pages put into the
//              bvec of a struct io_mapped_ubuf; released by the functions
//              that hold one (io_buffer_unmap)
//  bio_pinned  the block layer: a bio flagged BIO_PAGE_PINNED; released
//              under a bio_flagged(..., BIO_PAGE_PINNED) test, or by a
//              function called under one ("guarded_call": 6.12's
//              bio_release_pages() -> __bio_release_pages(); spatch sees
//              one file at a time, tools/audit.py finds the callee)
//
// Confidence: Moderate (a structure is recognised by its type and
// fields, not followed through every assignment)
// Options: --no-includes --include-headers

virtual report

@initialize:python@
@@
import json


def emit(kind, p, **kw):
    d = dict(kind=kind, file=p[0].file, line=int(p[0].line),
             col=int(p[0].column), function=p[0].current_element)
    d.update((k, str(v)) for k, v in kw.items())
    print('AUDIT ' + json.dumps(d, sort_keys=True), flush=True)

// ---------------------------------------------------------------- ib_umem
@umem_store@
struct ib_umem *u;
expression pages;
position p;
@@
sg_alloc_append_table_from_pages@p(&u->sgt_append, pages, ...)

@script:python@
pages << umem_store.pages;
p << umem_store.p;
@@
emit('store', p, structure='ib_umem', pages=pages)

@umem_fn@
identifier f, u;
@@
f(..., struct ib_umem *u, ...) { ... }

@umem_rel@
identifier umem_fn.f;
identifier fn = {unpin_user_page, unpin_user_pages,
                 unpin_user_pages_dirty_lock,
                 unpin_user_page_range_dirty_lock, unpin_folio, unpin_folios,
                 unpin_user_folio, put_page, put_user_page, put_user_pages,
                 put_user_pages_dirty_lock, release_pages, folio_put,
                 folios_put, folio_put_refs, put_pages_list};
expression E;
expression list es;
position q;
@@
f(...) { <+... fn@q(<+... sg_page(E) ...+>, es) ...+> }

@script:python@
fn << umem_rel.fn;
q << umem_rel.q;
@@
emit('struct_release', q, structure='ib_umem', call=fn)

// -------------------------------------------------------------------- pfn
@pfn_store@
expression pages, i;
position p;
@@
page_to_pfn@p(pages[i])

@script:python@
pages << pfn_store.pages;
p << pfn_store.p;
@@
emit('store', p, structure='pfn', pages=pages, scope='file')

@pfn_fn@
identifier f;
expression pfn;
@@
f(...) { <+... pfn_to_page(pfn) ...+> }

@pfn_rel@
identifier pfn_fn.f;
identifier fn = {unpin_user_page, unpin_user_pages,
                 unpin_user_pages_dirty_lock,
                 unpin_user_page_range_dirty_lock, unpin_folio, unpin_folios,
                 unpin_user_folio, put_page, put_user_page, put_user_pages,
                 put_user_pages_dirty_lock, release_pages, folio_put,
                 folios_put, folio_put_refs, put_pages_list};
expression list es;
position q;
@@
f(...) { <+... fn@q(es) ...+> }

@script:python@
fn << pfn_rel.fn;
q << pfn_rel.q;
@@
emit('struct_release', q, structure='pfn', call=fn, scope='file')

// ----------------------------------------------------------- io_uring_buf
@imu_store@
struct io_mapped_ubuf *imu;
expression pages, i, j;
position p;
@@
(
imu->bvec[j].bv_page = pages[i]@p
|
bvec_set_page(&imu->bvec[j], pages[i]@p, ...)
)

@script:python@
pages << imu_store.pages;
p << imu_store.p;
@@
emit('store', p, structure='io_uring_buf', pages=pages)

@imu_fn@
identifier f;
struct io_mapped_ubuf *imu;
@@
f(...) { <+... imu ...+> }

@imu_rel@
identifier imu_fn.f;
identifier fn = {unpin_user_page, unpin_user_pages,
                 unpin_user_pages_dirty_lock,
                 unpin_user_page_range_dirty_lock, unpin_folio, unpin_folios,
                 unpin_user_folio, put_page, put_user_page, put_user_pages,
                 put_user_pages_dirty_lock, release_pages, folio_put,
                 folios_put, folio_put_refs, put_pages_list};
expression list es;
position q;
@@
f(...) { <+... fn@q(es) ...+> }

@script:python@
fn << imu_rel.fn;
q << imu_rel.q;
@@
emit('struct_release', q, structure='io_uring_buf', call=fn)

// ------------------------------------------------------------- bio_pinned
@bio_store@
expression b;
position p;
@@
bio_set_flag@p(b, BIO_PAGE_PINNED)

@script:python@
p << bio_store.p;
@@
emit('store', p, structure='bio_pinned', pages='')

@bio_rel@
expression b;
identifier fn = {unpin_user_page, unpin_user_pages,
                 unpin_user_pages_dirty_lock,
                 unpin_user_page_range_dirty_lock, unpin_folio, unpin_folios,
                 unpin_user_folio, put_page, put_user_page, put_user_pages,
                 put_user_pages_dirty_lock, release_pages, folio_put,
                 folios_put, folio_put_refs, put_pages_list};
expression list es;
position q;
statement S;
@@
(
if (<+... bio_flagged(b, BIO_PAGE_PINNED) ...+>) {
  <+... fn@q(es) ...+>
} else S
|
if (<+... bio_flagged(b, BIO_PAGE_PINNED) ...+>) {
  <+... fn@q(es) ...+>
}
)

@script:python@
fn << bio_rel.fn;
q << bio_rel.q;
@@
emit('struct_release', q, structure='bio_pinned', call=fn)

@bio_guard@
expression b;
identifier g;
expression list es;
position q;
statement S;
@@
(
if (<+... bio_flagged(b, BIO_PAGE_PINNED) ...+>) {
  <+... g@q(es) ...+>
} else S
|
if (<+... bio_flagged(b, BIO_PAGE_PINNED) ...+>) {
  <+... g@q(es) ...+>
}
)

@script:python@
g << bio_guard.g;
q << bio_guard.q;
@@
emit('guarded_call', q, structure='bio_pinned', callee=g)
