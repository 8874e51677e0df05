# zklockfs - see README.md.  The targets (`make help` prints this list):
#   make                 build/zklockfs (the daemon), build/zklock, build/zkbench, build/delaylink
#   make run             install what is missing, start a local ZooKeeper, mount, show a lock
#   make stop            unmount and stop what make run started
#   make check           every test below, as CI runs them (root, /dev/fuse)
#   make check-unit      the cmocka unit tests (make unit T=grant: build and run one)
#   make check-docs      the docs' tables and lists against the code
#   make check-sim       the simulator: its scenarios and SIM_CHECK_SEEDS seeds
#   make sim             SEEDS seeds from SEED_FIRST; SEED=s or SCENARIO=name: one, traced
#   make build/sim/sim-fast  the simulator without sanitizers, to time it
#   make walk            how many calls, files and returns one waiter's life takes in the engine
#   make check-integration  tests/integration against build/zklockfs
#   make check-asan      the same against the ASan + UBSan build
#   make check-nemesis   a short nemesis run of a fixed seed (docs/NEMESIS.md)
#   make asan            that build: build/asan/zklockfs, build/asan/zklock
#   make unit            the unit tests' programs, build/unit/test_*
#   make fuzz            each libFuzzer target for FUZZ_SECONDS
#   make bench           figures against the ZooKeeper C client recipe (docs/PERFORMANCE.md)
#   make nemesis         NEMESIS_SECONDS of random faults, then the checker's verdict (docs/NEMESIS.md)
#   make install         PREFIX, DESTDIR, MOUNTDIR, UNITDIR as usual; make uninstall
#   make deb             the Debian package, in build/
#   make deps            install the Debian packages the build and tests need
#   make clean           remove build/
CC      ?= cc
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
MOUNTDIR ?= /sbin
UNITDIR ?= /etc/systemd/system
BUILD   ?= build

# Asked when a recipe runs, not when this file is read: on a fresh machine
# `make run` installs libfuse3-dev (deps) only after make has read it.
FUSE_CFLAGS = $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS   = $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)
# the first line of every recipe that compiles against libfuse: a missing
# libfuse3-dev says so, rather than "fuse_opt.h: No such file or directory"
NEED_FUSE   = @pkg-config --exists fuse3 || { echo "libfuse3-dev (fuse3.pc) is \
	missing: run tools/install-deps (or make deps)" >&2; exit 1; }

# the one version: debian/changelog's first line, "zklockfs (VERSION) ..."
VERSION := $(shell awk -F'[()]' 'NR == 1 { print $$2 }' debian/changelog)

WARN     = -std=c11 -Wpedantic -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
# a package build's own (dpkg-buildflags: _FORTIFY_SOURCE) come last
ENV_CPPFLAGS := $(CPPFLAGS)
CPPFLAGS = -I. -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -DZKLOCKFS_VERSION='"$(VERSION)"' \
	   $(FUSE_CFLAGS) $(ENV_CPPFLAGS)
CFLAGS  ?= -O2 -g
LDLIBS   = $(FUSE_LIBS) -lzookeeper_st -lsystemd -lpthread
SAN      = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
	   -DZKL_LOCKCHECK

# the lock engine: what the simulator (tests/sim) drives without a server
ENGINE_SRC = zk/queue.c zk/waiter.c zk/retry.c zk/watch.c zk/wait.c zk/sem.c zk/release.c \
	     zk/create.c zk/linger.c zk/lock.c zk/mutex.c zk/metrics.c
ZK_SRC   = zk/escape.c zk/naming.c zk/grant.c zk/settings.c zk/statedata.c zk/errno.c zk/log.c zk/creds.c \
	   zk/digest.c zk/connect.c zk/drive.c zk/session.c zk/calls.c zk/transport.c $(ENGINE_SRC)
