# lossless-context -- build, test, demo.
#   make          build everything (build/lossless-context.so, build/agent-host, tests);
#                 installs (as root) or names the missing packages first, like demo/test
#   make demo     the main job: generate a session, replay it through the plugin
#   make test     unit + contract tests (installs missing packages first)
#   make asan     the same tests under AddressSanitizer + UBSan
#   make bench    benchmarks (never part of make test)

CC      ?= cc
# The build steps behind demo/test/asan/tsan/bench compile on every core unless told (`make
# BUILD_JOBS=1 test`); a top-level `make -jN` is used as given.
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
SUBMAKE  = $(MAKE) --no-print-directory $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(BUILD_JOBS))
BUILD   ?= build
OPT     ?= -O2
SAN     ?=
# The engine lives in one folder per subsystem (engine/README.md); an engine file names a
# header by its bare name ("store.h"), found through one -I per folder.
ENGINE_DIRS := $(patsubst %/,%,$(sort $(dir $(wildcard engine/*/*.[ch] engine/*/*/*.[ch]))))
ENGINE_INC  := -Iengine $(ENGINE_DIRS:%=-I%)
CFLAGS_BASE = -std=c11 -Wall -Wextra -Werror -g $(OPT) $(SAN) -D_GNU_SOURCE -fPIC -Iabi $(ENGINE_INC)
LIBS    = -lsqlite3 -lz -lcjson -lcurl -lpcre2-8 -lpthread -lm
# The shared store's client (engine/store/postgres/store_pg*.c): libpq's header folder and library.
PQ_CFLAGS := $(shell pkg-config --cflags libpq 2>/dev/null || echo -I$$(pg_config --includedir 2>/dev/null))
CFLAGS_BASE += $(PQ_CFLAGS)
LIBS    += -lpq
HOSTLIBS = -lcjson -lcurl -lpcre2-8 -ldl -lpthread -lm

ENGINE_SRC := $(wildcard engine/*.c engine/*/*.c engine/*/*/*.c)
PLUGIN_SRC := $(wildcard plugin/*.c)
HOST_SRC   := $(wildcard host/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
BENCH_SRC  := $(wildcard tests/bench/bench_*.c)

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/obj/%.o)
PLUGIN_OBJ := $(PLUGIN_SRC:%.c=$(BUILD)/obj/%.o)
HOST_OBJ   := $(HOST_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BIN  := $(BENCH_SRC:tests/bench/%.c=$(BUILD)/bench/%)

ENGINE_LIB := $(BUILD)/libengine.a
PLUGIN_SO  := $(BUILD)/lossless-context.so
HOST_BIN   := $(BUILD)/agent-host
PLUGIN_DIR := $(BUILD)/plugins/lossless-context
EXAMPLE_SO := $(BUILD)/tests/example-plugin.so
ABI2_SO    := $(BUILD)/tests/abi2-plugin.so

.PHONY: all deps demo test asan bench eval clean check-exports print-libs print-engine-inc

# The package check (tests/deps.sh) before anything compiles, so a fresh machine gets the
# packages installed (root) or named (otherwise) instead of a missing-header error. It runs
# once per build folder: a stamp, an order-only prerequisite of every compile, so an
# incremental build costs nothing (delete $(BUILD)/.deps-ok to check again). The targets
# that ran `deps` themselves (demo, test, asan, bench) hand LC_DEPS_DONE=1 to their
# sub-make, so the check never runs twice in one command.
ifeq ($(LC_DEPS_DONE),)
DEPS_STAMP := $(BUILD)/.deps-ok
endif

all: $(PLUGIN_SO) $(HOST_BIN) $(BUILD)/lcm $(PLUGIN_DIR)/plugin.json $(UNIT_BIN) $(EXAMPLE_SO) $(ABI2_SO) $(BENCH_BIN)

deps:
	@sh tests/deps.sh

$(BUILD)/.deps-ok: tests/deps.sh
	@mkdir -p $(dir $@)
	@sh tests/deps.sh && touch $@

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -MMD -MP -c $< -o $@

# Everything in the plugin is hidden except the entry symbol (AP_EXPORT).
$(BUILD)/obj/plugin/%.o: plugin/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -fvisibility=hidden -MMD -MP -c $< -o $@

$(BUILD)/obj/engine/%.o: engine/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -fvisibility=hidden -MMD -MP -c $< -o $@

$(ENGINE_LIB): $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(PLUGIN_SO): $(PLUGIN_OBJ) $(ENGINE_LIB)
	$(CC) $(SAN) -shared -fvisibility=hidden -Wl,--exclude-libs,ALL -Wl,--no-undefined -o $@ $(PLUGIN_OBJ) $(ENGINE_LIB) $(LIBS)

$(PLUGIN_DIR)/plugin.json: plugin.json $(PLUGIN_SO)
	@mkdir -p $(PLUGIN_DIR)
	cp plugin.json $(PLUGIN_DIR)/plugin.json
	ln -sf ../../lossless-context.so $(PLUGIN_DIR)/lossless-context.so
	rm -rf $(PLUGIN_DIR)/skills && cp -r skills $(PLUGIN_DIR)/skills

$(HOST_BIN): $(HOST_OBJ) $(ENGINE_LIB)
	$(CC) $(SAN) -rdynamic -o $@ $(HOST_OBJ) $(ENGINE_LIB) $(HOSTLIBS) -lsqlite3 -lz -lpq

# A suite's shared fixture headers (tests/unit/*.h) are its dependencies too (-MMD).
$(BUILD)/tests/%: tests/unit/%.c $(ENGINE_LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -Iplugin -MMD -MP -MF $@.d -o $@ $< $(ENGINE_LIB) $(LIBS) -lcmocka

$(BUILD)/bench/%: tests/bench/%.c $(ENGINE_LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -o $@ $< $(ENGINE_LIB) $(LIBS)

# bench_context times cJSON inside the dlopen'ed .so by defining cJSON_* itself: the
# definitions must be in its dynamic symbol table to take the .so's calls, and libcjson
# must stay linked (--no-as-needed) for them to forward to it.
$(BUILD)/bench/bench_context: tests/bench/bench_context.c $(ENGINE_LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -o $@ $< $(ENGINE_LIB) -Wl,--no-as-needed $(LIBS) -ldl \
		-Wl,--export-dynamic-symbol='cJSON_*'

# The minimal example plugin compiles against the header alone.
$(EXAMPLE_SO): tests/example_plugin.c abi/agent_plugin.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -fvisibility=hidden -shared -o $@ $<

# The same example stamped with another ABI version, for the refusal test.
$(ABI2_SO): tests/example_plugin.c abi/agent_plugin.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -fvisibility=hidden -shared -DEXAMPLE_ABI_VERSION=2 -o $@ $<

# The link libraries of the engine, for scripts that link it outside these rules (make fuzz).
print-libs:
	@echo $(LIBS)

# The engine's header folders as -I flags, for the same scripts.
print-engine-inc:
	@echo $(ENGINE_INC)

check-exports: $(PLUGIN_SO)
	@exports=$$(nm -D --defined-only $(PLUGIN_SO) | awk '$$2 ~ /^[TDBVWR]$$/ {print $$3}'); \
	if [ "$$exports" != "agent_plugin_init" ]; then \
		echo "exported symbols other than agent_plugin_init:"; echo "$$exports"; exit 1; fi; \
	echo "exports: agent_plugin_init only"

demo: deps
	@$(SUBMAKE) LC_DEPS_DONE=1 all
	@sh tests/demo.sh

test: deps
	@$(SUBMAKE) LC_DEPS_DONE=1 all
	@sh tests/run.sh $(BUILD)

asan: deps
	@$(SUBMAKE) LC_DEPS_DONE=1 BUILD=build-asan OPT=-O1 \
		SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" all
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 sh tests/run.sh build-asan

bench: deps
	@$(SUBMAKE) LC_DEPS_DONE=1 all
	@sh tests/bench/run.sh $(BUILD)

clean:
	rm -rf build build-asan build-tsan build-fuzz

-include $(shell find $(BUILD)/obj $(BUILD)/tests -name '*.d' 2>/dev/null)

# ---- reliability checks (tests/fuzz/run.sh, tests/contract/test_valgrind.sh) ----------
#   make fuzz        build the libFuzzer targets (clang, ASan+UBSan) into build-fuzz/ and run
#                    each for FUZZ_SECONDS (default 60); FUZZ_SECONDS=10 is the CI size
#   make valgrind    memcheck over the real host + .so (an unsanitized build)
FUZZ_SECONDS ?= 60
.PHONY: fuzz valgrind

fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) BUILD=build-fuzz sh tests/fuzz/run.sh

valgrind:
	@$(SUBMAKE) $(PLUGIN_SO) $(HOST_BIN) $(PLUGIN_DIR)/plugin.json
	@BUILD=$(abspath $(BUILD)) ROOT=$(CURDIR) sh tests/contract/test_valgrind.sh

# ---- build/lcm: the MCP server and transcript import (tools/lcm/) -------------------------
LCM_SRC := $(wildcard tools/lcm/*.c)
LCM_OBJ := $(LCM_SRC:%.c=$(BUILD)/obj/%.o)
LCM_BIN := $(BUILD)/lcm

# `lcm tui` draws with the wide-character curses; only this binary links it.
TUILIBS := $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)

$(LCM_BIN): $(LCM_OBJ) $(ENGINE_LIB)
	$(CC) $(SAN) -o $@ $(LCM_OBJ) $(ENGINE_LIB) $(LIBS) $(TUILIBS)

# The Claude Code plugin's launcher (host/claude-code/scripts/lcm-run) starts this build when
# no lcm is on PATH: the default build records its absolute path there (untracked; Claude
# Code copies it with the plugin).
CCP_RECORD := host/claude-code/scripts/lcm-path
ifeq ($(BUILD),build)
all: $(CCP_RECORD)
endif
$(CCP_RECORD): $(LCM_BIN)
	@echo "$(abspath $(LCM_BIN))" >$@

# `make install [PREFIX=/usr/local] [DESTDIR=]`: lcm at PREFIX/bin/lcm, a path that outlives
# the clone; `PREFIX/bin/lcm hooks install` then points the hooks and the MCP entry at it.
PREFIX ?= /usr/local
.PHONY: install uninstall
install: $(LCM_BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(LCM_BIN) $(DESTDIR)$(PREFIX)/bin/lcm

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/lcm

# ---- crash consistency and ThreadSanitizer (tests/crash/, tests/contract/test_crash_small.sh)
#   make crash       SIGKILL the host at random points of ingest, a compaction pass, a revision
#                    persist and a backup; restart and check (CRASH_TRIALS, default 200)
#   make tsan        the tests with worker threads / concurrent connections under TSan
CRASH_TRIALS ?= 200
TSAN_TESTS = test_summarize_http test_host_llm test_host_complete test_maint test_store test_worker test_vecindex test_catchup
.PHONY: crash tsan

crash:
	@$(SUBMAKE) $(PLUGIN_SO) $(HOST_BIN) $(PLUGIN_DIR)/plugin.json
	@python3 tests/crash/crash.py --build $(BUILD) --trials $(CRASH_TRIALS) $(if $(CRASH_SEED),--seed $(CRASH_SEED))

# and the real host + .so under TSan through the contract tests of the background
# summarizer (both completion paths) and of compaction with the worker; `lcm import`
# (its writer threads, one per sub-agent store too) through the import tests; the host's
# worker beside every other writer (test_store_writers).
TSAN_CONTRACT = test_summary_worker test_lcm_compaction test_import test_import_torn test_import_cli_shapes \
	test_store_writers
tsan:
	@$(SUBMAKE) BUILD=build-tsan OPT=-O1 SAN="-fsanitize=thread" \
		$(TSAN_TESTS:%=build-tsan/tests/%) build-tsan/lossless-context.so build-tsan/agent-host \
		build-tsan/lcm build-tsan/plugins/lossless-context/plugin.json
	@bad=0; for t in $(TSAN_TESTS); do \
		if TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/$$t >build-tsan/$$t.log 2>&1; \
		then echo "PASS tsan $$t"; else echo "FAIL tsan $$t (log: build-tsan/$$t.log)"; \
			grep -A8 'WARNING: ThreadSanitizer' build-tsan/$$t.log | head -20; bad=1; fi; done; \
	for t in $(TSAN_CONTRACT); do \
		if TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 log_path=$(CURDIR)/build-tsan/$$t.tsan" \
			BUILD=$(CURDIR)/build-tsan ROOT=$(CURDIR) sh tests/contract/$$t.sh >build-tsan/$$t.log 2>&1 && \
			! ls build-tsan/$$t.tsan.* >/dev/null 2>&1; \
		then echo "PASS tsan $$t"; else echo "FAIL tsan $$t (log: build-tsan/$$t.log)"; tail -5 build-tsan/$$t.log; \
			cat build-tsan/$$t.tsan.* 2>/dev/null | grep -A12 'WARNING: ThreadSanitizer' | head -30; bad=1; fi; done; exit $$bad

# ---- the procedural long-context evaluation (tests/eval/eval.py) ------------------------
#   make eval                         the ladder 32k 128k 512k 2M tokens at a 128k window
#   make eval EVAL_SIZES="64k 8M"     other lengths (EVAL_WINDOW, EVAL_SEED, EVAL_JOBS too)
#   writes $(BUILD)/eval/report.json, table.md, context-<size>.svg, metrics.jsonl (appended)
EVAL_SIZES  ?= 32k 128k 512k 2M
EVAL_WINDOW ?= 128000
EVAL_SEED   ?= 1
EVAL_JOBS   ?= 2

eval:
	@$(SUBMAKE) $(PLUGIN_SO) $(HOST_BIN) $(PLUGIN_DIR)/plugin.json
	@python3 tests/eval/eval.py --build $(BUILD) --sizes "$(EVAL_SIZES)" --window $(EVAL_WINDOW) \
		--seed $(EVAL_SEED) --jobs $(EVAL_JOBS)

# ---- recall over generated sessions (tests/eval/recall_eval.py) -------------------------
#   make eval-recall                  questions in other words than their answers (inflections,
#   make eval-recall RECALL_SEED=3    punctuation, paraphrase, time): lcm grep's recall@10 and
#                                     MRR beside a naive grep's, in the same run
RECALL_SEED ?= 7
.PHONY: eval-recall
eval-recall: $(LCM_BIN)
	@python3 tests/eval/recall_eval.py --lcm $(LCM_BIN) --seed $(RECALL_SEED)

# ---- fault injection (tests/fault/; docs/develop.md) -------------------------------------
#   make faultsim    every case of tests/fault/faultsim_run.c with the Nth allocation failed,
#                    N = 1, 2, ... (then with every allocation from the Nth failed): no crash,
#                    a failure status or the right data, no leak
# The allocator is preloaded in front of the C library, so it is built without $(SAN): a
# sanitizer's runtime must come first itself.
FAULTSIM_SO  := $(BUILD)/tests/libfaultsim.so
FAULTSIM_RUN := $(BUILD)/tests/faultsim-run
.PHONY: faultsim

$(FAULTSIM_SO): tests/fault/faultsim.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -g -O1 -D_GNU_SOURCE -fPIC -shared -o $@ $<

$(FAULTSIM_RUN): tests/fault/faultsim_run.c $(ENGINE_LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -o $@ $< $(ENGINE_LIB) $(LIBS) -ldl

all: $(FAULTSIM_SO) $(FAULTSIM_RUN)

faultsim: $(FAULTSIM_SO) $(FAULTSIM_RUN)
	@sh tests/fault/run.sh $(BUILD)
