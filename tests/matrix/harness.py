"""Harness for the end-to-end tests of cardroom's Matrix adapter (test_matrix_bot.py).

It runs the real bot (`cardroom run`) against the fake homeserver (fake_homeserver.py), plays
people with their own logins, and reads back what the bot posted:

  * `FakeHomeserver`  starts, kills (SIGKILL), restarts (same port and --state) and stops the
                      fake, and wraps its Matrix and /_fake/ control APIs.
  * `BotProcess`      one `cardroom run` process (restartable on the same DB); stderr goes to a
                      file so a failure message can show its tail.
  * `Harness`         everything a test needs, owned by one unittest.TestCase: users, rooms,
                      the bot's config, sending a line and waiting until the bot has handled
                      it, the script player, transcript extraction and the checks on it.
  * `read_script`, `console_reference`, `matrix_reference`: the match script and what
                      `cardroom console --script` prints for it, which is what the bot must
                      post over Matrix (where players get no private turn notices at first).

Every test ends with one check whatever it did: no event of the bot in an encrypted room may be
anything but m.room.encrypted (the fake's /_fake/plaintext audit, read from its rooms' events,
so it covers the bot's restarts and the homeserver's).

Waiting is never polling: a thread of the harness long-polls the fake's /_fake/activity (a
test hook that answers when a Matrix request arrives, is held or is answered) and each bot
process's stderr is read through a pipe; every such step wakes the waits (`wait_for`), which
look at the fake's state again only then.

"Handled" is read from the /sync requests the bot makes: it handles each /sync answer as one
durable batch and only then asks for the next one with since=<that answer's next_batch>.  A
next_batch token is "s<pos>_<epoch>", where pos is the fake's stream position when the answer
was built, so it covers every event with fake.pos <= pos.  A /sync arriving with a since whose
pos >= the fake.pos of an event therefore proves the bot has durably handled that event.

"Nothing more is coming" (before a transcript is compared, so a late duplicate shows) is also
an event, not a pause: the bot has handled every event others sent in the rooms it is in, and
every message its outbox has not marked sent is on the homeserver already, under its txn id
(so a retry of it is the same event, never a second one).

Only the Python standard library is used.
"""

import difflib
import http.client
import json
import os
import queue
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FAKE_SERVER = os.path.join(HERE, "fake_homeserver.py")
MATCH_SCRIPT = os.path.join(HERE, "match-seed1.txt")
SERVER_NAME = "example.org"
BOT_LOCALPART = "cardroom"
BOT_ID = f"@{BOT_LOCALPART}:{SERVER_NAME}"
BOT_PASSWORD = "correct horse battery staple 304"
PLAYERS = ("alice", "bob", "carol", "dave")
ROOM_NAME = "Card night"
# The local time a log line starts with when the bot writes to a file or a terminal (not under systemd).
LOG_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ", re.M)
V3 = "/_matrix/client/v3"
TIMERS = "[timers]\nremind_after = 0\nidle_takeover = 0\ntable_idle_close = 0\n"
HEAD_RE = re.compile(r"^\[[^\]]* · table (\d+)\] ")
HOW_RE = re.compile(r"privately \((?:with /msg(?: \S+)?|in your direct chat with me)\)")
TOKEN_RE = re.compile(r"^s(\d+)_([A-Za-z0-9]+)$")
SCRIPT_RE = re.compile(r"^([A-Za-z0-9_.-]+)(>>?) (.*)$")
BOT_TXN_RE = re.compile(r"^cr\d+$")
BOT_SEND_REGEX = r"^/_matrix/client/v3/rooms/[^/]+/send/m\.room\.message/cr\d+"
SYNC_REGEX = r"^/_matrix/client/v3/sync"
LOG_LINE_RE = re.compile(r"cardroom: (error|warn): ")
# A wait's deadline is only there to end a hung test: every timeout a test names is stretched
# this much, for a busy machine running the sanitizer build.
SLACK = 4
KEEP = bool(os.environ.get("CARDROOM_MX_KEEP"))      # keep temp dirs to look at afterwards
VERBOSE = bool(os.environ.get("CARDROOM_MX_VERBOSE"))


def bot_binary():
    return os.environ.get("CARDROOM_BIN") or os.path.join(REPO, "build", "cardroom")


def q(value):
    return urllib.parse.quote(value, safe="")


def uid(name):
    return name if name.startswith("@") else f"@{name}:{SERVER_NAME}"


def note(message):
    if VERBOSE:
        sys.stderr.write(f"[harness {time.strftime('%H:%M:%S')}] {message}\n")


def tail(path, lines=40):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no file)"


# --------------------------------------------------------------------------------------------
# The match script and the console's reference output.
# --------------------------------------------------------------------------------------------

