# p4mcc: the two commands users type are `make run` and `make test`.
# Both install what they need first; `make install` is idempotent.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
P4MCC := $(VENV)/bin/p4mcc
STAMP := $(VENV)/.install-stamp
# gcc builds the compiled data plane and python3-dev its CPython entry point (docs/native-pipeline.md).
DEBIAN_PACKAGES := mininet iperf3 iputils-ping bridge-utils tcpdump ethtool iproute2 python3-venv tshark gcc python3-dev
RESULTS ?= results
SCENARIO ?= topologies/scenarios/demo.yaml
PYTEST_ARGS ?=

.PHONY: install bench-peers run sim test test-bmv2 bench docs docs-ablation docs-faults docs-emulation stop clean help

help:
	@echo "make install  - Debian packages, .venv, editable install (idempotent)"
	@echo "make run      - run the default demo ($(SCENARIO)) in Mininet (root; TARGET=auto|bmv2|builtin)"
	@echo "make sim      - run the same scenario in the simulator"
	@echo "make test     - run the whole test suite"
	@echo "make bench    - run the benchmarks in bench/ and print figures"
	@echo "make bench-peers - install the benches' peers into .venv (ns-3's PyPI build with cppyy, about 0.5 GB)"
	@echo "make docs     - regenerate the results sections of README.md and docs/ (DOCS_FULL=1: full runs)"
	@echo "make stop     - stop what p4mcc runs started (recorded processes and interfaces)"
	@echo "make clean    - remove .venv, caches and results"

install: $(STAMP)

# The simulators the benches measure p4mcc beside; optional, never needed to
# run or test p4mcc (bench/sim_speed.py says so in one line without them).
bench-peers: install
	$(PY) -m pip install -q ns3

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

# TARGET=auto runs BMv2 when simple_switch_grpc and p4c-bm2-ss are on PATH
# (sudo keeps PATH with `sudo env PATH=$$PATH make run`), the built-in switch otherwise.
TARGET ?= auto
run: install
	@if [ "$$(id -u)" != 0 ]; then echo "make run: Mininet needs root (sudo make run)"; exit 1; fi
	$(P4MCC) run $(SCENARIO) --target $(TARGET) --out $(RESULTS)/demo

sim: install
	$(P4MCC) sim $(SCENARIO) --out $(RESULTS)/demo-sim

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

# The program on the real toolchain: compiled by p4c-bm2-ss, its STF and Scapy
# packet tests on BMv2 and on `p4mcc switch` side by side (root for veths).
test-bmv2: install
	@if command -v simple_switch_grpc >/dev/null && command -v p4c-bm2-ss >/dev/null; then \
	    $(PY) -m pytest tests/bmv2 $(PYTEST_ARGS); \
	else echo "test-bmv2: skipped, simple_switch_grpc and p4c-bm2-ss are not on PATH"; fi

# Benchmarks print figures; none of them is a test.  The p4c conformance run
# needs a local copy of p4c's testdata: make bench P4C_TESTDATA=/path/to/testdata
BENCHES := codec_speed.py "switch_pps.py --veth" p4runtime_writes.py controller_apply.py \
           "sim_speed.py --receivers 200" "assistance.py --quick" "paper_results.py --quick" \
           "faults.py --quick" "friendliness.py --quick"

bench: install
	@for b in $(BENCHES); do \
	    f=$${b%% *}; [ -f bench/$$f ] || continue; \
	    echo "== bench/$$b"; $(PY) bench/$$b || exit 1; done
	@if [ -n "$(P4C_TESTDATA)" ]; then echo "== bench/conformance.py"; \
	    $(PY) bench/conformance.py --p4c-testdata $(P4C_TESTDATA); \
	else echo "== bench/conformance.py: skipped (set P4C_TESTDATA to p4c's testdata directory)"; fi

