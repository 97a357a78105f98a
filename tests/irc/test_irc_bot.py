"""End-to-end tests of cardroom's IRC adapter against real IRC servers (tests/irc/ircservers.py).

The bot (`cardroom run`) connects to ngircd or to inspircd linked with anope services, and test
clients play people:

  * a whole four-person 304 match (tests/matrix/match-seed1.txt) in a channel over TLS: what the
    bot says in the channel and privately to each player must be exactly what `cardroom console
    --script --seed 1` prints for the same lines (colours stripped, and long lines allowed to be
    split), no hand ever appears in the channel, and every line the bot sends fits 512 bytes;
    the same for the whole six-person match of tests/console/six-match.txt;
  * the server killed and restarted mid-match: the bot reconnects, rejoins and the match goes on
    to the same end;
  * the order across destinations: each player gets the room's lines and his own private ones
    in the order the console prints them (the deal before his cards);
  * long output with multibyte text splits into whole characters within the limit; at 160-byte
    lines ([irc] line_bytes) a four-card hand is one line and no word is cut, on both servers;
  * wrong TLS settings (TLS to a plain port, a self-signed certificate without tls_ca, plain text
    to a TLS port) are logged as errors that name the setting, with a growing pause;
  * !help in the channel: one line there, the list of commands to the asker as private NOTICEs;
  * flood control: with inspircd set to kill a client that sends too fast ("Excess Flood"), the
    bot paced by its token bucket survives a burst of output, and the same bot without pacing
    is killed (so the test can fail);
  * SASL login to the bot's services account, account-based identity: a player who changes nick
    keeps his seat, and somebody else taking his old nick does not get it;
  * a player with +g is told in the channel how to accept the bot's private messages;
  * players who drop off (two quit, two lose their connection): their seats wait the grace
    before they are away, then the table, with nobody left to play, pauses and says so once, and
    goes on when one of them comes back;
  * without services (ngircd) a seat is bound to the nick and the user@host its player sat down
    from: his seat follows his nick change, and a client from another user@host under the
    seat's nick gets no cards, is refused, and its quit does not make the seat away.

Ordering: each scripted line is sent by its client followed by a PING to the server; the PONG
comes after the server has handled (and relayed to the bot) the line, so lines reach the bot in
script order even though they come from four connections.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "matrix"))

import ircservers  # noqa: E402
from ircservers import Client, InspircdServer, NgircdServer  # noqa: E402
import harness as mh  # noqa: E402  (the match script and the console reference)

PLAYERS = ("alice", "bob", "carol", "dave")
SIX_PLAYERS = ("alice", "bob", "carol", "dave", "erin", "frank")
SIX_SCRIPT = os.path.join(REPO, "tests", "console", "six-match.txt")
HINT_SCRIPT = os.path.join(REPO, "tests", "console", "hint-review.txt")
CHANNEL = "#cards"
COLOUR_RE = re.compile(r"\x03(\d{1,2}(,\d{1,2})?)?|[\x02\x0f\x1d\x1f\x16]")
BOT_TIMEOUT = 60


def bot_binary():
    return os.environ.get("CARDROOM_BIN") or os.path.join(REPO, "build", "cardroom")


def plain(text):
    return COLOUR_RE.sub("", text)


def console_order(lines):
    """What `cardroom console --script --seed 1` prints for the script lines, in its order, as
    (destination, text): "#" for the room, "@user" for a private line (heads normalised)."""
    with tempfile.TemporaryDirectory(prefix="cardroom-order-") as work:
        config = os.path.join(work, "console.ini")
        with open(config, "w", encoding="utf-8") as f:
            f.write(mh.TIMERS)
        out = subprocess.run([bot_binary(), "console", "--script", "--seed", "1", "--config", config],
                             input=mh.script_text(lines), capture_output=True, text=True, cwd=work,
                             timeout=120, check=True).stdout
    order = []
    for line in out.splitlines():
        m = re.match(r"^\[(#room|@[^\]]+)\] (.*)$", line)
        order.append(("#", m.group(2)) if m.group(1) == "#room" else (m.group(1), mh.normalize_private(m.group(2))))
    return order


def words_in_order(entries):
    """(destination, word) for every word of (destination, text) entries: equal for a text and the
    same text split into shorter lines between words, different when a word is cut."""
    return [(dest, word) for dest, text in entries for word in text.split()]


def bot_lines(client, bot_nick="cardroom"):
    """The bot's lines as client got them, in order: ("#", text) from the channel, ("@nick", text)
    privately (colours stripped, heads normalised)."""
    got = []
    for m in client.received:
        if m.nick != bot_nick or m.command not in ("PRIVMSG", "NOTICE") or len(m.params) != 2:
            continue
        if m.params[0].lower() == CHANNEL:
            got.append(("#", plain(m.params[1])))
        elif not m.params[0].startswith("#"):
            got.append(("@" + client.name, mh.normalize_private(plain(m.params[1]))))
    return got


def wait_log(bot, pattern, count=1, timeout=90):
    """Waits until the bot's log holds count lines matching pattern (each line read without the time
    it starts with), looking again at each line the bot writes; returns the matches."""
    def found():
        return re.findall(pattern, mh.LOG_STAMP.sub("", bot.log_text()), re.M)
    with bot.lines:
        if not bot.lines.wait_for(lambda: len(found()) >= count or bot.output_ended, timeout) \
                or len(found()) < count:
            raise AssertionError("%d of %d log lines like %r (bot %s)\n%s" % (
                len(found()), count, pattern, "exited" if bot.proc.poll() is not None else "running",
                bot.tail()))
        return found()


def check_short_lines(test, people, order, limit):
    """Waits for the bot's lines of the console order at line_bytes = limit and checks them: every
    line fits limit bytes, no word is cut, a four-card hand is one line."""
    for name, c in people.items():
        want = words_in_order([e for e in order if e[0] in ("#", "@" + name)])
        try:
            c.wait_until(lambda: words_in_order(bot_lines(c)) == want, 120, "the bot's lines for " + name)
        except ircservers.ClientError:
            test.assertEqual(words_in_order(bot_lines(c)), want, "words of the bot's lines for " + name)
        for m in c.received:
            if m.nick == "cardroom" and m.command in ("PRIVMSG", "NOTICE"):
                test.assertLessEqual(len(m.raw.encode("utf-8")) + 2, limit, m.raw)
        hand = [text for dest, text in bot_lines(c) if "Your first four cards:" in text]
        test.assertEqual(hand, [text for dest, text in order if dest == "@" + name and "Your first four cards:" in text],
                         "the hand of %s in one line" % name)
    rules = [text for dest, text in bot_lines(people["alice"]) if "scoring=" in text]
    test.assertTrue(rules and "scoring=transfer," in rules[0].split(), rules)


def check_tls_errors(test, plain_port, untrusted, tls_port):
    """The three bots' logs name what is wrong and the setting that fixes it, at error level, and
    the pause before each new attempt grows."""
    again = r"; connecting again in (\d+\.\d) s$"
    found = wait_log(untrusted, r"^cardroom: error: irc: the server's certificate is not trusted "
                                r"\(self-signed certificate\): .* in \[irc\] tls_ca \(tls_verify = false .*\)" + again, 3)
    pauses = [float(x) for x in found]
    test.assertTrue(pauses[0] < pauses[1] < pauses[2], pauses)
    wait_log(tls_port, r"^cardroom: error: irc: .* before the server said a word: if port \d+ is a TLS port, "
                       r"set \[irc\] tls = true" + again)
    wait_log(plain_port, r"^cardroom: error: irc: .*: it may be a plain-text port; set \[irc\] tls = false for "
                         r"it, or port to the server's TLS port \(often 6697\)" + again)
    for bot in (plain_port, untrusted, tls_port):
        test.assertIsNone(bot.proc.poll(), "the bot keeps trying")
        test.assertEqual(bot.stop(), 0, bot.tail())


def squash(lines):
    """The words of a list of lines, without any whitespace: equal for a text and the same text
    split into shorter lines at spaces.  A hint to write privately is normalized here too, as
    mh.normalize_private does for a whole line: a split line may cut it in two."""
    text = "".join("".join(line.split()) for line in lines)
    return re.sub(r"privately\((?:with/msg[^)]*|inyourdirectchatwithme)\)", "privately(HOW)", text)


class Bot:
    """One `cardroom run` process on an IRC server."""

    def __init__(self, workdir, settings, env=None, timers=""):
        self.workdir = workdir
        self.config = os.path.join(workdir, "cardroom.ini")
        self.db = os.path.join(workdir, "cardroom.db")
        self.log = os.path.join(workdir, "bot.log")
        self.env = dict(os.environ)
        self.env.update(env or {})
        with open(self.config, "w", encoding="utf-8") as f:
            f.write("[bot]\nlog_level = debug\nrate_commands = 0\n" + mh.TIMERS + timers + "[irc]\n")  # scripts run faster than people
            for key, value in settings.items():
                f.write(f"{key} = {value}\n")
        self.proc = None
        self.lines = threading.Condition()  # notified at each line of output and at its end
        self.output_ended = False
        self.copier = None

    def start(self):
        read_end, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen([bot_binary(), "run", "--config", self.config, "--db", self.db,
                                          "--seed", "1"], stdin=subprocess.DEVNULL, stdout=write_end,
                                         stderr=write_end, env=self.env, cwd=self.workdir)
        finally:
            os.close(write_end)
        self.output_ended = False
        # the log is opened here, not in the copier: a wait that reads it may come before the
        # copier thread has run at all
        log = open(self.log, "ab")
        self.copier = threading.Thread(target=self.copy_output, args=(os.fdopen(read_end, "rb"), log), daemon=True)
        self.copier.start()
        return self

    def copy_output(self, pipe, log):
        """Copies the bot's output to its log file line by line, waking the waits on each."""
        with pipe, log:
            for line in pipe:
                log.write(line)
                log.flush()
                with self.lines:
                    self.lines.notify_all()
        with self.lines:
            self.output_ended = True
            self.lines.notify_all()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.copier:
            self.copier.join()
        return self.proc.returncode if self.proc else None

    def tail(self, n=40):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def log_text(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()


class IrcTestCase(unittest.TestCase):
    server = None
    pace = 0.0  # seconds between a client's commands (a server that kills floods needs some)

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="cardroom-irc-")
        self.bots = []
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            try:
                c.close()
            except Exception:
                pass
        for b in self.bots:
            b.stop()
        if self._outcome_failed():
            for b in self.bots:
                sys.stderr.write("---- bot log tail ----\n" + b.tail(60))
            if self.server:
                sys.stderr.write("---- server log tail ----\n" + self.server.tail(30))

    def _outcome_failed(self):
        outcome = getattr(self, "_outcome", None)
        result = getattr(outcome, "result", None)
        if result is None:
            return False
        return any(t is self for t, _ in result.failures + result.errors)

    def bot(self, settings, env=None, name=None, timers=""):
        workdir = self.work
        if name:  # several bots at once, each with its own config, database and log
            workdir = os.path.join(self.work, name)
            os.makedirs(workdir)
        b = Bot(workdir, settings, env, timers)
        self.bots.append(b)
        return b.start()

    def client(self, nick, **kw):
        kw.setdefault("timeout", 20)
        c = Client(self.server.host, kw.pop("port", self.server.port), nick, **kw)
        self.clients.append(c)
        return c

    def wait_bot_in(self, c, channel=CHANNEL, nick="cardroom"):
        c.wait_nick_in_channel(channel, nick, timeout=BOT_TIMEOUT)

    def sync(self, c):
        """Returns once the server has handled everything c sent before."""
        token = "sync%d" % time.monotonic_ns()
        c.send("PING :" + token)
        c.read_until(lambda m: m.command == "PONG" and m.params and m.params[-1] == token, timeout=30)

    def say(self, c, target, text):
        if self.pace:
            time.sleep(self.pace)
        c.privmsg(target, text)
        self.sync(c)


