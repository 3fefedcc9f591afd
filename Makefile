# The two set-up commands of the README. Each installs what it needs first.
SAMPLE ?= sample_traces/dbench-xfs-2clients.dat

.PHONY: demo test bootstrap
bootstrap:
	@scripts/bootstrap.sh

demo: bootstrap
	.venv/bin/schedwake analyze $(SAMPLE)

test: bootstrap
	.venv/bin/python -m pytest -q
