SHELL := /bin/bash
# On a fresh clone with only Go installed, help, run, build, quick, vet, staticcheck, fmt-check,
# arch-check, fuzz, contract-check, baseline, generate and check-generated work as they are (the
# generators and checkers are pinned in go.mod; without npm, generate leaves the TypeScript clients).
# The rest say loudly what they lack: test, test-faults and bench skip what needs PostgreSQL's server
# binaries (postgresql), Chromium (chromium), node and npm, or Alertmanager (prometheus-alertmanager),
# and fail instead under CI=true;
# test-citus and bench-citus also need the citus extension; bench-e2e needs PostgreSQL; lint, and
# the TypeScript clients of generate, need npm.
GO ?= go
ADDR ?= :8080

# The released contract that every later 1.x must keep working for (api/CHANGELOG.md).
BASELINE_VERSION := 1.0.0
BASELINE := api/baseline/openapi-$(BASELINE_VERSION).yaml
BREAKING_IGNORE := api/baseline/breaking-ignore.txt

FUZZTIME ?= 20s
BENCHTIME ?= 20x
BENCH_ROWS ?= 1000000
ROWS ?= 1000000
PERF_DIR ?=

.PHONY: help run test test-e2e test-units quick race race-units race-e2e generate check-generated contract-check baseline lint vet staticcheck fmt-check arch-check build fuzz test-faults test-faults-clocked test-faults-rest test-citus bench bench-citus bench-e2e

## help: list the targets
help:
	@grep -E '^## [a-z0-9-]+:' $(MAKEFILE_LIST) | sed -E 's/^## ([a-z0-9-]+): /  \1\t/' | expand -t 18

## run: start the service on the embedded SQLite store (override with DATABASE_URL / ADDR)
run:
	$(GO) run ./app -addr $(ADDR)

## test: the whole test suite (unit, store contract and end to end on SQLite and PostgreSQL, docs and
## the log explorer in Chromium, TypeScript clients in node). The log names each top-level test with its outcome, so
## it shows that the PostgreSQL tests ran rather than skipped; passing subtests are left out.
## app/e2e runs in a go test of its own beside the other packages, each printing when it ends: in
## one go test ./... it began only once a slot of -p 2 was free, a minute or more in, and its 5
## minutes were the step's longest path.
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target test-e2e test-units
test_show = grep -vE '^( +--- PASS|=== (RUN|PAUSE|CONT|NAME))'
test-e2e:
	set -o pipefail; $(GO) test -count=1 -timeout 30m -v ./app/e2e/ 2>&1 | $(test_show)
test-units:
	set -o pipefail; $(GO) test -count=1 -timeout 30m -v $$($(GO) list ./... | grep -v '/app/e2e$$') 2>&1 | $(test_show)

## quick: the inner loop, in seconds: unit tests and everything on SQLite (-short skips PostgreSQL,
## Chromium and node)
quick:
	$(GO) test -short -count=1 ./...

## race: the race detector over the packages with concurrency (domain, stores on SQLite and
## PostgreSQL, HTTP, Twirp, edge, app, its server), then the end-to-end tests under -short: the
## whole service on SQLite, without the PostgreSQL twins, browsers and outside clients make test
## adds (they drive the same server code; the PostgreSQL store's own concurrency is raced in
## adapters/sqlstore; under the race detector they took it from 314 s to 612 s)
## adapters/... and app/e2e run side by side, each printing when it ends: each keeps about one
## core busy (the stores' tests, then the end-to-end ones, run mostly one at a time), and one after
## the other they left the second core idle for most of 10 minutes.
race:
	$(MAKE) --no-print-directory -j2 --output-sync=target race-units race-e2e
race-units:
	$(GO) test -race -count=1 -timeout 30m ./domain/ ./adapters/... ./app/ ./app/server/
race-e2e:
	$(GO) test -race -short -count=1 -timeout 30m ./app/e2e/

## build: compile every package
build:
	$(GO) build ./...

## generate: regenerate everything under api/ from openapi.yaml and proto/ (the TypeScript
## clients need node and npm; their generators are pinned in api/ts/package-lock.json)
generate:
	$(GO) generate ./api/...
	cd proto && $(GO) tool buf generate
	@if command -v npm >/dev/null; then \
		npm ci --prefix api/ts --no-audit --no-fund --loglevel=error && \
		(cd api/ts && node_modules/.bin/openapi-typescript ../../openapi.yaml --output src/schema.d.ts) && \
		(cd proto && $(GO) tool buf generate --template buf.gen.ts.yaml); \
	elif [ "$$CI" = true ]; then echo "generate: npm is required under CI=true"; exit 1; \
	else echo "generate: !!! no npm: the TypeScript clients in api/ts were NOT regenerated"; fi

## check-generated: fail when the committed generated code differs from a fresh generation
check-generated: generate
	$(GO) mod tidy -diff
	git diff --exit-code -- api/
	test -z "$$(git status --porcelain -- api/)"