FS_SRC   = fs/opts.c fs/node.c fs/attr.c fs/pending.c fs/observe.c fs/zop.c fs/ops.c fs/remove.c \
	   fs/readdir.c fs/read.c fs/xattrs.c fs/reply.c fs/signals.c fs/lockreq.c fs/lrquery.c fs/fdlock.c \
	   fs/confirm.c fs/state.c fs/lockops.c fs/wbuf.c fs/xcache.c fs/settings.c fs/revoke.c fs/flock.c \
	   fs/lockfile.c fs/lfns.c fs/lfqueue.c fs/fdops.c fs/slots.c fs/pool.c fs/watchdog.c \
	   fs/ready.c fs/mntwatch.c fs/mountpoint.c fs/ender.c fs/main.c
SRC      = $(ZK_SRC) $(FS_SRC)

UNIT     = naming grant settings statedata opts errno slots signals adopt log mutex connect digest heartbeat \
	   calls
UNIT_BIN = $(UNIT:%=$(BUILD)/unit/test_%)

.PHONY: all asan unit check check-unit check-docs check-sim check-integration check-asan run stop deps bench \
	clean install uninstall fuzz sim deb help nemesis check-nemesis walk

# Every program links objects built one per source file, in a directory per
# flavour, each with the list of headers it read (-MMD: $(BUILD)/.../x.d):
# a header change rebuilds what includes it, and nothing else.
#   $(BUILD)/obj         -O2: zklockfs, zklock, zkbench
#   $(BUILD)/asan/obj    -O1 with ASan and UBSan: the sanitized daemon and
#                        zklock (make check-asan), and the unit tests
#   $(BUILD)/sim/obj     the same, with -DZKL_PREEMPT: the simulator
#   $(BUILD)/sim-fast/obj  -O2 -DZKL_PREEMPT, no sanitizer
#   $(BUILD)/fuzz/obj    clang with libFuzzer
# objs(DIR, SOURCES): the objects of SOURCES in DIR
objs = $(patsubst %.c,$(1)/%.o,$(2))
DEPFLAGS = -MMD -MP
# an object of fs/ or tests/ includes libfuse's headers: say what is missing
fuse_guard = $(if $(filter fs/% tests/%,$<),$(NEED_FUSE))

$(BUILD)/obj/%.o: %.c
	$(fuse_guard)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/asan/obj/%.o: %.c
	$(fuse_guard)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) -O1 -g $(SAN) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/sim/obj/%.o: %.c
	$(fuse_guard)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) -DZKL_PREEMPT -O1 -g $(SAN) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/sim-fast/obj/%.o: %.c
	$(fuse_guard)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) -DZKL_PREEMPT -O2 -g $(DEPFLAGS) -c -o $@ $<

# the walk's: -O0, and the engine's files record every call (tools/walk)
$(BUILD)/walk/obj/%.o: %.c
	$(fuse_guard)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) -DZKL_PREEMPT -O0 -g \
	    $(if $(filter $(ENGINE_SRC),$<),-finstrument-functions) $(DEPFLAGS) -c -o $@ $<

all: $(BUILD)/zklockfs $(BUILD)/zklock $(BUILD)/zkbench $(BUILD)/delaylink

