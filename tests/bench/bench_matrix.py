#!/usr/bin/env python3
"""Benchmark of cardroom's Matrix adapter against the fake homeserver (no added latency).

    python3 tests/bench/bench_matrix.py [--rooms 200] [--seconds 20] [--seed 1] [--threads 8]
        [--rate N] [--proxy] [--db-dir DIR] [--fake-as-is] [--keep]

What it does (about 30 s with the defaults on 2 vCPUs):
  1. Starts tests/matrix/fake_homeserver.py (without --state) and `cardroom run` in a temporary
     directory (the binary is copied there first, so a rebuild during the run changes nothing).
     The fake is started with TCP_NODELAY on its connections: as it is, it writes an answer's
     head and body in two send()s, and with Nagle's algorithm on the body waits for the
     client's delayed ACK, ~40 ms per answer on a keep-alive connection (--fake-as-is keeps that).
  2. Setup (not measured): users user1..userN are made through /_fake/users and log in through
     the real /login; each creates a room and invites the bot; once the bot has joined every
     room, each user opens a table there: !new 304, !join, !bot, !bot, !bot, !start.  The three
     computer players then bid until it is the human's turn, and the table waits: it is active.
  3. The bot is stopped (SIGTERM) and started again on the same database, so that its own
     figures (the report line it prints when it stops) cover the measured phase only and not
     the setup.  It restores the tables from its journal and resumes from its sync token.
  4. Measured phase (--seconds): client threads, each with one keep-alive connection, send
     commands that the bot answers with one m.notice each (!table, !last, !help bid, !rules,
     !standings) to their share of the rooms, round-robin, one request in flight per thread:
     as fast as the fake homeserver takes them, or --rate commands per second in all.  Sync
     answers then carry events from many rooms.
  5. Then it waits for the bot's last replies (the "drain": until nothing new for 2 s), stops
     the bot with SIGTERM and parses its report line (and the core's line with its longest
     core_batch/core_tick call: the longest the loop was kept from the network):
       cardroom: info: matrix: N sync answers, M events; sync answer to first send:
           p50 X ms, p99 Y ms (K samples)
     That latency is the bot's own: from a sync answer having been read to the first PUT of
     the replies it caused leaving (adapters/matrix/matrix.c, report()).  Then every room's
     events are read back (/_fake/rooms/{id}/events) to check that every command got a reply.

Figures printed: commands sent per second; bot messages (all of them, and those stored within
the measured window, per second: the end-to-end rate) and how many fewer they are than the
commands (the core sends the replies of one transaction to a room as one message, so a backlog
makes fewer, longer messages); what the bot's database holds once it stopped (messages not
sent, events taken in and not handled: 0 and 0 unless something was left over); the end-to-end
time from a command being stored to the bot message paired with it in order being stored (the
fake's origin_server_ts, 1 ms steps); the bot's sync answers and events (its "events" count is every timeline event it read,
its own replies included) per second from the start of the window to the last reply; the bot's
latency; CPU use of the bot, the fake, the bench's clients and everything else on the machine
(a warning when other processes were busy).  With --proxy, a TCP proxy between the bot and the
fake also times the bot from outside: from the last byte of each sync answer that carried
people's messages leaving for the bot to the first send request into one of those rooms.

Exit status: 0 when the benchmark ran ("TARGET MISSED" is printed if the bot's p50 is over
1 ms), 1 when it could not run (fake or bot did not start, rooms not joined, tables not opened,
the bot died).

Environment: CARDROOM_BIN (default <repo>/build/cardroom).  Only the Python 3.11 standard
library is used.
"""

import argparse
import bisect
import collections
import concurrent.futures
import ctypes
import http.client
import json
import os
import random
import re
import select
import selectors
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FAKE_SERVER = os.path.join(REPO, "tests", "matrix", "fake_homeserver.py")
SERVER_NAME = "example.org"
BOT_ID = f"@cardroom:{SERVER_NAME}"
STAMP_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ")   # the time a log line starts with
BOT_PASSWORD = "bench password 304"
USER_PASSWORD = "user password"
V3 = "/_matrix/client/v3"
SETUP_COMMANDS = ["!new 304", "!join", "!bot", "!bot", "!bot", "!start"]
# Commands with exactly one public reply and no change to the table.
BENCH_COMMANDS = ["!table", "!last", "!help bid", "!rules", "!standings"]
TARGET_P50_MS = 1.0
SYNC_LINE = f"GET {V3}/sync".encode()
SEND_LINE_RE = re.compile(rb"^PUT /_matrix/client/v3/rooms/([^/ ]+)/send/")
FAKE_WRAPPER = (
    "import sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import fake_homeserver\n"
    "fake_homeserver.Handler.disable_nagle_algorithm = True\n"
    "fake_homeserver.main(sys.argv[2:])\n")
