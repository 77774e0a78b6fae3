# Tuma — see README.md. `make run` and `make test` are the two commands that matter.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := bin/tuma
LAB       := bin/tuma-lab
FUZZTIME  ?= 30s

# make run turns the admin API on with a development token so the README's examples work;
# set TUMA_ADMIN_TOKEN yourself for anything else.
export TUMA_ADMIN_TOKEN ?= dev-admin-token-change-me
# `tuma-lab bench` registers its accounts from this machine: no per-address sign-up and auth budgets.
export TUMA_SIGNUP_LIMIT_PER_IP ?= 0
export TUMA_AUTH_LIMIT_PER_IP ?= 0

.PHONY: run build test vet fmt-check lint bench drills fuzz migrate stores clean screenshots proto cluster

## run: start PostgreSQL and Redis if needed, build, migrate and serve on simulated carriers
## (and the tenants' SMPP server on 127.0.0.1:2775 unless TUMA_SMPP_SERVER_ADDR is set);
## the node prints where it is reached (TUMA_PUBLIC_URL, else TUMA_HTTP_ADDR) once listening
run: stores build
	@$(BIN) migrate
	@echo
	@echo "  Admin     Authorization: Bearer $$TUMA_ADMIN_TOKEN"
	@echo "  SMPP      $${TUMA_SMPP_SERVER_ADDR-127.0.0.1:2775} (tenants bind with /smpp/credentials; TUMA_SMPP_SERVER_ADDR= turns it off)"
	@TUMA_SMPP_SERVER_ADDR=$${TUMA_SMPP_SERVER_ADDR-127.0.0.1:2775} exec $(BIN) serve --banner

## proto: regenerate actors/wire from wire.proto (needs protoc and protoc-gen-go v1.36.12; the output is committed)
proto:
	cd actors/wire && protoc --go_out=. --go_opt=paths=source_relative wire.proto

## cluster: three nodes as one cluster behind HAProxy (API on 127.0.0.1:8080), sending over SMPP
## to one simulated SMSC; Ctrl-C stops them (deploy/dev/cluster.sh)
cluster: stores build
	@deploy/dev/cluster.sh

## build: compile the server to bin/tuma and the lab (load tests, drills) to bin/tuma-lab
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tuma
	$(GO) build -trimpath -o $(LAB) ./cmd/tuma-lab

## test: vet, gofmt check, every test (unit, integration, end-to-end) with the race detector,
## then the reliability drills in their short form (see make drills)
test: vet fmt-check
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/bench/drill$$')
	@# Cluster members in one process trip the race detector inside protoactor's cluster
	@# (actors/engine_cluster_test.go): those tests run without it.
	$(GO) test -count=1 -run 'Cluster' ./actors/
	@# Allocation counts are only meaningful in a build without the race detector.
	$(GO) test -count=1 -run 'Allocations$$' ./carriers/sim/
	@# The drills start real nodes and time them: alone, after everything else, so no other
	@# test's load counts in their figures.
	$(GO) test -count=1 -timeout 30m ./bench/drill/

## screenshots: run the dashboard's browser tests, writing a PNG of every page they visit at
## 1280 and 375 pixels wide into screenshots/ (needs Chromium, PostgreSQL and Redis)
screenshots: stores
	@rm -rf screenshots
	TUMA_SCREENSHOTS=$(CURDIR)/screenshots $(GO) test -count=1 -run 'InBrowser' ./cmd/tuma/app/
	@ls screenshots

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## lint: vet, gofmt and staticcheck
lint: vet fmt-check
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# The engine benchmarks, each run in its own process so one's heap never counts in another's RSS.
ENGINE_BENCHES := Accept10k Accept10kFlood Dispatch1M SmallSendsAccept SmallSends QueuedMemory

## bench: Go micro-benchmarks; the engine benchmarks against their targets; then a short
## `tuma-lab bench` of every scenario against a node it starts (BENCH_DURATION, default 10s)
bench: stores build
	@echo "== Micro-benchmarks"
	$(GO) test -run '^$$' -bench . -benchmem -count 1 $$($(GO) list ./... | grep -v '/bench$$')
	@echo
	@echo "== Engine benchmarks (a whole node in-process, driven over HTTP; several minutes)"
	@for b in $(ENGINE_BENCHES); do \
		$(GO) test -run '^$$' -bench "^Benchmark$$b\$$" -benchtime 1x -timeout 30m ./bench/ | grep -E '^Benchmark' || exit 1; \
	done | tee bench.out | $(GO) run ./bench/internal/benchtable
	@echo
	@bench/suite.sh

## drills: the reliability drills (crash, backlog, deps, overload, shutdown, hooks, quiet) and the security
## checks (security) at full size, bin/tuma-lab starting bin/tuma nodes; DRILLS=crash,backlog
## to choose; prints the table and writes drills.json
DRILLS ?=
drills: stores build
	$(LAB) drill --bin $(BIN) $(if $(DRILLS),--only $(DRILLS)) --json drills.json

## fuzz: run every fuzz target for FUZZTIME each (corpora live in testdata/fuzz)
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

## migrate: apply database migrations
migrate: stores
	$(GO) run ./cmd/tuma migrate

## stores: make sure PostgreSQL and Redis are running
stores:
	@deploy/dev/stores.sh

clean:
	rm -rf bin
