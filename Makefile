# gatelab — one Makefile, read top to bottom.
#
#   make            build build/gatelab (release: -O3 -march=native, OpenMP), and
#                   build/gatelab-mpi when OpenMPI is installed (see MPI below)
#   make test       unit, gradient, parity, integration and failure tests
#   make asan       the same tests under AddressSanitizer + UBSan (build/asan/; without
#                   gatelab-mpi: OpenMPI's own allocations trip LeakSanitizer)
#   make demo       the main job: train, sample and show where the files are
#   make data       download Tiny Shakespeare and enwik8 into data/ (SHA-256 checked)
#   make bench      throughput benchmark (prints figures; never asserts timings);
#                   CHECKPOINTS="RUN ..." adds both sparse forms of trained TSA runs
#   make paper      reproduce the papers' claims: PRESET=smoke|local|full (default local),
#                   results in results/paper/PRESET/ (REPORT.md), resumable
#   make figures    gnuplot figures from the registry
#   make debug      -O0 -g build in build/debug/
#   make fuzz       libFuzzer targets (tests/fuzz/) under ASan+UBSan, FUZZ_SECONDS each (clang)
#   make clean
#
# Libraries come through pkg-config.  OpenBLAS is linked in its OpenMP build
# (Debian's libopenblas0-openmp), so OpenBLAS and our own OpenMP loops share
# one thread pool instead of two pools spinning against each other on 2 cores.

BUILD    ?= build
CC       ?= cc
OPT      ?= -O3 -march=native
SAN      ?=
PKGS     := hdf5 sqlite3 inih jansson libmicrohttpd
BLASDIR  ?= /usr/lib/x86_64-linux-gnu/openblas-openmp

# The commit `gatelab --version` prints: `git describe` of this checkout, "unknown"
# outside one (a tarball, a bare clone's export); GATELAB_HEAD / GATELAB_DIRTY, the
# full commit and whether tracked files differed from it, are what the registry
# records for every run this binary trains (empty / -1 outside a checkout).  main.o
# alone is rebuilt when any of them changes.
GATELAB_COMMIT := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
GATELAB_HEAD   := $(shell git rev-parse HEAD 2>/dev/null)
GATELAB_DIRTY  := $(if $(GATELAB_HEAD),$(shell git diff --quiet HEAD -- 2>/dev/null && echo 0 || echo 1),-1)

CFLAGS   := -std=c11 $(OPT) -g -fopenmp -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation \
            -D_GNU_SOURCE -MMD -MP -I. -Iharness $(SAN) \
            $(shell pkg-config --cflags $(PKGS) openblas 2>/dev/null)
LDFLAGS  := -fopenmp $(SAN)
LDLIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) \
            -L$(BLASDIR) -Wl,-rpath,$(BLASDIR) -l:libopenblas.so.0 -lm

# Rooms, arrows only downward: model/ <- harness/store/ <- harness/run/ and
# analysis/ <- harness/cli/.  Includes are written from the root ("model/model.h",
# "store/trace.h", "analysis/measure/ablate.h"), hence -I. -Iharness.
LIB_SRC  := $(filter-out harness/run/dist_mpi.c,$(wildcard model/*.c harness/store/*.c harness/run/*.c analysis/*/*.c)) \
            $(filter-out harness/cli/main.c,$(wildcard harness/cli/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/serve_assets.o $(BUILD)/gen/registry_views.o
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%) $(BUILD)/tests/mkcorpus  # mkcorpus: the tests' own text
BENCH_BIN := $(BUILD)/bench_gatelab
DECODE_BIN := $(BUILD)/bench_decode

# MPI: data-parallel training (`mpirun -np N build/gatelab-mpi train …`, or
# srun).  build/gatelab-mpi is build/gatelab with harness/run/dist_mpi.c (the
# only file that includes mpi.h) in place of dist.c (one rank), built only
# when `pkg-config ompi-c` finds OpenMPI (Debian: libopenmpi-dev openmpi-bin).
# Without it everything else builds and tests as before; MPI=0 skips it.
MPI      ?= $(shell pkg-config --exists ompi-c 2>/dev/null && echo 1 || echo 0)
MPI_BIN  := $(if $(filter 1,$(MPI)),$(BUILD)/gatelab-mpi)

.SECONDARY:
.PHONY: FORCE all bins pkgcheck test asan demo bench figures debug clean deps fixtures paper data fuzz fuzz-bins
# Every goal a user types first runs `deps` (scripts/setup.sh installs the Debian
# packages), then builds in a fresh $(MAKE): the pkg-config flags above and MPI are
# expanded when make reads this file, so a make that started before the -dev
# packages were installed would compile without their include paths.
all: deps
	@$(MAKE) --no-print-directory bins

bins: pkgcheck $(BUILD)/gatelab $(MPI_BIN)

deps:
	@scripts/setup.sh

# A build without the libraries' pkg-config files fails here, once, saying what to do,
# rather than with "hdf5.h: No such file or directory" in the first object.
PKG_OK := $(shell pkg-config --exists $(PKGS) openblas 2>/dev/null && echo 1)
pkgcheck:
	@[ -n "$(PKG_OK)" ] || { echo "make: missing development packages (pkg-config cannot find: $$(for p in $(PKGS) openblas; do pkg-config --exists $$p 2>/dev/null || printf '%s ' $$p; done)); run 'make deps' (scripts/setup.sh) as root" >&2; exit 2; }
$(LIB_OBJ) $(BUILD)/harness/cli/main.o: | pkgcheck

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# `gatelab serve`'s pages (harness/cli/web/, uPlot vendored in web/vendor/) are embedded
# in the binary as byte arrays (web/embed.sh: od + sed), so it serves them without the
# source tree or network; editing a page rebuilds only this object.
SERVE_WEB := $(sort $(wildcard harness/cli/web/*.html harness/cli/web/*.js harness/cli/web/*.css \
                               harness/cli/web/vendor/*/*.js harness/cli/web/vendor/*/*.css harness/cli/web/vendor/*/LICENSE))
$(BUILD)/gen/serve_assets.c: $(SERVE_WEB) harness/cli/web/embed.sh
	@mkdir -p $(dir $@)
	harness/cli/web/embed.sh $@ $(SERVE_WEB)

$(BUILD)/gen/serve_assets.o: $(BUILD)/gen/serve_assets.c
	$(CC) $(CFLAGS) -c $< -o $@

# The registry's views (docs/registry.md, "Views"): one SQL text, run by gatelab and read by the
# Python package as it is, so the headline and variant rules live once.
$(BUILD)/gen/registry_views.c: scripts/python/gatelab/views.sql harness/store/embed_sql.sh
	@mkdir -p $(dir $@)
	harness/store/embed_sql.sh $@ scripts/python/gatelab/views.sql db_views_sql

$(BUILD)/gen/registry_views.o: $(BUILD)/gen/registry_views.c
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libgatelab.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# main.o carries the commit; a stamp file changes only when the commit does, so a
# build without changes does not relink.
$(BUILD)/commit.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(GATELAB_COMMIT) $(GATELAB_HEAD) $(GATELAB_DIRTY)' | cmp -s - $@ || echo '$(GATELAB_COMMIT) $(GATELAB_HEAD) $(GATELAB_DIRTY)' > $@

$(BUILD)/harness/cli/main.o: harness/cli/main.c $(BUILD)/commit.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DGATELAB_COMMIT='"$(GATELAB_COMMIT)"' -DGATELAB_HEAD='"$(GATELAB_HEAD)"' \
	    -DGATELAB_DIRTY=$(GATELAB_DIRTY) -c $< -o $@

FORCE:

$(BUILD)/gatelab: $(BUILD)/harness/cli/main.o $(BUILD)/libgatelab.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/mpi/dist_mpi.o: harness/run/dist_mpi.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags ompi-c) -c $< -o $@

