// SPDX-License-Identifier: GPL-2.0
// gup-pin-kunit audit (tools/audit.py): every call site of the pin API and
// of the get_user_pages family, every release call, with the function they
// are in and their page-array argument. tools/audit.py pairs them per
// function; this file only reports, as one "AUDIT {json}" line each.
//
// Confidence: High (calls are matched by name and argument position)
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

// pin_user_pages(start, nr, flags, pages[, vmas]) and the _fast variants
@pin4@
identifier fn = {pin_user_pages, pin_user_pages_fast,
                 pin_user_pages_fast_only};
expression start, nr, flags, pages;
position p;
@@
fn@p(start, nr, flags, pages, ...)

@script:python@
fn << pin4.fn;
flags << pin4.flags;
pages << pin4.pages;
p << pin4.p;
@@
emit('pin', p, call=fn, flags=flags, pages=pages)

// pin_user_pages_remote(mm, start, nr, flags, pages[, vmas], locked)
@pin5@
expression mm, start, nr, flags, pages;
position p;
@@
pin_user_pages_remote@p(mm, start, nr, flags, pages, ...)

@script:python@
flags << pin5.flags;
pages << pin5.pages;
p << pin5.p;
@@
emit('pin', p, call='pin_user_pages_remote', flags=flags, pages=pages)

// pin_user_pages_unlocked(start, nr, pages, flags)
@pin3@
expression start, nr, flags, pages;
position p;
@@
pin_user_pages_unlocked@p(start, nr, pages, flags)

@script:python@
flags << pin3.flags;
pages << pin3.pages;
p << pin3.p;
@@
emit('pin', p, call='pin_user_pages_unlocked', flags=flags, pages=pages)

// memfd_pin_folios(memfd, start, end, folios, max_folios, offset)
@pinmemfd@
expression memfd, start, end, folios;
position p;
@@
memfd_pin_folios@p(memfd, start, end, folios, ...)

@script:python@
folios << pinmemfd.folios;
p << pinmemfd.p;
@@
emit('pin', p, call='memfd_pin_folios', flags='', pages=folios)

// The get_user_pages family: get_user_pages(start, nr, flags, pages[, vmas])
// and get_user_pages_fast(_only)(start, nr, flags, pages)
@get4@
identifier fn = {get_user_pages, get_user_pages_fast,
                 get_user_pages_fast_only};
expression start, nr, flags, pages;
position p;
@@
fn@p(start, nr, flags, pages, ...)

@script:python@
fn << get4.fn;
flags << get4.flags;
pages << get4.pages;
p << get4.p;
@@
emit('get', p, call=fn, flags=flags, pages=pages)

@get5@
expression mm, start, nr, flags, pages;
position p;
@@
get_user_pages_remote@p(mm, start, nr, flags, pages, ...)

@script:python@
flags << get5.flags;
pages << get5.pages;
p << get5.p;
@@
emit('get', p, call='get_user_pages_remote', flags=flags, pages=pages)

@get3@
expression start, nr, flags, pages;
position p;
@@
get_user_pages_unlocked@p(start, nr, pages, flags)

@script:python@
flags << get3.flags;
pages << get3.pages;
p << get3.p;
@@
emit('get', p, call='get_user_pages_unlocked', flags=flags, pages=pages)

// Every call of a release function: the unpin family, and what drops a
// plain reference (tools/audit.py knows which is which).
@rel@
identifier fn = {unpin_user_page, unpin_user_pages,
                 unpin_user_pages_dirty_lock,
                 unpin_user_page_range_dirty_lock, unpin_folio, unpin_folios,
                 unpin_user_folio, put_page, put_user_page, put_user_pages,
                 put_user_pages_dirty_lock, release_pages, folio_put,
                 folios_put, folio_put_refs, put_pages_list,
                 put_devmap_managed_page};
expression list es;
position p;
@@
fn@p(es)

@script:python@
fn << rel.fn;
es << rel.es;
p << rel.p;
@@
emit('release', p, call=fn, args=es)
