# cardroom — the two commands of the README, and the steps behind them.
#   make run    install what is missing, build, start cardroom
#   make test   install what is missing, build, run every test (plain, then ASan+UBSan),
#               then a short run of each fuzz target
SHELL := /bin/bash
BUILD ?= build
SAN_BUILD ?= build-san
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
# Debian 12 packages the build and the tests need.
PACKAGES := build-essential meson ninja-build pkg-config clang libclang-rt-14-dev \
            libsodium-dev libjansson-dev libcriterion-dev \
            libsqlite3-dev libinih-dev libcurl4-openssl-dev libssl-dev libolm-dev python3-olm python3 \
            ngircd inspircd anope openssl

.PHONY: run test deps build build-san check check-san fuzz bench clean

run: build
	./$(BUILD)/cardroom $(ARGS)

test: check check-san fuzz

deps:
	@./tools/install-deps $(PACKAGES)

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD)

$(SAN_BUILD)/build.ninja: | deps
	meson setup $(SAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false

$(FUZZ_BUILD)/build.ninja: | deps
	CC=clang meson setup $(FUZZ_BUILD) -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dc_args=-fsanitize=fuzzer-no-link

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

build-san: $(SAN_BUILD)/build.ninja
	ninja -C $(SAN_BUILD)

check: build
	meson test -C $(BUILD) --print-errorlogs

# Under the sanitizers the random simulation plays fewer hands (it is ~10x slower there).
check-san: build-san
	CARDROOM_SIM_HANDS=20000 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  meson test -C $(SAN_BUILD) --print-errorlogs

fuzz: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) tests/fuzz_card tests/fuzz_replay tests/fuzz_command tests/fuzz_config tests/fuzz_console \
	  tests/fuzz_sync tests/fuzz_olm tests/fuzz_megolm tests/fuzz_e2ee tests/fuzz_irc_line tests/fuzz_irc_proto \
	  tests/fuzz_solve tests/fuzz_aiexec
	@for t in card replay command config console sync olm megolm e2ee irc_line irc_proto solve aiexec; do \
	  mkdir -p $(FUZZ_BUILD)/corpus-$$t; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  ./$(FUZZ_BUILD)/tests/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	    $(FUZZ_BUILD)/corpus-$$t tests/fuzz/corpus-$$t 2>&1 | tail -n 3 || exit 1; \
	done

bench: build
	meson test -C $(BUILD) --benchmark --verbose

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
