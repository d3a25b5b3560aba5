# p4mcc: the two commands users type are `make run` and `make test`.
# Both install what they need first; `make install` is idempotent.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
P4MCC := $(VENV)/bin/p4mcc
STAMP := $(VENV)/.install-stamp
DEBIAN_PACKAGES := mininet iperf3 iputils-ping bridge-utils tcpdump ethtool iproute2 python3-venv
RESULTS ?= results
SCENARIO ?= topologies/scenarios/demo.yaml
PYTEST_ARGS ?=

.PHONY: install run sim test test-bmv2 bench stop clean help

help:
	@echo "make install  - Debian packages, .venv, editable install (idempotent)"
	@echo "make run      - run the default demo ($(SCENARIO)) in Mininet (root)"
	@echo "make sim      - run the same scenario in the simulator"
	@echo "make test     - run the whole test suite"
	@echo "make bench    - run the benchmarks in bench/ and print figures"
	@echo "make stop     - clean Mininet leftovers and p4mcc processes"
	@echo "make clean    - remove .venv, caches and results"

install: $(STAMP)

# The venv sees Debian's packages (for the mininet module) but installs every
# PyPI dependency into itself (--ignore-installed), so removing a Debian
# package later cannot break it.
$(STAMP): pyproject.toml
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	    echo "installing Debian packages:$$missing"; \
	    if [ "$$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi; \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@test -x $(PY) || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --ignore-installed -e '.[dev]'
	@touch $(STAMP)

run: install
	@if [ "$$(id -u)" != 0 ]; then echo "make run: Mininet needs root (sudo make run)"; exit 1; fi
	$(P4MCC) run $(SCENARIO) --out $(RESULTS)/demo

sim: install
	$(P4MCC) sim $(SCENARIO) --out $(RESULTS)/demo-sim

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

test-bmv2: install
	@if command -v simple_switch_grpc >/dev/null && command -v p4c >/dev/null; then \
	    P4MCC_TARGET=bmv2 $(PY) -m pytest tests -k "stf or p4src" $(PYTEST_ARGS); \
	else echo "test-bmv2: skipped, simple_switch_grpc and p4c are not on PATH"; fi

# Benchmarks print figures; none of them is a test.  The p4c conformance run
# needs a local copy of p4c's testdata: make bench P4C_TESTDATA=/path/to/testdata
BENCHES := codec_speed.py "switch_pps.py --veth" p4runtime_writes.py controller_apply.py \
           "sim_speed.py --receivers 200" "assistance.py --quick" "paper_results.py --quick" \
           "friendliness.py --quick"

bench: install
	@for b in $(BENCHES); do \
	    f=$${b%% *}; [ -f bench/$$f ] || continue; \
	    echo "== bench/$$b"; $(PY) bench/$$b || exit 1; done
	@if [ -n "$(P4C_TESTDATA)" ]; then echo "== bench/conformance.py"; \
	    $(PY) bench/conformance.py --p4c-testdata $(P4C_TESTDATA); \
	else echo "== bench/conformance.py: skipped (set P4C_TESTDATA to p4c's testdata directory)"; fi

# Everything a run starts, also after its runner was killed with -9 (each child
# has its own session, so nothing else stops them): the runner, `p4mcc` and
# `topologies.cli` switch/host processes, the run's iperf3 servers and clients,
# BMv2 switches on Mininet ports.  SIGTERM first (switches and agents shut down
# cleanly), SIGKILL for whatever is left after 5 s, so a following `make run`
# finds its gRPC ports free; then Mininet's cleanup (node shells, sN-ethM
# interfaces) and the p4mcc-* namespaces tests leave behind.  The bracketed
# first letters keep the patterns from matching the shell running this recipe.
stop:
	-@pats=('[p]4mcc (run|switch|host)( |$$)' '[t]opologies\.cli (run|switch|host)( |$$)' \
	        '^[i]perf3 -s .*--forceflush' '^[i]perf3 -c .*--get-server-output' \
	        '^[^ ]*[s]imple_switch_grpc .*-i [0-9]+@s[0-9]+-eth[0-9]+'); \
	for p in "$${pats[@]}"; do pkill -TERM -f "$$p"; done; \
	for i in $$(seq 50); do \
	    left=; for p in "$${pats[@]}"; do pgrep -f "$$p" >/dev/null && left=1; done; \
	    [ -z "$$left" ] && break; sleep 0.1; \
	done; \
	for p in "$${pats[@]}"; do pkill -KILL -f "$$p" && echo "make stop: SIGKILL for what ignored SIGTERM: $$p"; done; true
	-@mn -c >/dev/null 2>&1 || true
	-@for ns in $$(ip netns list 2>/dev/null | awk '/^p4mcc-/{print $$1}'); do ip netns del $$ns; done
	@echo "stopped p4mcc processes and cleaned Mininet state"

clean: stop
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info $(RESULTS)
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
