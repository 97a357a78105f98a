#!/usr/bin/env python3
"""Soak benchmark of the whole bot on Matrix: many hands, memory that stays flat, and a
database that stops growing.

    /usr/bin/python3 tests/bench/bench_soak.py [--hands 10000] [--tables 50] [--people 5]
        [--tokens 2] [--keep 30] [--sample 1000] [--seed 1] [--keep-dir]

What it does:
  1. Starts tests/matrix/fake_homeserver.py (without --state, with TCP_NODELAY as
     bench_matrix.py starts it) and `cardroom run` (CARDROOM_BIN, default build/cardroom; a
     sanitizer build works too) with [bot] keep_finished = --keep seconds, timers off, direct
     chats encrypted.
  2. --tables rooms, each with a table. In --people of them a person sits at South with three
     computer players: a scripted client (tests/matrix/olm_client.py on python3-olm) with its
     own device keys, which joins the encrypted direct chat the bot makes, decrypts its cards
     there and plays when the bot's turn prompt in the room mentions it: "!pass" in the bidding,
     and in the play a card it holds as a bare card in an encrypted private message (of the suit
     led if it has one; after a refusal the next, or one the refusal names). The other rooms hold four computer players,
     opened by a croupier. Every match is --tokens tokens a team; when one ends, the room's
     owner opens the next.
  3. Runs until --hands hands are finished. Hands are counted from the bot's database (read
     only, once a second: the deals of each table, read before pruning drops them).
  4. Every --sample hands it prints the bot's resident memory (VmRSS), the database's size
     (the file and its WAL) per finished hand, the rows left in the journal, hand seeds and
     outbox, and hands per second. Then SIGTERM; the bot must exit 0 (under AddressSanitizer
     that includes LeakSanitizer's check: any report is printed and counted).

The computer players are paced (--delay, [timers] bot_delay_ms) so that the homeserver takes
the bot's messages as fast as they come: the "unsent" column shows the outbox's backlog.

Verdicts printed: RSS growth from the second sample to the last (FLAT within 10 %, else
GROWING); the database's size in the second half against its size at half time (BOUNDED
within 25 %, else GROWING), and what a finished hand adds before pruning; the sanitizer's
reports. Exit status: 0 when it ran (the verdicts
are figures), 1 when it could not run (setup failed, the bot died, no progress for 120 s).

Environment: CARDROOM_BIN. The Python 3.11 standard library and python3-olm only.
"""

import argparse
import itertools
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "matrix"))

from bench_matrix import (BOT_ID, BOT_PASSWORD, FAKE_SERVER, FAKE_WRAPPER, SERVER_NAME,  # noqa: E402
                          USER_PASSWORD, V3, Client, SetupError, die_with_parent, log, q, uid)
from olm_client import OlmClient  # noqa: E402

SUITS = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}
CARD_GROUP_RE = re.compile(r"([♠♥♦♣])((?:\s+(?:10|[7-9JQKA]))+)")
CARD_RE = re.compile(r"(10|[7-9JQKA])([♠♥♦♣])")
PLAYED_RE = re.compile(r"plays (10|[7-9JQKA])([♠♥♦♣])")
FACE_DOWN_RE = re.compile(r"play (10|[7-9JQKA])([♠♥♦♣]) face down")
TO_PLAY_RE = re.compile(r"\bto (lead|play)\b")
LED_RE = re.compile(r"([♠♥♦♣]) led")
ALL_CARDS = [r + s for s in "SHDC" for r in ("7", "8", "9", "10", "J", "Q", "K", "A")]
STALL_S = 120
SANITIZER_RE = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:")


