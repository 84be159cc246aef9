# hora — build, test, demo. `make demo` and `make test` are the two commands a
# newcomer runs (README.md); everything else is for developers and packagers.
GO      ?= go
BIN     := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
LDFLAGS := -X hora/controller.Version=$(VERSION) -X main.version=$(VERSION)
# urfave/cli's man-page and Markdown generators (unused) drag in blackfriday,
# whose init costs every client process ~0.35 ms (docs/benchmarks.md).
TAGS    ?= urfave_cli_no_docs
# The client's command names, from the one list the packages use too.
CLIENTS := $(shell sed -e '/^\#/d' -e '/^$$/d' packaging/commands)
export CGO_ENABLED ?= 0

.PHONY: all build deps test test-short vet demo stop bench bench-scale bench-slurm fuzz soak clean man deb rpm package-test man-server

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/hora ./cmd/hora
	$(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/horad ./cmd/horad
	$(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/hora-sim ./cmd/hora-sim
	@for c in $(CLIENTS); do ln -sf hora $(BIN)/$$c; done

# Installs what the tests need on a fresh Debian machine (slurm-client as an
# offline oracle for hostlists; openssh-server and iproute2 for SSH nodes).
deps:
	@scripts/deps.sh

vet:
	$(GO) vet ./...

# The whole test suite, as CI runs it (.ci/run). Needs root for the tests
# that run jobs as another user; installs its own dependencies. The timeout
# bounds one package's binary (cmd/horad's end-to-end tests take about 6
# minutes on a 2-core machine, idle or under a CPU hog): a hang, never a
# measurement. -parallel 4: the tests that wait on the wall clock (a
# one-minute time limit, a lost node) run four at a time (requireRootWaiting).
test: deps build vet
	$(GO) test -count=1 -timeout 25m -parallel 4 ./...

test-short: build
	$(GO) test -short ./...

# Start horad on the embedded default (4 local nodes, ./var), submit a job,
# show the queue. `make stop` ends it.
demo: build
	@scripts/demo.sh

stop:
	@scripts/demo.sh stop

bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./... | tee var/bench.txt

# The scale run (cmd/horad/scale_test.go, build tag scale): 4,096 emulated
# nodes, SCALE_JOBS finished jobs and 100,000 pending; figures in the log.
SCALE_JOBS ?= 200000
bench-scale: build
	HORA_SCALE_JOBS=$(SCALE_JOBS) $(GO) test -tags scale -count=1 -run TestScale -timeout 0 -v ./cmd/horad/ \
		| grep -v '^\s*time='

# hora against Slurm 22.05 side by side (scripts/bench-slurm.sh): sequential
# and 16 concurrent `sbatch --hold` at 1,500 and 10,000 queued jobs; prints
# the table for docs/benchmarks.md. Starts the Slurm oracle if none answers.
bench-slurm: build
	@mkdir -p var
	scripts/bench-slurm.sh | tee var/bench-slurm.md

# Every fuzz target, FUZZTIME each (docs/robustness.md records the runs).
# Not part of make test; a plain go test replays their seeds and
# testdata/fuzz/ corpora. A failing input lands in testdata/fuzz/<target>/.
FUZZTIME ?= 60s
FUZZ_TARGETS := \
	sbatch:FuzzParseSlurmDuration sbatch:FuzzParseSlurmTime sbatch:FuzzHostlist \
	sbatch:FuzzScanDirectives sbatch:FuzzQsubDirectives sbatch:FuzzArray sbatch:FuzzDependency \
	sbatch:FuzzSbatchCommandLine sbatch:FuzzQsubResources config:FuzzParse replay/swf:FuzzRead \
	api:FuzzParseListing api:FuzzSpecJSON api:FuzzDecodeAnswer api:FuzzDecodeSubmitRequest
fuzz:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; f=$${t#*:}; \
		echo "== $$pkg $$f ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./$$pkg/ || exit 1; done

# The fault harness (cmd/horad TestFaultHarness) for SOAK_DURATION, plus
# any test named Soak. `make test` runs the harness for 20 s.
SOAK_DURATION ?= 1h
soak: build
	HORA_FAULT_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -run 'Soak|TestFaultHarness' -timeout 0 -v ./cmd/horad/ \
		| grep -v '^\s*time='
	$(GO) test -count=1 -run Soak -timeout 60m -tags soak ./...

clean:
	rm -rf $(BIN) dist

# Packages (docs/operations.md): hora-client, hora-server and hora-node as
# .deb and .rpm in dist/ (git-ignored), built by packaging/build with nfpm.
# Reproducible: SOURCE_DATE_EPOCH defaults to the commit's time.
deb:
	$(GO) run ./packaging/build -out dist deb

rpm:
	$(GO) run ./packaging/build -out dist rpm

# Regenerates the two pages not generated from the client option table:
# hora.toml.5 from config.Keys, horad.8 from horad's flags (tests fail when
# they are stale). `make man` runs it too.
man-server:
	$(GO) test -count=1 -run '^TestManPages?$$' ./config ./cmd/horad ./replay -update

# Installs the packages into a clean Debian root booted with systemd and
# runs an admin's life cycle on them (scripts/package-test.sh). Slow, needs
# root and, the first time, Debian's mirror (debootstrap); not in make test.
package-test:
	@scripts/package-test.sh


# Regenerates man/*.1 and contrib/completions/ from the option tables
# (sbatch/options.go and the commands' tables); TestGeneratedDocsUpToDate
# fails until the result is committed. man-server adds hora.toml.5 and horad.8.
man: man-server
	$(GO) run ./cmd/hora gendoc .

# Regenerates docs/reproductions/ from fixed seeds (a few minutes on 2 cores).
.PHONY: reproduce
reproduce:
	$(GO) run ./replay/cmd/reproduce -out docs/reproductions
