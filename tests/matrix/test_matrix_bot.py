"""End-to-end tests of cardroom's Matrix adapter: the real bot (`cardroom run`) against the fake
homeserver (fake_homeserver.py), with people who log in and talk through the Client-Server API.

The main check is exact: a match played over Matrix must make the bot post, line for line, what
`cardroom console --script --seed 1` prints for the same script (room lines in the game room,
private lines in each player's direct chat), also while the bot is SIGKILLed and restarted, the
homeserver crashes, or the homeserver answers with rate limits, errors, dropped connections and
garbage.  Smaller tests cover the first start, invites, moderators, ignored messages, kicks,
device reuse and access tokens.  The six-player match (tests/console/six-match.txt) is played
with six people who are E2EE clients and the bot's direct chats encrypted.  The machinery is in
harness.py (and the E2EE clients' in test_matrix_e2ee.py and olm_client.py).

Run:  /usr/bin/python3 -m unittest tests/matrix/test_matrix_bot.py -v   (python3-olm for the
      six-player match)
      CARDROOM_BIN=/path/to/cardroom   another binary (default build/cardroom)
      CARDROOM_MX_VERBOSE=1            progress on stderr;  CARDROOM_MX_KEEP=1  keep temp dirs
"""

import os
import random
import re
import subprocess
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (BOT_ID, BOT_PASSWORD, BOT_SEND_REGEX, HEAD_RE, LOG_LINE_RE, LOG_STAMP,  # noqa: E402
                     PLAYERS, ROOM_NAME, SYNC_REGEX, V3, Harness, Killer, Transcript, bot_binary,
                     console_reference, matrix_reference, normalize_private, parse_script, q,
                     read_script, uid)

from test_matrix_e2ee import OLM_MISSING, E2EEHarness  # noqa: E402

if OLM_MISSING is None:
    from olm_client import MEGOLM  # noqa: E402

KILL_SEED = 304
ASK_REGEX = r"^/_matrix/client/v3/rooms/[^/]+/state/m\.room\.encryption/"
SERVER_RESTART_SEED = 11
SIX_PLAYERS = ("alice", "bob", "carol", "dave", "erin", "frank")
SIX_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "console",
                          "six-match.txt")
HINT_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "console",
                           "hint-review.txt")
PRIVATE_LINE_RE = re.compile(r"^(\[[^\]]*\] )?Your (first four cards|next four cards|next two cards|"
                             r"hand|turn|indicator)")


def setUpModule():
    binary = bot_binary()
    if not os.access(binary, os.X_OK):
        raise unittest.SkipTest(f"{binary} is not built (ninja -C build)")
    helptext = subprocess.run([binary, "help"], capture_output=True, text=True).stdout
    if not re.search(r"^\s+run\b", helptext, re.M):
        raise unittest.SkipTest(f"{binary} has no 'run' command yet (no Matrix adapter)")


class MatrixBotTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.started = time.monotonic()

    def tearDown(self):
        if os.environ.get("CARDROOM_MX_VERBOSE"):
            sys.stderr.write(f"\n{self.id()}: {time.monotonic() - self.started:.1f} s\n")

    # ---- shared set-ups ----------------------------------------------------------------------

    def start_game(self, h, **config):
        """People, the game room "Card night" (alice's, bob/carol/dave joined, the bot
        invited), the bot started and joined.  The request log is cleared before the bot
        starts, so every /login in it afterwards is the bot's."""
        h.make_people()
        room = h.game_room()
        h.reset_log()
        h.start_bot(h.write_config(**config))
        h.wait_bot_membership(room)
        return room

    def match_with_faults(self, h, lines, schedule, timeout=45):
        """Plays lines, adding schedule[i] (fault rules) before line i.  Returns the room."""
        room = self.start_game(h)

        def before_line(i, line):
            if i in schedule:
                h.server.add_faults(*schedule[i])
        h.play(lines, room, before_line=before_line, timeout=timeout)
        return room

    @staticmethod
    def retried_too_soon(log):
        """Requests answered 429 that were tried again before the wait the answer asked for
        (the fake's asked_ms, with 20% slack)."""
        def key(entry):      # a /sync is retried with the same since, maybe another timeout
            split = urllib.parse.urlsplit(entry["path"])
            if split.path.endswith("/sync"):
                return ("sync", urllib.parse.parse_qs(split.query).get("since"))
            return (entry["method"], entry["path"])
        problems = []
        for n, entry in enumerate(log):
            if entry["fault"] != "429":
                continue
            need = entry["asked_ms"]
            again = next((e for e in log[n + 1:] if key(e) == key(entry)), None)
            if again is not None and again["ts"] - entry["ts"] < 0.8 * need:
                problems.append(f"{entry['method']} {entry['path'][:90]}: 429 asking for "
                                f"{need} ms, tried again after {again['ts'] - entry['ts']} ms")
        return problems

    def assert_clean_events(self, h, rooms):
        problems = h.event_problems(rooms)
        if problems:
            h.fail("bad bot events:\n" + "\n".join(problems[:30]))

    def all_dms(self, h):
        return [dm for user in PLAYERS for dm in h.dm_rooms(user)]

    # ---- 1 ---------------------------------------------------------------------------------------

    def test_01_full_match(self):
        """The whole match: the bot posts exactly the console's lines (room and each DM), as
        m.notice with HTML, one txn id cr<N> per event, no private line in the room, DM heads
        naming the room, and turn prompts mentioning the seated player."""
        h = Harness(self)
        lines = read_script()
        expected = matrix_reference(lines)
        room = self.start_game(h)
        h.play(lines, room)
        actual = h.assert_transcript(room, expected)

        dms = {user: h.dm_rooms(user) for user in PLAYERS}
        for user, rooms in dms.items():
            self.assertEqual(len(rooms), 1, f"{user} should have one DM with the bot: {rooms}")
        self.assert_clean_events(h, [room] + self.all_dms(h))

        private = {line for user in PLAYERS for line in expected.private[user]}
        leaked = [line for line in actual.room
                  if (line in private and line not in expected.room)
                  or PRIVATE_LINE_RE.match(line)]
        self.assertEqual(leaked, [], "private lines in the game room")

        for user in PLAYERS:
            for event in h.bot_events(dms[user][0]):
                head = HEAD_RE.match(event["content"]["body"])
                if head:
                    self.assertTrue(event["content"]["body"].startswith(
                        f"[{ROOM_NAME} · table {head.group(1)}] "),
                        f"DM head should name the room: {event['content']['body'][:80]!r}")

        mentioning = 0
        seated = {uid(p): p for p in PLAYERS}
        for event in h.bot_events(room):
            mentions = event["content"].get("m.mentions") or {}
            users = mentions.get("user_ids") or []
            if not users:
                continue
            mentioning += 1
            for user in users:
                self.assertIn(user, seated, f"mention of a non-player: {event['content']}")
                self.assertIn(seated[user], event["content"]["body"],
                              f"mentioned {user} not named in {event['content']['body']!r}")
        self.assertGreater(mentioning, 0, "no room message mentions the player to act")
        self.assertEqual(len(h.requests("POST", r"^/_matrix/client/v3/login")), 1)

    # ---- 2 ---------------------------------------------------------------------------------------

    def test_02_sigkill_restarts(self):
        """SIGKILL at random moments (seeded; some right after a line is sent) and restarts
        on the same DB lose nothing and repeat nothing: the transcript is still exactly the
        console's, every txn id is used once, and the bot logged in only once."""
        rng = random.Random(KILL_SEED)
        h = Harness(self)
        h.clear_log_allowed = False        # only the killer clears it, while the bot is down
        lines = read_script()
        expected = matrix_reference(lines)
        room = self.start_game(h)
        killer = Killer(h)
        killer.start()
        self.addCleanup(lambda: killer.is_alive() and killer.requests.put(None))
        plan = {}
        for i in sorted(rng.sample(range(3, len(lines) - 2), 22)):
            delay = 0.0 if rng.random() < 0.4 else round(rng.uniform(0.01, 0.4), 3)
            plan[i] = (delay, round(rng.uniform(0.0, 0.3), 3))

        def after_send(i, line, pos):
            if i in plan:
                killer.request(*plan[i])
        h.play(lines, room, after_send=after_send, timeout=60)
        killer.finish()
        if killer.error:
            raise killer.error
        self.assertGreaterEqual(killer.kills, 15)
        h.assert_transcript(room, expected)
        self.assert_clean_events(h, [room] + self.all_dms(h))
        logins = h.requests("POST", r"^/_matrix/client/v3/login")
        self.assertEqual(len(logins), 1, f"the bot logged in {len(logins)} times "
                                         f"over {h.bot.starts} starts")
        self.assertEqual(h.requests("POST", r"^/_matrix/client/v3/logout"), [])

    # ---- 3 ---------------------------------------------------------------------------------------

    def test_03_rate_limits_server_errors_and_drops(self):
        """429 (Retry-After, retry_after_ms, both), 500 on sends and syncs, connections
        dropped after the send was done, 500 after the work was done: the bot waits as long
        as a 429 asks, retries with the same txn id, loses and duplicates nothing; the
        transcript is exact."""
        h = Harness(self)
        lines = read_script(limit=150)
        send = {"path_regex": BOT_SEND_REGEX, "method": "PUT"}
        sync = {"path_regex": SYNC_REGEX, "method": "GET"}
        schedule = {
            4: [dict(send, action="429", count=4, retry_after_ms=200)],
            14: [dict(send, action="429", count=3, retry_after_ms=300, header=False)],
            24: [dict(send, action="429", count=2, retry_after_ms=400, body_ms=False)],
            34: [dict(sync, action="429", count=2, retry_after_ms=300)],
            44: [dict(send, action="500", count=3)],
            54: [dict(sync, action="500", count=3)],
            64: [dict(send, action="drop", drop_after="partial", process=True, count=3)],
            74: [dict(send, action="drop", drop_after="nothing", process=True, count=1),
                 dict(send, action="drop", drop_after="headers", process=True, count=1)],
            84: [dict(sync, action="drop", drop_after="partial", count=2)],
            94: [dict(send, action="500", process=True, count=2)],
            104: [dict(send, action="429", count=6, retry_after_ms=100),
                  dict(sync, action="500", count=1)],
        }
        expected = matrix_reference(lines)
        room = self.match_with_faults(h, lines, schedule)
        h.assert_transcript(room, expected)
        self.assert_clean_events(h, [room] + self.all_dms(h))
        self.assertEqual(h.server.faults(), [], "fault rules the bot never ran into")
        log = h.requests()
        hit = {(e["fault"], "sync" if "/sync" in e["path"] else "send") for e in log
               if e["fault"]}
        for want in [("429", "send"), ("429", "sync"), ("500", "send"), ("500", "sync"),
                     ("drop", "send"), ("drop", "sync")]:
            self.assertIn(want, hit)
        self.assertEqual(self.retried_too_soon(log), [],
                         "Retry-After / retry_after_ms not honoured")
        self.assertTrue(h.bot.alive())
        h.stop_bot()

    # ---- 4 ---------------------------------------------------------------------------------------

    def test_04_homeserver_restart(self):
        """The homeserver is SIGKILLed mid-game (right after a line, and between lines) and
        started again on the same port and state file: the bot reconnects, nothing is lost
        or posted twice, the transcript is exact."""
        rng = random.Random(SERVER_RESTART_SEED)
        h = Harness(self, use_state=True)
        lines = read_script(limit=200)
        expected = matrix_reference(lines)
        room = self.start_game(h)
        plan = {i: (rng.random() < 0.5, round(rng.uniform(0.2, 1.0), 3))
                for i in sorted(rng.sample(range(5, len(lines) - 5), 4))}

        def crash(i, pause):
            h.server.kill()
            time.sleep(pause)
            h.server.start()

        def before_line(i, line):
            if i in plan and not plan[i][0]:
                crash(i, plan[i][1])

        def after_send(i, line, pos):
            if i in plan and plan[i][0]:
                crash(i, plan[i][1])
        h.play(lines, room, before_line=before_line, after_send=after_send, timeout=60)
        self.assertEqual(h.server.starts, 1 + len(plan))
        h.assert_transcript(room, expected)
        self.assert_clean_events(h, [room] + self.all_dms(h))
        self.assertTrue(h.bot.alive())
        h.stop_bot()

    # ---- 5 ---------------------------------------------------------------------------------------

    def test_05_bad_answers(self):
        """Garbage, 2-5 MiB of JSON without the expected fields, and errors with odd statuses
        (200 without the fields, 502) on /sync and on sends: the bot warns or errs on stderr
        about each malformed answer, never crashes, loses and repeats nothing, and exits 0 on
        SIGTERM."""
        h = Harness(self)
        lines = read_script(limit=120)
        send = {"path_regex": BOT_SEND_REGEX, "method": "PUT"}
        sync = {"path_regex": SYNC_REGEX, "method": "GET"}
        schedule = {
            4: [dict(sync, action="garbage", count=2)],
            12: [dict(sync, action="huge", count=1)],
            20: [dict(sync, action="error", status=200, errcode="M_ODD", error="no fields",
                      count=1)],
            28: [dict(sync, action="error", status=502, errcode="M_BAD_GATEWAY",
                      error="<html>bad gateway</html>", count=1)],
            44: [dict(send, action="garbage", count=1)],
            52: [dict(send, action="garbage", process=True, count=1)],
            60: [dict(send, action="huge", process=True, count=1, size_bytes=2 * 1024 * 1024)],
            68: [dict(send, action="error", status=200, errcode="M_ODD", error="no event_id",
                      process=True, count=1)],
            76: [dict(send, action="error", status=502, errcode="M_WHAT", error="???",
                      count=2)],
            84: [dict(send, action="huge", count=1)],
        }
        expected = matrix_reference(lines)
        room = self.start_game(h)
        marks = {}                 # schedule index -> stderr lines before its faults

        def logged_since(i):
            return any(LOG_LINE_RE.search(line) for line in h.bot.stderr().splitlines()[marks[i]:])

        def before_line(i, line):
            if i in schedule:
                # The faults before are all met (and a malformed answer's line is written)
                # before the next come: each one's log lines are those between the marks.
                h.wait_for(lambda: h.server.faults() == [], 60, f"the faults before line {i} met")
                if marks:
                    last = max(marks)
                    if any(r.get("status", 200) == 200 for r in schedule[last]):
                        h.wait_for(lambda: logged_since(last), 60,
                                   f"a warning or an error about the faults before line {last}")
                marks[i] = h.bot.stderr().count("\n")
                h.server.add_faults(*schedule[i])
        h.play(lines, room, before_line=before_line)
        h.assert_transcript(room, expected)
        self.assert_clean_events(h, [room] + self.all_dms(h))
        self.assertEqual(h.server.faults(), [], "fault rules the bot never ran into")
        # Each malformed answer (not JSON, huge, 200 without the fields) must leave a warning
        # or an error on stderr ("bad JSON, missing fields or huge answers from the server:
        # an error/warn log and a retry").  A 502 is a plain server error: any level will do.
        stderr = h.bot.stderr().splitlines()
        starts = sorted(marks)
        silent = []
        for k, i in enumerate(starts):
            end = marks[starts[k + 1]] if k + 1 < len(starts) else len(stderr)
            logged = stderr[marks[i]:end]
            malformed = any(r.get("status", 200) == 200 for r in schedule[i])
            if malformed and not any(LOG_LINE_RE.search(line) for line in logged):
                rules = ", ".join(f"{r['action']} {r.get('status', '')} on "
                                  f"{'/sync' if r['path_regex'] == SYNC_REGEX else 'sends'}"
                                  f" x{r['count']}" for r in schedule[i])
                silent.append(f"  [{rules}] logged only:\n" + "\n".join(
                    "    " + line for line in logged if "matrix:" in line))
        self.assertTrue(h.bot.alive(), "the bot died")
        h.stop_bot()
        if silent:
            self.fail("malformed answers without a 'cardroom: warn:' or 'cardroom: error:' "
                      "line:\n" + "\n".join(silent))

    # ---- 6 ---------------------------------------------------------------------------------------

    def test_06_first_start_skips_old_timeline(self):
        """A command said before the bot's first start is not replayed; a new one is
        answered."""
        h = Harness(self)
        h.make_people()
        room = h.create_room("alice", invite=["bob"])
        h.join("bob", room)
        h.server.as_user("alice", "POST", f"{V3}/rooms/{q(room)}/invite", {"user_id": BOT_ID})
        h.server.as_user(BOT_ID, "POST", f"{V3}/join/{q(room)}", {})
        _, old_pos = h.say("alice", room, "!new 304")
        h.reset_log()
        h.start_bot()
        h.wait_first_sync()
        h.wait_handled(old_pos, "the old '!new 304' (as part of the bot's first batches)")
        h.wait_quiet("the old '!new 304'")
        self.assertEqual([e["content"].get("body") for e in h.bot_events(room)], [],
                         "the bot answered a command from before its first start")
        h.say_and_wait("alice", room, "!new 304")
        expected = Transcript(room=matrix_reference(parse_script("alice> !new 304\n")).room)
        h.assert_transcript(room, expected)

    # ---- 7 ---------------------------------------------------------------------------------------

    def test_07_invites(self):
        """An invite from alice (allowed) is joined, one from mallory (not allowed) is
        declined; a DM alice starts with is_direct is joined, and !help there is answered
        in that DM only, as the console answers a private !help."""
        h = Harness(self)
        h.make_people()
        h.make_user("mallory")
        h.reset_log()
        h.start_bot()
        h.wait_first_sync()
        allowed = h.create_room("alice", "Alice's room", invite=[BOT_ID])
        refused = h.create_room("mallory", "Mallory's room", invite=[BOT_ID])
        dm = h.create_room("alice", None, "trusted_private_chat", invite=[BOT_ID],
                           is_direct=True)
        h.wait_bot_membership(allowed, "join")
        h.wait_bot_membership(dm, "join")
        h.wait_bot_membership(refused, "leave")
        joins = [e for e in h.server.events(refused) if e["type"] == "m.room.member"
                 and e.get("state_key") == BOT_ID and e["content"].get("membership") == "join"]
        self.assertEqual(joins, [], "the bot joined mallory's room")

        h.say_and_wait("alice", dm, "!help")
        ref = matrix_reference(parse_script("alice>> !help\n"))
        self.assertTrue(ref.private["alice"])

        def answered():
            lines = [line for e in h.bot_events(dm) for line in e["content"]["body"].split("\n")]
            return lines if len(lines) >= len(ref.private["alice"]) else None
        lines = h.wait_for(answered, 20, "the answer to !help in the DM")
        h.wait_quiet("!help in the DM")
        lines = [line for e in h.bot_events(dm) for line in e["content"]["body"].split("\n")]
        self.assertEqual(lines, ref.private["alice"])
        self.assertEqual(h.bot_events(allowed), [])
        self.assertEqual(h.bot_events(refused), [])
        other = [r for r in h.bot_rooms() if r not in (allowed, dm, refused)
                 and h.bot_events(r)]
        self.assertEqual(other, [], "the bot answered somewhere else too")

    # ---- 8 ---------------------------------------------------------------------------------------

    def test_08_moderator_abort(self):
        """carol opens a table in alice's room: bob (power 0) may not abort it, alice (power
        100, a moderator) may."""
        h = Harness(self)
        room = self.start_game(h)
        levels = h.user_ok("alice", "GET", f"{V3}/rooms/{q(room)}/state/m.room.power_levels/")
        self.assertEqual(levels["users"].get(uid("alice")), 100)
        self.assertLess(levels["users"].get(uid("bob"), levels.get("users_default", 0)),
                        levels.get("kick", 50))
        ref = matrix_reference(parse_script(
            "carol> !new 304\nbob> !abort\nbob> !table\ncarol> !abort\n")).room
        # ref: table open / bob refused / table still there / closed (by its creator there)
        h.say_and_wait("carol", room, "!new 304")
        h.say_and_wait("bob", room, "!abort")
        h.say_and_wait("bob", room, "!table")
        h.assert_transcript(room, Transcript(room=ref[:3]))
        h.say_and_wait("alice", room, "!abort")
        h.assert_transcript(room, Transcript(room=ref[:4]))

    # ---- 9 ---------------------------------------------------------------------------------------

    def test_09_ignored_messages(self):
        """An edit that turns a message into '!new 304' and an m.notice '!new 304' from
        another user get no reaction; a real '!new 304' after them opens table 1."""
        h = Harness(self)
        room = self.start_game(h)
        hello, _ = h.say("alice", room, "hello")
        h.send("alice", room, {"msgtype": "m.text", "body": "!new 304",
                               "m.new_content": {"msgtype": "m.text", "body": "!new 304"},
                               "m.relates_to": {"rel_type": "m.replace", "event_id": hello}})
        h.say("bob", room, "!new 304", msgtype="m.notice")
        h.say_and_wait("carol", room, "!new 304")
        ref = matrix_reference(parse_script("carol> !new 304\n")).room
        h.assert_transcript(room, Transcript(room=ref))

    # ---- 10 --------------------------------------------------------------------------------------

    def test_10_kicked(self):
        """Kicked from one room in the middle of a dealt hand (with answers on their way),
        the bot keeps playing in another room and does not crash."""
        h = Harness(self)
        h.make_people()
        h.make_user("erin")
        h.make_user("frank")
        first = h.game_room(ROOM_NAME)
        second = h.game_room("Second table", members=("erin", "frank"))
        h.reset_log()
        h.start_bot()
        h.wait_bot_membership(first)
        h.wait_bot_membership(second)
        lines = read_script(limit=7)         # open, four joins, start, alice passes
        h.play(lines[:6], first)
        h.say(lines[6].user, first, lines[6].text)
        h.kick("alice", first, BOT_ID)        # while the answer to alice's pass is under way
        h.wait_bot_membership(first, "leave")
        h.say("bob", first, "!bid 160")
        for name, text in (("erin", "!new 304"), ("erin", "!join"), ("frank", "!join"),
                           ("erin", "!table")):
            h.say_and_wait(name, second, text)

        def second_lines():
            lines = [e["content"]["body"] for e in h.bot_events(second)]
            return lines if len(lines) >= 4 else None
        got = h.wait_for(second_lines, 20, "the bot's answers in the second room")
        self.assertRegex(got[0], r"^Table \d+ is open for 304\.")
        self.assertEqual(got[1:3], ["erin (South) sits down.", "frank (East) sits down."])
        self.assertRegex(got[3], r"^Table \d+ \(not started\): erin \(South\)")
        self.assertTrue(h.bot.alive())
        h.stop_bot()

    # ---- 11 --------------------------------------------------------------------------------------

    def test_11_restart_reuses_device(self):
        """Started, stopped (SIGTERM) and started again, the bot logs in once, never logs
        out, checks its token with whoami, and sends from the same device both times."""
        h = Harness(self)
        room = self.start_game(h)
        h.say_and_wait("alice", room, "!new 304")
        first = h.wait_for(lambda: h.bot_events(room), 20, "the bot's first answer")
        h.stop_bot()
        h.bot.expected_down = False
        h.bot.start()
        h.say_and_wait("bob", room, "!join")
        events = h.wait_for(lambda: h.bot_events(room)[1:] and h.bot_events(room), 20,
                            "the bot's answer after the restart")
        devices = {e["fake"]["device_id"] for e in events}
        self.assertEqual(devices, {first[0]["fake"]["device_id"]})
        self.assertIsNotNone(first[0]["fake"]["device_id"])
        self.assertEqual(len(h.requests("POST", r"^/_matrix/client/v3/login")), 1)
        self.assertEqual(h.requests("POST", r"^/_matrix/client/v3/logout"), [])
        self.assertGreaterEqual(len(h.requests("GET", r"^/_matrix/client/v3/account/whoami")),
                                2)
        h.stop_bot()

    # ---- 12 --------------------------------------------------------------------------------------

    def test_12_access_token_and_whoami_mismatch(self):
        """With CARDROOM_MATRIX_ACCESS_TOKEN (the bot's own) it works without /login; with
        alice's token for user @cardroom it exits non-zero at once, naming the mismatch and
        not printing the token."""
        h = Harness(self)
        h.make_people()
        mine = h.login("cardroom", BOT_PASSWORD)
        room = h.game_room()
        h.reset_log()
        h.start_bot(password=None, token=mine["token"])
        h.wait_bot_membership(room)
        h.say_and_wait("alice", room, "!new 304")
        events = h.wait_for(lambda: h.bot_events(room), 20, "the bot's answer")
        self.assertEqual(events[0]["fake"]["device_id"], mine["device_id"])
        self.assertEqual(h.requests("POST", r"^/_matrix/client/v3/login"), [])
        h.stop_bot()

        alice_token = h.users["alice"]["token"]
        h.reset_log()
        bot = h.start_bot(password=None, token=alice_token,
                          db=os.path.join(h.dir, "mismatch.db"), name="mismatch")
        bot.expected_down = True
        rc = bot.wait_exit(120)
        self.assertIsNotNone(rc, "the bot with alice's token was still running after 120 s")
        self.assertEqual(len(h.requests("GET", r"^/_matrix/client/v3/account/whoami")), 1,
                         "the bot asked again instead of giving up at the first answer")
        self.assertNotEqual(rc, 0)
        err = bot.stderr()
        self.assertNotIn(alice_token, err)
        self.assertNotIn(alice_token, bot.stdout())
        self.assertTrue(any("cardroom: error:" in line and (
            uid("alice") in line or BOT_ID in line or "whoami" in line)
            for line in err.splitlines()), f"no error naming the mismatch:\n{err[-2000:]}")

    # ---- 13 --------------------------------------------------------------------------------------

    def test_13_notify_on(self):
        """On Matrix a player gets no private turn notice until he asks (the mention in the room
        notifies him): after `!notify on` from everyone, the first hands post exactly what the
        console prints, where the notices are on, hand and all; without it, none but the
        warnings for a card that must be sent privately."""
        h = Harness(self)
        lines = parse_script("".join(f"{p}> !notify on\n" for p in PLAYERS)) + read_script(limit=70)
        expected = console_reference(lines)
        room = self.start_game(h)
        h.play(lines, room)
        h.assert_transcript(room, expected)
        notices = [line for user in PLAYERS for line in expected.private[user] if "Your turn. Your hand: " in line]
        self.assertTrue(notices, "the script reaches no plain turn notice: the test has nothing to compare")
        off = matrix_reference(read_script(limit=70))
        self.assertFalse([line for user in PLAYERS for line in off.private[user]
                          if "Your turn. Your hand: " in line])

    # ---- 14 --------------------------------------------------------------------------------------

    def test_14_secrets_at_rest(self):
        """The access token is stored sealed with the store key, and a token an older cardroom
        stored in the clear is sealed at the next start; a delivered private message keeps
        neither its text nor its wire form in the database."""
        import base64
        import sqlite3

        def stored(db_path):
            db = sqlite3.connect(db_path)
            try:
                token = db.execute("SELECT position FROM positions WHERE adapter = "
                                   "'matrix:token'").fetchone()[0]
                kept = db.execute("SELECT count(*) FROM outbox WHERE sent = 1 AND user != '' "
                                  "AND (text != '' OR wire IS NOT NULL)").fetchone()[0]
                private = db.execute("SELECT count(*) FROM outbox WHERE sent = 1 AND "
                                     "user != ''").fetchone()[0]
            finally:
                db.close()
            return token, kept, private

        h = Harness(self)
        room = self.start_game(h)
        lines = read_script(limit=6)                 # open, four joins, start: hands dealt
        h.play(lines, room)
        expected = matrix_reference(lines)
        h.assert_transcript(room, expected)
        h.stop_bot()
        token, kept, private = stored(h.bot.db)
        self.assertTrue(token.startswith("sealed1:"), "the access token is stored in the clear")
        self.assertGreaterEqual(len(base64.b64decode(token[8:] + "==")), 16 + 16 + 32)
        self.assertGreaterEqual(private, 4, "no private message was delivered")
        self.assertEqual(kept, 0, "delivered private messages keep their text in the store")

        # an older database: the token in the clear
        mine = h.login("cardroom", BOT_PASSWORD)
        db = sqlite3.connect(h.bot.db)
        with db:
            db.execute("UPDATE positions SET position = ? WHERE adapter = 'matrix:token'",
                       (mine["token"],))
            db.execute("UPDATE positions SET position = ? WHERE adapter = 'matrix:device'",
                       (mine["device_id"],))
            db.execute("DELETE FROM kv WHERE ns LIKE 'e2ee%' OR ns LIKE 'olm%' OR ns LIKE "
                       "'megolm%' OR ns IN ('devices', 'outdated')")   # keys of another device
        db.close()
        h.reset_log()
        bot = h.start_bot(h.bot.config, password=None, db=h.bot.db)
        h.say_and_wait("alice", room, "!table")
        h.wait_for(lambda: h.bot_events(room)[-1]["fake"]["device_id"] == mine["device_id"], 20,
                   "the answer to !table from the device of the stored token")
        self.assertEqual(h.requests("POST", r"^/_matrix/client/v3/login"), [])
        h.stop_bot()
        self.assertIn("sealed with the store key", bot.stderr())
        token, _, _ = stored(h.bot.db)
        self.assertTrue(token.startswith("sealed1:"))
        self.assertNotIn(mine["token"], token)

    # ---- 15 --------------------------------------------------------------------------------------

    def test_15_restart_asks_whether_a_room_is_encrypted(self):
        """After a restart, before any /sync is answered, the bot does not know whether the
        game room is encrypted: it asks (GET …/state/m.room.encryption/, retried after a
        500), learns from the 404 that it is not, and sends what was queued; the message
        under way at the stop is sent again as it was (one event)."""
        h = Harness(self)
        room = self.start_game(h)
        hold = {"action": "hold", "path_regex": BOT_SEND_REGEX, "method": "PUT", "count": -1}
        h.server.add_faults(dict(hold, name="send"))
        h.say_and_wait("alice", room, "!new 304")
        h.say_and_wait("alice", room, "!join")
        h.wait_for(lambda: h.server.ok("GET", "/_fake/holds")["waiting"].get("send"), 20,
                   "the bot's first answer, held")
        h.stop_bot()
        h.server.add_faults(dict(hold, name="sync", path_regex=SYNC_REGEX, method="GET"),
                            {"action": "500", "path_regex": ASK_REGEX, "method": "GET"})
        h.server.ok("DELETE", "/_fake/holds/send")
        h.bot.expected_down = False
        h.bot.start()
        expected = matrix_reference(parse_script("alice> !new 304\nalice> !join\n"))
        h.assert_transcript(room, Transcript(room=expected.room))   # while /sync is held
        self.assertTrue(h.server.ok("GET", "/_fake/holds")["waiting"].get("sync"))
        asked = [e["status"] for e in h.requests("GET", ASK_REGEX)]
        self.assertEqual(asked, [500, 404])
        h.server.ok("DELETE", "/_fake/holds/sync")
        h.say_and_wait("bob", room, "!join")
        expected = matrix_reference(parse_script("alice> !new 304\nalice> !join\nbob> !join\n"))
        h.assert_transcript(room, Transcript(room=expected.room))
        self.assert_clean_events(h, [room])

    # ---- 16 --------------------------------------------------------------------------------------

    def test_16_rate_limited_table(self):
        """Under a homeserver's message rate limit (Synapse's bucket, here 1 event per second
        with bursts of 3) the bot sends one message at a time at the pace the server asks for
        (seldom told to wait again), merges what waits for a room into one event, says once
        that it is rate-limited and once (after 30 s without a 429 or a send held back) that
        it no longer is; the transcript is exact and nothing is lost."""
        import sqlite3
        h = Harness(self)
        room = self.start_game(h)
        h.server.ok("POST", "/_fake/ratelimit", {"per_second": 1, "burst_count": 3})
        lines = read_script(limit=40)
        expected = matrix_reference(lines)
        h.play(lines, room)
        h.assert_transcript(room, expected, timeout=120)
        self.assert_clean_events(h, [room] + self.all_dms(h))
        h.server.ok("POST", "/_fake/ratelimit", {})
        h.wait_for(lambda: "no longer rate-limits" in h.bot.stderr(), 60,
                   "the bot to say it is no longer rate-limited")
        err = h.bot.stderr()
        self.assertEqual(err.count("is rate-limiting the bot"), 1, err[-3000:])
        self.assertEqual(err.count("no longer rate-limits"), 1)
        self.assertNotIn("M_LIMIT_EXCEEDED", err, "each 429 was logged")
        limited = [e for e in h.requests("PUT", BOT_SEND_REGEX) if e["status"] == 429]
        sent = [e for e in h.requests("PUT", BOT_SEND_REGEX) if e["status"] == 200]
        self.assertTrue(limited, "the limit never bit")
        self.assertLess(len(limited) * 3, len(sent), "the bot kept knocking while it was told to wait")
        h.stop_bot()
        db = sqlite3.connect(h.bot.db)
        try:
            merged = db.execute("SELECT count(*) FROM outbox WHERE merged_into IS NOT NULL").fetchone()[0]
        finally:
            db.close()
        self.assertGreater(merged, 0, "nothing was merged while the bot was rate-limited")

    # ---- 17 --------------------------------------------------------------------------------------

    def test_17_log_lines_carry_the_time_except_in_the_journal(self):
        """Written to a file (or a terminal) every log line starts with the local date and time
        to the millisecond; under systemd, whose journal stamps lines itself (JOURNAL_STREAM
        names the bot's stderr), they do not."""
        h = Harness(self)
        room = self.start_game(h)
        h.say_and_wait("alice", room, "!new 304")
        h.stop_bot()
        lines = [line for line in h.bot.stderr().splitlines() if not line.startswith("===")]
        self.assertGreater(len(lines), 3)
        stamped = re.compile(LOG_STAMP.pattern + r"cardroom: (error|warn|info|debug): ")
        self.assertEqual([line for line in lines if not stamped.match(line)], [])
        mark = len(h.bot.stderr().splitlines())
        h.bot.journal = True
        h.bot.expected_down = False
        h.bot.start()
        h.say_and_wait("bob", room, "!join")
        h.stop_bot()
        journal = [line for line in h.bot.stderr().splitlines()[mark:] if not line.startswith("===")]
        self.assertGreater(len(journal), 2)
        self.assertEqual([line for line in journal
                          if not re.match(r"^cardroom: (error|warn|info|debug): ", line)], [])


    # ---- 14 --------------------------------------------------------------------------------------

    def test_14_six_player_match_in_encrypted_direct_chats(self):
        """The whole six-player match (tests/console/six-match.txt): six people who are E2EE
        clients, the bot's direct chats encrypted.  The game room gets exactly the console's
        lines; each player decrypts exactly the console's private lines from his direct chat,
        where he also sends his secrets (the indicator, face-down cards) encrypted; every event
        of the bot in a direct chat is m.room.encrypted (Megolm) and decrypts to an m.notice;
        no private line reaches the room."""
        room, _ = self.encrypted_script(SIX_SCRIPT, SIX_PLAYERS)
        self.assertTrue(any(line.startswith("Match over: ") for line in room))

    # ---- 18 --------------------------------------------------------------------------------------

    def test_18_hints_in_encrypted_direct_chats_and_the_review_in_the_room(self):
        """tests/console/hint-review.txt with four E2EE people: every hint is decrypted from
        the asker's encrypted direct chat and none reaches the game room; the review of a hand
        during the match and of its last hand after its end are posted in the room, once each;
        all exactly as the console says them."""
        room, private = self.encrypted_script(HINT_SCRIPT, PLAYERS)
        self.assertEqual([line for line in room if "hint: " in line], [], "a hint in the game room")
        hints = [line for name in PLAYERS for line in private[name] if "hint: " in line]
        self.assertEqual(len(hints), 3, hints)
        self.assertEqual(len([line for line in room if line.startswith("Review of hand ")]), 2)

    # ---- 19 --------------------------------------------------------------------------------------

    def test_19_tables_wait_for_the_first_sync_after_a_restart(self):
        """Computer players that are to move when the bot starts wait for its first /sync
        answer (held here, as a real homeserver's first sync after a restart can be slow):
        until then the bot knows no display names, and what a table says names people by
        them ("alice (South)", never "@alice:example.org (South)")."""
        h = Harness(self)
        slow = "[timers]\nbot_delay_ms = 60000\n"   # the computers do not move before the stop
        room = self.start_game(h, extra=slow)
        for text in ["!new 304", "!join", "!bot", "!bot", "!bot", "!start", "!pass"]:
            h.say_and_wait("alice", room, text)
        h.wait_for(lambda: any(line.startswith("alice (South) passes — computer East to bid")
                               for line in h.transcript(room).room), 30, "alice's pass in the room")
        h.stop_bot()
        h.write_config()                               # the computers move at once from now on
        h.server.add_faults({"action": "hold", "name": "sync", "path_regex": SYNC_REGEX,
                             "method": "GET", "count": 1})
        h.bot.expected_down = False
        h.bot.start()
        h.wait_for(lambda: h.server.ok("GET", "/_fake/holds")["waiting"].get("sync"), 30,
                   "the bot's first /sync, held")
        time.sleep(1)   # time for a bot that does not wait to show it; the checks do not depend on it
        self.assertFalse(any("computer East bids" in line for line in h.transcript(room).room),
                         "a computer player moved before the first /sync was answered")
        h.server.ok("DELETE", "/_fake/holds/sync")
        h.wait_for(lambda: any(line.startswith("computer West passes — ") for line in h.transcript(room).room),
                   30, "the computers' bids after the first /sync")
        room_lines = h.transcript(room).room
        self.assertEqual([line for line in room_lines if "@alice" in line], [], "alice named by her id")
        self.assertIn("computer West passes — alice (South) to bid: 200 or more, pass or partner", room_lines)
        self.assert_clean_events(h, [room])
        h.stop_bot()

    def encrypted_script(self, script, players):
        """Plays script with players who are E2EE clients, the bot's direct chats encrypted, and
        checks the room and each player's decrypted direct chat against the console. Returns
        (the room's lines, each player's private lines)."""
        if OLM_MISSING is not None:
            self.skipTest(f"python3-olm is not importable ({OLM_MISSING}); run with /usr/bin/python3")
        h = E2EEHarness(self)
        clients = {name: h.olm_user(name, name.upper() + "1") for name in players}
        h.bot_account()
        room = h.game_room(members=players[1:])
        h.reset_log()
        h.start_bot(h.write_config(encrypt_direct_chats=True))
        h.bot_device()
        h.wait_bot_membership(room)
        lines = read_script(script)
        expected = matrix_reference(lines, players=players)
        for line in lines:
            if not line.private:
                h.say_and_wait(line.user, room, line.text)
                continue
            dm = h.dm_room(line.user)
            content = clients[line.user].encrypt(dm, {"msgtype": "m.text", "body": line.text})
            _, pos = h.send(line.user, dm, content, kind="m.room.encrypted")
            h.wait_handled(pos, f"script line {line.number} ({line}, encrypted)")
        actual = h.assert_transcript(room, Transcript(room=expected.room))

        def dm_lines(name):
            """Everything the bot said to name in his direct chats, decrypted (None while some
            event does not decrypt yet)."""
            client = clients[name]
            client.sync()
            out = []
            for dm in h.dm_rooms(name):
                for event in h.server.events(dm):
                    if event["sender"] != BOT_ID or "state_key" in event:
                        continue
                    got = client.try_decrypt(event, dm)
                    if not got:
                        return None
                    out.extend(normalize_private(line) for line in got.content.get("body", "").split("\n"))
            return out
        got_private = {}
        for name in players:
            want = expected.private[name]
            self.assertTrue(want, f"{name} gets no private line in the reference")
            got = h.wait_for(lambda: (lambda got: got if got is not None and len(got) >= len(want) else None)(
                dm_lines(name)), 30, f"{name}'s private lines")
            self.assertEqual(got, want, f"{name}'s private lines")
            got_private[name] = got
            for dm in h.dm_rooms(name):
                state = [e for e in h.server.events(dm) if e["type"] == "m.room.encryption"]
                self.assertTrue(state and state[0]["content"].get("algorithm") == MEGOLM,
                                f"{name}'s direct chat is not encrypted")
                for event in h.server.events(dm):
                    if event["sender"] != BOT_ID or "state_key" in event:
                        continue
                    self.assertEqual(event["type"], "m.room.encrypted",
                                     f"a bot event in {name}'s encrypted direct chat: {event}")
                    self.assertEqual(event["content"].get("algorithm"), MEGOLM)
                    decrypted = clients[name].decrypt(event, dm)
                    self.assertEqual((decrypted.type, decrypted.content.get("msgtype")),
                                     ("m.room.message", "m.notice"))
            self.assertEqual(clients[name].problems, [], f"what the bot sent {name} broke the rules")
        private = {line for name in players for line in expected.private[name]}
        leaked = [line for line in actual.room
                  if (line in private and line not in expected.room) or PRIVATE_LINE_RE.match(line)]
        self.assertEqual(leaked, [], "private lines in the game room")
        self.assertTrue(h.bot.alive())
        h.stop_bot()
        return actual.room, got_private


if __name__ == "__main__":
    unittest.main()