def cards_of(text):
    """The cards of the hand a private message shows ("... your hand: ♠ J 9 · ♥ A 10 · ..."; the
    whole text when it names no hand), in its order."""
    hand = text.lower().rfind("hand:")
    text = text[hand:] if hand >= 0 else text
    return [rank + SUITS[m.group(1)] for m in CARD_GROUP_RE.finditer(text) for rank in m.group(2).split()]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Person(threading.Thread):
    """A person at one table: syncs, joins the bot's direct chat and decrypts its cards there, and
    when the turn prompt in the room mentions it, passes in the bidding or plays one card: of the
    suit led if it holds one, else any. A refusal (which says which cards would do, when it
    can) makes it try the next; its own play in the room, or a card going face down, ends the
    turn."""

    def __init__(self, bench, name, room_id):
        super().__init__(daemon=True)
        self.bench, self.name, self.room = bench, name, room_id
        self.client = None
        self.http = Client(bench.port)
        self.dm = None
        self.hand = []           # the cards it holds, as far as it knows
        self.hint = []           # the cards a refusal named
        self.led = None          # the suit led in the trick it must play to
        self.turn = False        # a play of its own is due
        self.tried = set()
        self.error = None
        self.moves = 0
        self.ready = threading.Event()

    def run(self):
        try:
            c = self.client = OlmClient(f"http://127.0.0.1:{self.bench.port}", self.name, USER_PASSWORD,
                                        self.name.upper())
            c.upload_keys(one_time=50)
            cached = {}
            real_query = c.query_devices

            def query_once(users):          # the bot's one device never changes here
                key = tuple(sorted(users))
                if key not in cached:
                    cached[key] = real_query(users)
                return cached[key]
            c.query_devices = query_once
            self.ready.set()
            while not self.bench.stopping:
                c.sync(timeout_ms=5000, limit=1000)
                for room_id in c.accept_invites():
                    self.dm = room_id
                self.read()
                if c.otk_counts.get("signed_curve25519", 50) < 10:
                    c.upload_keys(one_time=40, fallback=False, device_keys=False)
        except Exception as exc:  # noqa: BLE001 - reported by the bench
            self.error = exc
            self.ready.set()

    def played(self, card):
        if card in self.hand:
            self.hand.remove(card)
        self.turn = False

    def read(self):
        c = self.client
        prompt, refused = None, False
        for room_id in list(c.timeline):
            events, c.timeline[room_id] = c.timeline[room_id], []
            for e in events:
                if e.get("sender") != BOT_ID:
                    continue
                if room_id == self.room and e.get("type") == "m.room.message":
                    body = e["content"].get("body", "")
                    for line in body.splitlines():
                        mine = PLAYED_RE.search(line) if uid(self.name) in line.split(" plays ")[0] else None
                        if mine:
                            self.played(mine.group(1) + SUITS[mine.group(2)])
                    mentions = (e["content"].get("m.mentions") or {}).get("user_ids") or []
                    prompt = body.splitlines()[-1] if uid(self.name) in mentions else None
                elif e.get("type") == "m.room.encrypted":
                    self.dm = self.dm or room_id
                    d = c.try_decrypt(e, room_id)
                    text = d.content.get("body", "") if d else ""
                    down = FACE_DOWN_RE.search(text)
                    if "hand:" in text.lower():
                        self.hand = cards_of(text)
                    elif down:
                        self.played(down.group(1) + SUITS[down.group(2)])
                    elif self.turn:
                        refused = True
                        held = text.split("you hold", 1)
                        self.hint = [r + SUITS[s] for r, s in CARD_RE.findall(held[1])] if len(held) == 2 else []
        if prompt is not None:
            self.start_turn(prompt)
        elif self.turn and refused:
            self.try_card()

    def start_turn(self, prompt):
        self.moves += 1
        if not TO_PLAY_RE.search(prompt):
            self.bench.say(self.name, self.room, "!pass", self.http)
            return
        led = LED_RE.search(prompt)
        self.led = SUITS[led.group(1)] if led else None
        self.turn, self.tried, self.hint = True, set(), []
        self.try_card()

    def try_card(self):
        following = [x for x in self.hand if self.led and x.endswith(self.led)]
        for card in self.hint + following + self.hand + ALL_CARDS:
            if card not in self.tried and self.dm:
                self.tried.add(card)
                self.client.send_encrypted(self.dm, card)
                return