class Line:
    """One script line: USER> TEXT (in the room) or USER>> TEXT (privately to the bot)."""

    __slots__ = ("user", "private", "text", "number")

    def __init__(self, user, private, text, number):
        self.user, self.private, self.text, self.number = user, private, text, number

    def __str__(self):
        return f"{self.user}{'>>' if self.private else '>'} {self.text}"

    def __repr__(self):
        return f"<line {self.number}: {self}>"


def parse_script(text):
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        match = SCRIPT_RE.match(raw)
        if not match:
            raise ValueError(f"script line {number}: cannot parse {raw!r}")
        lines.append(Line(match.group(1), match.group(2) == ">>", match.group(3), number))
    return lines


def read_script(path=MATCH_SCRIPT, limit=None):
    with open(path, encoding="utf-8") as f:
        lines = parse_script(f.read())
    return lines[:limit] if limit else lines


def script_text(lines):
    return "".join(f"{line}\n" for line in lines)


def normalize_private(line):
    """What differs between networks in a private line.  Its head names the room: "[room · table
    1] " on the console, "[Card night · table 1] " over Matrix; both become "[ROOM · table 1] ".
    A hint to write to the bot privately says how on that network: "(with /msg)" on the
    console, "(in your direct chat with me)" on Matrix, "(with /msg cardroom)" on IRC; all
    become "(HOW)"."""
    return HOW_RE.sub("privately (HOW)", HEAD_RE.sub(r"[ROOM · table \1] ", line))


class Transcript:
    """What the bot said: the game room's lines and each user's private lines, in order."""

    def __init__(self, room=None, private=None):
        self.room = list(room or [])
        self.private = {u: list(v) for u, v in (private or {}).items()}

    def channels(self, users=PLAYERS):
        yield "#room", self.room
        for user in users:
            yield "@" + user, self.private.get(user, [])

    def sizes(self):
        return {name: len(lines) for name, lines in self.channels(sorted(self.private))}


_REFERENCE_CACHE = {}


def console_reference(lines, room_name="room", notify_off=False, players=PLAYERS):
    """Runs `cardroom console --script --seed 1` on the lines; returns its Transcript (heads
    normalized).  The console prints "[#room] TEXT" for the room and "[@U] TEXT" for each
    line of a private message to U.  notify_off: as on Matrix, where players get no private
    notice with their hand on each turn until they ask: every one of players says `!notify
    off` first, and those answers are left out."""
    prelude = "".join(f"{user}> !notify off\n" for user in players) if notify_off else ""
    text = prelude + script_text(lines)
    if text in _REFERENCE_CACHE:
        return _REFERENCE_CACHE[text]
    with tempfile.TemporaryDirectory(prefix="cardroom-ref-") as work:
        config = os.path.join(work, "console.ini")
        with open(config, "w", encoding="utf-8") as f:
            f.write(TIMERS)
        result = subprocess.run([bot_binary(), "console", "--script", "--seed", "1",
                                 "--config", config], input=text, capture_output=True,
                                text=True, cwd=work, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"cardroom console failed ({result.returncode}): {result.stderr}")
    ref = Transcript(private={u: [] for u in players})
    room_prefix = f"[#{room_name}] "
    for out in result.stdout.splitlines():
        if out.startswith(room_prefix):
            ref.room.append(out[len(room_prefix):])
            continue
        match = re.match(r"^\[@([^\]]+)\] (.*)$", out)
        if not match:
            raise RuntimeError(f"unexpected console line {out!r}")
        ref.private.setdefault(match.group(1), []).append(normalize_private(match.group(2)))
    if notify_off:
        answers = ref.room[:len(players)]
        if [a.split(":")[0] for a in answers] != list(players):
            raise RuntimeError(f"unexpected answers to !notify off: {answers!r}")
        ref.room = ref.room[len(players):]
    _REFERENCE_CACHE[text] = ref
    return ref


def matrix_reference(lines, room_name="room", players=PLAYERS):
    """What the bot says over Matrix for the lines: the console's words with Matrix's default
    of no private turn notices."""
    return console_reference(lines, room_name, notify_off=True, players=players)


# --------------------------------------------------------------------------------------------
# HTTP.
# --------------------------------------------------------------------------------------------

class Response:
    def __init__(self, status, raw, headers=None):
        self.status = status
        self.raw = raw
        self.headers = headers or {}
        try:
            self.json = json.loads(raw) if raw else None
        except ValueError:
            self.json = None

    def __repr__(self):
        return f"<{self.status} {self.raw[:300]!r}>"


