"""Benchmark: computer players at the pace of an IRC network (tests/irc/ircservers.py, ngircd).

The bot sends at most one line every 250 ms after a burst of 5 ([irc] flood control), so 4 lines
a second. Four channels each hold a table of four computer players, which could play far faster
than that; in each channel a person who does not play asks the bot something (`!leave`, answered
"pN: you are not seated at this table.") every 3 seconds.

Printed, after 10 s of play: how long each answer took to come back (p50, p90, the longest; an
answer missing after 60 s counts as 60 s), the lines the bot sent per second against its limit,
and the moves per second the channels were shown. Without back-pressure the tables queue thousands of lines
in seconds and an answer waits behind all of them; with it the queue stays at a few seconds.
CARDROOM_BIN picks the binary, so two builds can be compared on the same machine.
"""

import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "irc"))

from ircservers import Client, NgircdServer  # noqa: E402
from test_irc_bot import Bot, bot_binary  # noqa: E402  (one `cardroom run`: its config, database, log)

CHANNELS = 4
SECONDS = float(os.environ.get("BENCH_PACE_SECONDS", "60"))
INTERVAL_MS = 250
ASK_EVERY = 3.0
WARM_UP = 10.0
ANSWER_TIMEOUT = 60.0


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    binary = bot_binary()
    server = NgircdServer(tls=False).start()
    chans = ["#p%d" % i for i in range(CHANNELS)]
    bot = Bot(tempfile.mkdtemp(prefix="cardroom-bench-pace-"),
              {"server": "127.0.0.1", "port": server.port, "tls": "false", "nick": "cardroom",
               "channels": " ".join(chans), "flood_burst": 5, "flood_interval_ms": INTERVAL_MS}).start()
    asked = []  # (channel index, time asked, time answered or None)
    try:
        people = []
        for i, c in enumerate(chans):
            p = Client(server.host, server.port, "p%d" % i, timeout=30)
            p.join(c)
            p.wait_nick_in_channel(c, "cardroom", timeout=60)
            people.append(p)
        for p, c in zip(people, chans):
            for cmd in ("!new 304", "!bot", "!bot", "!bot", "!bot", "!start"):
                p.privmsg(c, cmd)
        time.sleep(WARM_UP)  # the tables' openings are sent and every table is playing
        stop = threading.Event()

        def ask(i):
            p, c = people[i], chans[i]
            want = "p%d: you are not seated" % i
            while not stop.is_set():
                start = len(p.received)
                at = time.monotonic()
                p.privmsg(c, "!leave")
                entry = [i, at, None]
                asked.append(entry)
                try:
                    m = p.read_until(lambda m: m.nick == "cardroom" and m.command == "NOTICE"
                                     and want in m.params[-1], timeout=ANSWER_TIMEOUT, start=start)
                    entry[2] = m.time
                except Exception:
                    return  # not answered within ANSWER_TIMEOUT
                stop.wait(max(0.0, at + ASK_EVERY - time.monotonic()))

        def counts():
            notices = [m for p in people for m in p.received if m.nick == "cardroom" and m.command == "NOTICE"]
            moves = [m for m in notices if " plays " in m.params[-1] or " passes" in m.params[-1]
                     or " bids " in m.params[-1]]
            return len(notices), len(moves)

        threads = [threading.Thread(target=ask, args=(i,), daemon=True) for i in range(CHANNELS)]
        lines0, moves0 = counts()
        for t in threads:
            t.start()
        stop.wait(SECONDS)
        lines1, moves1 = counts()
        stop.set()
        for t in threads:
            t.join(ANSWER_TIMEOUT + 5)
    finally:
        bot.stop()
        server.cleanup(kill=True)
    waits = [(got if got is not None else at + ANSWER_TIMEOUT) - at for _, at, got in asked]
    missing = sum(1 for _, _, got in asked if got is None)
    limit = 1000.0 / INTERVAL_MS
    print("pace: %d tables of four computer players on ngircd, the bot at most %.0f lines/s; a person in "
          "each channel asks every %.0f s, for %.0f s after %.0f s of play (%s)"
          % (CHANNELS, limit, ASK_EVERY, SECONDS, WARM_UP, binary))
    print("pace: answer waits: p50 %.1f s, p90 %.1f s, longest %.1f s (%d asked; not answered within %.0f s: %d)"
          % (quantile(waits, 0.5), quantile(waits, 0.9), max(waits), len(waits), ANSWER_TIMEOUT, missing))
    print("pace: lines the channels got: %.1f/s (limit %.0f/s); moves shown: %.1f/s"
          % ((lines1 - lines0) / SECONDS, limit, (moves1 - moves0) / SECONDS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
