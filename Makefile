# gup-pin-kunit: entry points. See README.md.
#
#   make test    build the KUnit kernel and run the suites in QEMU
#   make check   the project's tests (tools, series, checkpatch, W=1, suite)
#   make mutants run the mutant catalogue kunit/mutants/TREE/catalogue against
#                the suites (MUTANTS='060 05*': names, NNN or patterns;
#                MODE=patch: build each mutant alone, not in one schema)
#   make mutants-generated  the mechanically generated mutants of the pin core
#                (tools/genmut.py; SAMPLE=1: the CI sample, SEED=S: its seed,
#                RESUME=1: skip mutants already in the report, MUTANTS='pat*',
#                HEADER_REBUILD=targeted: a header mutant rebuilds its users,
#                MODE=patch: build each mutant alone, not in one schema)
#   make coverage gcov of the pin core in the QEMU run: results/TREE/coverage/
#   make report  from the results there (runs nothing): every mutant in the
#                mutation-testing-report-schema format and one page per tree,
#                results/TREE/{mutation-report.json,report.html}, results/index.html
#   make audit   Coccinelle audit of the pin API's callers: results/TREE/audit.md
#   make test-kcsan  the suites on a KCSAN kernel: results/TREE/kcsan/
#   make stress  the race suites with ROUNDS=10000 rounds a race (default):
#                results/TREE/stress/
#   make fault   every failure point of every pin path made to fail, on the
#                normal and the debug kernel: results/TREE/fault.{json,md}
#   make reviewer the exported series on a fresh tree, run as mm/tests/.kunitconfig
#                documents it, bare and with its arguments: results/TREE/reviewer.json
#
# Every target runs on each tree of kunit/trees, in order, or on those of
# TREE='6.1' / TREE='6.1 6.12' (an unknown tree: exit 2).
# Variables: FILTER='gup_pin.try_grab*' (kunit.py filter glob),
# KERNEL_ARGS='a=b c=d' (extra kernel command line), JOBS=N; FILTER and
# KERNEL_ARGS apply to every tree.

PY ?= python3
TREE ?=
FILTER ?=
KERNEL_ARGS ?=
JOBS ?=
SAMPLE ?=
SEED ?=
RESUME ?=
MUTANTS ?=
HEADER_REBUILD ?=
MODE ?=

TREE_ARGS = $(foreach t,$(TREE),--tree $(t))
FILTER_ARG = $(if $(FILTER),'$(FILTER)')
RUN_ARGS = $(TREE_ARGS) $(FILTER_ARG) \
	   $(foreach a,$(KERNEL_ARGS),--kernel_args=$(a)) \
	   $(if $(JOBS),--jobs=$(JOBS))

.PHONY: help deps tree test test-debug test-kcsan check repeat mutants \
	mutants-generated coverage report audit series reviewer fault stress \
	clean distclean

help:
	@sed -n 's/^#   //p' Makefile
	@echo "  make tree    only prepare build/TREE/linux (unpack, patches, kunit/)"
	@echo "  make test-debug  the suites on a KASAN/lockdep/kmemleak kernel (results/TREE/debug)"
	@echo "  make repeat  20 boots plus one boot per case: the same results each time"
	@echo "  make series  export each tree's series with the tests to results/TREE/series"
	@echo "  make clean   remove results/ and the build directories"
	@echo "  TREE=...     the trees (default: every tree of kunit/trees)"

deps:
	@sh tools/deps

tree: deps
	@$(PY) tools/prepare_tree.py $(TREE_ARGS)

test: deps
	@$(PY) tools/run_suite.py $(RUN_ARGS)

# make test-debug: the same suites on a KASAN / lockdep / kmemleak /
# DEBUG_PAGEALLOC / page-poisoning kernel, in its own build directory,
# built from its own checkout of the prepared tree (run_suite.py
# --checkout), which a mutant run in build/TREE/linux does not touch:
# make check builds it in the background meanwhile, with NO_PREPARE=1
# (the tree is prepared already, and may carry a mutant).
DEBUG_KERNEL_ARGS = $(shell sed -n 's/^\# kernel_args: //p' kunit/debug.config)
NO_PREPARE ?=

