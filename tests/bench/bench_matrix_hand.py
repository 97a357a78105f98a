#!/usr/bin/env python3
"""Benchmark: how the bot plays on a stock homeserver — Matrix events per hand, and the time a
hand takes under Synapse's default message rate limit.

    python3 tests/bench/bench_matrix_hand.py [--rate-limit 0.2,10] [--skip-match] [--skip-hand]

Two figures, both against tests/matrix/fake_homeserver.py with the real bot (`cardroom run`,
CARDROOM_BIN or build/cardroom) and people who log in and talk through the Client-Server API
(tests/matrix/harness.py):

  1. Events per hand: the whole match script (tests/matrix/match-seed1.txt, four people, 14
     hands) without a rate limit; every event the bot sends into the game room and the four
     direct chats (its room state aside), divided by the hands dealt.

  2. Seconds per hand under the rate limit (--rate-limit, default Synapse's stock rc_message:
     0.2 events per second, bursts of 10; the fake does Synapse's arithmetic): the room is
     made and the limit switched on before the first line, then the script is played up to
     the end of hand 1 by people who answer at once, but only once they can see everything the
     bot says before their line (the console's words for the script so far, room and direct
     chats, without the private turn notices Matrix players do not get unless they ask).
     Printed: the seconds from `!start` to the last line of hand 1 being shown; for every line
     of the hand, the seconds until the bot's whole answer to it is shown (p50, p90, max); the
     429 answers the bot got; the bot's events in the hand.

Run it with two binaries to compare (CARDROOM_BIN=/path/to/old/cardroom). Exit status 0 when it
ran, 1 when it could not (the bot or the fake did not start, a wait timed out). Only the Python
standard library is used.
"""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "matrix"))

from harness import (BOT_ID, BOT_SEND_REGEX, PLAYERS, Harness, bot_binary,  # noqa: E402
                     matrix_reference, read_script)

HAND_WAIT = 3600          # seconds a line's answer may take under the limit before giving up


class Run:
    """What harness.Harness needs of a test case, outside unittest."""

    def __init__(self):
        self.cleanups = []

    def addCleanup(self, function, *args):
        self.cleanups.append((function, args))

    @staticmethod
    def fail(message):
        raise RuntimeError(message)

    def close(self):
        while self.cleanups:
            function, args = self.cleanups.pop()
            function(*args)


def bot_event_count(h, rooms):
    """Events the bot sent (not its room state) into rooms."""
    return sum(1 for room in rooms for e in h.server.events(room)
               if e["sender"] == BOT_ID and "state_key" not in e)


def rooms_of(h, room):
    return [room] + [dm for user in PLAYERS for dm in h.dm_rooms(user)]


def start(h):
    h.make_people()
    room = h.game_room()
    h.start_bot(h.write_config())
    h.wait_bot_membership(room)
    return room


def events_per_hand():
    run = Run()
    try:
        h = Harness(run)
        lines = read_script()
        expected = matrix_reference(lines)
        hands = sum(1 for line in expected.room if line.startswith("Hand ") and " — dealer " in line)
        room = start(h)
        began = time.monotonic()
        h.play(lines, room, timeout=120)
        h.assert_transcript(room, expected, timeout=120)
        took = time.monotonic() - began
        in_room = bot_event_count(h, [room])
        in_dms = bot_event_count(h, rooms_of(h, room)[1:])
        print(f"match script: {len(lines)} lines, {hands} hands, {took:.1f} s without a rate limit")
        print(f"matrix events per hand: {(in_room + in_dms) / hands:.1f} "
              f"(game room {in_room / hands:.1f}, direct chats {in_dms / hands:.1f}; "
              f"{in_room + in_dms} events in all)")
        h.stop_bot()
    finally:
        run.close()


def hand_one_references(script):
    """The lines of hand 1 (up to the one after which the console shows hand 2's header) and,
    for every k, what the bot says on Matrix after the first k of them (the console's words,
    with Matrix's default of no private turn notices): what a player can expect to see before
    saying line k+1. One console run per prefix."""
    refs = [matrix_reference([])]
    for k in range(1, len(script) + 1):
        refs.append(matrix_reference(script[:k]))
        if any(line.startswith("Hand 2 — dealer") for line in refs[-1].room):
            return script[:k], refs
    raise RuntimeError("the match script never reaches hand 2")


def seen_enough(actual, want):
    return len(actual.room) >= len(want.room) and all(
        len(actual.private.get(u, [])) >= len(v) for u, v in want.private.items())


def hand_under_limit(rate):
    per_second, burst = (float(x) for x in rate.split(","))
    lines, refs = hand_one_references(read_script())
    start_at = next(i for i, line in enumerate(lines) if line.text == "!start")
    run = Run()
    try:
        h = Harness(run)
        room = start(h)
        h.server.ok("POST", "/_fake/ratelimit", {"per_second": per_second, "burst_count": int(burst)})
        h.reset_log()
        waits = []
        began = None
        for i, line in enumerate(lines):
            target = h.dm_room(line.user) if line.private else room
            if i == start_at:
                began = time.monotonic()
            sent = time.monotonic()
            h.say(line.user, target, line.text)
            h.wait_for(lambda: seen_enough(h.transcript(room), refs[i + 1]), HAND_WAIT,
                       f"the bot's answer to line {line.number} ({line})", interval=0.2)
            waits.append(time.monotonic() - sent)
        took = time.monotonic() - began
        limited = [e for e in h.requests("PUT", BOT_SEND_REGEX) if e["status"] == 429]
        hand = sorted(waits[start_at:])
        events = bot_event_count(h, rooms_of(h, room))
        print(f"rate limit {per_second:g}/s, bursts of {int(burst)}: hand 1 ({len(lines) - start_at} lines from "
              f"!start) took {took:.1f} s")
        print(f"  a line's whole answer shown after: p50 {hand[len(hand) // 2]:.1f} s, "
              f"p90 {hand[(len(hand) * 9) // 10]:.1f} s, max {hand[-1]:.1f} s")
        print(f"  bot events {events} (from the first line), 429 answers to the bot {len(limited)}")
        h.stop_bot()
    finally:
        run.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate-limit", default="0.2,10", metavar="PER_SECOND,BURST")
    parser.add_argument("--skip-match", action="store_true", help="no events-per-hand figure")
    parser.add_argument("--skip-hand", action="store_true", help="no rate-limited hand")
    args = parser.parse_args()
    print(f"bot: {bot_binary()}")
    try:
        if not args.skip_match:
            events_per_hand()
        if not args.skip_hand:
            hand_under_limit(args.rate_limit)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"bench_matrix_hand: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