class Soak:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="cardroom-soak-")
        self.fake = self.bot = None
        self.stopping = False
        self.tokens = {}            # user name -> access token
        self.rooms = {}             # room id -> owner's name
        self.people = []
        self.opening = {}           # room id -> its tables (the store's rows) when the next was asked for
        self.room_tables = {}       # room id -> its tables so far
        self.deals = {}             # table id -> highest hand number seen
        self.open_tables = set()
        self.samples = []
        self.txn = itertools.count(1)   # txn ids of what people say (next() is atomic in CPython)

    # ---- processes ----

    def start_fake(self):
        self.fake_err = open(os.path.join(self.tmp, "fake.stderr"), "w")
        command = [sys.executable, "-c", FAKE_WRAPPER, os.path.dirname(FAKE_SERVER), "--port", "0",
                   "--server-name", SERVER_NAME]
        self.fake = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.fake_err, text=True,
                                     preexec_fn=die_with_parent)
        m = re.match(r"^LISTENING (\d+)$", self.fake.stdout.readline().strip())
        if not m:
            raise SetupError("the fake homeserver did not start")
        self.port = int(m.group(1))
        self.control = Client(self.port)

    def start_bot(self):
        binary = os.environ.get("CARDROOM_BIN") or os.path.join(REPO, "build", "cardroom")
        self.db = os.path.join(self.tmp, "cardroom.db")
        config = os.path.join(self.tmp, "cardroom.ini")
        with open(config, "w") as f:
            # one croupier opens most tables, as fast as it can: no rate limit or table cap
            f.write(f"[bot]\nthreads = 2\nkeep_finished = {self.args.keep}\nrate_commands = 0\ntables_per_user = 0\n"
                    "[timers]\nremind_after = 0\nidle_takeover = 0\ntable_idle_close = 0\n"
                    f"bot_delay_ms = {self.args.delay}\n"
                    f"[matrix]\nhomeserver = http://127.0.0.1:{self.port}\nuser = {BOT_ID}\n"
                    "invites = *\nsync_timeout = 30\nencrypt_direct_chats = true\n")
        self.bot_err = os.path.join(self.tmp, "bot.stderr")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CARDROOM_")}
        env["CARDROOM_MATRIX_PASSWORD"] = BOT_PASSWORD
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        with open(self.bot_err, "w") as err:
            self.bot = subprocess.Popen([binary, "run", "--config", config, "--db", self.db, "--seed",
                                         str(self.args.seed)], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=self.tmp,
                                        preexec_fn=die_with_parent)

    def check_bot(self):
        if self.bot.poll() is not None:
            raise SetupError(f"the bot exited with status {self.bot.returncode}:\n{self.tail(self.bot_err)}")
        for p in self.people:
            if p.error:
                raise SetupError(f"{p.name}'s client failed: {p.error!r}")

    @staticmethod
    def tail(path, lines=30):
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    # ---- people and rooms ----

    def user(self, name):
        self.control.ok("POST", "/_fake/users", {"user_id": name, "password": USER_PASSWORD})
        self.tokens[name] = self.control.ok("POST", V3 + "/login", {
            "type": "m.login.password", "identifier": {"type": "m.id.user", "user": name},
            "password": USER_PASSWORD})["access_token"]

    def say(self, name, room_id, text, client=None):
        (client or self.control).ok("PUT", f"{V3}/rooms/{q(room_id)}/send/m.room.message/s{next(self.txn)}",
                                    {"msgtype": "m.text", "body": text}, self.tokens[name])

    def open_table(self, room_id):
        owner = self.rooms[room_id]
        person = owner != "croupier"
        lines = ["!new 304"] + (["!join", "!bot", "!bot", "!bot"] if person else ["!bot"] * 4)
        for text in lines + [f"!set start_tokens {self.args.tokens}", "!start"]:
            self.say(owner, room_id, text)
        self.opening[room_id] = self.room_tables.get(room_id, 0)

    def setup(self):
        self.control.ok("POST", "/_fake/users", {"user_id": "cardroom", "password": BOT_PASSWORD})
        self.user("croupier")
        for i in range(self.args.tables):
            person = i < self.args.people
            owner = f"player{i + 1}" if person else "croupier"
            if person:
                self.user(owner)
            room_id = self.control.ok("POST", V3 + "/createRoom", {
                "preset": "private_chat", "name": f"Soak {i + 1}", "invite": [BOT_ID]},
                self.tokens[owner])["room_id"]
            self.rooms[room_id] = owner
            if person:
                self.people.append(Person(self, owner, room_id))
        for p in self.people:
            p.start()
            p.ready.wait(60)
        self.start_bot()
        deadline = time.monotonic() + 120
        while True:
            self.check_bot()
            listing = self.control.ok("GET", "/_fake/rooms")["rooms"]
            if all(listing[r]["members"].get(BOT_ID) == "join" for r in self.rooms):
                break
            if time.monotonic() > deadline:
                raise SetupError("the bot did not join every room")
            time.sleep(0.2)
        for room_id in self.rooms:
            self.open_table(room_id)

    # ---- the run ----

    def read_db(self):
        """Deals per table, open tables and row counts, from the bot's database."""
        db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            for table, hand in db.execute("SELECT table_id, max(hand_no) FROM hands GROUP BY table_id"):
                self.deals[table] = max(hand, self.deals.get(table, 0))
            self.open_tables = {t for (t,) in db.execute("SELECT id FROM tables WHERE closed IS NULL")}
            rooms = db.execute("SELECT room, count(*), sum(closed IS NULL) FROM tables GROUP BY room").fetchall()
            rows = [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("journal", "hands", "outbox")]
            rows.append(db.execute("SELECT count(*) FROM outbox WHERE sent = 0").fetchone()[0])
        finally:
            db.close()
        playing = set()
        for room_id, count, still_open in rooms:
            self.room_tables[room_id] = count
            if still_open:
                playing.add(room_id)
        for room_id in self.rooms:  # a table asked for is there once the room has one more (it may be over already)
            if room_id in self.opening and self.room_tables.get(room_id, 0) > self.opening[room_id]:
                del self.opening[room_id]
            if room_id not in playing and room_id not in self.opening:
                self.open_table(room_id)
        return rows

    def finished(self):
        """Hands dealt and over: every deal but the last of each open table."""
        return sum(n - (t in self.open_tables) for t, n in self.deals.items())

    def db_bytes(self):
        return sum(os.path.getsize(self.db + tail) for tail in ("", "-wal") if os.path.exists(self.db + tail))

    def run(self):
        a = self.args
        self.start_fake()
        self.setup()
        log(f"{a.tables} tables open ({a.people} with a person); playing {a.hands} hands")
        t0 = time.monotonic()
        self.start_size = self.db_bytes()
        next_sample, last_change, last_done = a.sample, t0, -1
        print(f"soak: {a.hands} hands through the bot on Matrix: {a.tables} tables, {a.people} of them with a "
              f"person whose cards go to an encrypted direct chat; {a.tokens} tokens a team per match; "
              f"keep_finished = {a.keep} s")
        print(f"{'hands':>7} {'seconds':>8} {'hands/s':>8} {'RSS KiB':>9} {'DB KiB':>8} {'DB B/hand':>10} "
              f"{'journal':>8} {'seeds':>6} {'outbox':>7} {'unsent':>7}")
        while True:
            self.check_bot()
            rows = self.read_db()
            done = self.finished()
            now = time.monotonic()
            if done != last_done:
                last_done, last_change = done, now
            elif now - last_change > STALL_S:
                raise SetupError(f"no hand finished for {STALL_S} s (at {done}); the bot's stderr ends:\n"
                                 f"{self.tail(self.bot_err)}")
            if done >= next_sample:
                size = self.db_bytes()
                sample = (done, now - t0, rss_kib(self.bot.pid), size, rows)
                self.samples.append(sample)
                print(f"{done:>7} {now - t0:>8.1f} {done / (now - t0):>8.1f} {sample[2]:>9} {size // 1024:>8} "
                      f"{size / done:>10.0f} {rows[0]:>8} {rows[1]:>6} {rows[2]:>7} {rows[3]:>7}", flush=True)
                next_sample += a.sample
            if done >= a.hands:
                break
            time.sleep(1.0)
        self.elapsed = time.monotonic() - t0
        self.stopping = True
        self.bot.send_signal(signal.SIGTERM)
        try:
            self.rc = self.bot.wait(120)
        except subprocess.TimeoutExpired:
            self.bot.kill()
            self.rc = "killed: no exit within 120 s of SIGTERM"
        return self.report()

    def report(self):
        a, s = self.args, self.samples
        moves = sum(p.moves for p in self.people)
        print(f"{s[-1][0]} hands in {self.elapsed:.0f} s: {s[-1][0] / self.elapsed:.1f} hands/s; the people "
              f"took {moves} turns")
        if len(s) >= 3:
            base, last = s[1][2], s[-1][2]
            peak = max(x[2] for x in s[1:])
            growth = (last - base) / base * 100
            print(f"RSS: {s[0][2]} KiB after {s[0][0]} hands, {base} KiB after {s[1][0]}, {last} KiB at the end "
                  f"(peak after warm-up {peak} KiB): {growth:+.1f} % from the second sample: "
                  + ("FLAT" if abs(growth) <= 10 and (peak - base) / base <= 0.10 else "GROWING"))
            half = s[len(s) // 2 - 1]
            later = max(x[3] for x in s[len(s) // 2:])
            print(f"DB: {self.start_size // 1024} KiB before the first hand; {(s[0][3] - self.start_size) / s[0][0]:.0f} "
                  f"bytes more per finished hand over the first {s[0][0]} (before pruning dropped much); "
                  f"{half[3] // 1024} KiB at {half[0]} hands, at most {later // 1024} KiB after that, "
                  f"{s[-1][3] // 1024} KiB at the end ({s[-1][3] / s[-1][0]:.0f} bytes per finished hand): "
                  + ("BOUNDED" if later <= half[3] * 1.25 else "GROWING")
                  + (f"; {s[-1][4][3]} messages were still waiting to be sent" if s[-1][4][3] > 1000 else ""))
        with open(self.bot_err, errors="replace") as f:
            err = f.read()
        reports = SANITIZER_RE.findall(err)
        leaks = len(re.findall(r"^(Direct|Indirect) leak of", err, re.M))
        print(f"bot exit status after SIGTERM: {self.rc}; sanitizer reports: {len(reports)}, leaks: {leaks}")
        if reports or leaks:
            print(self.tail(self.bot_err, 60))
        problems = [line for line in err.splitlines() if line.startswith(("cardroom: error", "cardroom: warn"))]
        if problems:
            print(f"bot log: {len(problems)} warning/error lines, e.g.:\n  " + "\n  ".join(problems[:10]))
        return 0

    def cleanup(self):
        self.stopping = True
        for proc in (self.bot, self.fake):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        if self.fake is not None:
            self.fake.stdout.close()
        if self.args.keep_dir:
            log(f"kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hands", type=int, default=10000, help="finished hands to play")
    parser.add_argument("--tables", type=int, default=50, help="rooms, one table each")
    parser.add_argument("--people", type=int, default=5, help="tables with a person (encrypted direct chat)")
    parser.add_argument("--tokens", type=int, default=2, help="start_tokens of every match")
    parser.add_argument("--keep", type=int, default=30, help="[bot] keep_finished, seconds")
    parser.add_argument("--sample", type=int, default=1000, help="hands between two samples")
    parser.add_argument("--seed", type=int, default=1, help="the bot's --seed")
    parser.add_argument("--delay", type=int, default=50,
                        help="[timers] bot_delay_ms: paces the computer players so that the homeserver "
                        "takes the messages as fast as they come")
    parser.add_argument("--keep-dir", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.people > args.tables or min(args.hands, args.tables, args.sample, args.tokens) < 1 or args.keep < 0:
        parser.error("--hands, --tables, --sample and --tokens must be positive, --people at most --tables")
    soak = Soak(args)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        return soak.run()
    except SetupError as exc:
        print(f"soak: failed: {exc}")
        return 1
    except KeyboardInterrupt:
        print("soak: interrupted")
        return 1
    finally:
        soak.cleanup()


if __name__ == "__main__":
    sys.exit(main())
