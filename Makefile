# RestockAlerter — `make test` and `make demo` do all the set-up on a fresh Debian machine with Swift.
SHELL := /bin/bash

APT_PACKAGES := pkg-config libmosquitto-dev mosquitto mosquitto-clients libsqlite3-dev openssl
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT ?= swift

.PHONY: deps build test clean

## deps: install the Debian packages the build and the tests need (only those missing)
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

## build: compile everything, failing on any warning in our own code
build: deps
	@$(SWIFT) build --build-tests 2>&1 | tee .build-log.txt; test $${PIPESTATUS[0]} -eq 0
	@if grep -E '/(Sources|Tests)/.*: warning:' .build-log.txt; then echo "error: the build has warnings (above)"; rm -f .build-log.txt; exit 1; fi; rm -f .build-log.txt

## test: build, then run every test
test: build
	$(SWIFT) test --skip-build

clean:
	rm -rf .build
