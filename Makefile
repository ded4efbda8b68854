# The two commands a new user needs: `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

DATA_DIR     ?= .data
CH_PORT      ?= 19000
PG_PORT      ?= 15432
TEST_CH_PORT ?= 29000
TEST_PG_PORT ?= 25432
TEST_CH_HTTP_PORT ?= 29123
GO           ?= go

.PHONY: help run stop build test test-cluster bench chaos lint vet fmt

help:
	@echo "make run    install what is missing, start ClickHouse and PostgreSQL under $(DATA_DIR)/, migrate, serve on http://127.0.0.1:8080"
	@echo "make stop   stop the database servers make run started"
	@echo "make lint   gofmt, go vet and staticcheck (pinned, from the Go module proxy)"
	@echo "make test   run make lint and every test against fresh servers of its own (with the ClickHouse 26 proof, libchdb under $(DATA_DIR)/chdb)"
	@echo "make test-cluster  two ClickHouse shards, two telemetryd instances in cluster mode: reads must match a single server"
	@echo "make bench  run the benchmarks (ingest, reads, alerting) and print the figures"
	@echo "make chaos  two instances, retrying clients and rules under seeded random faults (CHAOS_MINUTES, CHAOS_SEED; docs/chaos.md)"

build:
	$(GO) build -o bin/telemetryd ./cmd/telemetryd

run: build
	@scripts/dbctl.sh start $(DATA_DIR) $(CH_PORT) $(PG_PORT)
	TELEMETRY_CLICKHOUSE_ADDR=127.0.0.1:$(CH_PORT) \
	TELEMETRY_POSTGRES_URL=postgres://telemetry@127.0.0.1:$(PG_PORT)/telemetry?sslmode=disable \
	./bin/telemetryd serve

stop:
	@scripts/dbctl.sh stop $(DATA_DIR)

test:
	@TEST_CH_PORT=$(TEST_CH_PORT) TEST_PG_PORT=$(TEST_PG_PORT) TEST_CH_HTTP_PORT=$(TEST_CH_HTTP_PORT) GO=$(GO) scripts/test.sh

test-cluster:
	@GO=$(GO) scripts/test-cluster.sh

chaos:
	@GO=$(GO) scripts/chaos.sh

bench: build
	@scripts/bench.sh

lint:
	@GO=$(GO) scripts/lint.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