# The results sections of the docs, each written by the bench that measures
# it (bench/docsection.py stamps the command, commit, date and machine).
# Quick variants by default (under an hour on 2 cores: one seed, short runs,
# small trees); DOCS_FULL=1 runs the full grids, the papers' seeds, every
# fault and the 1000-receiver speed run (hours).
DOCS_FULL ?=
DOCS_NICE ?= nice -n 10
QUICK = $(if $(DOCS_FULL),,--quick)
SIM_SPEED_ARGS = --switch both --no-assistance --interleave 1 \
                 $(if $(DOCS_FULL),--receivers 1000 --duration 60,--receivers 200 --duration 20)
DOCS_BENCHES := "demo.py --docs" "codec_speed.py --docs" "sim_speed.py --docs $(SIM_SPEED_ARGS)" \
                "faults.py --docs $(QUICK)" \
                "assistance.py --docs $(if $(DOCS_FULL),,--n 16 --seeds 1 --check-n 16)" \
                "assistance.py --stamp --harm --docs $(if $(DOCS_FULL),--seeds 10 --duration 60,--seeds 1 --duration 20)" \
                "paper_results.py --docs $(QUICK)" "friendliness.py --docs $(QUICK)" \
                "friendliness.py --design trees --docs $(QUICK)"

docs: install
	@for b in $(DOCS_BENCHES); do \
	    echo "== bench/$$b"; $(DOCS_NICE) $(PY) bench/$$b || exit 1; done

# Sections too slow for `make docs`: each protocol's rule ablation (the grid
# once per rule variant; quick cells unless DOCS_FULL=1) ...
DOCS_ABLATION := "friendliness.py --ablate tfmcc --docs $(QUICK)" "friendliness.py --ablate webrc --docs $(QUICK)" \
                 "friendliness.py --ablate rla --docs $(QUICK)" "friendliness.py --ablate mtcp --docs $(QUICK)" \
                 "friendliness.py --ablate vlmcc --docs $(QUICK)" \
                 "friendliness.py --ablate tfmcc --docs --draw 6 --draw-seed 7 $(QUICK)" \
                 "friendliness.py --ablate webrc --docs --draw 6 --draw-seed 7 $(QUICK)" \
                 "friendliness.py --ablate rla --docs --draw 6 --draw-seed 7 $(QUICK)" \
                 "friendliness.py --ablate mtcp --docs --draw 6 --draw-seed 7 $(QUICK)" \
                 "friendliness.py --ablate vlmcc --docs --draw 6 --draw-seed 7 $(QUICK)"

# ... the fault bench on 20 draws of every type and protocol (hours; each
# run's row is saved as it ends, so a stopped bench keeps its rows for --load) ...
DOCS_FAULTS := "faults.py --docs --draws 20 --tail 7 --save $(RESULTS)/faults20.jsonl --section fault-bench-draws"

docs-faults: install
	@for b in $(DOCS_FAULTS); do \
	    echo "== bench/$$b"; $(DOCS_NICE) $(PY) bench/$$b || exit 1; done

# ... and the Mininet runs beside the simulator on each target (root).
DOCS_EMULATION := "engines.py --docs --duration 0 --target builtin" "engines.py --docs --duration 0 --target bmv2"

docs-ablation: install
	@for b in $(DOCS_ABLATION); do \
	    echo "== bench/$$b"; $(DOCS_NICE) $(PY) bench/$$b || exit 1; done

docs-emulation: install
	@if [ "$$(id -u)" != 0 ]; then echo "make docs-emulation: Mininet needs root"; exit 1; fi
	@for b in $(DOCS_EMULATION); do \
	    echo "== bench/$$b"; $(PY) bench/$$b || exit 1; done

# What p4mcc runs started, also after a runner was killed with -9: each run
# records its processes (with their start times) and its interfaces (with
# their indexes) in p4mcc's state directory; `p4mcc stop` ends those by
# process id and deletes those interfaces, and touches nothing else (no name
# patterns, no Mininet-wide cleanup).  See emulation/runstate.py.
stop:
	@if [ -x $(PY) ]; then $(PY) -m p4mcc.cli.main stop; else echo "make stop: no $(VENV), so no p4mcc run to stop"; fi

clean: stop
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info $(RESULTS)
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
