# The two set-up commands of the README. Each installs what it needs first.
# Linux 6.1 without the kworker-stacking fix: analyze finds the XFS/dbench ping-pong in it
SAMPLE ?= sample_traces/kstack-6.1/k61-dbench-c2-kstack-off-i1.dat

.PHONY: demo test check bootstrap
bootstrap:
	@scripts/bootstrap.sh

demo: bootstrap
	.venv/bin/schedwake analyze $(SAMPLE)

# every test (what CI runs), one worker per CPU (pytest-xdist); the 15 slowest tests
# are named at the end
test: bootstrap lint
	.venv/bin/python -m pytest -q -n auto --durations=15

# the inner loop: lint, types, and the tests not marked slow (pyproject.toml: over ~1 s,
# reference checks on whole traces, fuzz runs, sanitizer builds, notebooks, headless
# Chromium, Dask and batch runs, recording)
.PHONY: check
check: bootstrap lint
	.venv/bin/python -m pytest -q -n auto -m "not slow" --durations=15

# run every notebook and save it with its outputs (tests/test_notebooks.py checks them)
.PHONY: notebooks
notebooks: bootstrap
	.venv/bin/python scripts/run-notebooks.py

# ruff (lint and format) over the tree, mypy over the whole package (pyproject.toml)
.PHONY: lint
lint: bootstrap
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

# Hostile-input testing (docs/reliability.md): each harness for FUZZ_SECONDS, one at a
# time, corpora in fuzz/corpus/<harness>/ (new coverage merged in), findings in fuzz/crashes/
FUZZ_SECONDS ?= 600
.PHONY: fuzz
fuzz: bootstrap
	.venv/bin/python fuzz/run.py --seconds $(FUZZ_SECONDS) --merge --keep-going

# libFuzzer harness over the C decoder (trace.dat and perf.data), ASan + UBSan: all of
# -fsanitize=undefined (signed-integer-overflow named, as the class the campaign must catch:
# sums of a file's time offsets, negated INT64_MIN), float division by zero, and the
# implicit conversions that change a value (truncation, sign change: quiet on the corpora)
# (TDCORE_SRC/TDCORE_INC point it at another copy of the decoder, TDCORE_FUZZ at another output)
TDCORE_SRC ?= $(wildcard schedwake/ingest/_td_*.c)
TDCORE_INC ?= schedwake/ingest
TDCORE_FUZZ ?= build/fuzz/tdcore_fuzz
FUZZ_CC ?= clang
FUZZ_SANITIZE ?= fuzzer,address,undefined,signed-integer-overflow,float-divide-by-zero,implicit-conversion
FUZZ_CFLAGS ?= -g -O1 -fno-omit-frame-pointer -fsanitize=$(FUZZ_SANITIZE) -fno-sanitize-recover=all
# TDCORE_OBJ: the decoder's objects already compiled so (fuzz/run.py passes the atheris
# build's, build/asan-fuzz/obj/_tdread/_td_*.o: the same -O1 and sanitizers, with the
# coverage of -fsanitize=fuzzer-no-link that fuzzer adds): linked, not compiled again
TDCORE_OBJ ?=
TDCORE_IN = $(or $(TDCORE_OBJ),$(TDCORE_SRC))
$(TDCORE_FUZZ): fuzz/tdcore_fuzz.c $(TDCORE_IN) $(wildcard $(TDCORE_INC)/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) fuzz/tdcore_fuzz.c $(TDCORE_IN) -I$(TDCORE_INC) -lzstd -lz -lpthread -o $@