# dist_mpi.o defines every dist_ symbol, so the archive's dist.o is never pulled in.
$(BUILD)/gatelab-mpi: $(BUILD)/harness/cli/main.o $(BUILD)/mpi/dist_mpi.o $(BUILD)/libgatelab.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(shell pkg-config --libs ompi-c)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/libgatelab.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcmocka

# bench.o carries the commit too: its cost runs record the binary that measured them.
$(BUILD)/scripts/bench/bench.o: scripts/bench/bench.c $(BUILD)/commit.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DGATELAB_HEAD='"$(GATELAB_HEAD)"' -DGATELAB_DIRTY=$(GATELAB_DIRTY) -c $< -o $@

$(BENCH_BIN): $(BUILD)/scripts/bench/bench.o $(BUILD)/libgatelab.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(DECODE_BIN): $(BUILD)/scripts/bench/decode.o $(BUILD)/libgatelab.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# tests/fault/*.c: LD_PRELOAD shims for the fault-injection tests (tests/integration/faults.sh)
FAULT_SO := $(patsubst tests/fault/%.c,$(BUILD)/fault/%.so,$(wildcard tests/fault/*.c))
$(BUILD)/fault/%.so: tests/fault/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -g -fPIC -shared -Wall -Wextra -Werror -D_GNU_SOURCE $< -o $@ -ldl

test: deps
	@$(MAKE) --no-print-directory pkgcheck $(BUILD)/gatelab $(MPI_BIN) $(TEST_BIN) $(FAULT_SO) $(BENCH_BIN)
	@BUILD=$(BUILD) tests/run.sh

asan: deps
	@$(MAKE) --no-print-directory BUILD=build/asan OPT="-O1" MPI=0 \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

debug: deps
	@$(MAKE) --no-print-directory BUILD=build/debug OPT="-O0" bins

# Fuzzing: the library again with clang, ASan+UBSan and libFuzzer's coverage
# (build/fuzz/), one binary per tests/fuzz/fuzz_*.c, then scripts/fuzz.sh runs
# each for FUZZ_SECONDS on its seed corpus tests/fuzz/<name>/.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_BIN     := $(patsubst tests/fuzz/%.c,$(BUILD)/%,$(wildcard tests/fuzz/fuzz_*.c))
$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libgatelab.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer $< $(BUILD)/libgatelab.a -o $@ $(LDLIBS)

fuzz:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=$(FUZZ_CC) OPT="-O1 -DTR_READ_TRIES=1 -DTR_METADATA_READ_ATTEMPTS=1" \
	    SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link -Wno-error -Wno-unknown-warning-option" fuzz-bins
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh build/fuzz

fuzz-bins: $(FUZZ_BIN)

demo: deps
	@$(MAKE) --no-print-directory bins
	@scripts/demo.sh

data:
	@scripts/fetch_data.sh

# make bench CHECKPOINTS="RUN ...": also both sparse forms on those trained TSA runs (docs/benchmarks.md)
bench: deps
	@$(MAKE) --no-print-directory bins $(BENCH_BIN) $(DECODE_BIN)
	@scripts/bench/run.sh $(foreach c,$(CHECKPOINTS),--checkpoint $(c))

PRESET ?= local
paper: deps
	@$(MAKE) --no-print-directory bins $(BENCH_BIN)
	@scripts/paper.sh $(PRESET)

figures: deps
	@$(MAKE) --no-print-directory bins
	@$(BUILD)/gatelab figures

fixtures:
	/usr/bin/python3 scripts/reference/make_fixtures.py tests/fixtures

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
