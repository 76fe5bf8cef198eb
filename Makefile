# gup-pin-kunit: entry points. See README.md.
#
#   make test    build the KUnit kernel and run the suites in QEMU
#   make check   the project's tests (tools, series, checkpatch, W=1, suite)
#   make mutants run the mutant catalogue kunit/mutants/ against the suites
#   make coverage gcov of the pin core in the QEMU run: results/coverage/
#
# Variables: FILTER='gup_pin.try_grab*' (kunit.py filter glob),
# KERNEL_ARGS='a=b c=d' (extra kernel command line), JOBS=N.

PY ?= python3
FILTER ?=
KERNEL_ARGS ?=
JOBS ?=

RUN_ARGS = $(FILTER) $(foreach a,$(KERNEL_ARGS),--kernel_args=$(a)) \
	   $(if $(JOBS),--jobs=$(JOBS))

.PHONY: help deps tree test test-debug check repeat mutants coverage series clean distclean

help:
	@sed -n 's/^#   //p' Makefile
	@echo "  make tree    only prepare build/linux (unpack, patches, kunit/)"
	@echo "  make test-debug  the suites on a KASAN/lockdep/kmemleak kernel (results/debug)"
	@echo "  make repeat  20 boots plus one boot per case: the same results each time"
	@echo "  make series  export the series with the tests to results/series"
	@echo "  make clean   remove results/ and the build directories"

deps:
	@sh tools/deps

tree: deps
	@$(PY) tools/prepare_tree.py

test: deps
	@$(PY) tools/run_suite.py $(RUN_ARGS)

# make test-debug: the same suites on a KASAN / lockdep / kmemleak /
# DEBUG_PAGEALLOC / page-poisoning kernel, in its own build directory.
DEBUG_KERNEL_ARGS = debug_pagealloc=on page_poison=1 kasan.fault=report

test-debug: deps
	@$(PY) tools/run_suite.py $(FILTER) --kunitconfig_add kunit/debug.config \
		--build_dir build/kunit-debug-x86_64 --results results/debug \
		--timeout 600 $(foreach a,$(DEBUG_KERNEL_ARGS) $(KERNEL_ARGS),--kernel_args=$(a))

check: deps
	@$(PY) tools/check.py $(if $(FILTER),--filter=$(FILTER))

mutants: deps
	@$(PY) tools/mutate.py kunit/mutants/*.patch

coverage: deps
	@$(PY) tools/coverage.py $(FILTER)

repeat: deps
	@$(PY) tools/repeat.py --runs 20 --isolated test $(FILTER)

series: deps
	@$(PY) tools/export_series.py

clean:
	rm -rf results build/kunit-x86_64 build/w1-x86_64 build/gcov-x86_64 build/am-check

distclean:
	rm -rf results build