test-debug: deps
	@$(PY) tools/run_suite.py $(TREE_ARGS) $(FILTER_ARG) \
		$(if $(NO_PREPARE),--no-prepare) \
		--kunitconfig_add kunit/debug.config \
		--checkout '{build}/linux-debug' \
		--build_dir '{build}/kunit-debug-x86_64' \
		--results '{results}/{tree}/debug' \
		--timeout 600 $(foreach a,$(DEBUG_KERNEL_ARGS) $(KERNEL_ARGS),--kernel_args=$(a))

# make test-kcsan: the same suites on a KCSAN kernel (kunit/kcsan.config;
# KCSAN excludes KASAN), in its own checkout and build directory as the
# debug kernel's are.
test-kcsan: deps
	@$(PY) tools/run_suite.py $(TREE_ARGS) $(FILTER_ARG) \
		$(if $(NO_PREPARE),--no-prepare) \
		--kunitconfig_add kunit/kcsan.config \
		--checkout '{build}/linux-kcsan' \
		--build_dir '{build}/kunit-kcsan-x86_64' \
		--results '{results}/{tree}/kcsan' \
		--timeout 1200 $(foreach a,$(KERNEL_ARGS),--kernel_args=$(a))

# make stress: the race suites (gup_pin_race*) with ROUNDS rounds of every
# race instead of each race's own few, for a developer who wants to
# hammer a change; results in results/TREE/stress/. FILTER= picks other
# suites.
ROUNDS ?= 10000

stress: deps
	@$(PY) tools/run_suite.py $(TREE_ARGS) \
		$(if $(FILTER),$(FILTER_ARG),'gup_pin_race*') \
		--results '{results}/{tree}/stress' \
		--timeout 1800 \
		$(foreach a,gup_kunit_race.rounds=$(ROUNDS) $(KERNEL_ARGS),--kernel_args=$(a))

# Steps to leave out of make check (check.py --skip), e.g.
# CHECK_SKIP='debug genmut'; none by default.
CHECK_SKIP ?=

check: deps
	@$(PY) tools/check.py $(TREE_ARGS) $(if $(FILTER),--filter='$(FILTER)') \
		$(foreach s,$(CHECK_SKIP),--skip $(s))

mutants: deps
	@$(PY) tools/mutate.py $(TREE_ARGS) $(if $(MODE),--mode=$(MODE)) \
		$(foreach m,$(MUTANTS),'$(m)')

mutants-generated: deps
	@$(PY) tools/genmut.py run $(TREE_ARGS) $(if $(SAMPLE),--sample) \
		$(if $(SEED),--seed '$(SEED)') $(if $(RESUME),--resume) \
		$(if $(JOBS),--jobs=$(JOBS)) \
		$(if $(HEADER_REBUILD),--header-rebuild=$(HEADER_REBUILD)) \
		$(if $(MODE),--mode=$(MODE)) \
		$(foreach m,$(MUTANTS),'$(m)')

coverage: deps
	@$(PY) tools/coverage.py $(TREE_ARGS) $(FILTER_ARG)

report: deps
	@$(PY) tools/report.py $(TREE_ARGS)

repeat: deps
	@$(PY) tools/repeat.py $(TREE_ARGS) --runs 20 --isolated test $(FILTER_ARG)

series: deps
	@$(PY) tools/export_series.py $(TREE_ARGS)

audit: deps
	@$(PY) tools/audit.py $(TREE_ARGS)

reviewer: deps
	@$(PY) tools/reviewer.py $(TREE_ARGS)

fault: deps
	@$(PY) tools/fault.py $(TREE_ARGS)

clean:
	rm -rf results build/*/kunit-x86_64 build/*/kunit-debug-x86_64 \
		build/*/linux-debug build/*/kunit-kcsan-x86_64 build/*/linux-kcsan \
		build/*/w1-x86_64 build/*/gcov-x86_64 build/*/am-check \
		build/*/export-am build/*/mutants-ci.cache build/*/genmut-ci.cache \
		build/*/reviewer

distclean:
	rm -rf results build