def http_call(port, method, path, body=None, token=None, timeout=30.0, raw=None):
    """One request on a fresh connection.  Raises OSError when the server is not there."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        return Response(resp.status, resp.read(), dict(resp.getheaders()))
    finally:
        conn.close()


# --------------------------------------------------------------------------------------------
# Processes.
# --------------------------------------------------------------------------------------------

class FakeHomeserver:
    """The fake homeserver as a child process, with its state in workdir."""

    def __init__(self, workdir, use_state=True):
        self.workdir = workdir
        self.state = os.path.join(workdir, "homeserver-state.json") if use_state else None
        self.stderr_path = os.path.join(workdir, "homeserver.stderr")
        self.proc = None
        self.port = 0
        self.starts = 0
        self.started = threading.Condition()   # notified at each start

    def start(self):
        args = [sys.executable, FAKE_SERVER, "--port", str(self.port),
                "--server-name", SERVER_NAME]
        if self.state:
            args += ["--state", self.state]
        deadline = time.monotonic() + 15
        while True:
            with open(self.stderr_path, "ab") as err:
                err.write(f"=== fake homeserver start {self.starts + 1} ===\n".encode())
                err.flush()
                self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err,
                                             text=True)
            watchdog = threading.Timer(15, self.proc.kill)
            watchdog.start()
            line = self.proc.stdout.readline()
            watchdog.cancel()
            match = re.fullmatch(r"LISTENING (\d+)\n", line)
            if match:
                break
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            # With a fixed port the old socket may linger for a moment: try again.
            if self.port == 0 or time.monotonic() > deadline:
                raise RuntimeError(f"fake homeserver did not start: {line!r}\n"
                                   f"{tail(self.stderr_path)}")
            time.sleep(0.2)
        self.port = int(match.group(1))
        with self.started:
            self.starts += 1
            self.started.notify_all()
        note(f"fake homeserver up on port {self.port} (start {self.starts})")

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL, as a crash: no clean shutdown."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc.stdout.close()
        self.proc = None

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc = None

    def restart(self):
        self.kill()
        self.start()

    # ---- requests ----------------------------------------------------------------------------

    def call(self, method, path, body=None, token=None, timeout=30.0, raw=None):
        return http_call(self.port, method, path, body, token, timeout, raw)

    def ok(self, method, path, body=None, token=None, timeout=30.0):
        resp = self.call(method, path, body, token, timeout)
        if resp.status != 200:
            raise AssertionError(f"{method} {path} -> {resp.status} {resp.raw[:500]!r}")
        return resp.json

    def health(self):
        return self.ok("GET", "/_fake/health")

    def rooms(self):
        return self.ok("GET", "/_fake/rooms")["rooms"]

    def events(self, room_id):
        return self.ok("GET", f"/_fake/rooms/{q(room_id)}/events")["events"]

    def add_faults(self, *rules):
        return self.ok("POST", "/_fake/faults", list(rules))["faults"]

    def faults(self):
        return self.ok("GET", "/_fake/faults")["faults"]

    def activity(self, after, boot, timeout):
        """The fake's request steps after `after` (see fake_homeserver.activity_after), waiting
        up to timeout seconds for one."""
        return self.ok("GET", f"/_fake/activity?after={after}&boot={boot or ''}"
                              f"&timeout_ms={int(timeout * 1000)}", timeout=timeout + 30)

    def clear_faults(self):
        self.ok("DELETE", "/_fake/faults")

    def as_user(self, user, method, path, body=None):
        """A Client-Server request as that user, without logging in (/_fake/as/...)."""
        return self.ok(method, f"/_fake/as/{q(uid(user))}{path}", body)


class BotProcess:
    """One `cardroom run`, restartable on the same database."""

    def __init__(self, workdir, config, db, env, name="bot", on_output=lambda: None):
        self.workdir = workdir
        self.on_output = on_output   # called for each line of stderr, and at its end
        self.config = config
        self.db = db
        self.env = env
        self.stderr_path = os.path.join(workdir, f"{name}.stderr")
        self.stdout_path = os.path.join(workdir, f"{name}.stdout")
        self.proc = None
        self.starts = 0
        self.expected_down = False   # set while a test kills and restarts it on purpose
        self.journal = False         # JOURNAL_STREAM names its stderr, as under systemd
        self.copier = None           # the thread copying its stderr to the file
        self.exit_codes = []

    def start(self):
        args = [bot_binary(), "run", "--config", self.config, "--db", self.db, "--seed", "1"]
        self.starts += 1
        with open(self.stderr_path, "ab") as err:
            err.write(f"=== harness: bot start {self.starts} ===\n".encode())
        read_end, write_end = os.pipe()
        env = self.env
        if self.journal:
            st = os.fstat(write_end)
            env = dict(env, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
        try:
            with open(self.stdout_path, "ab") as out:
                self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                             stderr=write_end, env=env, cwd=self.workdir)
        finally:
            os.close(write_end)
        self.copier = threading.Thread(target=self.copy_stderr,
                                       args=(os.fdopen(read_end, "rb"),), daemon=True)
        self.copier.start()
        note(f"bot started (start {self.starts}, pid {self.proc.pid})")

    def copy_stderr(self, pipe):
        """Copies the bot's stderr to its file line by line, telling on_output of each line and
        of the end (the bot exited)."""
        with pipe, open(self.stderr_path, "ab") as err:
            for line in pipe:
                err.write(line)
                err.flush()
                self.on_output()
        self.on_output()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL at once: the bot may be anywhere in its work."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        rc = self.proc.wait()
        self.ended(rc)
        return rc

    def ended(self, rc):
        """The process is gone: its stderr is all in the file once the copier is done."""
        self.copier.join()
        self.exit_codes.append(rc)
        self.proc = None

    def terminate(self, timeout=15):
        """SIGTERM and wait; returns the exit status (None if it had to be killed)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self.ended(rc)
        return rc

    def wait_exit(self, timeout):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.ended(rc)
        return rc

    def stderr(self):
        with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stdout(self):
        with open(self.stdout_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stderr_tail(self, lines=40):
        return tail(self.stderr_path, lines)


# --------------------------------------------------------------------------------------------
# The harness.
# --------------------------------------------------------------------------------------------

class Harness:
    """A fake homeserver, the people, the bot, and the checks, for one test."""

    def __init__(self, test, use_state=True):
        self.test = test
        self.news = threading.Condition()   # notified at each step of the fake or the bot
        self.news_count = 0
        self.dir = tempfile.mkdtemp(prefix="cardroom-mx-")
        self.server = FakeHomeserver(self.dir, use_state)
        self.users = {}            # name -> {"user_id", "token", "device_id"}
        self.bot = None
        self.bots = []
        self.log = []              # every request-log entry collected so far
        self.log_lock = threading.RLock()
        self.log_seen = 0          # entries of the server's current log already collected
        self.clear_log_allowed = True
        self.max_since = -1        # highest since pos of any /sync the bot made
        self.txn = 0
        self.dm_kind = {}          # room_id -> user name the DM is with, or None
        self.closed = False
        self.life_lock = threading.Lock()   # close() vs. a Killer restarting the bot
        test.addCleanup(self.close)
        self.server.start()
        self.epoch = self.server.health()["epoch"]
        threading.Thread(target=self.watch_activity, daemon=True).start()

    # ---- news: what wakes the waits -------------------------------------------------------------

    def tell_news(self):
        with self.news:
            self.news_count += 1
            self.news.notify_all()

    def counts(self, step):
        """Whether a request step of the fake is news for the waits (a subclass leaves out its
        own clients' requests, which its waits make)."""
        return True

    def watch_activity(self):
        """Follows the fake's request steps (long-polling /_fake/activity) until the harness
        closes: each step the waits care about is news, and each /sync that arrives raises
        max_since.  While the fake is down it waits for its next start."""
        seq, boot = 0, None
        while not self.closed:
            starts = self.server.starts
            try:
                got = self.server.activity(seq, boot, 20)
            except (OSError, AssertionError, ValueError, http.client.HTTPException):
                with self.server.started:
                    self.server.started.wait_for(
                        lambda: self.closed or self.server.starts != starts, 5)
                continue
            if got["boot"] != boot:
                seq, boot = 0, got["boot"]
            news = False
            for step in got["steps"]:
                seq = max(seq, step["seq"])
                if step["stage"] == "arrived":
                    pos = self.since_pos(step)
                    with self.log_lock:
                        if pos is not None and pos > self.max_since:
                            self.max_since = pos
                news = news or self.counts(step)
            if news:
                self.tell_news()

    def close(self):
        with self.life_lock:
            if self.closed:
                return
            self.closed = True
            for bot in self.bots:
                bot.kill()
        self.tell_news()
        try:
            leaks = self.plaintext_leaks()
            if leaks:
                self.fail("the bot sent events in the clear into encrypted rooms:\n"
                          + "\n".join(f"  {e['type']} (txn {e['txn_id']}) in {e['room_id']} at "
                                      f"pos {e['pos']}" for e in leaks[:20]))
        finally:
            self.server.kill()
            if KEEP:
                sys.stderr.write(f"kept {self.dir}\n")
            else:
                shutil.rmtree(self.dir, ignore_errors=True)

    def plaintext_leaks(self):
        """The bot's events in encrypted rooms that are not m.room.encrypted (the homeserver
        is started again from its state file if a test left it down)."""
        if not self.server.running():
            if not (self.server.state and os.path.exists(self.server.state)):
                return []
            self.server.start()
        events = self.server.ok("GET", "/_fake/plaintext")["events"]
        return [e for e in events if e["sender"] == BOT_ID]

    # ---- failing with context ------------------------------------------------------------------

    def context(self):
        out = []
        for bot in self.bots:
            out.append(f"--- bot stderr tail ({bot.stderr_path}) ---\n{bot.stderr_tail()}")
        out.append(f"--- fake homeserver stderr tail ---\n{tail(self.server.stderr_path, 15)}")
        return "\n".join(out)

    def fail(self, message):
        self.test.fail(f"{message}\n{self.context()}")

    def check_bot(self):
        """Fails at once if the bot died without the test killing it."""
        bot = self.bot
        if bot is None:
            return
        proc = bot.proc
        if proc is None or proc.poll() is None:
            return
        if bot.expected_down or bot.proc is not proc:
            return                 # killed (or being restarted) by the test itself
        self.fail(f"the bot exited unexpectedly with status {proc.returncode}")

    def news_seen(self):
        with self.news:
            return self.news_count

    @staticmethod
    def deadline(timeout):
        """The time.monotonic() by which a wait of `timeout` seconds has hung."""
        return time.monotonic() + timeout * SLACK

    def await_news(self, seen, deadline):
        """Waits for news after `seen` (a news_seen() value); False when the deadline (a
        time.monotonic() value) passes first."""
        with self.news:
            return self.news.wait_for(lambda: self.news_count != seen,
                                      deadline - time.monotonic())

    def wait_for(self, predicate, timeout, what, check_bot=True):
        """Returns predicate()'s value once it is true, asking again only when there is news
        (a step of the fake's requests, a line of the bot's stderr, the bot's exit).  what
        names it for the failure message (a function: called then)."""
        deadline = self.deadline(timeout)
        while True:
            seen = self.news_seen()
            value = predicate()
            if value:
                return value
            if check_bot:
                self.check_bot()
            if not self.await_news(seen, deadline):
                self.fail(f"timed out after {timeout * SLACK} s waiting for "
                          f"{what() if callable(what) else what}")

    # ---- users and rooms -----------------------------------------------------------------------

    def make_user(self, name, displayname=None, login=True):
        self.server.ok("POST", "/_fake/users", {"user_id": name, "password": "pw-" + name,
                                                "displayname": displayname or name})
        if login:
            self.users[name] = self.login(name, "pw-" + name)
        return uid(name)

    def login(self, name, password):
        out = self.server.ok("POST", V3 + "/login", {
            "type": "m.login.password", "identifier": {"type": "m.id.user", "user": name},
            "password": password})
        return {"user_id": out["user_id"], "token": out["access_token"],
                "device_id": out["device_id"]}

    def make_people(self, names=PLAYERS):
        """The players (display name = their name, so game names match the console's) and the
        bot's account with a password."""
        for name in names:
            self.make_user(name)
        self.server.ok("POST", "/_fake/users", {"user_id": BOT_LOCALPART,
                                                "password": BOT_PASSWORD,
                                                "displayname": "cardroom"})

    def user_call(self, name, method, path, body=None):
        return self.server.call(method, path, body, self.users[name]["token"])

    def user_ok(self, name, method, path, body=None):
        resp = self.user_call(name, method, path, body)
        if resp.status != 200:
            self.fail(f"{name}: {method} {path} -> {resp.status} {resp.raw[:300]!r}")
        return resp.json

    def create_room(self, creator, name=ROOM_NAME, preset="private_chat", invite=(), **extra):
        body = dict(extra, preset=preset, invite=[uid(u) for u in invite])
        if name is not None:
            body["name"] = name
        return self.user_ok(creator, "POST", V3 + "/createRoom", body)["room_id"]

    def join(self, name, room_id):
        self.user_ok(name, "POST", f"{V3}/rooms/{q(room_id)}/join", {})

    def invite(self, name, room_id, target):
        self.user_ok(name, "POST", f"{V3}/rooms/{q(room_id)}/invite", {"user_id": uid(target)})

    def kick(self, name, room_id, target, reason="test kick"):
        self.user_ok(name, "POST", f"{V3}/rooms/{q(room_id)}/kick",
                     {"user_id": uid(target), "reason": reason})

    def game_room(self, name=ROOM_NAME, creator="alice", members=PLAYERS[1:], bot=True,
                  preset="private_chat"):
        """creator makes the room with the others (and the bot) invited; the others join."""
        invite = list(members) + ([BOT_ID] if bot else [])
        room_id = self.create_room(creator, name, preset, invite)
        for member in members:
            self.join(member, room_id)
        return room_id

    def membership(self, room_id, user):
        room = self.server.rooms().get(room_id)
        return room["members"].get(uid(user)) if room else None

    def wait_bot_membership(self, room_id, want="join", timeout=20):
        self.wait_for(lambda: self.membership(room_id, BOT_ID) == want, timeout,
                      f"the bot's membership in {room_id} to be {want!r}")

    # ---- the bot -------------------------------------------------------------------------------

    def write_config(self, invites="@alice:example.org", sync_timeout=30, extra="",
                     name="cardroom.ini", encrypt_direct_chats=False):
        """The bot's configuration. The transport tests read the direct chats in the clear, so
        the bot's direct chats are unencrypted unless encrypt_direct_chats is set."""
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("[bot]\nthreads = 1\nrate_commands = 0\n" + TIMERS +  # scripts run faster than people
                    "[matrix]\n"
                    f"homeserver = http://127.0.0.1:{self.server.port}\n"
                    f"user = {BOT_ID}\n"
                    f"invites = {invites}\n"
                    f"sync_timeout = {sync_timeout}\n"
                    f"encrypt_direct_chats = {'true' if encrypt_direct_chats else 'false'}\n" + extra)
        return path

    def bot_env(self, password=BOT_PASSWORD, token=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CARDROOM_")}
        if password is not None:
            env["CARDROOM_MATRIX_PASSWORD"] = password
        if token is not None:
            env["CARDROOM_MATRIX_ACCESS_TOKEN"] = token
        return env

    def start_bot(self, config=None, password=BOT_PASSWORD, token=None, db=None, name="bot"):
        """Starts `cardroom run` (a new BotProcess unless the current one is restarted)."""
        config = config or self.write_config()
        db = db or os.path.join(self.dir, f"{name}.db")
        bot = BotProcess(self.dir, config, db, self.bot_env(password, token), name,
                         self.tell_news)
        self.bots.append(bot)
        self.bot = bot
        bot.start()
        return bot

    def restart_bot(self, delay=0.0):
        """SIGKILL the bot, collect the request log while it is down, start it again."""
        with self.life_lock:
            if self.closed:
                return
            bot = self.bot
            bot.expected_down = True
            try:
                bot.kill()
                self.poll_log(clear=True)
                if delay:
                    time.sleep(delay)
                bot.start()
            finally:
                bot.expected_down = False

    def stop_bot(self, timeout=15):
        """SIGTERM; fails unless the bot exits with status 0."""
        bot = self.bot
        bot.expected_down = True
        rc = bot.terminate(timeout)
        if rc != 0:
            self.fail(f"after SIGTERM the bot exited with status {rc} (expected 0)")
        return rc

    # ---- the request log and "handled" ----------------------------------------------------------

    def poll_log(self, clear=False):
        """Collects new request-log entries into self.log and updates self.max_since.  The
        server's log is cleared when asked, or when it grows and clearing is allowed (the
        log holds 10,000 entries; requests finishing between the GET and the DELETE are lost,
        which only delays a wait)."""
        with self.log_lock:
            try:
                entries = self.server.ok("GET", "/_fake/requests")["requests"]
            except OSError:
                return []          # the fake is down (being restarted)
            if len(entries) < self.log_seen:
                self.log_seen = 0  # the fake restarted: a new, empty log
            new = entries[self.log_seen:]
            self.log_seen = len(entries)
            if clear or (self.clear_log_allowed and len(entries) > 800):
                try:
                    self.server.ok("DELETE", "/_fake/requests")
                    self.log_seen = 0
                except OSError:
                    pass
            for entry in new:
                self.log.append(entry)
                pos = self.since_pos(entry)
                if pos is not None and pos > self.max_since:
                    self.max_since = pos
            return new

    def reset_log(self):
        """Forgets the request log so far (here and on the server): what comes after is
        what the bot does from now on."""
        with self.log_lock:
            self.poll_log(clear=True)
            self.log = []

    def since_pos(self, entry):
        if entry["method"] != "GET" or not entry["path"].startswith(V3 + "/sync"):
            return None
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(entry["path"]).query)
        since = (query.get("since") or [None])[0]
        match = TOKEN_RE.match(since or "")
        if not match or match.group(2) != self.epoch:
            return None
        return int(match.group(1))

    def requests(self, method=None, path_regex=None):
        self.poll_log()
        return [e for e in self.log
                if (method is None or e["method"] == method)
                and (path_regex is None or re.search(path_regex, e["path"]))]

    def wait_handled(self, pos, what, timeout=45):
        """Waits until the bot asked for a /sync with since >= pos: it has durably handled
        every event up to that stream position."""
        self.wait_for(lambda: self.max_since >= pos, timeout,
                      lambda: f"the bot to handle {what} (event at stream position {pos}); "
                              f"the highest since of its /sync requests is {self.max_since}")

    def wait_first_sync(self, timeout=20):
        """Waits until the bot's initial /sync (no since) has been answered."""
        self.wait_for(lambda: self.requests("GET", r"^/_matrix/client/v3/sync(\?(?!.*since=)|$)"),
                      timeout, "the bot's first /sync")

    def stream_position(self):
        return self.server.health()["stream_position"]

    # ---- saying things ---------------------------------------------------------------------------

    def send(self, name, room_id, content, kind="m.room.message", retry_for=20.0):
        """Sends an event as a person; returns (event_id, fake pos).  Retries (same txn id)
        while the fake is down, and when it asks to wait (429), as a client does."""
        self.txn += 1
        txn = f"t{self.txn}"
        path = f"{V3}/rooms/{q(room_id)}/send/{q(kind)}/{txn}"
        deadline = time.monotonic() + retry_for
        before = None
        while True:
            try:
                if before is None:
                    before = self.stream_position()
                resp = self.user_call(name, "PUT", path, content)
                if resp.status != 429 or time.monotonic() > deadline:
                    break
                time.sleep((resp.json or {}).get("retry_after_ms", 100) / 1000)  # rate-limited too
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        if resp.status != 200:
            self.fail(f"{name} could not send to {room_id}: {resp.status} {resp.raw[:300]!r}")
        event_id = resp.json["event_id"]
        after = self.stream_position()
        if after == before + 1:
            return event_id, after
        for event in reversed(self.server.events(room_id)):
            if event["event_id"] == event_id:
                return event_id, event["fake"]["pos"]
        self.fail(f"sent event {event_id} not found in {room_id}")

    def say(self, name, room_id, text, msgtype="m.text"):
        return self.send(name, room_id, {"msgtype": msgtype, "body": text})

    def say_and_wait(self, name, room_id, text, timeout=45):
        event_id, pos = self.say(name, room_id, text)
        self.wait_handled(pos, f"{name}: {text!r}", timeout)
        return event_id, pos

    # ---- direct chats -------------------------------------------------------------------------

    def dm_rooms(self, name, rooms=None):
        """Rooms that are direct chats between the bot and the user (created by either with an
        is_direct invite), oldest first."""
        user = uid(name)
        rooms = rooms if rooms is not None else self.server.rooms()
        found = []
        for room_id, info in rooms.items():
            members = info["members"]
            if BOT_ID not in members or user not in members or len(members) != 2:
                continue
            if room_id not in self.dm_kind:
                events = self.server.events(room_id)
                direct = any(e["type"] == "m.room.member" and e["content"].get("is_direct")
                             and {e["sender"], e.get("state_key")} == {BOT_ID, user}
                             for e in events)
                self.dm_kind[room_id] = (name if direct else None, events[0]["fake"]["pos"])
            if self.dm_kind[room_id][0] == name:
                found.append((self.dm_kind[room_id][1], room_id))
        return [room_id for _, room_id in sorted(found)]

    def dm_room(self, name, timeout=30):
        """The direct chat the bot made for the user, waiting for it and joining it (all of
        the user's DM invites are accepted, so whichever one the bot writes to works)."""
        def ready():
            rooms = self.server.rooms()
            dms = self.dm_rooms(name, rooms)
            for room_id in dms:
                if rooms[room_id]["members"].get(uid(name)) == "invite":
                    self.join(name, room_id)
            return dms[-1] if dms else None
        return self.wait_for(ready, timeout, f"the bot's direct chat with {name}")

    # ---- the script player ----------------------------------------------------------------------

    def play(self, lines, room_id, before_line=None, after_send=None, timeout=45):
        """Says each line (room lines in room_id, private lines in the user's DM with the bot)
        and waits until the bot has handled it.  before_line(i, line) and
        after_send(i, line, pos) let a test inject faults or kills."""
        started = time.monotonic()
        for i, line in enumerate(lines):
            if before_line:
                before_line(i, line)
            target = self.dm_room(line.user) if line.private else room_id
            _, pos = self.say(line.user, target, line.text)
            if after_send:
                after_send(i, line, pos)
            self.wait_handled(pos, f"script line {line.number} ({line})", timeout)
        note(f"played {len(lines)} lines in {time.monotonic() - started:.1f} s")

    # ---- what the bot said ----------------------------------------------------------------------

    def bot_events(self, room_id):
        return [e for e in self.server.events(room_id)
                if e["sender"] == BOT_ID and e["type"] == "m.room.message"]

    def bot_rooms(self):
        """Every room the bot is or was in."""
        return [rid for rid, info in self.server.rooms().items() if BOT_ID in info["members"]]

    def transcript(self, room_id, users=PLAYERS):
        """The bot's messages: the game room's lines, and each user's DM lines (heads
        normalized; from all DMs with that user, in stream order)."""
        out = Transcript(private={u: [] for u in users})
        for event in self.bot_events(room_id):
            out.room.extend(str(event["content"].get("body", "")).split("\n"))
        rooms = self.server.rooms()
        for user in users:
            events = []
            for dm in self.dm_rooms(user, rooms):
                events.extend(self.bot_events(dm))
            events.sort(key=lambda e: e["fake"]["pos"])
            for event in events:
                for line in str(event["content"].get("body", "")).split("\n"):
                    out.private[user].append(normalize_private(line))
        return out

    @staticmethod
    def mismatch(actual, expected):
        """A readable description of the first differences, or None when equal."""
        problems = []
        for name, want in expected.channels(sorted(expected.private)):
            got = actual.room if name == "#room" else actual.private.get(name[1:], [])
            if got == want:
                continue
            diff = list(difflib.unified_diff(want, got, "console (expected)",
                                             "matrix (actual)", n=2, lineterm=""))
            shown = "\n".join(diff[:60]) + ("\n..." if len(diff) > 60 else "")
            problems.append(f"{name}: expected {len(want)} lines, got {len(got)}\n{shown}")
        return "\n\n".join(problems) or None

    @staticmethod
    def prefix_ok(actual, expected):
        """(all channels are a prefix of the expected ones, all are complete)."""
        prefix = complete = True
        for name, want in expected.channels(sorted(expected.private)):
            got = actual.room if name == "#room" else actual.private.get(name[1:], [])
            if got[:len(want)] != want[:len(got)]:
                prefix = False
            if len(got) < len(want):
                complete = False
        return prefix, complete

    def outbox_on_server(self):
        """Whether every message the bot's outbox has not marked sent is on the homeserver
        under its txn id cr<outbox id> (so sending it again is the same event)."""
        db = sqlite3.connect(f"file:{self.bot.db}?mode=ro", uri=True, timeout=30)
        try:
            waiting = {f"cr{row[0]}" for row in db.execute("SELECT id FROM outbox WHERE sent = 0")}
        finally:
            db.close()
        if not waiting:
            return True
        on_server = {e["unsigned"].get("transaction_id") for room_id in self.bot_rooms()
                     for e in self.server.events(room_id) if e["sender"] == BOT_ID}
        return waiting <= on_server

    def last_event_of_others(self):
        """The stream position of the last event in the rooms the bot is in that the bot did
        not send (its own need no handling: what they settle is in its outbox)."""
        rooms = [rid for rid, info in self.server.rooms().items()
                 if info["members"].get(BOT_ID) == "join"]
        return max((e["fake"]["pos"] for room_id in rooms
                    for e in self.server.events(room_id) if e["sender"] != BOT_ID), default=0)

    def wait_quiet(self, what, timeout=60):
        """Waits until nothing more can come from the bot: it has handled every event others
        sent in its rooms and its outbox holds nothing that is not on the homeserver (a bot
        that is not running sends nothing)."""
        if not self.bot.alive():
            return
        self.wait_handled(self.last_event_of_others(), what, timeout)
        self.wait_for(self.outbox_on_server, timeout,
                      f"the bot's outbox to be on the homeserver ({what})")

    def wait_transcript(self, room_id, expected, timeout=30):
        """Waits until the bot has posted at least what is expected and nothing more can come
        (so a late duplicate shows), or something differs, or the time is up; returns the
        transcript (the caller compares it)."""
        deadline = self.deadline(timeout)
        while True:
            seen = self.news_seen()
            actual = self.transcript(room_id, sorted(expected.private))
            prefix, complete = self.prefix_ok(actual, expected)
            if not prefix:
                return actual
            if complete:
                break
            self.check_bot()
            if not self.await_news(seen, deadline):
                return actual
        self.wait_quiet("its messages", timeout)
        return self.transcript(room_id, sorted(expected.private))

    def assert_transcript(self, room_id, expected, timeout=30):
        actual = self.wait_transcript(room_id, expected, timeout)
        problem = self.mismatch(actual, expected)
        if problem:
            self.fail("the bot's messages differ from the console's:\n" + problem)
        return actual

    def event_problems(self, room_ids):
        """Every bot event must be an m.notice with HTML, sent with a txn id cr<N> that is
        used once (so no message was posted twice under two txn ids, or twice at all)."""
        problems = []
        seen = {}
        for room_id in room_ids:
            for event in self.server.events(room_id):
                if event["sender"] != BOT_ID or "state_key" in event:
                    continue       # room state the bot set up (its DMs, its membership)
                content = event["content"]
                where = f"{room_id} pos {event['fake']['pos']} {content.get('body', '')[:60]!r}"
                if event["type"] != "m.room.message":
                    problems.append(f"unexpected event type {event['type']} at {where}")
                    continue
                if content.get("msgtype") != "m.notice":
                    problems.append(f"msgtype {content.get('msgtype')!r} at {where}")
                if content.get("format") != "org.matrix.custom.html":
                    problems.append(f"format {content.get('format')!r} at {where}")
                if not isinstance(content.get("formatted_body"), str) or not content[
                        "formatted_body"]:
                    problems.append(f"no formatted_body at {where}")
                txn = event["unsigned"].get("transaction_id")
                if not isinstance(txn, str) or not BOT_TXN_RE.match(txn):
                    problems.append(f"txn id {txn!r} is not cr<N> at {where}")
                elif txn in seen:
                    problems.append(f"txn id {txn} used twice: at {seen[txn]} and at {where}")
                else:
                    seen[txn] = where
        return problems


class Killer(threading.Thread):
    """Kills the bot with SIGKILL when asked (after a delay) and restarts it on the same DB."""

    def __init__(self, harness):
        super().__init__(daemon=True)
        self.harness = harness
        self.requests = queue.Queue()
        self.kills = 0
        self.error = None

    def request(self, delay, restart_delay):
        self.requests.put((delay, restart_delay))

    def run(self):
        while True:
            item = self.requests.get()
            try:
                if item is None:
                    return
                delay, restart_delay = item
                if delay:
                    time.sleep(delay)
                self.harness.restart_bot(restart_delay)
                self.kills += 1
            except BaseException as exc:      # reported by the test after join()
                self.error = exc
            finally:
                self.requests.task_done()

    def finish(self):
        self.requests.join()
        self.requests.put(None)
        self.join(10)
