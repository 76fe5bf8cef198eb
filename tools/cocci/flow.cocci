// SPDX-License-Identifier: GPL-2.0
// gup-pin-kunit audit (tools/audit.py): misuse that needs the control flow
// of one function, as one "AUDIT {json}" line each:
//  - FOLL_GET passed to the pin family, FOLL_PIN to the get_user_pages
//    family (in the call, or through a flags variable set before it);
//  - the return value of a pin call passed on as the count of an unpin
//    call on a path where its sign was never tested (an error return,
//    -EFAULT say, becomes a count).
//
// Confidence: High for the flags; Moderate for the count (a sign test
// hidden in a helper is not seen, and is reported).
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

@pin_get@
identifier fn = {pin_user_pages, pin_user_pages_fast,
                 pin_user_pages_fast_only, pin_user_pages_remote,
                 pin_user_pages_unlocked};
position p;
@@
fn@p(..., <+... FOLL_GET ...+>, ...)

@script:python@
fn << pin_get.fn;
p << pin_get.p;
@@
emit('flag', p, call=fn, flag='FOLL_GET')

@pin_get_var exists@
identifier fn = {pin_user_pages, pin_user_pages_fast,
                 pin_user_pages_fast_only, pin_user_pages_remote,
                 pin_user_pages_unlocked};
idexpression fl;
expression E;
position p != pin_get.p;
@@
(
fl |= <+... FOLL_GET ...+>
|
fl = <+... FOLL_GET ...+>
)
... when != fl = E
fn@p(..., <+... fl ...+>, ...)

@script:python@
fn << pin_get_var.fn;
p << pin_get_var.p;
fl << pin_get_var.fl;
@@
emit('flag', p, call=fn, flag='FOLL_GET', via=fl)

@get_pin@
identifier fn = {get_user_pages, get_user_pages_fast,
                 get_user_pages_fast_only, get_user_pages_remote,
                 get_user_pages_unlocked};
position p;
@@
fn@p(..., <+... FOLL_PIN ...+>, ...)

@script:python@
fn << get_pin.fn;
p << get_pin.p;
@@
emit('flag', p, call=fn, flag='FOLL_PIN')

@get_pin_var exists@
identifier fn = {get_user_pages, get_user_pages_fast,
                 get_user_pages_fast_only, get_user_pages_remote,
                 get_user_pages_unlocked};
idexpression fl;
expression E;
position p != get_pin.p;
@@
(
fl |= <+... FOLL_PIN ...+>
|
fl = <+... FOLL_PIN ...+>
)
... when != fl = E
fn@p(..., <+... fl ...+>, ...)

@script:python@
fn << get_pin_var.fn;
p << get_pin_var.p;
fl << get_pin_var.fl;
@@
emit('flag', p, call=fn, flag='FOLL_PIN', via=fl)

// ret = pin...(); ... unpin...(pages, ret): no sign test of ret between.
@errcount exists@
identifier fn = {pin_user_pages, pin_user_pages_fast,
                 pin_user_pages_fast_only, pin_user_pages_remote,
                 pin_user_pages_unlocked, memfd_pin_folios};
identifier un = {unpin_user_pages, unpin_user_pages_dirty_lock,
                 unpin_folios, release_pages, put_user_pages,
                 put_user_pages_dirty_lock};
expression ret, E, pages;
position p, q;
@@
ret = fn@p(...);
... when != ret = E
    when != ret += E
    when != ret < 0
    when != ret <= 0
    when != ret > 0
    when != ret >= 0
    when != ret >= 1
    when != 0 > ret
    when != 0 >= ret
    when != 0 < ret
    when != 0 <= ret
    when != IS_ERR_VALUE(ret)
un@q(pages, ret, ...)

@script:python@
fn << errcount.fn;
un << errcount.un;
ret << errcount.ret;
p << errcount.p;
q << errcount.q;
@@
emit('errcount', p, call=fn, unpin=un, count=ret, release_line=q[0].line)