## contract-check: oasdiff (pinned in go.mod) finds nothing in openapi.yaml that breaks a client of
## the released baseline, warnings included, except the entries of api/baseline/breaking-ignore.txt,
## each of which must give its reason
contract-check:
	@if grep -vE '^[[:space:]]*(#|$$)' $(BREAKING_IGNORE) | grep -vF ' -- reason: '; then \
		echo "contract-check: each entry of $(BREAKING_IGNORE) must give its reason (' -- reason: ')"; exit 1; fi
	$(GO) tool oasdiff breaking --fail-on WARN --format singleline \
		--err-ignore $(BREAKING_IGNORE) --warn-ignore $(BREAKING_IGNORE) $(BASELINE) openapi.yaml

## baseline: make openapi.yaml the released baseline (api/baseline/openapi-BASELINE_VERSION.yaml); only
## for the release of BASELINE_VERSION itself, or of a new major after raising BASELINE_VERSION. The
## clients of the baseline are generated from it at test time (app/e2e/baseline_sdk_test.go).
baseline:
	@v=$$(awk '/^info:/ {i=1; next} i && /^[^ ]/ {exit} i && /^  version:/ {print $$2; exit}' openapi.yaml); \
	if [ "$$v" != "$(BASELINE_VERSION)" ]; then \
		echo "baseline: openapi.yaml is version $$v, the baseline is $(BASELINE_VERSION)"; exit 1; fi
	cp openapi.yaml $(BASELINE)
	$(MAKE) contract-check

## vet: go vet
vet:
	$(GO) vet ./...

## staticcheck: staticcheck, pinned in go.mod as a tool, with every check (-checks=all) on every
## package but the generated api/, under each set of build tags the code uses (none, citus, faults,
## faults,citus; one merged report, so code used under one set only is not "unused"), with zero
## findings. Not -tags=race: it would analyse much of the standard library again, for a constant.
STATICCHECK_MATRIX := 'default:' 'citus: -tags=citus' 'faults: -tags=faults' 'faults_citus: -tags=faults,citus'
staticcheck:
	printf '%s\n' $(STATICCHECK_MATRIX) | $(GO) tool staticcheck -checks=all -matrix $$($(GO) list ./... | grep -vE '/api(/|$$)')

## fmt-check: gofmt has nothing to change
fmt-check:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"

## arch-check: the dependency rules (domain on the standard library only; no adapter imports another,
## but any may import adapters/internal/..., which imports only domain;
## only app imports adapters; tailhub and readshare import only domain; nothing but app and the
## tests of app/... imports app/server, directly or through app/server/servetest, which only
## those tests import), as TestArchitecture states them
arch-check:
	$(GO) test -count=1 -run '^TestArchitecture$$' ./domain

## fuzz: run each fuzz target for FUZZTIME, a duration or a count of inputs (make fuzz FUZZTIME=10m
## for a long run; CI uses a count: before Go 1.27 a duration can end in a spurious "context
## deadline exceeded" on a busy machine, go.dev/issue/75804)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzHTTP$$' -fuzztime $(FUZZTIME) ./app/e2e
	$(GO) test -run '^$$' -fuzz '^FuzzTwirp$$' -fuzztime $(FUZZTIME) ./app/e2e
	$(GO) test -run '^$$' -fuzz '^FuzzOTLP$$' -fuzztime $(FUZZTIME) ./app/e2e
	$(GO) test -run '^$$' -fuzz '^FuzzOTLPBombs$$' -fuzztime $(FUZZTIME) ./app/e2e
	$(GO) test -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $(FUZZTIME) ./domain
	$(GO) test -run '^$$' -fuzz '^FuzzAttributeText$$' -fuzztime $(FUZZTIME) ./domain
	$(GO) test -run '^$$' -fuzz '^FuzzBulk$$' -fuzztime $(FUZZTIME) ./adapters/esbulk
	$(GO) test -run '^$$' -fuzz '^FuzzFlatten$$' -fuzztime $(FUZZTIME) ./adapters/esbulk

## test-faults: kill -9, database outage, drain and hostile-load tests against real server processes.
## The alerts' kill-and-outage test waits on its rules' 10 s clock (about 90 s, the CPU idle), so it
## runs beside the others, each printing when it ends.
test-faults:
	$(MAKE) --no-print-directory -j2 --output-sync=target test-faults-clocked test-faults-rest
faults_run = $(GO) test -tags faults -count=1 -v -timeout 30m
faults_show = grep -E '^(FAULTS|=== RUN|--- |PASS|FAIL|ok)|faults_test|hostile_load_test'; exit $${PIPESTATUS[0]}
test-faults-clocked:
	$(faults_run) -run '^TestAlertsSurviveKillAndReceiverOutage$$' ./app/faults/ 2>&1 | $(faults_show)