$(BUILD)/zklockfs: $(call objs,$(BUILD)/obj,$(SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/asan/zklockfs: $(call objs,$(BUILD)/asan/obj,$(SRC))
	$(CC) -O1 -g $(SAN) -o $@ $^ $(LDLIBS)

# the tool speaks only to the mount (and reads its heartbeat file): libc
# alone, and the daemon's pure escaping and name checks
ZKLOCK_SRC = tools/zklock/main.c tools/zklock/opts.c tools/zklock/lockdir.c \
	     tools/zklock/entry.c tools/zklock/signals.c tools/zklock/tree.c tools/zklock/list.c \
	     tools/zklock/why.c tools/zklock/bound.c tools/zklock/watchdog.c tools/zklock/watch.c tools/zklock/waitinfo.c \
	     tools/zklock/state.c tools/zklock/once.c tools/zklock/text.c \
	     zk/escape.c zk/naming.c
$(BUILD)/zklock: $(call objs,$(BUILD)/obj,$(ZKLOCK_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -pthread

$(BUILD)/asan/zklock: $(call objs,$(BUILD)/asan/obj,$(ZKLOCK_SRC))
	$(CC) -O1 -g $(SAN) -o $@ $^ -pthread

asan: $(BUILD)/asan/zklockfs $(BUILD)/asan/zklock

# unit tests: the pure logic, with cmocka; each links the sanitized objects
# of what it tests
UNIT_SRC_naming  = zk/naming.c
UNIT_SRC_grant   = zk/grant.c zk/naming.c
UNIT_SRC_settings = zk/settings.c zk/escape.c
UNIT_SRC_statedata = zk/statedata.c zk/settings.c zk/escape.c
UNIT_SRC_opts    = fs/opts.c zk/naming.c
UNIT_SRC_errno   = zk/errno.c
UNIT_SRC_connect = zk/connect.c
UNIT_SRC_digest  = zk/digest.c
UNIT_SRC_slots   = fs/slots.c zk/naming.c
UNIT_SRC_signals = fs/signals.c
UNIT_SRC_log     = zk/log.c zk/escape.c
UNIT_SRC_adopt   =
UNIT_SRC_mutex   = zk/mutex.c
UNIT_SRC_heartbeat =
UNIT_SRC_calls   = zk/calls.c zk/drive.c zk/log.c zk/escape.c
.SECONDEXPANSION:
$(UNIT_BIN): $(BUILD)/unit/test_%: $$(call objs,$(BUILD)/asan/obj,tests/unit/test_%.c $$(UNIT_SRC_%))
	@mkdir -p $(@D)
	$(CC) -O1 -g $(SAN) -o $@ $^ -lcmocka $(LDLIBS)

# `make unit` builds them all; `make unit T=grant` builds and runs test_grant
unit: $(if $(T),$(BUILD)/unit/test_$(T),$(UNIT_BIN))
ifdef T
	$(BUILD)/unit/test_$(T)
endif

# deterministic simulation (tests/sim/README.md): the engine over simulated
# sessions and a simulated ZooKeeper; no zk/session.c, no zk/transport.c, no
# zk/log.c (the simulator logs into its trace).  `make sim` runs SEEDS seeds
# from SEED_FIRST; `make sim SEED=x` replays seed x with a trace;
# `make sim SCENARIO=name` replays a scripted scenario with a trace.
# check-sim (part of make check) runs every scenario and SIM_CHECK_SEEDS seeds.
SIM_SRC   = $(ENGINE_SRC) zk/grant.c zk/settings.c zk/naming.c zk/errno.c zk/escape.c \
	    fs/node.c fs/pending.c fs/zop.c fs/read.c fs/lockreq.c fs/lrquery.c fs/confirm.c fs/wbuf.c fs/fdlock.c \
	    fs/lockfile.c fs/lfns.c fs/observe.c zk/statedata.c \
	    tests/sim/sim.c tests/sim/actions.c tests/sim/simfs.c tests/sim/simfsact.c tests/sim/simobs.c tests/sim/check.c tests/sim/script.c tests/sim/scenarios.c tests/sim/fsscenarios.c tests/sim/simnet.c tests/sim/simsess.c tests/sim/simzk.c
SEEDS     ?= 10000
SEED_FIRST ?= 1
SIM_CHECK_SEEDS ?= 3000
# seeds that fail on known engine bugs, skipped by check-sim (tests/sim/README.md): none
SIM_KNOWN_BAD =

$(BUILD)/sim/sim: $(call objs,$(BUILD)/sim/obj,$(SIM_SRC))
	$(CC) -O1 -g $(SAN) -o $@ $^ -lzookeeper_st -lpthread

# without sanitizers, to measure the engine rather than ASan
$(BUILD)/sim/sim-fast: $(call objs,$(BUILD)/sim-fast/obj,$(SIM_SRC))
	$(CC) -O2 -g -o $@ $^ -lzookeeper_st -lpthread

# one waiter's walk through the engine's files: tools/walk
$(BUILD)/walk/sim: $(call objs,$(BUILD)/walk/obj,$(SIM_SRC) tests/sim/walk.c)
	$(CC) -O0 -g -o $@ $^ -lzookeeper_st -lpthread

walk: $(BUILD)/walk/sim
	tools/walk $(BUILD)/walk/sim

sim: $(BUILD)/sim/sim
ifdef SEED
	$(BUILD)/sim/sim -r $(SEED)
else ifdef SCENARIO
	$(BUILD)/sim/sim -s $(SCENARIO)
else
	$(BUILD)/sim/sim $(SEED_FIRST) $(SEEDS)
endif

check-sim: $(BUILD)/sim/sim
	$(BUILD)/sim/sim -s
	$(BUILD)/sim/sim 1 $(SIM_CHECK_SEEDS) $(SIM_KNOWN_BAD)

deps:
	@tools/install-deps

# every test: unit, docs, simulator, integration (plain, then sanitized)
check: deps
	$(MAKE) check-unit check-docs check-sim check-integration check-asan check-nemesis

# the nemesis's directed scenarios, and a short run of a fixed seed (make
# nemesis runs longer ones)
CHECK_NEMESIS_SECONDS ?= 120
check-nemesis: $(BUILD)/zklockfs $(BUILD)/zklock
	ZKLOCKFS=$(CURDIR)/$(BUILD)/zklockfs /usr/bin/python3 -m pytest -q tests/nemesis/test_directed.py
	ZKLOCKFS=$(CURDIR)/$(BUILD)/zklockfs /usr/bin/python3 tests/nemesis/run.py \
	  --seconds $(CHECK_NEMESIS_SECONDS) --seed 20261128

# the cmocka unit tests, each run; the nemesis checker against planted histories
check-unit: unit
	@set -e; for t in $(UNIT_BIN); do $$t; done
	/usr/bin/python3 -m pytest -q tests/nemesis/test_checker.py

# what the docs must say as the code does: docs/DESIGN.md's tables of the
# small machines' moves are printed from zk/moves.h, fs/lrmoves.h,
# zk/sessmoves.h and fs/obsmoves.h, the lists the checkers enforce, and the copy between its markers must match; every
# source file is named where a newcomer looks for it (tools/check-layout);
# the engine's files call one another as zk/engine.h says
# (tools/check-engine-calls), and fs/'s only downwards (tools/check-fs-layers)
$(BUILD)/moves: $(call objs,$(BUILD)/obj,tools/moves.c)
	$(CC) $(CFLAGS) -o $@ $^

check-docs: $(BUILD)/moves $(call objs,$(BUILD)/obj,$(filter zk/%,$(ENGINE_SRC)) $(FS_SRC))
	@awk '/^<!-- moves: end/ { p = 0 } p; /^<!-- moves: begin/ { p = 1 }' docs/DESIGN.md \
	  > $(BUILD)/moves.doc
	@$(BUILD)/moves | diff -u $(BUILD)/moves.doc - || { echo "docs/DESIGN.md: \
	  the tables of moves differ from the lists of moves: put build/moves's output between \
	  its markers"; exit 1; }
	@tools/check-layout
	@tools/check-engine-calls $(BUILD)/obj
	@tools/check-fs-layers $(BUILD)/obj
	@# the man pages say the version debian/changelog gives (the one source)
	@for m in docs/zklockfs.8 docs/zklock.1; do \
	  grep -q '^\.TH .*"zklockfs $(VERSION)"' $$m || { \
	  echo "$$m: its .TH line names another version than debian/changelog's $(VERSION)"; \
	  exit 1; }; done

check-integration: $(BUILD)/zklockfs $(BUILD)/zklock
	ZKLOCKFS=$(CURDIR)/$(BUILD)/zklockfs /usr/bin/python3 -m pytest tests/integration

# fast_unwind_on_malloc=0: an allocation's stack unwinds through libzookeeper
# (built without frame pointers), so tests/lsan.supp's patterns see the
# frames that name what allocated it
check-asan: $(BUILD)/asan/zklockfs $(BUILD)/asan/zklock
	ZKLOCKFS=$(CURDIR)/$(BUILD)/asan/zklockfs ZKLOCKFS_SANITIZED=1 \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:fast_unwind_on_malloc=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  /usr/bin/python3 -m pytest tests/integration

# fuzzing: the pure parsers under libFuzzer (clang), each target for
# FUZZ_SECONDS over a fresh copy of its seed corpus tests/fuzz/corpus/T/ in
# $(BUILD)/fuzz/corpus/T/; a crash fails, its input kept as $(BUILD)/fuzz/crash-T-*.
FUZZ         = names grant settings source opts
FUZZ_BIN     = $(FUZZ:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_SAN     = -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

FUZZ_SRC_names  = zk/naming.c
FUZZ_SRC_grant  = zk/grant.c zk/naming.c
FUZZ_SRC_settings = zk/settings.c zk/escape.c
FUZZ_SRC_source = fs/opts.c zk/naming.c
FUZZ_SRC_opts   = fs/opts.c zk/naming.c

$(BUILD)/fuzz/obj/%.o: %.c
	$(fuse_guard)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(WARN) $(CPPFLAGS) -O1 -g $(FUZZ_SAN) $(DEPFLAGS) -c -o $@ $<

$(FUZZ_BIN): $(BUILD)/fuzz/fuzz_%: $$(call objs,$(BUILD)/fuzz/obj,tests/fuzz/fuzz_%.c $$(FUZZ_SRC_%))
	$(FUZZ_CC) -O1 -g $(FUZZ_SAN) -o $@ $^ $(FUSE_LIBS)

fuzz: $(FUZZ_BIN)
	@set -e; for t in $(FUZZ); do \
	  c=$(BUILD)/fuzz/corpus/$$t; rm -rf $$c; mkdir -p $$c; cp tests/fuzz/corpus/$$t/* $$c/; \
	  if ! $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=1024 -timeout=10 \
	      -artifact_prefix=$(BUILD)/fuzz/crash-$$t- $$c >$(BUILD)/fuzz/fuzz_$$t.log 2>&1; then \
	    tail -n 60 $(BUILD)/fuzz/fuzz_$$t.log; echo "fuzz_$$t: FAILED (log: $(BUILD)/fuzz/fuzz_$$t.log)"; exit 1; \
	  fi; \
	  echo "fuzz_$$t: $$(grep -o 'Done [0-9]* runs in [0-9]* second' $(BUILD)/fuzz/fuzz_$$t.log), corpus $$(ls $$c | wc -l) inputs"; \
	done

run: deps $(BUILD)/zklockfs $(BUILD)/zklock
	@tools/run start

stop:
	@tools/run stop

# the bench's measuring half: a file per mode (bench/zkbench.h)
ZKBENCH_SRC = bench/zkbench.c bench/util.c bench/serverstats.c bench/zkconn.c \
	      bench/recipe.c bench/cycles.c bench/scale.c bench/ceiling.c
# the C recipe is the stock client's: the multi-threaded one, its
# synchronous calls (libzookeeper-mt2; the -dev package, whose headers are
# the same, cannot be installed beside libzookeeper-st-dev)
$(call objs,$(BUILD)/obj,$(ZKBENCH_SRC)): CPPFLAGS += -DTHREADED
$(BUILD)/zkbench: $(call objs,$(BUILD)/obj,$(ZKBENCH_SRC))
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -l:libzookeeper_mt.so.2 -lpthread

# the bench's slow link: a C relay that delays every byte (bench/delaylink.c)
$(BUILD)/delaylink: $(call objs,$(BUILD)/obj,bench/delaylink.c)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

bench: deps $(BUILD)/zklockfs $(BUILD)/zkbench $(BUILD)/delaylink
	bench/run

# faults at random, combined, against three servers and three hosts in
# network namespaces, then the checker
# (tests/nemesis/run.py; a run is replayed by its seed)
NEMESIS_SECONDS ?= 600
NEMESIS_SEED ?=
NEMESIS_LOAD ?=
nemesis: deps $(BUILD)/zklockfs $(BUILD)/zklock
	ZKLOCKFS=$(CURDIR)/$(BUILD)/zklockfs /usr/bin/python3 tests/nemesis/run.py \
	  --seconds $(NEMESIS_SECONDS) $(if $(NEMESIS_SEED),--seed $(NEMESIS_SEED)) \
	  $(if $(NEMESIS_LOAD),--load $(NEMESIS_LOAD))

# DESTDIR and PREFIX as usual; mount(8) finds helpers only in /sbin (MOUNTDIR).
# A file of the system that the Debian package owns (dpkg -S: the mount
# helper, the unit) is the package's: install and uninstall leave it.
COMPDIR ?= $(PREFIX)/share/bash-completion/completions
pkgs_file = [ -z "$(DESTDIR)" ] && dpkg -S "$(1)" >/dev/null 2>&1 && \
	echo "make: $(1) is the zklockfs package's: left as it is"
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MOUNTDIR) $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(COMPDIR)
	install -m 755 $(BUILD)/zklockfs $(BUILD)/zklock $(DESTDIR)$(BINDIR)/
	$(call pkgs_file,$(MOUNTDIR)/mount.zklockfs) || { \
	sed 's|@BINDIR@|$(BINDIR)|g' mount-helpers/mount.zklockfs > $(DESTDIR)$(MOUNTDIR)/mount.zklockfs; \
	chmod 755 $(DESTDIR)$(MOUNTDIR)/mount.zklockfs; }
	$(call pkgs_file,$(UNITDIR)/zklockfs@.service) || \
	sed 's|@BINDIR@|$(BINDIR)|g' mount-helpers/zklockfs@.service > $(DESTDIR)$(UNITDIR)/zklockfs@.service
	install -m 644 docs/zklockfs.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 docs/zklock.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 tools/completion/zklock $(DESTDIR)$(COMPDIR)/zklock
	ln -sf zklock $(DESTDIR)$(COMPDIR)/zklockfs
	ln -sf zklock $(DESTDIR)$(COMPDIR)/mount.zklockfs

uninstall:
	@for f in $(DESTDIR)$(BINDIR)/zklockfs $(DESTDIR)$(BINDIR)/zklock \
		$(DESTDIR)$(MOUNTDIR)/mount.zklockfs $(DESTDIR)$(UNITDIR)/zklockfs@.service \
		$(DESTDIR)$(MANDIR)/man8/zklockfs.8 $(DESTDIR)$(MANDIR)/man1/zklock.1 \
		$(DESTDIR)$(COMPDIR)/zklock $(DESTDIR)$(COMPDIR)/zklockfs \
		$(DESTDIR)$(COMPDIR)/mount.zklockfs; do \
	  $(call pkgs_file,$$f) || rm -f "$$f"; done

# The Debian package (debian/, dpkg-buildpackage: a clean build with the
# distribution's hardening flags): build/zklockfs_VERSION_ARCH.deb and its
# .changes, which `lintian build/zklockfs_*.changes` checks.
deb:
	@tools/install-deps --deb	# debian/control's Build-Depends, as make run installs its own
	dpkg-buildpackage -b -us -uc
	mkdir -p $(BUILD)
	mv ../zklockfs_$(VERSION)_*.deb ../zklockfs-dbgsym_$(VERSION)_*.deb ../zklockfs_$(VERSION)_*.changes \
		../zklockfs_$(VERSION)_*.buildinfo $(BUILD)/

clean:
	rm -rf $(BUILD)

help:
	@sed -n 's/^#   make/make/p' $(firstword $(MAKEFILE_LIST))

# With `make run` or `make bench`, deps (which may install libfuse3-dev) goes
# before any compile; a target's prerequisites alone are not ordered (make -j).
ifneq ($(filter run bench,$(MAKECMDGOALS)),)
$(call objs,$(BUILD)/obj,$(SRC) $(ZKLOCK_SRC) $(ZKBENCH_SRC) bench/delaylink.c): | deps
endif

# The version is compiled into these: a new changelog entry rebuilds them.
$(call objs,$(BUILD)/obj,fs/main.c tools/zklock/opts.c) \
$(call objs,$(BUILD)/asan/obj,fs/main.c tools/zklock/opts.c): debian/changelog

# the headers each object read (-MMD), last: none of their rules is the default goal
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
