#!/bin/bash
# bench_arena.sh — the strength of the computer players, measured by `cardroom arena`.
#
# A benchmark, not a test (`make bench`; hours at the default size). Four duplicate matches from the
# same seed, each deal played both ways: expert against easy, normal against easy, expert against
# normal, and expert partnered with easy against two easy players. Prints, per match, A's tokens
# minus B's per deal with its 95 % interval, the made and failed bids of each side, the Caps, and the
# deals per second. The goal: every interval above zero, expert's margin over easy at least 0.3.
#
# Usage: bench_arena.sh [deals]   (default $ARENA_DEALS or 2000); $ARENA_JOBS worker processes (2).
set -euo pipefail
bin=${CARDROOM_BIN:-build/cardroom}
deals=${1:-${ARENA_DEALS:-2000}}
jobs=${ARENA_JOBS:-2}
match() {
    echo "== $1 =="
    shift
    "$bin" arena "$@" --deals "$deals" --seed 304 --jobs "$jobs" --quiet | grep -v '^$'
}
match "expert vs easy" --a expert --b easy
match "normal vs easy" --a normal --b easy
match "expert vs normal" --a expert --b normal
match "expert partnered with easy vs easy and easy" --a expert --a-partner easy --b easy
