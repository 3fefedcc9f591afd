# The two set-up commands of the README. Each installs what it needs first.
# Linux 6.1 without the kworker-stacking fix: analyze finds the XFS/dbench ping-pong in it
SAMPLE ?= sample_traces/kstack-6.1/k61-dbench-c2-kstack-off-i1.dat

.PHONY: demo test bootstrap
bootstrap:
	@scripts/bootstrap.sh

demo: bootstrap
	.venv/bin/schedwake analyze $(SAMPLE)

test: bootstrap
	.venv/bin/python -m pytest -q