# ---- the match over ngircd ---------------------------------------------------------------------------


class MatchOnNgircd(IrcTestCase):
    """The whole scripted match on ngircd over TLS, with and without a server restart."""

    def setUp(self):
        super().setUp()
        self.server = NgircdServer(tls=True).start()

    def tearDown(self):
        super().tearDown()
        self.server.cleanup(kill=True)

    def settings(self, **extra):
        s = {"server": "localhost", "port": self.server.tls_port, "tls": "true",
             "tls_ca": self.server.cert_path, "nick": "cardroom", "channels": CHANNEL,
             "flood_burst": 10, "flood_interval_ms": 5, "ping_interval": 30, "ping_timeout": 10}
        s.update(extra)
        return s

    def players(self, names=PLAYERS):
        people = {}
        for name in names:
            c = self.client(name)
            c.join(CHANNEL)
            people[name] = c
        return people

    def play(self, people, lines, bot_nick="cardroom", on_line=None):
        for i, line in enumerate(lines):
            target = bot_nick if line.private else CHANNEL
            if on_line:
                on_line(i)
            self.say(people[line.user], target, line.text)

    def transcript(self, people, watcher):
        room = [plain(m.params[1]) for m in watcher.received
                if m.command == "NOTICE" and m.nick == "cardroom" and len(m.params) == 2
                and m.params[0].lower() == CHANNEL]
        private = {}
        for name, c in people.items():
            private[name] = [mh.normalize_private(plain(m.params[1])) for m in c.received
                             if m.command == "PRIVMSG" and m.nick == "cardroom" and len(m.params) == 2
                             and not m.params[0].startswith("#")]
        return room, private

    def wait_transcript(self, people, watcher, ref, timeout=120):
        want_room = squash(ref.room)
        want_private = {u: squash(ref.private.get(u, [])) for u in people}
        deadline = time.monotonic() + timeout
        waits = [(watcher, lambda: squash(self.transcript({}, watcher)[0]) == want_room, "the channel")]
        waits += [(c, lambda u=u, c=c: squash(self.transcript({u: c}, watcher)[1][u]) == want_private[u],
                   "the lines to " + u) for u, c in people.items()]
        try:
            for c, done, what in waits:
                c.wait_until(done, max(0.0, deadline - time.monotonic()), what)
        except ircservers.ClientError:
            pass
        room, private = self.transcript(people, watcher)
        got_room = squash(room)
        got_private = {u: squash(private[u]) for u in people}
        if got_room == want_room and got_private == want_private:
            return room, private
        import difflib
        diff = "\n".join(list(difflib.unified_diff(ref.room, room, "console", "irc", lineterm=""))[:60])
        for u in people:
            if got_private[u] != want_private[u]:
                diff += "\n" + "\n".join(list(difflib.unified_diff(
                    ref.private.get(u, []), private[u], "console @" + u, "irc @" + u, lineterm=""))[:40])
        self.fail("the bot's lines differ from the console's:\n" + diff)

    def check_lines(self, people, room, private):
        # No hand in the channel: private heads name the table; the channel never gets them.
        for line in room:
            self.assertNotRegex(line, r"· table \d+\] ", "a private line in the channel")
        for c in people.values():
            for m in c.received:
                if m.nick == "cardroom" and m.command in ("PRIVMSG", "NOTICE"):
                    # ":cardroom!~user@host CMD target :text" must fit 512 bytes with CR LF
                    self.assertLessEqual(len(m.raw.encode("utf-8")) + 2, 512, m.raw)

    def whole_match(self, lines, names=PLAYERS):
        """The script's lines said by the players of names to the bot over TLS: the channel and
        each player hear exactly what the console prints, no hand in the channel, every line
        fits 512 bytes.  Returns (bot, people, the channel's lines)."""
        ref = mh.console_reference(lines)
        bot = self.bot(self.settings())
        people = self.players(names)
        for c in people.values():
            self.wait_bot_in(c)
        self.play(people, lines)
        room, private = self.wait_transcript(people, people["alice"], ref)
        self.check_lines(people, room, private)
        # Across destinations too, each player hears the bot in the order the console prints:
        # the deal in the channel before his cards, his cards before the next turn's prompt.
        order = console_order(lines)
        for name, c in people.items():
            self.assertTrue(ref.private.get(name), "no private line for " + name)
            want = words_in_order([e for e in order if e[0] in ("#", "@" + name)])
            self.assertEqual(words_in_order(bot_lines(c)), want, "order of the bot's lines for " + name)
        return bot, people, room

    def test_whole_match_over_tls(self):
        bot, people, _ = self.whole_match(mh.read_script())
        # Red suits are coloured on the wire.
        raw = [m.params[1] for m in people["alice"].received if m.command == "NOTICE" and m.nick == "cardroom"]
        self.assertTrue(any("\x0304♥" in t or "\x0304♦" in t for t in raw), "no red suit in the channel")
        self.assertFalse(any("\x0304♠" in t or "\x0304♣" in t for t in raw))
        self.assertEqual(bot.stop(), 0, bot.tail())
        log = bot.log_text()
        self.assertIn("TLS up", log)
        self.assertRegex(log, r"time per command line p50 \d+ us, p99 \d+ us")

    def test_six_player_match_over_tls(self):
        """The six-person match: the channel and each of the six players hear exactly what the
        console prints, in its order; no hand in the channel; every line fits 512 bytes."""
        bot, _, room = self.whole_match(mh.read_script(SIX_SCRIPT), SIX_PLAYERS)
        self.assertTrue(any(line.startswith("Match over: ") for line in room))
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_hints_privately_and_the_review_in_the_channel(self):
        """tests/console/hint-review.txt: each hint reaches its asker by private message and never
        the channel; the review of a hand during the match and of its last hand after its end are
        posted in the channel, once each; all as the console says."""
        bot, people, room = self.whole_match(mh.read_script(HINT_SCRIPT))
        self.assertEqual([line for line in room if "hint: " in line], [], "a hint in the channel")
        _, private = self.transcript(people, people["alice"])
        hints = [line for name in people for line in private[name] if "hint: " in line]
        self.assertEqual(len(hints), 3, hints)
        self.assertEqual(len([line for line in room if line.startswith("Review of hand ")]), 2)
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_server_killed_and_restarted_mid_match(self):
        lines = mh.read_script()
        ref = mh.console_reference(lines)
        bot = self.bot(self.settings())
        people = self.players()
        for c in people.values():
            self.wait_bot_in(c)
        cut = len(lines) // 2
        self.play(people, lines[:cut])
        self.wait_transcript(people, people["alice"], mh.console_reference(lines[:cut]))
        before = {u: list(c.received) for u, c in people.items()}
        self.server.kill()
        time.sleep(1.0)
        self.server.restart()
        # Everybody reconnects (new connections) and the bot comes back by itself.
        people2 = {}
        for name in PLAYERS:
            c = self.client(name)
            c.join(CHANNEL)
            people2[name] = c
        for c in people2.values():
            self.wait_bot_in(c)
        self.play(people2, lines[cut:])
        # Before the kill + after the restart = the whole console transcript.
        class Merged:
            def __init__(self, old, new):
                self.old, self.new = old, new

            @property
            def received(self):
                return self.old + list(self.new.received)

            def wait_until(self, predicate, timeout, what):
                return self.new.wait_until(predicate, timeout, what)

        merged = {u: Merged(before[u], c) for u, c in people2.items()}
        self.wait_transcript(merged, merged["alice"], ref, timeout=180)
        self.assertEqual(bot.stop(), 0, bot.tail())
        log = bot.log_text()
        self.assertRegex(log, r"connecting again in \d+\.\d s")
        self.assertGreaterEqual(log.count("irc: registered as cardroom"), 2)

    def said(self, c, text, start):
        """The bot's first channel notice from index start on that contains text."""
        return c.read_until(lambda m: m.command == "NOTICE" and m.nick == "cardroom" and len(m.params) == 2
                            and text in plain(m.params[1]), timeout=BOT_TIMEOUT, start=start)

    def four_at_a_match(self):
        """The four players at a started 304 table, and a watcher in the channel; alice to bid."""
        watcher = self.client("watcher")
        watcher.join(CHANNEL)
        people = self.players()
        for c in people.values():
            self.wait_bot_in(c)
        self.say(people["alice"], CHANNEL, "!new 304")
        for name in PLAYERS:
            self.say(people[name], CHANNEL, "!join")
        self.say(people["alice"], CHANNEL, "!start")
        self.said(watcher, "alice (South) to bid", 0)
        return watcher, people

    def test_players_who_drop_off_keep_their_seats_then_the_table_pauses(self):
        grace = 4
        self.bot(self.settings(), timers="leave_grace = %d\n" % grace)
        watcher, people = self.four_at_a_match()
        start = len(watcher.received)
        # Two quit; two lose their connection, and the server says they quit.
        people["alice"].quit("off for tea")
        people["bob"].quit("bye")
        people["carol"].close()
        people["dave"].close()
        left = {}
        for name in PLAYERS:
            left[name] = watcher.read_until(lambda m, name=name: m.command == "QUIT" and m.nick == name,
                                            timeout=BOT_TIMEOUT, start=start).time
        # Each seat waits the grace (the watcher heard the QUIT when the bot did, give or take).
        for name, seat in zip(PLAYERS, ("South", "East", "North", "West")):
            away = self.said(watcher, "%s (%s) is away" % (name, seat), start)
            self.assertGreaterEqual(away.time - left[name], grace - 0.5, "%s was away before the grace" % name)
        pause = self.said(watcher, "Table 1 pauses: all its players are away.", start)
        # bob comes back: the table goes on up to his turn (the computers act for the seats that
        # were away before his, if any); he acts and the computers act for the others. Which turn
        # is his depends on how far the computers bid before all four were away (the seats go
        # away one by one): his bid, or, when the others passed a bid made for him, the indicator.
        bob = self.client("bob")
        bob.join(CHANNEL)
        self.say(bob, CHANNEL, "!back")
        back = self.said(watcher, "bob (East) is back.", start)
        self.assertGreater(back.time, pause.time)
        acted = self.said(watcher, "bob (East) to ", watcher.received.index(back))
        while "bob (East) to " in plain(acted.params[1]):
            said = plain(acted.params[1])
            if "bob (East) to bid" in said:
                self.assertIn("pass", said.split("bob (East) to bid", 1)[1])
                self.say(bob, CHANNEL, "!pass")
                acted = self.said(watcher, "bob (East) passes", watcher.received.index(acted) + 1)
            else:
                self.assertIn("bob (East) to choose the indicator", said)
                ask = bob.read_until(lambda m: m.command in ("PRIVMSG", "NOTICE") and m.nick == "cardroom"
                                     and m.params[0] == "bob" and "Choose the indicator" in plain(m.params[1]),
                                     timeout=BOT_TIMEOUT)
                # The hand is grouped by suit ("♠ A K · ♦ 9 7"): its first suit and that suit's first rank.
                suit, rank = plain(ask.params[1]).split("Your hand: ", 1)[1].split()[:2]
                self.say(bob, "cardroom", "trump " + rank + {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}[suit])
                acted = self.said(watcher, "bob (East) places the indicator", watcher.received.index(acted) + 1)
        watcher.read_until(lambda m: m.command == "NOTICE" and m.nick == "cardroom" and len(m.params) == 2
                           and re.match(r"\w+ \(\w+, away\) (passes|bids|plays|leads)", plain(m.params[1])),
                           timeout=BOT_TIMEOUT, start=watcher.received.index(acted) + 1)
        notices = [plain(m.params[1]) for m in watcher.received[start:]
                   if m.command == "NOTICE" and m.nick == "cardroom" and len(m.params) == 2]
        self.assertEqual(sum("pauses" in n for n in notices), 1, "\n".join(notices))

    def hand_for(self, c, nick, start):
        """The bot's first private message to nick from index start on that comes from table 1."""
        return c.read_until(lambda m: m.command == "PRIVMSG" and m.nick == "cardroom" and m.params[0] == nick
                            and "· table 1] " in plain(m.params[1]), timeout=BOT_TIMEOUT, start=start)

    def test_a_seat_is_bound_to_the_nick_and_address_it_was_taken_from(self):
        # No grace: a leave the bot took for the seat's would make it away at once.
        bot = self.bot(self.settings(), timers="leave_grace = 0\n")
        watcher, people = self.four_at_a_match()
        # bob becomes robert in the channel: the seat follows him.
        bob = people["bob"]
        bob.nick("robert")
        start = len(bob.received)
        self.say(bob, "cardroom", "!hand")
        self.hand_for(bob, "robert", start)
        # While the bot is down he becomes bobby, unseen; back up, the seat is still robert's.
        self.assertEqual(bot.stop(), 0, bot.tail())
        bob.nick("bobby")
        bot.start()
        self.wait_bot_in(watcher)
        # eve takes the nick robert from another user@host: no cards, refused, her quit changes nothing.
        eve = self.client("robert", username="eve")
        start = len(eve.received)
        self.say(eve, "cardroom", "!hand")
        m = eve.read_until(lambda m: m.nick == "cardroom" and m.command == "PRIVMSG", timeout=BOT_TIMEOUT, start=start)
        self.assertIn("not sitting at a table", plain(m.params[1]))
        mark = len(watcher.received)
        eve.join(CHANNEL)
        self.say(eve, CHANNEL, "!hand")
        refused = self.said(watcher, "robert: you are not the robert who sits at East", mark)
        self.say(eve, CHANNEL, "!pass")
        self.said(watcher, "robert: you are not the robert who sits at East", watcher.received.index(refused) + 1)
        eve.quit("bye")
        watcher.read_until(lambda m: m.command == "QUIT" and m.nick == "robert", timeout=BOT_TIMEOUT, start=mark)
        # The bot handles the QUIT before bobby's line after it, so its answer comes after any away notice.
        self.say(bob, CHANNEL, "!table")
        answer = self.said(watcher, "Dealer: ", mark)
        for m in watcher.received[mark:watcher.received.index(answer)]:
            if m.command == "NOTICE" and m.nick == "cardroom":
                self.assertNotIn("is away", plain(m.params[1]))
        self.assertFalse([m for m in eve.received if m.command == "PRIVMSG" and "· table 1] " in plain(m.params[1])],
                         "eve got a private message of the table")
        # bobby takes the nick robert back (seen): from his own address the seat is his again.
        bob.nick("robert")
        start = len(bob.received)
        self.say(bob, "cardroom", "!hand")
        self.hand_for(bob, "robert", start)
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_expert_computer_players_and_the_level_option(self):
        """!set level: a wrong level is refused with the three names, expert is taken and shown by
        !rules; three expert computer players bid around alice, and the table answers her between
        their moves."""
        self.bot(self.settings())
        watcher = self.client("watcher")
        watcher.join(CHANNEL)
        alice = self.client("alice")
        alice.join(CHANNEL)
        self.wait_bot_in(alice)
        for line in ("!new 304", "!join", "!bot", "!bot", "!bot", "!set level strong"):
            self.say(alice, CHANNEL, line)
        mark = watcher.received.index(
            self.said(watcher, "alice: option level is one of easy, normal, expert, not 'strong'", 0))
        self.say(alice, CHANNEL, "!set level expert")
        mark = watcher.received.index(self.said(watcher, "Option level is now expert.", mark))
        self.say(alice, CHANNEL, "!rules")
        mark = watcher.received.index(self.said(watcher, ", level=expert, hints=off (", mark))
        self.say(alice, CHANNEL, "!start")
        turn = self.said(watcher, "alice (South) to bid", mark)
        self.say(alice, CHANNEL, "!table")
        self.said(watcher, "Dealer: ", watcher.received.index(turn))
        self.say(alice, CHANNEL, "!pass")
        after = watcher.received.index(self.said(watcher, "alice (South) passes", mark))
        self.said(watcher, "computer ", after)

    def test_help_list_goes_as_private_notices(self):
        """!help in the channel: one line there, and the list of commands to the asker by private
        NOTICE (only for reading, never answered automatically), exactly the console's words."""
        ref = mh.console_reference(mh.parse_script("alice> !help\n"))
        self.assertEqual(len(ref.room), 1)
        self.assertGreater(len(ref.private["alice"]), 20)
        self.bot(self.settings())
        alice = self.client("alice")
        alice.join(CHANNEL)
        self.wait_bot_in(alice)
        self.say(alice, CHANNEL, "!help")
        alice.wait_privmsg(sender="cardroom", target="alice", command="NOTICE",
                           text=ref.private["alice"][-1], timeout=BOT_TIMEOUT)
        mine = [m for m in alice.received if m.nick == "cardroom" and len(m.params) == 2
                and m.params[0].lower() == "alice"]
        self.assertEqual([m.command for m in mine], ["NOTICE"] * len(mine), "the list went as PRIVMSG")
        self.assertEqual([mh.normalize_private(plain(m.params[1])) for m in mine], ref.private["alice"])
        room = [plain(m.params[1]) for m in alice.received if m.nick == "cardroom" and m.command == "NOTICE"
                and len(m.params) == 2 and m.params[0].lower() == CHANNEL]
        self.assertEqual(room, ref.room)

    def test_long_multibyte_output_is_split_whole(self):
        # The bot's longest lines (~270 bytes) fit IRC's 512; a network that relays only 200-byte
        # lines ([irc] line_bytes) makes it split real output full of suits and names (and the
        # rules, whose lines are the longest).
        lines = mh.read_script(limit=40) + mh.parse_script("bob> !rules\n")
        ref = mh.console_reference(lines)
        bot = self.bot(self.settings(line_bytes=200))
        people = self.players()
        for c in people.values():
            self.wait_bot_in(c)
        self.play(people, lines)
        room, private = self.wait_transcript(people, people["alice"], ref)
        sent = [m for c in people.values() for m in c.received
                if m.nick == "cardroom" and m.command in ("PRIVMSG", "NOTICE")]
        for m in sent:
            self.assertLessEqual(len(m.raw.encode("utf-8")) + 2, 200, m.raw)
            self.assertNotIn("\ufffd", m.raw)  # whole characters only (the client decodes with "replace")
        # More lines on IRC than on the console: some were split, and the words are all there.
        split = len(room) - len(ref.room) + sum(len(private[u]) - len(ref.private.get(u, [])) for u in PLAYERS)
        self.assertGreater(split, 0)
        self.assertTrue(any(ord(ch) > 127 for line in room for ch in line))
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_lines_of_160_bytes(self):
        # The bot counts its own prefix as the server shows it (its JOIN), not the longest one
        # possible: a four-card hand is one line at 160 bytes, and lines break between words.
        lines = mh.read_script(limit=12) + mh.parse_script("alice> !rules\n")
        order = console_order(lines)
        bot = self.bot(self.settings(line_bytes=160))
        people = self.players()
        for c in people.values():
            self.wait_bot_in(c)
        self.play(people, lines)
        check_short_lines(self, people, order, 160)
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_wrong_tls_settings_are_errors_that_name_the_setting(self):
        host = "localhost"  # the certificate's name: only trust is missing
        plain_port = self.bot({"server": host, "port": self.server.port, "tls": "true", "nick": "cardroom"},
                              name="plain-port")
        untrusted = self.bot({"server": host, "port": self.server.tls_port, "tls": "true", "nick": "cardroom"},
                             name="untrusted")
        tls_port = self.bot({"server": host, "port": self.server.tls_port, "tls": "false", "nick": "cardroom"},
                            name="tls-port")
        check_tls_errors(self, plain_port, untrusted, tls_port)