REPORT_RE = re.compile(
    r"matrix: (\d+) sync answers, (\d+) events"
    r"(?:; sync answer to first send: p50 ([\d.]+) ms, p99 ([\d.]+) ms \((\d+) samples\))?")
STALL_RE = re.compile(r"the longest core_batch or core_tick call took ([\d.]+) ms"
                      r"(?: \(the most CPU time one took: ([\d.]+) ms\))?")
TARGET_STALL_MS = 5.0


class SetupError(Exception):
    pass


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the bench (the thread that started it) dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def log(message):
    sys.stderr.write(f"[bench {time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def q(value):
    return urllib.parse.quote(value, safe="")


def uid(name):
    return f"@{name}:{SERVER_NAME}"


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list (the bot uses the same index rule)."""
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p / 100))]


class Client:
    """One keep-alive HTTP/1.1 connection to the fake; reconnects once after a network error."""

    def __init__(self, port, timeout=60.0):
        self.port = port
        self.timeout = timeout
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(self, method, path, body=None, token=None):
        """Returns (status, decoded JSON or None)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if token:
            headers["Authorization"] = "Bearer " + token
        for attempt in (1, 2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                           timeout=self.timeout)
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                try:
                    return resp.status, json.loads(raw) if raw else None
                except ValueError:
                    return resp.status, None
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt == 2:
                    raise

    def ok(self, method, path, body=None, token=None):
        status, obj = self.call(method, path, body, token)
        if status != 200:
            raise SetupError(f"{method} {path.split('?')[0]}: HTTP {status} {obj}")
        return obj


class Local(threading.local):
    """A Client per thread (for the thread pools of the setup)."""

    def __init__(self, port):
        self.client = Client(port)


class HttpStream:
    """Finds the message boundaries of one direction of an HTTP/1.1 connection (heads, then
    Content-Length bodies; the fake and libcurl use nothing else here).  feed() returns the
    events the bytes completed: ("start", None) when a message begins, ("end", head, body)
    when it is complete; body is kept only if keep(head) says so, else it is b""."""

    def __init__(self, keep=lambda head: False):
        self.keep = keep
        self.head = bytearray()
        self.remaining = None      # bytes of body still to come; None: reading a head
        self.current = None
        self.body = None
        self.broken = False

    def feed(self, data):
        out = []
        view = memoryview(data)
        while view and not self.broken:
            if self.remaining is None:
                if not self.head:
                    out.append(("start", None))
                before = len(self.head)
                self.head += view
                end = self.head.find(b"\r\n\r\n")
                if end < 0:
                    view = view[len(view):]
                    if len(self.head) > 65536:
                        self.broken = True
                    continue
                used = end + 4 - before
                view = view[used:]
                head = bytes(self.head[:end])
                self.head.clear()
                length = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
                if re.search(rb"(?im)^transfer-encoding:\s*chunked", head):
                    self.broken = True      # not used by either side; stop parsing
                    continue
                self.current = head
                self.remaining = int(length.group(1)) if length else 0
                self.body = bytearray() if self.keep(head) else None
            take = min(self.remaining, len(view))
            if self.body is not None:
                self.body += view[:take]
            view = view[take:]
            self.remaining -= take
            if self.remaining == 0:
                out.append(("end", self.current, bytes(self.body) if self.body is not None
                            else b""))
                self.remaining = None
        return out


class TimingProxy:
    """A TCP proxy between the bot and the fake that timestamps, from outside the bot, the
    last byte of every /sync answer leaving for the bot and the first byte of every send
    request (PUT .../send/...) arriving from it.  One thread with a selector, so timestamps
    are not delayed by other Python threads.  Optional (--proxy): it costs CPU."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1024)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.wake_r, self.wake_w = socket.socketpair()
        self.sel.register(self.wake_r, selectors.EVENT_READ, "stop")
        self.syncs = []            # (ns, answer body) of every 200 answer to /sync
        self.sends = []            # (ns, room id) of every send request
        self.unparsed = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def close(self):
        self.wake_w.send(b"x")
        self.thread.join(10)

    class Side:
        def __init__(self, sock, to_upstream):
            self.sock = sock
            self.peer = None
            self.out = bytearray()
            self.to_upstream = to_upstream
            self.mark_flags = []    # sync answers that are complete once `out` is written
            self.started = 0
            self.gave_up = False
            self.pending = collections.deque()   # request lines awaiting their answers
            keep = (lambda head: False) if to_upstream else self.keep_body
            self.stream = HttpStream(keep)

        def keep_body(self, head):
            return bool(self.pending) and self.pending[0].startswith(SYNC_LINE)

    def run(self):
        while True:
            for key, mask in self.sel.select():
                if key.data == "stop":
                    for k in list(self.sel.get_map().values()):
                        k.fileobj.close()
                    return
                if key.data is None:
                    self.accept()
                    continue
                side = key.data
                try:
                    if mask & selectors.EVENT_READ:
                        self.read(side)
                    if mask & selectors.EVENT_WRITE and side.sock.fileno() >= 0:
                        self.flush(side)
                except OSError:
                    self.drop(side)

    def accept(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        up = socket.create_connection(("127.0.0.1", self.upstream))
        for sock in (conn, up):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        down_side, up_side = self.Side(conn, True), self.Side(up, False)
        down_side.peer, up_side.peer = up_side, down_side
        # down_side reads the bot's requests; up_side reads the fake's answers.  Each side's
        # `out` is what is written to its own socket.
        down_side.pending = up_side.pending = collections.deque()
        self.sel.register(conn, selectors.EVENT_READ, down_side)
        self.sel.register(up, selectors.EVENT_READ, up_side)

    def read(self, side):
        data = side.sock.recv(1 << 18)
        now = time.monotonic_ns()
        if not data:
            self.drop(side)
            return
        peer = side.peer
        peer.out += data
        for event in side.stream.feed(data):
            if side.to_upstream:                # the bot's requests
                if event[0] == "start":
                    side.started = now
                    continue
                line = event[1].split(b"\r\n", 1)[0]
                side.pending.append(line)
                send = SEND_LINE_RE.match(line)
                if send:
                    room = urllib.parse.unquote(send.group(1).decode("latin-1"))
                    self.sends.append((side.started, room))
            elif event[0] == "end":             # the fake's answers
                status = event[1].split(b" ", 2)[1:2]
                if status == [b"100"]:
                    continue
                request = side.pending.popleft() if side.pending else b""
                if request.startswith(SYNC_LINE) and status == [b"200"]:
                    peer.mark_flags.append(event[2])
        if side.stream.broken and not side.gave_up:
            side.gave_up = True
            self.unparsed += 1
        self.flush(peer)

    def flush(self, side):
        if side.sock.fileno() < 0:
            return
        if side.out:
            try:
                sent = side.sock.send(side.out)
            except BlockingIOError:
                sent = 0
            del side.out[:sent]
        if not side.out and side.mark_flags:
            now = time.monotonic_ns()
            self.syncs.extend((now, body) for body in side.mark_flags)
            side.mark_flags.clear()
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if side.out else 0)
        self.sel.modify(side.sock, events, side)

    def drop(self, side):
        for s in (side, side.peer):
            try:
                self.sel.unregister(s.sock)
            except (KeyError, ValueError):
                pass
            s.sock.close()

    def latencies(self):
        """For every sync answer with people's text messages: ms from its last byte leaving for
        the bot to the first send request to one of those rooms that arrived after it (and
        before the next answer; answers without one are counted apart)."""
        sends = sorted(self.sends, key=lambda x: x[0])
        times = [t for t, _ in sends]
        out, unanswered = [], 0
        for i, (t, body) in enumerate(self.syncs):
            try:
                joined = json.loads(body)["rooms"]["join"]
            except (ValueError, KeyError, TypeError):
                continue
            rooms = {room for room, entry in joined.items()
                     for e in entry.get("timeline", {}).get("events", [])
                     if e.get("type") == "m.room.message" and e.get("sender") != BOT_ID
                     and e.get("content", {}).get("msgtype") == "m.text"}
            if not rooms:
                continue
            limit = self.syncs[i + 1][0] if i + 1 < len(self.syncs) else float("inf")
            j = bisect.bisect_right(times, t)
            while j < len(sends) and sends[j][0] < limit and sends[j][1] not in rooms:
                j += 1
            if j < len(sends) and sends[j][0] < limit:
                out.append((sends[j][0] - t) / 1e6)
            else:
                unanswered += 1
        return sorted(out), unanswered


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="cardroom-bench-mx-")
        self.fake = None
        self.bot = None
        self.bot_stderr = None
        self.port = None
        self.users = []          # (name, token, room_id)
        self.bot_bin = None
        self.all_bot_stderr = []  # (label, text) of every bot run, for the final check
        self.extra_dirs = []
        self.proxy = None

    # ---- processes ----

    def start_fake(self):
        self.fake_err = open(os.path.join(self.tmp, "fake.stderr"), "w")
        argv = ["--port", "0", "--server-name", SERVER_NAME]
        if self.args.fake_as_is:
            command = [sys.executable, FAKE_SERVER] + argv
        else:
            # The fake's handler leaves Nagle's algorithm on and writes an answer's head and
            # body in two send()s, so the body waits for the client's delayed ACK: ~40 ms per
            # answer on a keep-alive connection.  "No added latency" needs TCP_NODELAY.
            command = [sys.executable, "-c", FAKE_WRAPPER, os.path.dirname(FAKE_SERVER)] + argv
        self.fake = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.fake_err,
                                     text=True, preexec_fn=die_with_parent)
        ready, _, _ = select.select([self.fake.stdout], [], [], 20)
        line = self.fake.stdout.readline() if ready else ""
        m = re.match(r"^LISTENING (\d+)$", line.strip())
        if not m:
            raise SetupError(f"the fake homeserver did not start (said {line!r}); "
                             f"stderr: {self.tail(self.fake_err.name)}")
        self.port = int(m.group(1))
        self.control = Client(self.port)
        self.local = Local(self.port)

    def write_config(self):
        self.config = os.path.join(self.tmp, "cardroom.ini")
        with open(self.config, "w") as f:
            f.write(f"[bot]\nthreads = 2\nlog_level = info\nrate_commands = 0\nloop_priority = {self.args.loop_priority}\n"
                    "[timers]\nremind_after = 0\nidle_takeover = 0\ntable_idle_close = 0\n"
                    f"[matrix]\nhomeserver = http://127.0.0.1:{self.bot_port}\nuser = {BOT_ID}\n"
                    "invites = *\nsync_timeout = 30\n")
        db_dir = self.args.db_dir or self.tmp
        if self.args.db_dir:
            db_dir = tempfile.mkdtemp(prefix="cardroom-bench-db-", dir=self.args.db_dir)
            self.extra_dirs.append(db_dir)
        self.db = os.path.join(db_dir, "cardroom.db")

    def start_bot(self, label):
        path = os.path.join(self.tmp, f"bot-{label}.stderr")
        self.bot_stderr = path
        env = dict(os.environ, CARDROOM_MATRIX_PASSWORD=BOT_PASSWORD)
        env.pop("CARDROOM_MATRIX_ACCESS_TOKEN", None)
        with open(path, "w") as err:
            self.bot = subprocess.Popen(
                [self.bot_bin, "run", "--config", self.config, "--db", self.db,
                 "--seed", str(self.args.seed)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
                cwd=self.tmp, preexec_fn=die_with_parent)
        self.bot_label = label

    def check_bot(self):
        if self.bot is not None and self.bot.poll() is not None:
            raise SetupError(f"the bot exited with status {self.bot.returncode}; its stderr "
                             f"ends:\n{self.tail(self.bot_stderr)}")

    def stop_bot(self, timeout=30):
        """SIGTERM; returns (exit status, stderr text)."""
        self.bot.send_signal(signal.SIGTERM)
        try:
            rc = self.bot.wait(timeout)
        except subprocess.TimeoutExpired:
            self.bot.kill()
            self.bot.wait()
            rc = f"killed: did not stop within {timeout} s of SIGTERM"
        with open(self.bot_stderr) as f:
            text = f.read()
        self.all_bot_stderr.append((self.bot_label, text))
        self.bot = None
        return rc, text

    @staticmethod
    def tail(path, lines=30):
        try:
            with open(path) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no stderr)"

    def cleanup(self):
        if self.proxy is not None:
            self.proxy.close()
        for proc in (self.bot, self.fake):
            if proc is not None and proc.poll() is None:
                proc.kill()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        if self.fake is not None and self.fake.stdout:
            self.fake.stdout.close()
        if self.args.keep:
            log(f"kept {self.tmp}")
        else:
            for path in [self.tmp] + self.extra_dirs:
                shutil.rmtree(path, ignore_errors=True)

    # ---- helpers over the fake ----

    def stream_position(self):
        return self.control.ok("GET", "/_fake/health")["stream_position"]

    def parallel(self, function, items, workers=16):
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            return list(pool.map(function, items))

    def wait_for(self, predicate, timeout, what, interval=0.1):
        deadline = time.monotonic() + timeout
        while True:
            self.check_bot()
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise SetupError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(interval)

    def wait_quiet(self, quiet=1.5, timeout=120, what="the bot to go quiet"):
        """Waits until the fake's stream position has not moved for `quiet` seconds; returns
        the monotonic time at which it last moved."""
        last = [self.stream_position(), time.monotonic()]

        def still():
            pos = self.stream_position()
            if pos != last[0]:
                last[:] = [pos, time.monotonic()]
            return time.monotonic() - last[1] >= quiet

        self.wait_for(still, timeout, what, interval=0.05)
        return last[1]

    def events(self, room_id):
        return self.local.client.ok("GET", f"/_fake/rooms/{q(room_id)}/events")["events"]

    # ---- setup ----

    def setup(self):
        n = self.args.rooms
        t0 = time.monotonic()
        self.control.ok("POST", "/_fake/users", {"user_id": "cardroom", "password": BOT_PASSWORD})
        names = [f"user{i}" for i in range(1, n + 1)]
        self.parallel(lambda name: self.local.client.ok(
            "POST", "/_fake/users", {"user_id": name, "password": USER_PASSWORD}), names)
        self.start_bot("setup")

        def make_room(name):
            c = self.local.client
            token = c.ok("POST", V3 + "/login", {
                "type": "m.login.password", "identifier": {"type": "m.id.user", "user": name},
                "password": USER_PASSWORD})["access_token"]
            room = c.ok("POST", V3 + "/createRoom", {
                "preset": "private_chat", "name": f"Bench table {name}", "invite": [BOT_ID]},
                token)["room_id"]
            return name, token, room

        self.users = self.parallel(make_room, names)
        log(f"{n} users logged in, {n} rooms made and the bot invited "
            f"({time.monotonic() - t0:.1f} s)")
        rooms = {room for _, _, room in self.users}

        def all_joined():
            listing = self.control.ok("GET", "/_fake/rooms")["rooms"]
            return sum(listing.get(r, {}).get("members", {}).get(BOT_ID) == "join"
                       for r in rooms) == len(rooms)

        self.wait_for(all_joined, 60 + n * 0.2, f"the bot to join all {n} rooms", 0.2)
        log(f"the bot joined all {n} rooms ({time.monotonic() - t0:.1f} s)")

        def open_table(user):
            name, token, room = user
            c = self.local.client
            for i, text in enumerate(SETUP_COMMANDS):
                c.ok("PUT", f"{V3}/rooms/{q(room)}/send/m.room.message/setup{i}",
                     {"msgtype": "m.text", "body": text}, token)

        self.parallel(open_table, self.users)
        self.wait_quiet(what="the tables to be opened")
        active = self.parallel(self.table_active, self.users)
        bad = [u[0] for u, ok in zip(self.users, active) if not ok]
        if bad:
            raise SetupError(f"{len(bad)} room(s) have no active table after setup: "
                             f"{', '.join(bad[:10])}{' …' if len(bad) > 10 else ''}")
        log(f"{n} active tables ({time.monotonic() - t0:.1f} s)")

        rc, text = self.stop_bot()
        if rc != 0:
            raise SetupError(f"the setup bot exited with {rc}; stderr ends:\n{self.tail_of(text)}")
        # The measured bot: same database, resumes from its sync token and restores the tables.
        self.control.ok("DELETE", "/_fake/requests")
        restarted_ms = int(time.time() * 1000) - 5   # the fake logs wall-clock ms
        self.start_bot("measured")

        def synced():
            # The old bot's last long-poll may still end and be logged: look at later ones.
            log_ = self.control.ok("GET", "/_fake/requests")["requests"]
            return any(e["method"] == "GET" and e["path"].startswith(V3 + "/sync")
                       and e["status"] == 200 and e["ts"] >= restarted_ms for e in log_)

        self.wait_for(synced, 60, "the restarted bot's first sync")
        self.wait_quiet(quiet=1.0, what="the restarted bot to go quiet")
        self.setup_seconds = time.monotonic() - t0
        log(f"bot restarted; setup took {self.setup_seconds:.1f} s")

    def table_active(self, user):
        name, _, room = user
        bodies = [e["content"].get("body", "") for e in self.events(room)
                  if e["sender"] == BOT_ID and e["type"] == "m.room.message"]
        text = "\n".join(bodies).lower()
        return "match begins" in text or "hand 1" in text

    @staticmethod
    def tail_of(text, lines=30):
        return "\n".join(text.splitlines()[-lines:])

    # ---- the measured phase ----

    def measure(self):
        seconds = self.args.seconds
        threads = max(1, min(self.args.threads, len(self.users)))
        shares = [self.users[t::threads] for t in range(threads)]
        sent = [0] * threads
        failed = [0] * threads
        errors = []
        start = threading.Barrier(threads + 1)
        stop_at = [0.0]

        def worker(t):
            rng = random.Random(self.args.seed * 1000 + t)
            c = Client(self.port)
            share = shares[t]
            i = 0
            interval = threads / self.args.rate if self.args.rate else 0.0
            start.wait()
            next_at = time.monotonic()
            try:
                while time.monotonic() < stop_at[0]:
                    if interval:
                        next_at += interval
                        if next_at >= stop_at[0]:
                            break
                        delay = next_at - time.monotonic()
                        if delay > 0:
                            time.sleep(delay)
                    name, token, room = share[i % len(share)]
                    i += 1
                    text = rng.choice(BENCH_COMMANDS)
                    status, obj = c.call(
                        "PUT", f"{V3}/rooms/{q(room)}/send/m.room.message/b{t}x{i}",
                        {"msgtype": "m.text", "body": text}, token)
                    if status == 200:
                        sent[t] += 1
                    else:
                        failed[t] += 1
                        if len(errors) < 5:
                            errors.append(f"HTTP {status} {obj}")
            except Exception as exc:  # noqa: BLE001 - reported, not fatal
                errors.append(f"thread {t}: {exc!r}")
            finally:
                c.close()

        pool = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(threads)]
        for th in pool:
            th.start()
        self.pos0 = self.stream_position()
        self.cpu0 = self.cpu()
        if self.proxy is not None:
            self.proxy.syncs.clear()
            self.proxy.sends.clear()
        self.t_start = time.monotonic()
        stop_at[0] = self.t_start + seconds
        start.wait()
        for th in pool:
            th.join(seconds + 60)
        if time.monotonic() < stop_at[0]:       # paced threads stop at their last slot
            time.sleep(stop_at[0] - time.monotonic())
        self.t_end = time.monotonic()
        self.pos_end = self.stream_position()
        self.sent = sum(sent)
        self.send_failed = sum(failed)
        self.send_errors = errors
        self.threads = threads
        self.check_bot()
        # The drain: wait for the replies still on their way (nothing new for 2 s).
        self.t_drained = self.wait_quiet(quiet=2.0, timeout=180, what="the bot's last replies")
        self.cpu1 = self.cpu()
        self.t_cpu1 = time.monotonic()

    def cpu(self):
        """CPU seconds so far of the bot, the fake, the bench's own process and the proxy."""
        def of(path):
            try:
                with open(path) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                return 0.0
        proxy = (of(f"/proc/self/task/{self.proxy.thread.native_id}/stat")
                 if self.proxy is not None else 0.0)
        times = os.times()
        try:
            with open("/proc/stat") as f:
                ticks = [int(x) for x in f.readline().split()[1:]]
            machine = (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            machine = 0.0
        return {"bot": of(f"/proc/{self.bot.pid}/stat"), "fake": of(f"/proc/{self.fake.pid}/stat"),
                "clients": times.user + times.system - proxy, "proxy": proxy,
                "machine": machine}

    # ---- results ----

    def count_replies(self):
        """Per room: commands after pos0, and the bot's notices after pos0, paired in order."""
        rooms = {room for _, _, room in self.users}
        per_room = self.parallel(lambda u: (u, self.events(u[2])), self.users)
        self.commands = 0
        self.commands_in_window = 0
        self.replies = 0
        self.replies_in_window = 0
        self.missing = 0
        self.extra = 0
        self.e2e = []
        self.missing_rooms = []
        for (name, _, room), events in per_room:
            cmds = [e for e in events if e["fake"]["pos"] > self.pos0 and e["sender"] == uid(name)
                    and e["type"] == "m.room.message"]
            bot = [e for e in events if e["fake"]["pos"] > self.pos0 and e["sender"] == BOT_ID
                   and e["type"] == "m.room.message"]
            self.commands += len(cmds)
            self.commands_in_window += sum(e["fake"]["pos"] <= self.pos_end for e in cmds)
            self.replies += len(bot)
            self.replies_in_window += sum(e["fake"]["pos"] <= self.pos_end for e in bot)
            if len(bot) < len(cmds):
                self.missing += len(cmds) - len(bot)
                self.missing_rooms.append((name, room, len(cmds), len(bot)))
            elif len(bot) > len(cmds):
                self.extra += len(bot) - len(cmds)
            for c, r in zip(cmds, bot):
                self.e2e.append(r["origin_server_ts"] - c["origin_server_ts"])
        # Messages from the bot elsewhere (its direct chats): there should be none.
        listing = self.control.ok("GET", "/_fake/rooms")["rooms"]
        others = [r for r in listing if r not in rooms]
        self.other_bot_messages = sum(
            sum(1 for e in events if e["fake"]["pos"] > self.pos0 and e["sender"] == BOT_ID
                and e["type"] == "m.room.message")
            for events in self.parallel(self.events, others))
        self.e2e.sort()

    def report(self, rc, text):
        a = self.args
        window = self.t_end - self.t_start
        busy = max(self.t_drained, self.t_end) - self.t_start   # to the last reply
        m = None
        for line in text.splitlines():
            found = REPORT_RE.search(line)
            if found:
                m = found
        print(f"matrix bench: {a.rooms} rooms with active tables, {window:.1f} s measured, "
              f"{self.threads} client threads"
              + (f" paced to {a.rate:g} commands/s" if a.rate else " at full speed")
              + f" (setup {self.setup_seconds:.1f} s, not measured)")
        print(f"commands sent: {self.sent} ({self.sent / window:.0f}/s)"
              + (f", refused: {self.send_failed}" if self.send_failed else "")
              + f"; found in the rooms: {self.commands}")
        print(f"bot messages: {self.replies} (in the window: {self.replies_in_window}, "
              f"{self.replies_in_window / window:.0f}/s end to end), fewer than the commands: "
              f"{self.missing} (the core sends a transaction's replies to a room as one message)"
              + (f", extra: {self.extra}" if self.extra else "")
              + f"; last message {max(0.0, self.t_drained - self.t_end):.1f} s after the window")
        print(f"the bot's database once it stopped: {self.store_messages} messages, "
              f"{self.store_unsent} of them not sent, {self.store_inbox} events not handled"
              + ("" if self.store_unsent == 0 and self.store_inbox == 0 else "  LEFT OVER"))
        backlog = self.commands_in_window - self.replies_in_window
        if backlog > max(50, self.sent // 50):
            print(f"replies lagged: {backlog} commands were still unanswered when the window "
                  f"closed (commands {self.commands_in_window / window:.0f}/s, replies "
                  f"{self.replies_in_window / window:.0f}/s)")
        if self.e2e:
            print(f"end to end, command stored -> reply stored (fake's clock, 1 ms steps): "
                  f"p50 {percentile(self.e2e, 50):.0f} ms, p99 {percentile(self.e2e, 99):.0f} ms, "
                  f"max {self.e2e[-1]:.0f} ms")
        if m is None:
            print("bot: no report line found in its stderr "
                  "(expected 'matrix: N sync answers, M events; ...'); it ends:\n"
                  + self.tail_of(text, 10))
            print("RESULT UNKNOWN")
        else:
            syncs, events = int(m.group(1)), int(m.group(2))
            per = events / syncs if syncs else 0.0
            print(f"bot (restarted after the setup, so its figures cover the phase and the "
                  f"drain only): sync answers {syncs}, events {events} ({per:.1f} per answer, "
                  f"its own replies included; {events / busy:.0f} events/s processed over "
                  f"{busy:.1f} s, the window and the drain)")
            if m.group(3) is None:
                print("sync answer -> first send request: no samples in the bot's report")
                print("RESULT UNKNOWN")
            else:
                p50, p99, samples = float(m.group(3)), float(m.group(4)), int(m.group(5))
                print(f"sync answer -> first send request: p50 {p50:.3f} ms, p99 {p99:.3f} ms "
                      f"({samples} samples from {syncs} sync answers; target p50 <= "
                      f"{TARGET_P50_MS:g} ms)")
                if p50 > TARGET_P50_MS:
                    print("TARGET MISSED")
        stalls = [f for f in map(STALL_RE.search, text.splitlines()) if f]
        if stalls:
            wall, cpu = float(stalls[-1].group(1)), stalls[-1].group(2)
            print(f"longest stall of the bot's loop (one core_batch or core_tick call, its own "
                  f"clock): {wall:.1f} ms"
                  + (f", the most CPU time one took {float(cpu):.1f} ms" if cpu else "")
                  + f"; target <= {TARGET_STALL_MS:g} ms " + ("MET" if wall <= TARGET_STALL_MS else "NOT MET"))
        if self.proxy is not None:
            lat, unanswered = self.proxy.latencies()
            if lat:
                print(f"seen by the proxy, sync answer with commands -> first send to one of "
                      f"their rooms: p50 {percentile(lat, 50):.3f} ms, p99 "
                      f"{percentile(lat, 99):.3f} ms ({len(lat)} answers"
                      + (f"; {unanswered} more had none before the next answer"
                         if unanswered else "")
                      + "; includes reading and parsing the answer)")
            if self.proxy.unparsed:
                print(f"proxy: {self.proxy.unparsed} connection(s) it could not parse")
        used = {k: self.cpu1[k] - self.cpu0[k] for k in self.cpu0}
        cpu_span = self.t_cpu1 - self.t_start
        machine = used.pop("machine")
        others = max(0.0, machine - sum(used.values()))
        print(f"CPU over the phase and the drain ({os.cpu_count()} CPUs; 100% = one CPU): "
              + ", ".join(f"{k} {100 * v / cpu_span:.0f}%" for k, v in used.items()
                          if k != "proxy" or self.proxy is not None)
              + f", everything else {100 * others / cpu_span:.0f}%")
        if others / cpu_span > 0.15:
            print("WARNING: other processes were busy during the measurement; "
                  "the figures may be disturbed")
        if rc != 0:
            print(f"the bot exited with {rc} after SIGTERM (expected 0)")
        if self.send_errors:
            print("send errors: " + "; ".join(self.send_errors[:5]))
        if self.missing_rooms:
            shown = ", ".join(f"{n} ({c} commands, {r} messages)"
                              for n, _, c, r in self.missing_rooms[:5])
            print(f"rooms with fewer bot messages than commands: {len(self.missing_rooms)}: {shown}")
        if self.other_bot_messages:
            print(f"bot messages in other rooms (direct chats) during the phase: "
                  f"{self.other_bot_messages}")
        problems = []
        for label, out in self.all_bot_stderr:
            for line in out.splitlines():
                line = STAMP_RE.sub("", line)
                if re.match(r"^cardroom: (error|warn):", line) or (
                        line and not line.startswith("cardroom: info:")):
                    problems.append(f"[{label}] {line}")
        if problems:
            print(f"bot stderr: {len(problems)} warning/error line(s):")
            for line in problems[:20]:
                print("  " + line)
        with open(self.fake_err.name) as f:
            fake_text = f.read().strip()
        if fake_text:
            print("fake homeserver stderr:\n" + self.tail_of(fake_text, 20))
        return 0

    def run(self):
        binary = os.environ.get("CARDROOM_BIN") or os.path.join(REPO, "build", "cardroom")
        if not os.access(binary, os.X_OK):
            raise SetupError(f"no bot binary at {binary} (build it: ninja -C build, "
                             "or set CARDROOM_BIN)")
        self.bot_bin = os.path.join(self.tmp, "cardroom")
        shutil.copy2(binary, self.bot_bin)
        self.start_fake()
        self.bot_port = self.port
        if self.args.proxy:
            self.proxy = TimingProxy(self.port)
            self.bot_port = self.proxy.port
        self.write_config()
        self.setup()
        log(f"measuring for {self.args.seconds:g} s")
        self.measure()
        rc, text = self.stop_bot()
        self.count_replies()
        self.read_store()
        return self.report(rc, text)

    def read_store(self):
        """What the bot's database holds once it stopped: its messages (queued, not yet sent)
        and the events it took in but had not handled. A reply merged with others into one
        message is counted by the rooms as one; this says whether anything was left over."""
        db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            self.store_messages, self.store_unsent = db.execute(
                "SELECT count(*), count(*) - coalesce(sum(sent), 0) FROM outbox").fetchone()
            self.store_inbox = db.execute("SELECT count(*) FROM inbox").fetchone()[0]
        finally:
            db.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rooms", type=int, default=200, help="rooms with an active table")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the measured phase")
    parser.add_argument("--seed", type=int, default=1, help="the bot's deals and the command mix")
    parser.add_argument("--threads", type=int, default=8, help="client threads sending commands")
    parser.add_argument("--rate", type=float, default=0,
                        help="commands per second in all (default 0: as fast as the fake "
                        "answers, one request in flight per thread)")
    parser.add_argument("--db-dir", help="put the bot's database in a new directory under this "
                        "one (default: the temporary directory; /dev/shm takes fsync out)")
    parser.add_argument("--fake-as-is", action="store_true",
                        help="run the fake homeserver without turning Nagle's algorithm off "
                        "(each answer then waits ~40 ms for a delayed ACK)")
    parser.add_argument("--proxy", action="store_true",
                        help="also time the bot from outside, through a TCP proxy between "
                        "it and the fake (costs CPU)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--loop-priority", choices=("normal", "realtime"), default="normal",
                        help="the bot's [bot] loop_priority (realtime where the system allows it)")
    args = parser.parse_args(argv)
    if args.rooms < 1 or args.seconds <= 0 or args.threads < 1 or args.rate < 0:
        parser.error("--rooms, --seconds and --threads must be positive, --rate not negative")
    started = time.monotonic()

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    bench = Bench(args)
    try:
        status = bench.run()
    except SetupError as exc:
        print(f"matrix bench: failed: {exc}")
        status = 1
    except KeyboardInterrupt:
        print("matrix bench: interrupted")
        status = 1
    except Exception:  # noqa: BLE001 - e.g. the fake died: say what the processes said
        traceback.print_exc()
        print("matrix bench: failed (see above)")
        for name, path in (("fake homeserver", getattr(bench, "fake_err", None)),
                           ("bot", bench.bot_stderr)):
            if path is not None:
                print(f"{name} stderr ends:\n{bench.tail(getattr(path, 'name', path), 15)}")
        status = 1
    finally:
        bench.cleanup()
    log(f"total run time {time.monotonic() - started:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
