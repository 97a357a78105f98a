"""Benchmark: the IRC adapter under load on a real server (tests/irc/ircservers.py).

inspircd is set to throw out any client that keeps going over 100 commands a second (threshold 150,
commandrate 100/s, no fake lag), and the bot's token bucket is set just under it (burst 10, one
line every 11 ms). 50 channels each hold a table of four computer players, which talk far more
than the bucket lets out, and 10 people (5 channels each) ask the bot for `!last` and `!table`
every half second, so commands keep coming in while the bot is busy sending.

Printed: lines per second the bot pushed (counted by a listener in every channel and by the
people's private messages) against the limit, whether the server threw the bot out, and the
bot's own time per incoming command line (p50, p99: parsing the line, plus its share of the
store transaction of the read it came in), as the bot reports it when stopped.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "irc"))

from ircservers import Client, InspircdServer  # noqa: E402

CHANNELS = 50
PEOPLE = 10
SECONDS = float(os.environ.get("BENCH_IRC_SECONDS", "60"))
LIMIT = 100  # lines per second the server allows
BOT_INTERVAL_MS = 11


def main():
    binary = os.environ.get("CARDROOM_BIN") or os.path.join(REPO, "build", "cardroom")
    server = InspircdServer(tls=False, services=False, threshold=150, commandrate=LIMIT * 1000,
                            fakelag=False, recvq=65536, softsendq=1 << 20, hardsendq=1 << 24).start()
    work = tempfile.mkdtemp(prefix="cardroom-bench-irc-")
    chans = ["#b%d" % i for i in range(CHANNELS)]
    with open(os.path.join(work, "bench.ini"), "w") as f:
        f.write("[bot]\nthreads = 2\nrate_commands = 0\n[timers]\nremind_after = 0\nidle_takeover = 0\ntable_idle_close = 0\n"
                "bot_delay_ms = 0\n[irc]\nserver = 127.0.0.1\nport = %d\ntls = false\nnick = cardroom\n"
                "flood_burst = 10\nflood_interval_ms = %d\n"
                % (server.port, BOT_INTERVAL_MS))
    env = dict(os.environ, CARDROOM_IRC_CHANNELS=" ".join(chans))  # longer than an INI line may be
    log = open(os.path.join(work, "bot.log"), "wb")
    bot = subprocess.Popen([binary, "run", "--config", os.path.join(work, "bench.ini"),
                            "--db", os.path.join(work, "bench.db"), "--seed", "7"],
                           stdout=log, stderr=log, cwd=work, env=env)
    try:
        listener = Client(server.host, server.port, "listener", timeout=30)
        for c in chans:
            listener.join(c)
            time.sleep(0.1)
        listener.wait_nick_in_channel(chans[-1], "cardroom", timeout=60)
        # Open the tables (paced: the listener obeys the same limit).
        for c in chans:
            for cmd in ("!new 304", "!bot", "!bot", "!bot", "!bot", "!start"):
                listener.privmsg(c, cmd)
                time.sleep(0.02)
        people = []
        for i in range(PEOPLE):
            p = Client(server.host, server.port, "p%d" % i, timeout=30)
            mine = chans[i * CHANNELS // PEOPLE:(i + 1) * CHANNELS // PEOPLE]
            for c in mine:
                p.join(c)
                time.sleep(0.1)
            people.append((p, mine))
        stop = threading.Event()

        def ask(p, mine):
            k = 0
            while not stop.is_set():
                c = mine[k % len(mine)]
                p.privmsg(c, "!last" if k % 2 else "!table")
                k += 1
                stop.wait(0.5)

        threads = [threading.Thread(target=ask, args=pm, daemon=True) for pm in people]
        for t in threads:
            t.start()
        def count():
            n = sum(1 for m in listener.received if m.nick == "cardroom" and m.command in ("NOTICE", "PRIVMSG"))
            n += sum(1 for p, _ in people for m in p.received
                     if m.nick == "cardroom" and m.command == "PRIVMSG" and not m.params[0].startswith("#"))
            return n
        time.sleep(5)  # warm up: the bucket is full and every table is playing
        n0, t0 = count(), time.monotonic()
        time.sleep(SECONDS)
        n1, t1 = count(), time.monotonic()
        stop.set()
        thrown = [m for m in listener.received if m.command == "QUIT" and m.nick == "cardroom"]
        rate = (n1 - n0) / (t1 - t0)
    finally:
        bot.send_signal(signal.SIGTERM)
        try:
            bot.wait(30)
        except subprocess.TimeoutExpired:
            bot.kill()
        log.close()
        server.cleanup(kill=True)
    text = open(os.path.join(work, "bot.log"), encoding="utf-8", errors="replace").read()
    m = re.search(r"(\d+) lines in, (\d+) lines out \((\d+) messages\); time per command line p50 (\d+) us, "
                  r"p99 (\d+) us \((\d+) samples\)", text)
    print("irc: %d channels with active tables, %d people asking twice a second; server limit %d lines/s "
          "(inspircd: more and the bot is thrown out), bot bucket: burst 10, one line per %d ms"
          % (CHANNELS, PEOPLE, LIMIT, BOT_INTERVAL_MS))
    print("irc: lines pushed: %.1f/s over %.0f s (%.0f%% of the limit); thrown out by the server: %s"
          % (rate, t1 - t0, 100.0 * rate / LIMIT, "YES: " + thrown[0].params[-1] if thrown else "no"))
    if m:
        print("irc: bot's own time per incoming command line: p50 %s us, p99 %s us (%s commands; %s lines in, "
              "%s lines out in all)" % (m.group(4), m.group(5), m.group(6), m.group(1), m.group(2)))
    else:
        print("irc: the bot did not report its figures; log tail:\n" + text[-2000:])
        return 1
    return 1 if thrown else 0


if __name__ == "__main__":
    sys.exit(main())