# ---- accounts, +g, flood on inspircd + anope ---------------------------------------------------------


class OnInspircd(IrcTestCase):
    """inspircd linked with anope: SASL, accounts, +g, and flood limits that kill."""

    pace = 0.5  # PRIVMSG + PING each time: 4 commands/s, under the 5/s the server allows

    @classmethod
    def setUpClass(cls):
        cls.server = InspircdServer(tls=True, services=True, threshold=10, commandrate=5000, fakelag=False).start()
        cls.server.wait_services()
        cls.server.register_account("cardroom", "bot-account-pw")
        for name in ("alice", "bob", "carol"):
            cls.server.register_account(name, name + "-pw-304")

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup(kill=True)

    def tearDown(self):
        # The class's server outlives each test; do not print its tail for every failure twice.
        super().tearDown()

    def settings(self, **extra):
        s = {"server": "127.0.0.1", "port": self.server.tls_port, "tls": "true",
             "tls_ca": self.server.cert_path, "nick": "cardroom", "channels": CHANNEL,
             "account": "cardroom", "login": "sasl",
             "flood_burst": 4, "flood_interval_ms": 300, "ping_interval": 30, "ping_timeout": 10}
        s.update(extra)
        return s

    def sasl_client(self, name, nick=None):
        c = self.client(nick or name, caps=("account-tag", "extended-join", "account-notify", "message-tags"),
                        sasl=(name, name + "-pw-304"), strict_caps=False)
        return c

    def test_sasl_login_and_identity_follows_the_account(self):
        bot = self.bot(self.settings(), env={"CARDROOM_IRC_PASSWORD": "bot-account-pw"})
        alice = self.sasl_client("alice")
        bob = self.sasl_client("bob")
        alice.join(CHANNEL)
        bob.join(CHANNEL)
        self.wait_bot_in(alice)
        self.say(alice, CHANNEL, "!new 304")
        self.say(alice, CHANNEL, "!join")
        self.say(bob, CHANNEL, "!join")
        self.say(alice, CHANNEL, "!bot")
        self.say(alice, CHANNEL, "!bot")
        self.say(alice, CHANNEL, "!start")
        bob.read_until(lambda m: m.command == "PRIVMSG" and m.nick == "cardroom" and "· table 1] " in plain(m.params[1]),
                       timeout=30)
        # Bob becomes Robert: same account, same seat; his hand follows him to the new nick.
        bob.nick("Robert")
        start = len(bob.received)
        self.say(bob, "cardroom", "!hand")
        bob.read_until(lambda m: m.command == "PRIVMSG" and m.nick == "cardroom" and m.params[0] == "Robert"
                       and "· table 1] " in plain(m.params[1]), timeout=30, start=start)
        # Someone else takes the nick bob without the account: not at the table.
        eve = self.client("bob")
        eve.join(CHANNEL)
        start = len(eve.received)
        self.say(eve, "cardroom", "!hand")
        m = eve.read_until(lambda m: m.nick == "cardroom" and m.command == "PRIVMSG", timeout=30, start=start)
        self.assertIn("not sitting at a table", plain(m.params[1]))
        log = bot.log_text()
        self.assertIn("logged in to the account cardroom", log)
        self.assertNotIn("bot-account-pw", log)
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_wrong_sasl_password_stops_with_status_2(self):
        bot = self.bot(self.settings(), env={"CARDROOM_IRC_PASSWORD": "not the password"})
        bot.proc.wait(60)
        self.assertEqual(bot.proc.returncode, 2, bot.tail())
        self.assertIn("SASL login as cardroom refused", bot.log_text())
        self.assertNotIn("not the password", bot.log_text())

    def test_plus_g_player_is_told_how_to_accept(self):
        bot = self.bot(self.settings(login="none", nick="cardroom2"))
        carol = self.client("carol")
        carol.join(CHANNEL)
        carol.mode("carol", "+g")
        self.wait_bot_in(carol, nick="cardroom2")
        self.say(carol, CHANNEL, "!new 304")
        self.say(carol, CHANNEL, "!join")
        for _ in range(3):
            self.say(carol, CHANNEL, "!bot")
        self.say(carol, CHANNEL, "!start")
        hint = carol.read_until(lambda m: m.command == "NOTICE" and m.nick == "cardroom2"
                                and "/accept cardroom2" in plain(m.params[1]), timeout=30)
        self.assertIn("+g", plain(hint.params[1]))
        # Once accepted, !hand brings the cards.
        carol.accept("cardroom2")
        self.sync(carol)
        start = len(carol.received)
        self.say(carol, "cardroom2", "!hand")
        carol.read_until(lambda m: m.command == "PRIVMSG" and m.nick == "cardroom2" and "· table 1] " in plain(m.params[1]),
                         timeout=30, start=start)
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_lines_of_160_bytes_on_inspircd(self):
        bot = self.bot(self.settings(login="none", nick="cardroom", line_bytes=160))
        alice = self.client("alice")
        alice.join(CHANNEL)
        self.wait_bot_in(alice)
        lines = mh.parse_script("alice> !new 304\nalice> !join\nalice> !bot\nalice> !bot\nalice> !bot\n"
                                "alice> !start\nalice> !rules\n")
        for line in lines:
            self.say(alice, CHANNEL, line.text)
        # South bids first: the computer players wait for alice, so the console says the same.
        check_short_lines(self, {"alice": alice}, console_order(lines), 160)
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_a_line_cut_inside_a_character_is_still_text(self):
        # InspIRCd cuts a relayed line at 512 bytes with the sender's prefix, here inside a ♥:
        # the bot reads the text without that broken character, as if it had not been sent.
        bot = self.bot(self.settings(login="none", nick="cardcut"))
        alice, watcher = self.client("alice"), self.client("watcher")
        for c in (alice, watcher):
            c.join(CHANNEL)
            self.wait_bot_in(c, nick="cardcut")
        self.wait_bot_in(watcher, nick="alice")
        text = "!new 304 " + "x" * 11 + "♥" * 158
        self.assertLessEqual(len(("PRIVMSG %s :%s" % (CHANNEL, text)).encode()) + 2, 512)
        self.say(alice, CHANNEL, text)
        cut = watcher.read_until(lambda m: m.command == "PRIVMSG" and m.nick == "alice", timeout=30).params[1]
        self.assertTrue(cut.endswith("\ufffd"), "the server did not cut inside a character: %r" % cut[-5:])
        first = alice.read_until(lambda m: m.command == "NOTICE" and m.nick == "cardcut", timeout=30).params[1]
        self.say(alice, CHANNEL, cut.rstrip("\ufffd"))
        second = alice.read_until(lambda m: m.command == "NOTICE" and m.nick == "cardcut", timeout=30).params[1]
        self.assertEqual(first, second)
        self.assertEqual(bot.stop(), 0, bot.tail())

    def test_wrong_tls_settings_are_errors_that_name_the_setting(self):
        server = {"server": "127.0.0.1", "nick": "cardroom"}
        plain_port = self.bot(dict(server, port=self.server.port, tls="true"), name="plain-port")
        untrusted = self.bot(dict(server, server="localhost", port=self.server.tls_port, tls="true"), name="untrusted")
        tls_port = self.bot(dict(server, port=self.server.tls_port, tls="false"), name="tls-port")
        check_tls_errors(self, plain_port, untrusted, tls_port)

    def flood_run(self, nick, burst, interval_ms):
        bot = self.bot(self.settings(login="none", nick=nick, flood_burst=burst, flood_interval_ms=interval_ms))
        watcher = self.client("w" + nick[-6:])
        watcher.join(CHANNEL)
        self.wait_bot_in(watcher, nick=nick)
        # One command that makes a lot of output: help for every command, privately (as
        # NOTICEs), 3 times.
        for _ in range(3):
            self.say(watcher, nick, "!help")
        return bot, watcher

    def test_flood_control_keeps_under_the_servers_limit(self):
        # inspircd here: threshold 10, 5 lines/s, no fake lag: 10 lines at once = "Excess Flood".
        bot, watcher = self.flood_run("cardflood", 4, 300)
        want = words_in_order(console_order(mh.parse_script(watcher.name + ">> !help\n")) * 3)
        try:  # all of it: the server has read every line the bot sent by then
            watcher.wait_until(lambda: words_in_order(bot_lines(watcher, "cardflood")) == want, 120,
                               "the paced bot's three answers")
        except ircservers.ClientError:
            self.assertEqual(words_in_order(bot_lines(watcher, "cardflood")), want, "the paced bot's three answers")
        got = [m for m in watcher.received if m.nick == "cardflood" and m.command in ("PRIVMSG", "NOTICE")]
        self.assertGreaterEqual(len(got), 30, "the paced bot should keep talking")
        quits = [m for m in watcher.received if m.command == "QUIT" and m.nick == "cardflood"]
        self.assertEqual(quits, [], "the paced bot was thrown out")
        self.assertIsNone(bot.proc.poll())
        self.assertNotIn("Excess Flood", bot.log_text())
        bot.stop()

    def test_without_flood_control_the_server_throws_the_bot_out(self):
        # The same output with a bucket of 1000 lines and no pacing: the server's limit bites.
        bot, watcher = self.flood_run("cardfast", 1000, 0)
        watcher.read_until(lambda m: m.command == "QUIT" and m.nick == "cardfast"
                           and "Excess Flood" in m.params[-1], timeout=30)
        bot.stop()


if __name__ == "__main__":
    unittest.main()