test-faults-rest:
	$(faults_run) -skip '^TestAlertsSurviveKillAndReceiverOutage$$' ./app/faults/ 2>&1 | $(faults_show)

## test-citus: the Citus suites (build tag citus): the store contract, schema distribution, the
## one-task plan of every statement the store runs, COPY to one shard and a stopped worker on a
## coordinator with two workers that pgtest starts; then the end-to-end contract on Citus; then
## the fault tests on Citus (tags faults,citus): kill -9, drain, a worker stopped and started
## under load, and the hostile-load bounds, against a real service process. Needs the citus extension
## (../shared/citus/build.sh); skips loudly without it, fails under CI=true.
test-citus:
	set -o pipefail; $(GO) test -tags citus -count=1 -v -timeout 30m -run '^TestCitus' ./adapters/sqlstore/ 2>&1 | grep -vE '^( +--- PASS|=== (RUN|PAUSE|CONT|NAME))'
	set -o pipefail; $(GO) test -tags citus -count=1 -v -timeout 30m -run '^TestE2E$$/^citus$$' ./app/e2e/ 2>&1 | grep -vE '^( +--- PASS|=== (RUN|PAUSE|CONT|NAME))'
	$(GO) test -tags faults,citus -count=1 -v -timeout 30m -run '^(TestKillNineLosesNoAcknowledgedBatch|TestKillNineWithRetriesStoresEveryBatchOnce|TestDrainCompletesInFlightRequests|TestCitusWorkerStoppedMidLoad|TestHostileLoad)$$/^citus$$' ./app/faults/ 2>&1 | grep -E '^(FAULTS|=== RUN|--- |PASS|FAIL|ok)|_test.go'; exit $${PIPESTATUS[0]}

## lint: Redocly (recommended) and Spectral (spectral:oas) on openapi.yaml with zero errors and
## zero warnings, plus go vet and gofmt. The linters are pinned in .lint/package-lock.json.
lint: vet staticcheck fmt-check
	npm ci --prefix .lint --no-audit --no-fund --loglevel=error
	.lint/node_modules/.bin/spectral lint --ruleset .lint/.spectral.yaml --fail-severity=hint openapi.yaml
	.lint/node_modules/.bin/redocly lint --config .lint/redocly.yaml openapi.yaml > .lint/redocly.out 2>&1 || { cat .lint/redocly.out; exit 1; }
	@if grep -q 'You have' .lint/redocly.out; then cat .lint/redocly.out; echo 'lint: Redocly reported warnings'; exit 1; fi
	@grep -E 'validated|valid' .lint/redocly.out

## bench: the benchmark suite (starts its own PostgreSQL like the tests); each benchmark prints our
## figure, the baseline's and their ratio; then the explorer's first render in Chromium
## (EXPLORER_BENCH_ROWS entries, 20,000 unless set). CI runs it with BENCHTIME=1x BENCH_ROWS=20000.
## VICTORIALOGS=path (else victoria-logs on PATH) adds VictoriaLogs beside the bulk ingest figures.
bench:
	BENCH_ROWS=$(BENCH_ROWS) VICTORIALOGS=$(VICTORIALOGS) $(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -timeout 60m ./app/bench/
	$(GO) test -run '^$$' -bench 'ExplorerFirstRender' -benchtime $(BENCHTIME) -timeout 10m ./app/e2e/

## bench-citus: ingest and reads through the service on a Citus coordinator with two workers beside
## plain PostgreSQL, same run (build tag citus; needs the citus extension)
bench-citus:
	$(GO) test -tags citus -run '^$$' -bench '^BenchmarkCitusVersusPostgres$$' -benchtime $(BENCHTIME) -timeout 60m ./app/bench/

## bench-e2e: the outside harness: builds the service binary, starts its own PostgreSQL, runs the
## service with default settings and load from separate processes, and prints each figure beside
## its baseline from the same run (ROWS=10000000 for the large read table; PERF_DIR=dir also
## writes perf(1) CPU profiles of the service under the ingest and read loads; PPROF_DIR=dir saves
## Go CPU and allocation profiles of the service, via its PPROF_ADDR, and their top entries;
## SEARCH_ROWS=n sizes the query-language corpus, VICTORIALOGS=path its baseline's binary;
## MIGRATE_ROWS=n the database of the previous schema that the service upgrades at start-up;
## ONLY=search,reads runs only those stages of ingest, reads, makehat, search, migrate)
bench-e2e:
	$(GO) run ./app/bench/harness -rows $(ROWS) $(if $(SEARCH_ROWS),-search-rows $(SEARCH_ROWS)) $(if $(MIGRATE_ROWS),-migrate-rows $(MIGRATE_ROWS)) $(if $(VICTORIALOGS),-victorialogs $(VICTORIALOGS)) $(if $(ONLY),-only $(ONLY)) $(if $(PERF_DIR),-perf $(PERF_DIR)) $(if $(PPROF_DIR),-pprof $(PPROF_DIR))
