"""Self-test of the fake Matrix homeserver (tests/matrix/fake_homeserver.py).

The Matrix adapter's tests trust this server to behave as the Client-Server API says; these
tests check that it does, over real HTTP, for each behaviour the adapter relies on: login and
tokens, filters, DMs as the bot makes them, transaction-id deduplication per device, /sync
long-polls and limited timelines, account data, state and members, leaving and kicks, every
injected fault, and a restart from the state file.  The E2EE classes cover key upload, query
and claim (one-time keys, then the fallback), send-to-device delivery and acknowledgement,
device lists in /sync and /keys/changes, cross-signing with user-interactive auth, signature
upload, and a restart that keeps all of it.

Run: python3 -m unittest tests/matrix/test_fake_homeserver.py -v   (about ten seconds)
"""

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_homeserver.py")
HS = "example.org"
V3 = "/_matrix/client/v3"
LONG_POLL_MS = 600000   # longer than any test waits: a long-poll that answers was woken


def start_server(port=0, state=None, extra=()):
    """Start the server; return (process, port) once it printed "LISTENING <port>"."""
    args = [sys.executable, SERVER, "--port", str(port), "--server-name", HS, *extra]
    if state:
        args += ["--state", state]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    watchdog = threading.Timer(10, proc.kill)
    watchdog.start()
    line = proc.stdout.readline()
    watchdog.cancel()
    match = re.fullmatch(r"LISTENING (\d+)\n", line)
    if not match:
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, int(match.group(1))


def stop_server(proc):
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()


def q(value):
    return urllib.parse.quote(value, safe="")


class Response:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers
        self.raw = raw
        try:
            self.json = json.loads(raw)
        except ValueError:
            self.json = None


class ServerCase(unittest.TestCase):
    """Helpers shared by the test classes: HTTP calls, users, rooms, sync."""

    port = None

    def call(self, method, path, body=None, token=None, query=None, raw=None, timeout=20):
        url = f"http://127.0.0.1:{self.port}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = raw if raw is not None else (json.dumps(body).encode()
                                            if body is not None else None)
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return Response(resp.status, resp.headers, resp.read())
        except urllib.error.HTTPError as err:
            return Response(err.code, err.headers, err.read())

    def ok(self, method, path, body=None, token=None, query=None):
        resp = self.call(method, path, body, token, query)
        self.assertEqual(resp.status, 200, resp.raw[:500])
        return resp.json

    def assertError(self, resp, status, errcode):
        self.assertEqual(resp.status, status, resp.raw[:500])
        self.assertEqual(resp.json["errcode"], errcode)
        self.assertIsInstance(resp.json["error"], str)

    def make_user(self, name, displayname=None, device_id=None):
        self.ok("POST", "/_fake/users", {"user_id": name, "password": "pw-" + name,
                                         "displayname": displayname or name.title()})
        return self.login(name, device_id)

    def login(self, name, device_id=None):
        body = {"type": "m.login.password", "identifier": {"type": "m.id.user", "user": name},
                "password": "pw-" + name}
        if device_id:
            body["device_id"] = device_id
        out = self.ok("POST", V3 + "/login", body)
        return {"user_id": out["user_id"], "token": out["access_token"],
                "device_id": out["device_id"]}

    def create_room(self, creator, invite=(), preset="private_chat", **extra):
        body = dict(extra, preset=preset, invite=[u["user_id"] for u in invite])
        return self.ok("POST", V3 + "/createRoom", body, creator["token"])["room_id"]

    def join(self, user, room_id):
        return self.ok("POST", f"{V3}/rooms/{q(room_id)}/join", {}, user["token"])

    def room_with(self, creator, *members, preset="private_chat", **extra):
        room_id = self.create_room(creator, members, preset, **extra)
        for member in members:
            self.join(member, room_id)
        return room_id

    def send(self, user, room_id, text, txn):
        return self.ok("PUT", f"{V3}/rooms/{q(room_id)}/send/m.room.message/{q(txn)}",
                       {"msgtype": "m.text", "body": text}, user["token"])["event_id"]

    def sync(self, user, since=None, timeout=None, sync_filter=None, full_state=None):
        query = {}
        for key, value in (("since", since), ("timeout", timeout), ("filter", sync_filter),
                           ("full_state", full_state)):
            if value is not None:
                query[key] = value
        return self.ok("GET", V3 + "/sync", token=user["token"], query=query)

    def room_events(self, room_id):
        return self.ok("GET", f"/_fake/rooms/{q(room_id)}/events")["events"]

    def faults(self, *rules):
        self.ok("POST", "/_fake/faults", list(rules))

    # ---- waiting for the server (its /_fake/activity), never polling it ----------------------

    def activity_mark(self):
        """(seq, boot) of the server's request steps so far."""
        got = self.ok("GET", "/_fake/activity")
        return got["seq"], got["boot"]

    def wait_step(self, mark, stage, path):
        """The first step `stage` (arrived, held, answered) after mark of a request whose path
        starts with path, waiting for it."""
        seq, boot = mark
        while True:
            got = self.ok("GET", "/_fake/activity",
                          query={"after": seq, "boot": boot, "timeout_ms": 15000})
            self.assertTrue(got["steps"], f"no request for 15 s while waiting for {stage} {path}")
            for step in got["steps"]:
                if step["stage"] == stage and step["path"].startswith(path):
                    return step
            seq = got["seq"]

    def poll_in_background(self, user, since):
        """Starts a long-poll that only news can end (its timeout is longer than any wait
        here); returns once it is at the server."""
        mark = self.activity_mark()
        result = {}

        def poll():
            result["response"] = self.call("GET", V3 + "/sync", token=user["token"],
                                           query={"since": since, "timeout": LONG_POLL_MS},
                                           timeout=LONG_POLL_MS / 1000 + 30)
        result["thread"] = threading.Thread(target=poll, daemon=True)
        result["thread"].start()
        self.wait_step(mark, "arrived", V3 + "/sync")
        return result

    def finish_poll(self, result):
        """The long-poll's answer, once news woke it."""
        result["thread"].join(120)
        self.assertFalse(result["thread"].is_alive(), "the long-poll was not woken")
        self.assertEqual(result["response"].status, 200, result["response"].raw[:500])
        return result["response"].json


class FakeHomeserverTest(ServerCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.port = start_server()

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.proc)

    def setUp(self):
        self.ok("POST", "/_fake/reset")

    # ---- discovery, login, tokens ------------------------------------------------------------

    def test_versions_and_login_flows(self):
        versions = self.ok("GET", "/_matrix/client/versions")
        self.assertIn("v1.11", versions["versions"])
        flows = self.ok("GET", V3 + "/login")["flows"]
        self.assertIn({"type": "m.login.password"}, flows)

    def test_login_good_and_bad_and_whoami(self):
        bot = self.make_user("bot")
        self.assertEqual(bot["user_id"], "@bot:example.org")
        bad = self.call("POST", V3 + "/login", {
            "type": "m.login.password", "identifier": {"type": "m.id.user", "user": "bot"},
            "password": "wrong"})
        self.assertError(bad, 403, "M_FORBIDDEN")
        nobody = self.call("POST", V3 + "/login", {
            "type": "m.login.password", "identifier": {"type": "m.id.user", "user": "nobody"},
            "password": "x"})
        self.assertError(nobody, 403, "M_FORBIDDEN")
        self.assertError(self.call("POST", V3 + "/login", {"type": "m.login.magic"}),
                         400, "M_UNKNOWN")
        legacy = self.ok("POST", V3 + "/login", {"type": "m.login.password",
                                                 "user": "@bot:example.org",
                                                 "password": "pw-bot"})
        self.assertEqual(legacy["user_id"], "@bot:example.org")
        self.assertNotEqual(legacy["device_id"], bot["device_id"])

        me = self.ok("GET", V3 + "/account/whoami", token=bot["token"])
        self.assertEqual(me, {"user_id": bot["user_id"], "device_id": bot["device_id"],
                              "is_guest": False})
        by_query = self.ok("GET", V3 + "/account/whoami", query={"access_token": bot["token"]})
        self.assertEqual(by_query["user_id"], bot["user_id"])
        self.assertError(self.call("GET", V3 + "/account/whoami"), 401, "M_MISSING_TOKEN")
        self.assertError(self.call("GET", V3 + "/account/whoami", token="nope"),
                         401, "M_UNKNOWN_TOKEN")

    def test_login_with_known_device_id_reuses_it_and_replaces_the_token(self):
        first = self.make_user("bot", device_id="CARDROOM")
        again = self.login("bot", device_id="CARDROOM")
        self.assertEqual(again["device_id"], "CARDROOM")
        self.assertError(self.call("GET", V3 + "/account/whoami", token=first["token"]),
                         401, "M_UNKNOWN_TOKEN")
        me = self.ok("GET", V3 + "/account/whoami", token=again["token"])
        self.assertEqual(me["device_id"], "CARDROOM")

    def test_unknown_endpoint_wrong_method_and_bad_json(self):
        bot = self.make_user("bot")
        self.assertError(self.call("GET", V3 + "/no/such/thing", token=bot["token"]),
                         404, "M_UNRECOGNIZED")
        self.assertError(self.call("DELETE", V3 + "/login"), 405, "M_UNRECOGNIZED")
        self.assertError(self.call("POST", V3 + "/createRoom", raw=b"{nope",
                                   token=bot["token"]), 400, "M_NOT_JSON")
        self.assertError(self.call("POST", V3 + "/createRoom", raw=b"[1]",
                                   token=bot["token"]), 400, "M_BAD_JSON")

    # ---- filters -----------------------------------------------------------------------------

    def test_filter_round_trip(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        definition = {"room": {"timeline": {"limit": 5, "types": ["m.room.message"]},
                               "state": {"lazy_load_members": True}},
                      "presence": {"types": []}}
        filter_id = self.ok("POST", f"{V3}/user/{q(bot['user_id'])}/filter", definition,
                            bot["token"])["filter_id"]
        self.assertIsInstance(filter_id, str)
        self.assertFalse(filter_id.startswith("{"))
        self.assertEqual(self.ok("GET", f"{V3}/user/{q(bot['user_id'])}/filter/{filter_id}",
                                 token=bot["token"]), definition)
        self.assertError(self.call("GET", f"{V3}/user/{q(bot['user_id'])}/filter/{filter_id}",
                                   token=alice["token"]), 403, "M_FORBIDDEN")
        self.assertError(self.call("GET", f"{V3}/user/{q(bot['user_id'])}/filter/99",
                                   token=bot["token"]), 404, "M_NOT_FOUND")
        self.assertError(self.call("POST", f"{V3}/user/{q(bot['user_id'])}/filter",
                                   {"room": {"timeline": {"limit": "ten"}}}, bot["token"]),
                         400, "M_BAD_JSON")
        self.sync(bot, sync_filter=filter_id)
        self.sync(bot, sync_filter=json.dumps(definition))
        self.assertError(self.call("GET", V3 + "/sync", token=bot["token"],
                                   query={"filter": "99"}), 400, "M_INVALID_PARAM")
        self.assertError(self.call("GET", V3 + "/sync", token=bot["token"],
                                   query={"filter": "{nope"}), 400, "M_NOT_JSON")

    # ---- direct chats as the bot makes them ----------------------------------------------------

    def test_trusted_private_chat_dm_with_encryption(self):
        bot, alice = self.make_user("bot", "Cardroom"), self.make_user("alice", "Alice")
        alice_since = self.sync(alice)["next_batch"]
        encryption = {"algorithm": "m.megolm.v1.aes-sha2"}
        room_id = self.create_room(bot, [alice], "trusted_private_chat", is_direct=True,
                                   initial_state=[{"type": "m.room.encryption",
                                                   "state_key": "", "content": encryption}])

        invited = self.sync(alice, since=alice_since)
        self.assertNotIn(room_id, invited["rooms"]["join"])
        stripped = invited["rooms"]["invite"][room_id]["invite_state"]["events"]
        for event in stripped:
            self.assertEqual(set(event), {"type", "state_key", "content", "sender"})
        by_type = {e["type"]: e for e in stripped}
        self.assertEqual(by_type["m.room.encryption"]["content"], encryption)
        self.assertEqual(by_type["m.room.join_rules"]["content"], {"join_rule": "invite"})
        self.assertIn("m.room.create", by_type)
        invite = by_type["m.room.member"]
        self.assertEqual(invite["state_key"], alice["user_id"])
        self.assertEqual(invite["sender"], bot["user_id"])
        self.assertEqual(invite["content"]["membership"], "invite")
        self.assertIs(invite["content"]["is_direct"], True)
        # The same invite is not repeated on the next incremental sync.
        again = self.sync(alice, since=invited["next_batch"])
        self.assertNotIn(room_id, again["rooms"]["invite"])

        self.assertEqual(self.ok("POST", f"{V3}/join/{q(room_id)}", {}, alice["token"]),
                         {"room_id": room_id})
        joined = self.sync(alice, since=again["next_batch"])
        self.assertNotIn(room_id, joined["rooms"]["invite"])
        entry = joined["rooms"]["join"][room_id]
        seen = {e["type"] for e in entry["state"]["events"] + entry["timeline"]["events"]}
        self.assertLessEqual({"m.room.create", "m.room.encryption", "m.room.power_levels",
                              "m.room.member"}, seen)

        state = f"{V3}/rooms/{q(room_id)}/state"
        levels = self.ok("GET", state + "/m.room.power_levels", token=alice["token"])
        # trusted_private_chat: "All invitees are given the same power level as the creator."
        self.assertEqual(levels["users"], {bot["user_id"]: 100, alice["user_id"]: 100})
        self.assertEqual(levels["invite"], 0)
        self.assertEqual(self.ok("GET", state + "/m.room.encryption/", token=alice["token"]),
                         encryption)
        self.assertEqual(self.ok("GET", state + "/m.room.history_visibility",
                                 token=alice["token"]), {"history_visibility": "shared"})
        self.assertEqual(self.ok("GET", state + "/m.room.guest_access", token=alice["token"]),
                         {"guest_access": "can_join"})

    def test_private_chat_invitees_get_no_power(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        levels = self.ok("GET", f"{V3}/rooms/{q(room_id)}/state/m.room.power_levels",
                         token=alice["token"])
        self.assertEqual(levels["users"], {bot["user_id"]: 100})

    # ---- sending -----------------------------------------------------------------------------

    def test_send_deduplicates_by_transaction_id_per_device(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        since = self.sync(bot)["next_batch"]
        first = self.send(bot, room_id, "hello", "txn-1")
        self.assertTrue(first.startswith("$"))
        self.assertEqual(self.send(bot, room_id, "hello", "txn-1"), first)
        self.assertEqual(self.send(bot, room_id, "hello again, same txn", "txn-1"), first)
        texts = [e for e in self.room_events(room_id)
                 if e["unsigned"].get("transaction_id") == "txn-1"]
        self.assertEqual(len(texts), 1)

        other_device = self.login("bot")
        second = self.send(other_device, room_id, "hello", "txn-1")
        self.assertNotEqual(second, first)
        texts = [e for e in self.room_events(room_id)
                 if e["unsigned"].get("transaction_id") == "txn-1"]
        self.assertEqual(len(texts), 2)

        def txn_ids(user):
            events = self.sync(user, since=since)["rooms"]["join"][room_id]["timeline"]["events"]
            return {e["event_id"]: e["unsigned"].get("transaction_id") for e in events}
        self.assertEqual(txn_ids(bot), {first: "txn-1", second: None})
        self.assertEqual(txn_ids(other_device), {first: None, second: "txn-1"})
        self.assertEqual(txn_ids(alice), {first: None, second: None})

    def test_send_refused_when_not_joined_then_allowed_after_joining(self):
        bot, carol = self.make_user("bot"), self.make_user("carol")
        room_id = self.create_room(bot, [carol])
        path = f"{V3}/rooms/{q(room_id)}/send/m.room.message/t1"
        refused = self.call("PUT", path, {"msgtype": "m.text", "body": "hi"}, carol["token"])
        self.assertError(refused, 403, "M_FORBIDDEN")
        self.join(carol, room_id)
        self.ok("PUT", path, {"msgtype": "m.text", "body": "hi"}, carol["token"])

    def test_membership_no_ops_refusals_and_size_limit(self):
        bot, alice, carol = (self.make_user(n) for n in ("bot", "alice", "carol"))
        room_id = self.room_with(bot, alice)
        invite = f"{V3}/rooms/{q(room_id)}/invite"
        count = len(self.room_events(room_id))
        self.ok("POST", invite, {"user_id": carol["user_id"]}, bot["token"])
        self.ok("POST", invite, {"user_id": carol["user_id"]}, bot["token"])   # already invited
        self.join(alice, room_id)                                              # already joined
        self.assertEqual(len(self.room_events(room_id)), count + 1)
        self.assertError(self.call("POST", invite, {"user_id": alice["user_id"]},
                                   bot["token"]), 403, "M_FORBIDDEN")
        self.assertError(self.call("POST", f"{V3}/join/{q('!nowhere:example.org')}", {},
                                   carol["token"]), 404, "M_NOT_FOUND")
        too_big = self.call("PUT", f"{V3}/rooms/{q(room_id)}/send/m.room.message/big",
                            {"msgtype": "m.text", "body": "x" * 65536}, bot["token"])
        self.assertError(too_big, 413, "M_TOO_LARGE")

    # ---- sync --------------------------------------------------------------------------------

    def test_long_poll_returns_when_another_user_sends(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        since = self.sync(alice)["next_batch"]
        result = self.poll_in_background(alice, since)
        event_id = self.send(bot, room_id, "your turn", "t1")
        events = self.finish_poll(result)["rooms"]["join"][room_id]["timeline"]["events"]
        self.assertEqual([e["event_id"] for e in events], [event_id])
        self.assertEqual(events[0]["sender"], bot["user_id"])

    def test_long_poll_times_out_empty(self):
        alice = self.make_user("alice")
        since = self.sync(alice)["next_batch"]
        started = time.monotonic()
        quiet = self.sync(alice, since=since, timeout=300)
        self.assertGreaterEqual(time.monotonic() - started, 0.28)
        self.assertEqual(quiet["rooms"]["join"], {})
        self.assertEqual(quiet["next_batch"], since)

    def test_limited_timeline_with_small_filter_limit(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        small = json.dumps({"room": {"timeline": {"limit": 3}}})
        initial = self.sync(alice, sync_filter=small)
        self.assertTrue(initial["rooms"]["join"][room_id]["timeline"]["limited"])
        self.assertEqual(len(initial["rooms"]["join"][room_id]["timeline"]["events"]), 3)

        self.send(bot, room_id, "m1", "t1")
        self.send(bot, room_id, "m2", "t2")
        self.ok("PUT", f"{V3}/rooms/{q(room_id)}/state/m.room.name", {"name": "Table 1"},
                bot["token"])
        last = [self.send(bot, room_id, f"m{i}", f"t{i}") for i in (3, 4, 5)]
        gap = self.sync(alice, since=initial["next_batch"], sync_filter=small)
        entry = gap["rooms"]["join"][room_id]
        self.assertTrue(entry["timeline"]["limited"])
        self.assertEqual([e["event_id"] for e in entry["timeline"]["events"]], last)
        self.assertIn("prev_batch", entry["timeline"])
        # The name changed inside the gap, so it comes as state (delta to timeline start).
        self.assertEqual([(e["type"], e["content"]) for e in entry["state"]["events"]],
                         [("m.room.name", {"name": "Table 1"})])

        earlier = self.ok("GET", f"{V3}/rooms/{q(room_id)}/messages", token=alice["token"],
                          query={"from": entry["timeline"]["prev_batch"], "dir": "b",
                                 "limit": 3})
        self.assertEqual([e["type"] for e in earlier["chunk"]],
                         ["m.room.name", "m.room.message", "m.room.message"])
        self.assertEqual([e["content"].get("body") for e in earlier["chunk"][1:]], ["m2", "m1"])

        self.send(bot, room_id, "m6", "t6")
        calm = self.sync(alice, since=gap["next_batch"], sync_filter=small)
        entry = calm["rooms"]["join"][room_id]
        self.assertFalse(entry["timeline"]["limited"])
        self.assertEqual(len(entry["timeline"]["events"]), 1)
        self.assertEqual(entry["state"]["events"], [])

    def test_invalid_since_token(self):
        alice = self.make_user("alice")
        current = self.sync(alice)["next_batch"]
        for since in ("garbage", "s999999_" + current.split("_")[1], "s1_otherepoch"):
            self.assertError(self.call("GET", V3 + "/sync", token=alice["token"],
                                       query={"since": since}), 400, "M_UNKNOWN")

    # ---- account data ------------------------------------------------------------------------

    def test_account_data_m_direct_round_trip(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice, preset="trusted_private_chat", is_direct=True)
        path = f"{V3}/user/{q(bot['user_id'])}/account_data/m.direct"
        self.assertError(self.call("GET", path, token=bot["token"]), 404, "M_NOT_FOUND")
        direct = {alice["user_id"]: [room_id]}
        self.assertEqual(self.ok("PUT", path, direct, bot["token"]), {})
        self.assertEqual(self.ok("GET", path, token=bot["token"]), direct)
        self.assertError(self.call("GET", path, token=alice["token"]), 403, "M_FORBIDDEN")
        self.assertError(self.call("PUT", path, {}, alice["token"]), 403, "M_FORBIDDEN")

        initial = self.sync(bot)
        self.assertIn({"type": "m.direct", "content": direct},
                      initial["account_data"]["events"])
        self.send(alice, room_id, "hi", "t1")
        quiet = self.sync(bot, since=initial["next_batch"])
        self.assertEqual(quiet["account_data"]["events"], [])
        direct[alice["user_id"]].append("!other:example.org")
        self.ok("PUT", path, direct, bot["token"])
        changed = self.sync(bot, since=quiet["next_batch"], timeout=5000)
        self.assertEqual(changed["account_data"]["events"],
                         [{"type": "m.direct", "content": direct}])

    # ---- state and members -------------------------------------------------------------------

    def test_state_members_and_power_levels(self):
        bot, alice = self.make_user("bot", "Cardroom"), self.make_user("alice", "Alice")
        carol = self.make_user("carol")
        room_id = self.room_with(bot, alice, name="Table 1")
        room = f"{V3}/rooms/{q(room_id)}"
        table = {"game": "304", "seats": 4}
        put = self.ok("PUT", room + "/state/org.cardroom.table/", table, bot["token"])
        self.assertEqual(self.ok("PUT", room + "/state/org.cardroom.table", table,
                                 bot["token"]), put)
        self.assertEqual(self.ok("GET", room + "/state/org.cardroom.table", token=alice["token"]),
                         table)
        self.assertError(self.call("GET", room + "/state/org.cardroom.missing",
                                   token=alice["token"]), 404, "M_NOT_FOUND")
        self.assertError(self.call("PUT", room + "/state/m.room.name", {"name": "Mine"},
                                   alice["token"]), 403, "M_FORBIDDEN")
        # A state key that is a user ID may be set by that user only.
        self.ok("PUT", room + "/state/org.cardroom.seat/" + q(bot["user_id"]), {}, bot["token"])
        self.assertError(self.call("PUT", room + "/state/org.cardroom.seat/" +
                                   q(alice["user_id"]), {}, bot["token"]), 403, "M_FORBIDDEN")

        types = {(e["type"], e["state_key"]) for e in
                 self.ok("GET", room + "/state", token=alice["token"])}
        self.assertLessEqual({("m.room.create", ""), ("m.room.power_levels", ""),
                              ("m.room.name", ""), ("org.cardroom.table", ""),
                              ("m.room.member", bot["user_id"]),
                              ("m.room.member", alice["user_id"])}, types)
        members = self.ok("GET", room + "/members", token=alice["token"],
                          query={"membership": "join"})["chunk"]
        self.assertEqual(sorted(e["state_key"] for e in members),
                         sorted([bot["user_id"], alice["user_id"]]))
        joined = self.ok("GET", room + "/joined_members", token=bot["token"])["joined"]
        self.assertEqual(joined, {bot["user_id"]: {"display_name": "Cardroom"},
                                  alice["user_id"]: {"display_name": "Alice"}})
        self.assertError(self.call("GET", room + "/state", token=carol["token"]),
                         403, "M_FORBIDDEN")
        self.assertError(self.call("GET", room + "/joined_members", token=carol["token"]),
                         403, "M_FORBIDDEN")

        levels = self.ok("GET", room + "/state/m.room.power_levels", token=bot["token"])
        levels["users"][alice["user_id"]] = 50
        self.ok("PUT", room + "/state/m.room.power_levels", levels, bot["token"])
        self.ok("PUT", room + "/state/m.room.name", {"name": "Alice's table"}, alice["token"])
        levels["users"][alice["user_id"]] = 100
        self.assertError(self.call("PUT", room + "/state/m.room.power_levels", levels,
                                   alice["token"]), 403, "M_FORBIDDEN")

    def test_profile(self):
        bot, alice = self.make_user("bot"), self.make_user("alice", "Alice")
        room_id = self.room_with(bot, alice)
        profile = f"{V3}/profile/{q(alice['user_id'])}"
        self.assertEqual(self.ok("GET", profile), {"displayname": "Alice"})
        self.assertEqual(self.ok("GET", profile + "/displayname"), {"displayname": "Alice"})
        self.assertError(self.call("GET", f"{V3}/profile/{q('@nobody:example.org')}"),
                         404, "M_NOT_FOUND")
        self.ok("PUT", profile + "/displayname", {"displayname": "Alice W"}, alice["token"])
        joined = self.ok("GET", f"{V3}/rooms/{q(room_id)}/joined_members", token=bot["token"])
        self.assertEqual(joined["joined"][alice["user_id"]], {"display_name": "Alice W"})

    # ---- leaving -----------------------------------------------------------------------------

    def test_leave_and_kick_show_in_rooms_leave(self):
        bot, alice, carol = (self.make_user(n) for n in ("bot", "alice", "carol"))
        room_id = self.room_with(bot, alice, carol)
        since_alice = self.sync(alice)["next_batch"]
        since_carol = self.sync(carol)["next_batch"]

        self.assertError(self.call("POST", f"{V3}/rooms/{q(room_id)}/kick",
                                   {"user_id": bot["user_id"]}, carol["token"]),
                         403, "M_FORBIDDEN")
        self.ok("POST", f"{V3}/rooms/{q(room_id)}/leave", {}, alice["token"])
        left = self.sync(alice, since=since_alice)
        self.assertNotIn(room_id, left["rooms"]["join"])
        events = left["rooms"]["leave"][room_id]["timeline"]["events"]
        self.assertEqual((events[-1]["type"], events[-1]["state_key"], events[-1]["sender"],
                          events[-1]["content"]["membership"]),
                         ("m.room.member", alice["user_id"], alice["user_id"], "leave"))

        self.ok("POST", f"{V3}/rooms/{q(room_id)}/kick",
                {"user_id": carol["user_id"], "reason": "table closed"}, bot["token"])
        kicked = self.sync(carol, since=since_carol)
        kick = kicked["rooms"]["leave"][room_id]["timeline"]["events"][-1]
        self.assertEqual((kick["state_key"], kick["sender"], kick["content"]),
                         (carol["user_id"], bot["user_id"],
                          {"membership": "leave", "reason": "table closed"}))
        self.assertEqual(kick["unsigned"]["prev_content"]["membership"], "join")
        self.assertError(self.call("PUT", f"{V3}/rooms/{q(room_id)}/send/m.room.message/t9",
                                   {"body": "hi"}, carol["token"]), 403, "M_FORBIDDEN")
        self.assertNotIn(room_id, self.ok("GET", V3 + "/joined_rooms",
                                          token=carol["token"])["joined_rooms"])
        # Left rooms are in an initial sync only when the filter asks for them.
        self.assertNotIn(room_id, self.sync(carol)["rooms"]["leave"])
        with_leave = self.sync(carol, sync_filter=json.dumps({"room": {"include_leave": True}}))
        self.assertIn(room_id, with_leave["rooms"]["leave"])
        # Invite-only: a kicked user cannot just come back.
        self.assertError(self.call("POST", f"{V3}/rooms/{q(room_id)}/join", {}, carol["token"]),
                         403, "M_FORBIDDEN")

    # ---- faults ------------------------------------------------------------------------------

    def test_fault_429_with_retry_after(self):
        alice = self.make_user("alice")
        self.faults({"path_regex": "/sync", "action": "429", "retry_after_ms": 1500})
        limited = self.call("GET", V3 + "/sync", token=alice["token"])
        self.assertError(limited, 429, "M_LIMIT_EXCEEDED")
        self.assertEqual(limited.json["retry_after_ms"], 1500)
        self.assertEqual(limited.headers["Retry-After"], "2")
        self.sync(alice)
        self.assertEqual(self.ok("GET", "/_fake/faults")["faults"], [])
        log = self.ok("GET", "/_fake/requests")["requests"]
        self.assertEqual([(r["fault"], r["status"]) for r in log if "/sync" in r["path"]],
                         [("429", 429), (None, 200)])

    def test_fault_500_does_not_send(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        self.faults({"method": "PUT", "path_regex": "/send/", "action": "500", "count": 2})
        self.sync(bot)                                 # other methods and paths unaffected
        path = f"{V3}/rooms/{q(room_id)}/send/m.room.message/t1"
        for _ in range(2):
            self.assertError(self.call("PUT", path, {"body": "x"}, bot["token"]),
                             500, "M_UNKNOWN")
        self.assertEqual([e for e in self.room_events(room_id)
                          if e["type"] == "m.room.message"], [])
        self.ok("PUT", path, {"body": "x"}, bot["token"])

    def test_fault_drop_after_processing_then_retry_is_deduplicated(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        self.faults({"method": "PUT", "path_regex": "/send/", "action": "drop"})
        path = f"{V3}/rooms/{q(room_id)}/send/m.room.message/t1"
        with self.assertRaises((http.client.HTTPException, ConnectionError,
                                urllib.error.URLError)):
            self.call("PUT", path, {"body": "x"}, bot["token"])
        messages = [e for e in self.room_events(room_id) if e["type"] == "m.room.message"]
        self.assertEqual(len(messages), 1)                # the server did process it
        retry = self.ok("PUT", path, {"body": "x"}, bot["token"])
        self.assertEqual(retry["event_id"], messages[0]["event_id"])
        self.assertEqual(len([e for e in self.room_events(room_id)
                              if e["type"] == "m.room.message"]), 1)

    def test_fault_drop_before_anything(self):
        alice = self.make_user("alice")
        self.faults({"path_regex": "/sync", "action": "drop", "drop_after": "nothing"})
        with self.assertRaises((http.client.HTTPException, ConnectionError,
                                urllib.error.URLError)):
            self.call("GET", V3 + "/sync", token=alice["token"])
        self.sync(alice)

    def test_fault_garbage_slow_and_huge(self):
        alice = self.make_user("alice")
        self.faults({"path_regex": "/sync", "action": "garbage"},
                    {"path_regex": "/whoami", "action": "slow", "delay_ms": 300},
                    {"path_regex": "/versions", "action": "huge"})
        garbage = self.call("GET", V3 + "/sync", token=alice["token"])
        self.assertEqual(garbage.status, 200)
        self.assertIsNone(garbage.json)
        started = time.monotonic()
        self.ok("GET", V3 + "/account/whoami", token=alice["token"])
        self.assertGreaterEqual(time.monotonic() - started, 0.3)
        huge = self.call("GET", "/_matrix/client/versions")
        self.assertEqual(huge.status, 200)
        self.assertEqual(len(huge.raw), 5 * 1024 * 1024)

    def test_fault_slow_after_processing_holds_the_answer(self):
        alice = self.make_user("alice")
        self.faults({"path_regex": "/createRoom", "action": "slow", "delay_ms": 5000, "process": True})
        since = self.sync(alice)["next_batch"]
        done = {}

        def create():
            done["answer"] = self.ok("POST", V3 + "/createRoom", {"preset": "private_chat"},
                                     alice["token"])
        worker = threading.Thread(target=create)
        poll = self.poll_in_background(alice, since)
        worker.start()
        self.finish_poll(poll)                          # alice's join in the new room woke it
        rooms = self.ok("GET", "/_fake/rooms")["rooms"]
        self.assertEqual(len(rooms), 1, "the room is made before the answer")
        self.assertNotIn("answer", done, "the answer is held back")
        worker.join(10)
        self.assertEqual(list(rooms), [done["answer"]["room_id"]])

    def test_activity_tells_each_step_of_a_request(self):
        alice = self.make_user("alice")
        seq, boot = self.activity_mark()
        woken = []
        waiter = threading.Thread(target=lambda: woken.append(self.ok(
            "GET", "/_fake/activity", query={"after": seq, "boot": boot, "timeout_ms": 15000})))
        waiter.start()
        self.ok("GET", V3 + "/account/whoami", token=alice["token"])
        waiter.join(60)
        whoami = V3 + "/account/whoami"
        self.assertEqual([(s["stage"], s["path"]) for s in woken[0]["steps"]][:1],
                         [("arrived", whoami)])
        after = self.ok("GET", "/_fake/activity", query={"after": seq, "boot": boot})
        self.assertEqual([(s["seq"], s["stage"], s["method"], s["path"], s["status"])
                          for s in after["steps"]],
                         [(seq + 1, "arrived", "GET", whoami, None),
                          (seq + 2, "answered", "GET", whoami, 200)])
        self.assertEqual((after["seq"], after["boot"]), (seq + 2, boot))
        self.ok("GET", "/_fake/rooms")                  # the control API is not activity
        elsewhere = self.ok("GET", "/_fake/activity", query={"after": seq + 2, "boot": "other"})
        self.assertEqual(elsewhere["steps"][0]["seq"], 1, "another boot's seq means nothing here")
        self.assertEqual(self.ok("GET", "/_fake/activity",
                                 query={"after": seq + 2, "boot": boot, "timeout_ms": 50}),
                         {"boot": boot, "seq": seq + 2, "steps": []})

    def test_fault_hold_waits_until_released(self):
        alice = self.make_user("alice")
        self.faults({"path_regex": "/sync", "action": "hold", "name": "sync", "count": -1})
        self.assertEqual(self.ok("GET", "/_fake/holds")["active"], ["sync"])
        answers = []
        thread = threading.Thread(target=lambda: answers.append(
            self.call("GET", V3 + "/sync", token=alice["token"])))
        mark = self.activity_mark()
        thread.start()
        self.wait_step(mark, "held", V3 + "/sync")
        self.assertEqual(self.ok("GET", "/_fake/holds")["waiting"], {"sync": 1})
        self.ok("GET", V3 + "/account/whoami", token=alice["token"])   # others go on
        self.assertEqual(answers, [])
        self.ok("DELETE", "/_fake/holds/sync")
        thread.join(10)
        self.assertEqual(answers[0].status, 200)
        self.assertIn("next_batch", answers[0].json)
        self.assertEqual(self.ok("GET", "/_fake/holds"), {"active": [], "waiting": {}})
        self.assertEqual(self.ok("GET", "/_fake/faults")["faults"], [], "the rule went too")
        self.sync(alice)                                # no longer held

    # ---- Synapse's message rate limit --------------------------------------------------------

    def test_rate_limit_is_synapses_bucket(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        self.ok("POST", "/_fake/ratelimit", {"per_second": 0.5, "burst_count": 3})
        for n in range(3):
            self.send(bot, room_id, f"burst {n}", f"b{n}")
        path = f"{V3}/rooms/{q(room_id)}/send/m.room.message/b3"
        limited = self.call("PUT", path, {"body": "one too many"}, bot["token"])
        self.assertError(limited, 429, "M_LIMIT_EXCEEDED")
        self.assertNotIn("Retry-After", limited.headers, "Synapse 1.67 sends no header")
        # the next action is allowed once one of three leaked out: 1 / 0.5 s after the start
        self.assertGreater(limited.json["retry_after_ms"], 1500)
        self.assertLessEqual(limited.json["retry_after_ms"], 2000)
        self.assertEqual(self.call("PUT", f"{V3}/rooms/{q(room_id)}/send/m.room.message/b0",
                                   {"body": "burst 0"}, bot["token"]).status, 200,
                         "a retransmission is answered from the txn cache")
        self.send(alice, room_id, "alice has a bucket of her own", "a1")
        self.join(alice, room_id)                       # memberships are not counted
        self.ok("POST", f"/_fake/as/{q(bot['user_id'])}/send",
                {"room_id": room_id, "content": {"body": "control API: never limited"}})
        state = self.call("PUT", f"{V3}/rooms/{q(room_id)}/state/m.room.topic/",
                          {"topic": "state counts"}, bot["token"])
        self.assertError(state, 429, "M_LIMIT_EXCEEDED")
        self.assertError(self.call("POST", V3 + "/createRoom", {"preset": "private_chat"},
                                   bot["token"]), 429, "M_LIMIT_EXCEEDED")
        bodies = [e["content"].get("body") for e in self.room_events(room_id)
                  if e["type"] == "m.room.message"]
        self.assertNotIn("one too many", bodies, "a refused event is not made")
        self.assertEqual(self.ok("GET", "/_fake/ratelimit")["rate_limit"],
                         {"per_second": 0.5, "burst_count": 3})
        self.ok("POST", "/_fake/ratelimit", {})
        self.send(bot, room_id, "no limit now", "b4")
        self.assertError(self.call("POST", "/_fake/ratelimit", {"per_second": 0,
                                                                "burst_count": 3}),
                         400, "M_BAD_JSON")

    def test_rate_limit_a_new_room_takes_two_turns(self):
        """As Synapse: createRoom counts, and so does the creator's join in the new room; a
        refused join answers 429 and leaves the room there with nobody in it."""
        bot, alice = self.make_user("bot"), self.make_user("alice")
        self.ok("POST", "/_fake/ratelimit", {"per_second": 0.5, "burst_count": 3})
        room_id = self.create_room(bot, [alice])                       # two of three
        self.assertEqual(self.ok("GET", "/_fake/rooms")["rooms"][room_id]["members"],
                         {bot["user_id"]: "join", alice["user_id"]: "invite"})
        before = set(self.ok("GET", "/_fake/rooms")["rooms"])
        limited = self.call("POST", V3 + "/createRoom", {"preset": "private_chat"}, bot["token"])
        self.assertError(limited, 429, "M_LIMIT_EXCEEDED")
        left = set(self.ok("GET", "/_fake/rooms")["rooms"]) - before
        self.assertEqual(len(left), 1, "the room made before the refused join is not there")
        self.assertEqual(self.ok("GET", "/_fake/rooms")["rooms"][left.pop()]["members"], {})
        self.assertGreater(limited.json["retry_after_ms"], 0)

    def test_rate_limit_refills_at_its_rate(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        self.ok("POST", "/_fake/ratelimit", {"per_second": 20, "burst_count": 1})
        self.send(bot, room_id, "first", "r0")
        limited = self.call("PUT", f"{V3}/rooms/{q(room_id)}/send/m.room.message/r1",
                            {"body": "second"}, bot["token"])
        self.assertError(limited, 429, "M_LIMIT_EXCEEDED")
        self.assertLessEqual(limited.json["retry_after_ms"], 50)
        time.sleep(limited.json["retry_after_ms"] / 1000 + 0.01)
        self.send(bot, room_id, "second", "r1")

    # ---- the plaintext audit -----------------------------------------------------------------

    def test_plaintext_in_encrypted_rooms_is_listed(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        self.send(bot, room_id, "before encryption: fine", "p1")
        self.ok("PUT", f"{V3}/rooms/{q(room_id)}/state/m.room.encryption/",
                {"algorithm": "m.megolm.v1.aes-sha2"}, bot["token"])
        self.ok("PUT", f"{V3}/rooms/{q(room_id)}/send/m.room.encrypted/p2",
                {"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "x"}, bot["token"])
        self.ok("PUT", f"{V3}/rooms/{q(room_id)}/state/m.room.topic/", {"topic": "state"},
                bot["token"])
        leak = self.send(bot, room_id, "your hand: J♠", "p3")
        found = self.ok("GET", "/_fake/plaintext")["events"]
        self.assertEqual([(e["event_id"], e["sender"], e["type"], e["txn_id"]) for e in found],
                         [(leak, bot["user_id"], "m.room.message", "p3")])

    # ---- transport and control API -----------------------------------------------------------

    def test_keep_alive_serves_several_requests_on_one_connection(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for _ in range(3):
                conn.request("GET", "/_matrix/client/versions")
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200)
                self.assertIn("v1.11", json.loads(resp.read())["versions"])
        finally:
            conn.close()

    def test_control_api_acts_as_a_user(self):
        bot, alice = self.make_user("bot"), self.make_user("alice")
        room_id = self.room_with(bot, alice)
        since = self.sync(bot)["next_batch"]
        sent = self.ok("POST", f"/_fake/as/{q(alice['user_id'])}/send",
                       {"room_id": room_id, "content": {"msgtype": "m.text", "body": "!new 304"}})
        events = self.sync(bot, since=since)["rooms"]["join"][room_id]["timeline"]["events"]
        self.assertEqual([e["event_id"] for e in events], [sent["event_id"]])
        rooms = self.ok("GET", f"/_fake/as/{q(alice['user_id'])}{V3}/joined_rooms")
        self.assertEqual(rooms["joined_rooms"], [room_id])
        self.assertTrue(self.ok("GET", "/_fake/health")["ok"])


class StockRateLimitTest(ServerCase):
    """--rate-limit without a value: Synapse's stock rc_message, kept over a reset."""

    def test_stock_limit_from_the_command_line(self):
        proc, self.port = start_server(extra=["--rate-limit"])
        try:
            stock = {"per_second": 0.2, "burst_count": 10}
            self.assertEqual(self.ok("GET", "/_fake/ratelimit")["rate_limit"], stock)
            self.ok("POST", "/_fake/reset")
            self.assertEqual(self.ok("GET", "/_fake/ratelimit")["rate_limit"], stock)
            bot, alice = self.make_user("bot"), self.make_user("alice")
            room_id = self.room_with(bot, alice)     # createRoom and the bot's join: two of ten
            for n in range(8):
                self.send(bot, room_id, f"burst {n}", f"s{n}")
            limited = self.call("PUT", f"{V3}/rooms/{q(room_id)}/send/m.room.message/s8",
                                {"body": "the eleventh"}, bot["token"])
            self.assertError(limited, 429, "M_LIMIT_EXCEEDED")
            self.assertGreater(limited.json["retry_after_ms"], 4000)
            self.assertLessEqual(limited.json["retry_after_ms"], 5000)
        finally:
            stop_server(proc)


class RestartTest(ServerCase):
    """Kill -9 and restart with the same --state file: rooms, tokens, txn ids and sync
    positions survive."""

    def test_restart_keeps_rooms_tokens_and_sync_position(self):
        with tempfile.TemporaryDirectory() as tmp:
            state = os.path.join(tmp, "hs.json")
            proc, self.port = start_server(state=state)
            try:
                bot, alice = self.make_user("bot"), self.make_user("alice")
                room_id = self.room_with(bot, alice)
                first = self.send(bot, room_id, "before", "t1")
                since = self.sync(bot)["next_batch"]
                epoch = self.ok("GET", "/_fake/health")["epoch"]
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                proc.stdout.close()
            proc, port = start_server(port=self.port, state=state)
            try:
                self.assertEqual(port, self.port)
                self.assertEqual(self.ok("GET", "/_fake/health")["epoch"], epoch)
                me = self.ok("GET", V3 + "/account/whoami", token=bot["token"])
                self.assertEqual(me["device_id"], bot["device_id"])
                quiet = self.sync(bot, since=since, timeout=0)
                self.assertEqual(quiet["rooms"]["join"], {})
                self.assertEqual(self.send(bot, room_id, "before", "t1"), first)
                after = self.send(alice, room_id, "after", "t2")
                news = self.sync(bot, since=since)["rooms"]["join"][room_id]
                self.assertEqual([e["event_id"] for e in news["timeline"]["events"]], [after])
                self.assertEqual(self.ok("GET", V3 + "/joined_rooms",
                                         token=alice["token"])["joined_rooms"], [room_id])
            finally:
                stop_server(proc)


# ---- end-to-end encryption ------------------------------------------------------------------

ALGORITHMS = ["m.olm.v1.curve25519-aes-sha2", "m.megolm.v1.aes-sha2"]


def device_keys(user, tag="1"):
    """A DeviceKeys object.  The fake does not verify signatures, so any text will do."""
    dev, uid = user["device_id"], user["user_id"]
    return {"user_id": uid, "device_id": dev, "algorithms": ALGORITHMS,
            "keys": {f"curve25519:{dev}": f"curve-{dev}-{tag}",
                     f"ed25519:{dev}": f"ed-{dev}-{tag}"},
            "signatures": {uid: {f"ed25519:{dev}": f"sig-{dev}-{tag}"}}}


def signed_key(user, key, fallback=False):
    out = {"key": key,
           "signatures": {user["user_id"]: {f"ed25519:{user['device_id']}": "sig-" + key}}}
    if fallback:
        out["fallback"] = True
    return out


def one_time_keys(user, names, tag="k"):
    return {f"signed_curve25519:{name}": signed_key(user, f"{tag}-{name}") for name in names}


def cross_signing_key(user, usage, public, signer=None):
    key = {"user_id": user["user_id"], "usage": [usage], "keys": {f"ed25519:{public}": public}}
    if signer:
        key["signatures"] = {user["user_id"]: {f"ed25519:{signer}": f"sig-by-{signer}"}}
    return key


def cross_signing_set(user, prefix):
    """master, self-signing and user-signing keys, the last two signed by the master."""
    master = prefix + "MASTER"
    return {"master_key": cross_signing_key(user, "master", master),
            "self_signing_key": cross_signing_key(user, "self_signing", prefix + "SSK", master),
            "user_signing_key": cross_signing_key(user, "user_signing", prefix + "USK", master)}


class E2EECase(ServerCase):
    """Helpers for the E2EE endpoints."""

    def upload(self, user, body):
        return self.ok("POST", V3 + "/keys/upload", body, user["token"])

    def query(self, user, wanted):
        return self.ok("POST", V3 + "/keys/query", {"device_keys": wanted}, user["token"])

    def claim(self, user, wanted):
        return self.ok("POST", V3 + "/keys/claim", {"one_time_keys": wanted}, user["token"])

    def to_device(self, user, messages, txn, kind="m.room_key_request"):
        return self.call("PUT", f"{V3}/sendToDevice/{q(kind)}/{q(txn)}",
                         {"messages": messages}, user["token"])

    def pending(self, user):
        return self.ok("GET", f"/_fake/to_device/{q(user['user_id'])}/"
                              f"{q(user['device_id'])}")["events"]

    def fake_devices(self, user):
        return self.ok("GET", f"/_fake/devices/{q(user['user_id'])}")["devices"]

    def signing_upload(self, user, body):
        return self.call("POST", V3 + "/keys/device_signing/upload", body, user["token"])

    def password_auth(self, user, session, password=None):
        name = user["user_id"].split(":")[0][1:]
        return {"type": "m.login.password", "session": session, "password":
                password or "pw-" + name, "identifier": {"type": "m.id.user", "user": name}}


class E2EETest(E2EECase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.port = start_server()

    @classmethod
    def tearDownClass(cls):
        stop_server(cls.proc)

    def setUp(self):
        self.ok("POST", "/_fake/reset")

    # ---- /keys/upload ------------------------------------------------------------------------

    def test_keys_upload_counts_and_refusals(self):
        bot = self.make_user("bot", device_id="BOTDEV")
        self.assertEqual(self.upload(bot, {}), {"one_time_key_counts": {"signed_curve25519": 0}})
        otks = one_time_keys(bot, ["AAAA", "AAAB", "AAAC"])
        otks["curve25519:AAAD"] = "unsigned-key"
        fallback = {"signed_curve25519:FB01": signed_key(bot, "fb-1", fallback=True)}
        counts = self.upload(bot, {"device_keys": device_keys(bot), "one_time_keys": otks,
                                   "fallback_keys": fallback})
        self.assertEqual(counts, {"one_time_key_counts": {"signed_curve25519": 3,
                                                          "curve25519": 1}})
        # The same key id again: fine if only the signatures differ (a retried upload) ...
        again = {"signed_curve25519:AAAA": dict(otks["signed_curve25519:AAAA"],
                                                signatures={})}
        self.assertEqual(self.upload(bot, {"one_time_keys": again})["one_time_key_counts"]
                         ["signed_curve25519"], 3)
        # ... refused if the key itself differs, and then nothing of the request is stored.
        clash = dict(one_time_keys(bot, ["AAAE"]),
                     **{"signed_curve25519:AAAA": signed_key(bot, "other")})
        self.assertError(self.call("POST", V3 + "/keys/upload", {"one_time_keys": clash},
                                   bot["token"]), 400, "M_INVALID_PARAM")
        # Device keys are long-lived: changing them is refused, new signatures are not.
        self.assertError(self.call("POST", V3 + "/keys/upload",
                                   {"device_keys": device_keys(bot, tag="2")}, bot["token"]),
                         400, "M_INVALID_PARAM")
        resigned = device_keys(bot)
        resigned["signatures"][bot["user_id"]]["ed25519:OTHER"] = "extra"
        self.upload(bot, {"device_keys": resigned})
        stored = self.fake_devices(bot)["BOTDEV"]
        self.assertEqual(stored["device_keys"], resigned)
        self.assertEqual(stored["one_time_key_counts"], {"signed_curve25519": 3,
                                                         "curve25519": 1})
        self.assertEqual(list(stored["one_time_keys"]), list(otks))
        self.assertEqual(stored["fallback_keys"], {"signed_curve25519": {
            "key_id": "signed_curve25519:FB01", "key": fallback["signed_curve25519:FB01"],
            "used": False}})
        self.assertEqual(stored["unused_fallback_key_types"], ["signed_curve25519"])

        # Malformed requests.
        alice = self.make_user("alice")
        for body, status, errcode in (
                ({"device_keys": dict(device_keys(bot))}, 400, "M_INVALID_PARAM"),  # not mine
                ({"device_keys": {"user_id": alice["user_id"]}}, 400, "M_BAD_JSON"),
                ({"one_time_keys": ["x"]}, 400, "M_BAD_JSON"),
                ({"one_time_keys": {"nocolon": "x"}}, 400, "M_INVALID_PARAM"),
                ({"one_time_keys": {"signed_curve25519:X": {"nokey": 1}}}, 400, "M_BAD_JSON"),
                ({"fallback_keys": {"signed_curve25519:F1": "a", "signed_curve25519:F2": "b"}},
                 400, "M_INVALID_PARAM")):
            self.assertError(self.call("POST", V3 + "/keys/upload", body, alice["token"]),
                             status, errcode)
        self.assertError(self.call("POST", V3 + "/keys/upload", raw=b"{nope",
                                   token=alice["token"]), 400, "M_NOT_JSON")

        # /sync reports this device's counts and unused fallback key types.
        synced = self.sync(bot)
        self.assertEqual(synced["device_one_time_keys_count"],
                         {"signed_curve25519": 3, "curve25519": 1})
        self.assertEqual(synced["device_unused_fallback_key_types"], ["signed_curve25519"])
        self.assertEqual(synced["device_lists"], {"changed": [], "left": []})
        self.assertEqual(self.sync(alice)["device_unused_fallback_key_types"], [])

    # ---- /keys/query -------------------------------------------------------------------------

    def test_keys_query_devices_filters_failures_and_cross_signing(self):
        alice = self.make_user("alice", device_id="PHONE")
        laptop = self.login("alice", device_id="LAPTOP")
        keyless = self.login("alice", device_id="KEYLESS")
        bob = self.make_user("bob")
        self.upload(alice, {"device_keys": device_keys(alice)})
        self.upload(laptop, {"device_keys": device_keys(laptop)})
        self.assertEqual(self.fake_devices(keyless)["KEYLESS"]["device_keys"], None)

        everything = self.query(bob, {alice["user_id"]: [], "@nobody:example.org": [],
                                      "@carol:elsewhere.org": []})
        self.assertEqual(set(everything), {"device_keys", "failures", "master_keys",
                                           "self_signing_keys", "user_signing_keys"})
        self.assertEqual(list(everything["device_keys"]), [alice["user_id"]])   # nobody: left out
        devices = everything["device_keys"][alice["user_id"]]
        self.assertEqual(sorted(devices), ["LAPTOP", "PHONE"])           # KEYLESS has no keys
        self.assertEqual(devices["PHONE"], dict(device_keys(alice), unsigned={}))
        self.assertEqual(list(everything["failures"]), ["elsewhere.org"])
        self.assertEqual(everything["master_keys"], {})

        only = self.query(bob, {alice["user_id"]: ["LAPTOP", "NOSUCH"]})
        self.assertEqual(list(only["device_keys"][alice["user_id"]]), ["LAPTOP"])
        self.assertEqual(self.query(bob, {bob["user_id"]: []})["device_keys"],
                         {bob["user_id"]: {}})

        # The display name set at login appears as unsigned.device_display_name.
        named = self.ok("POST", V3 + "/login", {
            "type": "m.login.password", "identifier": {"type": "m.id.user", "user": "bob"},
            "password": "pw-bob", "initial_device_display_name": "Bob's tablet"})
        tablet = {"user_id": named["user_id"], "token": named["access_token"],
                  "device_id": named["device_id"]}
        self.upload(tablet, {"device_keys": device_keys(tablet)})
        shown = self.query(alice, {bob["user_id"]: []})["device_keys"][bob["user_id"]]
        self.assertEqual(shown[tablet["device_id"]]["unsigned"],
                         {"device_display_name": "Bob's tablet"})

        # Cross-signing keys: master and self-signing for all, user-signing only for oneself.
        keys = cross_signing_set(alice, "A")
        self.assertEqual(self.signing_upload(alice, keys).status, 200)
        by_bob = self.query(bob, {alice["user_id"]: []})
        self.assertEqual(by_bob["master_keys"], {alice["user_id"]: keys["master_key"]})
        self.assertEqual(by_bob["self_signing_keys"],
                         {alice["user_id"]: keys["self_signing_key"]})
        self.assertEqual(by_bob["user_signing_keys"], {})
        by_alice = self.query(alice, {alice["user_id"]: [], bob["user_id"]: []})
        self.assertEqual(by_alice["user_signing_keys"],
                         {alice["user_id"]: keys["user_signing_key"]})

        for body, errcode in (({}, "M_MISSING_PARAM"), ({"device_keys": []}, "M_BAD_JSON"),
                              ({"device_keys": {alice["user_id"]: "PHONE"}}, "M_BAD_JSON"),
                              ({"device_keys": {"alice": []}}, "M_INVALID_PARAM")):
            self.assertError(self.call("POST", V3 + "/keys/query", body, bob["token"]),
                             400, errcode)

    # ---- /keys/claim -------------------------------------------------------------------------

    def test_claim_drains_one_time_keys_then_gives_the_fallback(self):
        alice = self.make_user("alice", device_id="PHONE")
        bob = self.make_user("bob")
        otks = one_time_keys(alice, ["AAAA", "AAAB"])
        fallback = signed_key(alice, "fb-1", fallback=True)
        self.upload(alice, {"device_keys": device_keys(alice), "one_time_keys": otks,
                            "fallback_keys": {"signed_curve25519:FB01": fallback}})
        since = self.sync(alice)["next_batch"]
        ask = {alice["user_id"]: {"PHONE": "signed_curve25519"}}
        got = [self.claim(bob, ask) for _ in range(4)]
        self.assertEqual(got[0], {"one_time_keys": {alice["user_id"]: {"PHONE": {
            "signed_curve25519:AAAA": otks["signed_curve25519:AAAA"]}}}, "failures": {}})
        self.assertEqual(got[1]["one_time_keys"][alice["user_id"]]["PHONE"],
                         {"signed_curve25519:AAAB": otks["signed_curve25519:AAAB"]})
        for claimed in got[2:]:                  # the fallback key is given out again and again
            self.assertEqual(claimed["one_time_keys"][alice["user_id"]]["PHONE"],
                             {"signed_curve25519:FB01": fallback})
        after = self.sync(alice, since=since, timeout=0)
        self.assertEqual(after["device_one_time_keys_count"], {"signed_curve25519": 0})
        self.assertEqual(after["device_unused_fallback_key_types"], [])
        # Uploading the same fallback key again keeps it used; a new one is unused.
        same = {"fallback_keys": {"signed_curve25519:FB01": fallback}}
        self.upload(alice, same)
        self.assertEqual(self.fake_devices(alice)["PHONE"]["unused_fallback_key_types"], [])
        self.upload(alice, {"fallback_keys": {
            "signed_curve25519:FB02": signed_key(alice, "fb-2", fallback=True)}})
        self.assertEqual(self.sync(alice)["device_unused_fallback_key_types"],
                         ["signed_curve25519"])

        # Unknown users and devices and unknown algorithms are left out; other servers fail.
        odd = self.claim(bob, {alice["user_id"]: {"NOSUCH": "signed_curve25519",
                                                  "PHONE": "curve25519"},
                               "@nobody:example.org": {"X": "signed_curve25519"},
                               "@carol:elsewhere.org": {"X": "signed_curve25519"}})
        self.assertEqual(odd["one_time_keys"], {})
        self.assertEqual(list(odd["failures"]), ["elsewhere.org"])
        for body, errcode in (({}, "M_MISSING_PARAM"),
                              ({"one_time_keys": {alice["user_id"]: ["PHONE"]}}, "M_BAD_JSON"),
                              ({"one_time_keys": {"bad": {}}}, "M_INVALID_PARAM")):
            self.assertError(self.call("POST", V3 + "/keys/claim", body, bob["token"]),
                             400, errcode)

    def test_claim_wakes_the_owner_long_poll(self):
        alice = self.make_user("alice", device_id="PHONE")
        bob = self.make_user("bob")
        self.upload(alice, {"device_keys": device_keys(alice),
                            "one_time_keys": one_time_keys(alice, ["AAAA", "AAAB"])})
        since = self.sync(alice)["next_batch"]
        result = self.poll_in_background(alice, since)
        self.claim(bob, {alice["user_id"]: {"PHONE": "signed_curve25519"}})
        response = self.finish_poll(result)
        self.assertEqual(response["device_one_time_keys_count"], {"signed_curve25519": 1})

    # ---- send-to-device ----------------------------------------------------------------------

    def test_send_to_device_delivery_dedup_and_acknowledgement(self):
        alice = self.make_user("alice", device_id="PHONE")
        laptop = self.login("alice", device_id="LAPTOP")
        bob = self.make_user("bob", device_id="BOBDEV")
        since = self.sync(alice)["next_batch"]
        laptop_since = self.sync(laptop)["next_batch"]
        content = {"action": "request", "request_id": "r1"}
        for _ in range(2):                               # a retransmission: no second message
            resp = self.to_device(bob, {alice["user_id"]: {"PHONE": content}}, "txn-1")
            self.assertEqual((resp.status, resp.json), (200, {}))
        self.ok("PUT", f"{V3}/sendToDevice/m.dummy/txn-1",                 # another path
                {"messages": {alice["user_id"]: {"PHONE": {}}}}, bob["token"])
        bob2 = self.login("bob", device_id="BOBDEV2")
        self.to_device(bob2, {alice["user_id"]: {"PHONE": {"n": 2}}}, "txn-1")  # other device
        pending = self.pending(alice)
        self.assertEqual([(m["type"], m["content"], m["fake"]["sent_in"]) for m in pending],
                         [("m.room_key_request", content, None), ("m.dummy", {}, None),
                          ("m.room_key_request", {"n": 2}, None)])

        first = self.sync(alice, since=since)
        expected = [{"sender": bob["user_id"], "type": "m.room_key_request", "content": content},
                    {"sender": bob["user_id"], "type": "m.dummy", "content": {}},
                    {"sender": bob["user_id"], "type": "m.room_key_request",
                     "content": {"n": 2}}]
        self.assertEqual(first["to_device"]["events"], expected)
        self.assertEqual(self.sync(laptop, since=laptop_since, timeout=0)["to_device"],
                         {"events": []})
        # A retry with the same `since` (the answer was lost) gets the messages again ...
        self.assertEqual(self.sync(alice, since=since)["to_device"]["events"], expected)
        self.assertEqual(len(self.pending(alice)), 3)
        # ... and a sync with the next_batch that carried them acknowledges and deletes them.
        latest = self.sync(alice, since=first["next_batch"], timeout=0)
        self.assertEqual(latest["to_device"]["events"], [])
        self.assertEqual(self.pending(alice), [])
        self.assertEqual(self.sync(alice, since=since, timeout=0)["to_device"]["events"], [])

    def test_send_to_device_wildcard_unknown_targets_and_errors(self):
        alice = self.make_user("alice", device_id="PHONE")
        laptop = self.login("alice", device_id="LAPTOP")
        bob = self.make_user("bob")
        self.ok("PUT", f"{V3}/sendToDevice/m.dummy/t1", {"messages": {
            alice["user_id"]: {"*": {"all": True}},
            "@nobody:example.org": {"X": {}}, "@carol:elsewhere.org": {"*": {}}}},
            bob["token"])
        self.ok("PUT", f"{V3}/sendToDevice/m.dummy/t2",
                {"messages": {alice["user_id"]: {"NOSUCH": {}}}}, bob["token"])
        for user in (alice, laptop):
            self.assertEqual([m["content"] for m in self.pending(user)], [{"all": True}])
            self.assertEqual(self.sync(user)["to_device"]["events"],
                             [{"sender": bob["user_id"], "type": "m.dummy",
                               "content": {"all": True}}])
        self.assertEqual(self.fake_devices(alice)["PHONE"]["pending_to_device"], 1)
        for body, status, errcode in (
                ({}, 400, "M_MISSING_PARAM"), ({"messages": []}, 400, "M_BAD_JSON"),
                ({"messages": {alice["user_id"]: {"PHONE": "text"}}}, 400, "M_BAD_JSON"),
                ({"messages": {"alice": {"PHONE": {}}}}, 400, "M_INVALID_PARAM"),
                ({"messages": {alice["user_id"]: {"PHONE": {"x": "y" * 65536}}}},
                 413, "M_TOO_LARGE")):
            self.assertError(self.call("PUT", f"{V3}/sendToDevice/m.dummy/bad", body,
                                       bob["token"]), status, errcode)
        self.assertError(self.call("GET", f"/_fake/to_device/{q(alice['user_id'])}/NOSUCH"),
                         404, "M_NOT_FOUND")
        self.assertError(self.call("GET", f"/_fake/devices/{q('@nobody:example.org')}"),
                         404, "M_NOT_FOUND")

    def test_long_poll_woken_by_to_device_message(self):
        alice = self.make_user("alice", device_id="PHONE")
        bob = self.make_user("bob")
        since = self.sync(alice)["next_batch"]
        result = self.poll_in_background(alice, since)
        self.to_device(bob, {alice["user_id"]: {"PHONE": {"hello": 1}}}, "t1")
        response = self.finish_poll(result)
        self.assertEqual(response["to_device"]["events"],
                         [{"sender": bob["user_id"], "type": "m.room_key_request",
                           "content": {"hello": 1}}])

    def test_to_device_limit_of_100_loses_nothing(self):
        alice = self.make_user("alice", device_id="PHONE")
        bob = self.make_user("bob")
        since = self.sync(alice)["next_batch"]
        for i in range(120):
            self.to_device(bob, {alice["user_id"]: {"PHONE": {"i": i}}}, f"t{i}")
        first = self.sync(alice, since=since)
        self.assertEqual([e["content"]["i"] for e in first["to_device"]["events"]],
                         list(range(100)))
        second = self.sync(alice, since=first["next_batch"])
        self.assertEqual([e["content"]["i"] for e in second["to_device"]["events"]],
                         list(range(100, 120)))
        # Nothing else happened, yet the answer moved on: a retry of it (same since) must not
        # count as having received the last 20.
        self.assertNotEqual(second["next_batch"], first["next_batch"])
        retry = self.sync(alice, since=first["next_batch"])
        self.assertEqual(len(retry["to_device"]["events"]), 20)
        done = self.sync(alice, since=retry["next_batch"], timeout=0)
        self.assertEqual(done["to_device"]["events"], [])

    # ---- device lists ------------------------------------------------------------------------

    def test_device_lists_follow_key_changes_and_membership(self):
        alice = self.make_user("alice", device_id="PHONE")
        bob, carol = self.make_user("bob"), self.make_user("carol")
        room_id = self.room_with(alice, bob, preset="public_chat")
        bob_since = self.sync(bob)["next_batch"]
        carol_since = self.sync(carol)["next_batch"]
        start = bob_since

        self.upload(alice, {"device_keys": device_keys(alice)})
        news = self.sync(bob, since=bob_since)
        self.assertEqual(news["device_lists"], {"changed": [alice["user_id"]], "left": []})
        self.assertEqual(self.sync(carol, since=carol_since, timeout=0)["device_lists"],
                         {"changed": [], "left": []})        # carol shares no room with alice
        self.assertEqual(self.sync(alice, since=bob_since, timeout=0)["device_lists"]["changed"],
                         [alice["user_id"]])                 # one's own changes are reported
        self.upload(alice, {"one_time_keys": one_time_keys(alice, ["AAAA"])})  # no key change
        self.assertEqual(self.sync(bob, since=news["next_batch"], timeout=0)["device_lists"],
                         {"changed": [], "left": []})
        bob_since = news["next_batch"]

        # carol joins: bob and carol now share a room, so each sees the other as changed.
        self.join(carol, room_id)
        joined = self.sync(bob, since=bob_since)
        self.assertEqual(joined["device_lists"], {"changed": [carol["user_id"]], "left": []})
        carol_view = self.sync(carol, since=carol_since)["device_lists"]
        self.assertEqual(carol_view, {"changed": sorted([alice["user_id"], bob["user_id"]]),
                                      "left": []})

        # carol leaves, then changes keys: bob hears she left, and nothing about her keys.
        self.ok("POST", f"{V3}/rooms/{q(room_id)}/leave", {}, carol["token"])
        self.upload(carol, {"device_keys": device_keys(carol)})
        left = self.sync(bob, since=joined["next_batch"])
        self.assertEqual(left["device_lists"], {"changed": [], "left": [carol["user_id"]]})

        # A device logging out is a change too; its keys are gone from /keys/query.
        self.ok("POST", V3 + "/logout", {}, alice["token"])
        gone = self.sync(bob, since=left["next_batch"])
        self.assertEqual(gone["device_lists"]["changed"], [alice["user_id"]])
        self.assertEqual(self.query(bob, {alice["user_id"]: []})["device_keys"],
                         {alice["user_id"]: {}})

        # GET /keys/changes between two tokens.
        changes = f"{V3}/keys/changes"
        everything = self.ok("GET", changes, token=bob["token"],
                             query={"from": start, "to": gone["next_batch"]})
        # carol came and went within the window: in neither list.
        self.assertEqual(everything, {"changed": [alice["user_id"]], "left": []})
        leaving = self.ok("GET", changes, token=bob["token"],
                          query={"from": joined["next_batch"], "to": left["next_batch"]})
        self.assertEqual(leaving, {"changed": [], "left": [carol["user_id"]]})
        early = self.ok("GET", changes, token=bob["token"],
                        query={"from": start, "to": news["next_batch"]})
        self.assertEqual(early, {"changed": [alice["user_id"]], "left": []})
        middle = self.ok("GET", changes, token=bob["token"],
                         query={"from": bob_since, "to": joined["next_batch"]})
        self.assertEqual(middle, {"changed": [carol["user_id"]], "left": []})
        self.assertError(self.call("GET", changes, token=bob["token"],
                                   query={"to": start}), 400, "M_MISSING_PARAM")
        self.assertError(self.call("GET", changes, token=bob["token"],
                                   query={"from": "garbage"}), 400, "M_UNKNOWN")

    def test_full_state_sync_reports_every_member_as_changed(self):
        """As Synapse: a full_state sync with a since counts the members of the joined rooms
        as new joins, so device_lists.changed lists them all (the caller too)."""
        alice, bob = self.make_user("alice"), self.make_user("bob")
        carol = self.make_user("carol")
        self.room_with(alice, bob)
        self.create_room(carol, invite=[alice])              # alice only invited there
        since = self.sync(alice)["next_batch"]
        self.assertEqual(self.sync(alice, since=since, timeout=0)["device_lists"]["changed"], [])
        full = self.sync(alice, since=since, full_state="true")["device_lists"]
        self.assertEqual(full, {"changed": sorted([alice["user_id"], bob["user_id"]]), "left": []})

    def test_long_poll_woken_by_key_change(self):
        alice = self.make_user("alice", device_id="PHONE")
        bob = self.make_user("bob")
        self.room_with(alice, bob)
        since = self.sync(bob)["next_batch"]
        result = self.poll_in_background(bob, since)
        self.upload(alice, {"device_keys": device_keys(alice)})
        response = self.finish_poll(result)
        self.assertEqual(response["device_lists"]["changed"], [alice["user_id"]])

    # ---- cross-signing -----------------------------------------------------------------------

    def test_cross_signing_upload_with_user_interactive_auth(self):
        alice = self.make_user("alice", device_id="PHONE")
        bob = self.make_user("bob")
        self.room_with(alice, bob)
        bob_since = self.sync(bob)["next_batch"]
        first = cross_signing_set(alice, "A")
        # The first upload needs no auth (no master key yet); the same keys again neither.
        resp = self.signing_upload(alice, first)
        self.assertEqual((resp.status, resp.json), (200, {}))
        self.assertEqual(self.signing_upload(alice, first).status, 200)
        self.assertEqual(self.signing_upload(alice, {"master_key": first["master_key"]}).status,
                         200)
        seen = self.sync(bob, since=bob_since)
        self.assertEqual(seen["device_lists"]["changed"], [alice["user_id"]])

        # Replacing them needs auth: 401 with the flows and a session ...
        second = cross_signing_set(alice, "B")
        challenge = self.signing_upload(alice, second)
        self.assertEqual(challenge.status, 401)
        self.assertEqual(challenge.json["flows"], [{"stages": ["m.login.password"]}])
        self.assertEqual(challenge.json["params"], {})
        self.assertNotIn("errcode", challenge.json)
        session = challenge.json["session"]
        # ... a wrong password gets 401 M_FORBIDDEN and the flows again ...
        wrong = self.signing_upload(alice, dict(second, auth=self.password_auth(
            alice, session, "nope")))
        self.assertError(wrong, 401, "M_FORBIDDEN")
        self.assertEqual((wrong.json["flows"], wrong.json["session"]),
                         ([{"stages": ["m.login.password"]}], session))
        self.assertEqual(self.query(alice, {alice["user_id"]: []})["master_keys"],
                         {alice["user_id"]: first["master_key"]})
        # ... another user's password is no better ...
        bobs = self.signing_upload(alice, dict(second, auth=dict(
            self.password_auth(bob, session), password="pw-bob")))
        self.assertError(bobs, 401, "M_FORBIDDEN")
        # ... and the right one stores the keys.  The session is then used up.
        done = self.signing_upload(alice, dict(second, auth=self.password_auth(alice, session)))
        self.assertEqual((done.status, done.json), (200, {}))
        mine = self.query(alice, {alice["user_id"]: []})
        self.assertEqual((mine["master_keys"][alice["user_id"]],
                          mine["self_signing_keys"][alice["user_id"]],
                          mine["user_signing_keys"][alice["user_id"]]),
                         (second["master_key"], second["self_signing_key"],
                          second["user_signing_key"]))
        self.assertError(self.signing_upload(alice, dict(
            cross_signing_set(alice, "C"), auth=self.password_auth(alice, session))),
            400, "M_UNKNOWN")
        self.assertError(self.signing_upload(alice, dict(
            cross_signing_set(alice, "C"), auth=dict(self.password_auth(alice, None),
                                                     type="m.login.magic"))),
            400, "M_UNRECOGNIZED")
        # Auth with no session starts one and can succeed at once.
        self.assertEqual(self.signing_upload(alice, dict(cross_signing_set(alice, "D"),
                                                         auth=self.password_auth(alice, None))
                                             ).status, 200)

    def test_cross_signing_key_checks(self):
        alice = self.make_user("alice", device_id="PHONE")
        keys = cross_signing_set(alice, "A")
        bad_usage = dict(keys["master_key"], usage=["self_signing"])
        unsigned_ssk = dict(keys["self_signing_key"])
        del unsigned_ssk["signatures"]
        two_keys = dict(keys["master_key"], keys={"ed25519:X": "X", "ed25519:Y": "Y"})
        others = dict(keys["master_key"], user_id="@bob:example.org")
        for body, status, errcode in (
                ({"master_key": bad_usage}, 400, "M_INVALID_PARAM"),
                ({"master_key": two_keys}, 400, "M_INVALID_PARAM"),
                ({"master_key": others}, 400, "M_INVALID_PARAM"),
                ({"self_signing_key": keys["self_signing_key"]}, 400, "M_MISSING_PARAM"),
                ({"master_key": keys["master_key"], "self_signing_key": unsigned_ssk},
                 400, "M_INVALID_SIGNATURE"),
                ({"master_key": cross_signing_key(alice, "master", "PHONE")},
                 403, "M_FORBIDDEN")):                   # a key ID that is a device ID
            self.assertError(self.signing_upload(alice, body), status, errcode)
        self.assertEqual(self.fake_devices(alice)["PHONE"]["device_keys"], None)
        self.assertEqual(self.ok("GET", f"/_fake/devices/{q(alice['user_id'])}")
                         ["cross_signing"], {})

    # ---- signatures --------------------------------------------------------------------------

    def test_signatures_upload_merged_into_query(self):
        alice = self.make_user("alice", device_id="PHONE")
        bob, carol = self.make_user("bob", device_id="BOBDEV"), self.make_user("carol")
        self.room_with(alice, bob, carol)
        self.upload(alice, {"device_keys": device_keys(alice)})
        self.upload(bob, {"device_keys": device_keys(bob)})
        alice_keys, bob_keys = cross_signing_set(alice, "A"), cross_signing_set(bob, "B")
        self.signing_upload(alice, alice_keys)
        self.signing_upload(bob, bob_keys)
        bob_since = self.sync(bob)["next_batch"]
        carol_since = self.sync(carol)["next_batch"]
        upload = V3 + "/keys/signatures/upload"

        # alice's self-signing key signs her device; her device signs her master key.
        signed_device = device_keys(alice)
        signed_device["signatures"][alice["user_id"]] = {"ed25519:ASSK": "ssk-sig-of-PHONE"}
        signed_master = dict(alice_keys["master_key"], signatures={
            alice["user_id"]: {"ed25519:PHONE": "phone-sig-of-master"}})
        result = self.ok("POST", upload, {alice["user_id"]: {
            "PHONE": signed_device, "AMASTER": signed_master}}, alice["token"])
        self.assertEqual(result, {"failures": {}})
        # bob's user-signing key signs alice's master key.
        bob_signed = dict(alice_keys["master_key"], signatures={
            bob["user_id"]: {"ed25519:BUSK": "busk-sig-of-AMASTER"}})
        self.assertEqual(self.ok("POST", upload, {alice["user_id"]: {"AMASTER": bob_signed}},
                                 bob["token"]), {"failures": {}})

        by_bob = self.query(bob, {alice["user_id"]: []})
        device_sigs = by_bob["device_keys"][alice["user_id"]]["PHONE"]["signatures"]
        self.assertEqual(device_sigs, {alice["user_id"]: {
            "ed25519:PHONE": "sig-PHONE-1", "ed25519:ASSK": "ssk-sig-of-PHONE"}})
        self.assertEqual(by_bob["master_keys"][alice["user_id"]]["signatures"], {
            alice["user_id"]: {"ed25519:PHONE": "phone-sig-of-master"},
            bob["user_id"]: {"ed25519:BUSK": "busk-sig-of-AMASTER"}})
        # carol does not see bob's signature of alice's key.
        by_carol = self.query(carol, {alice["user_id"]: []})
        self.assertEqual(by_carol["master_keys"][alice["user_id"]]["signatures"],
                         {alice["user_id"]: {"ed25519:PHONE": "phone-sig-of-master"}})
        # Re-uploading the device keys keeps the cross-signing signature.
        self.upload(alice, {"device_keys": device_keys(alice)})
        again = self.query(carol, {alice["user_id"]: ["PHONE"]})
        self.assertIn("ed25519:ASSK", again["device_keys"][alice["user_id"]]["PHONE"]
                      ["signatures"][alice["user_id"]])
        # Everyone sharing a room hears of alice's signed keys; only bob of his signature.
        self.assertEqual(self.sync(carol, since=carol_since)["device_lists"]["changed"],
                         [alice["user_id"]])
        self.assertEqual(self.sync(bob, since=bob_since)["device_lists"]["changed"],
                         [alice["user_id"]])
        carol_view = self.ok("GET", f"/_fake/devices/{q(alice['user_id'])}")
        self.assertEqual(set(carol_view["signatures"]), {"PHONE", "AMASTER"})

        # Failures, per user and key.
        wrong_content = dict(signed_device, algorithms=["other"])
        result = self.ok("POST", upload, {
            alice["user_id"]: {"NOSUCH": signed_device, "PHONE": wrong_content,
                               "AMASTER": dict(signed_master, signatures={})},
        }, alice["token"])["failures"][alice["user_id"]]
        self.assertEqual({k: v["errcode"] for k, v in result.items()},
                         {"NOSUCH": "M_NOT_FOUND", "PHONE": "M_UNKNOWN",
                          "AMASTER": "M_INVALID_SIGNATURE"})
        no_usk = self.ok("POST", upload, {bob["user_id"]: {"BMASTER": dict(
            bob_keys["master_key"], signatures={carol["user_id"]: {"ed25519:C": "x"}})}},
            carol["token"])
        self.assertEqual(no_usk["failures"][bob["user_id"]]["BMASTER"]["errcode"], "M_NOT_FOUND")
        not_master = self.ok("POST", upload, {bob["user_id"]: {"BOBDEV": dict(
            device_keys(bob), signatures={alice["user_id"]: {"ed25519:AUSK": "x"}})}},
            alice["token"])
        self.assertEqual(not_master["failures"][bob["user_id"]]["BOBDEV"]["errcode"],
                         "M_NOT_FOUND")
        self.assertError(self.call("POST", upload, {alice["user_id"]: ["x"]}, alice["token"]),
                         400, "M_INVALID_PARAM")


class E2EERestartTest(E2EECase):
    """Keys, one-time and fallback keys, cross-signing keys and signatures, pending to-device
    messages, device-list changes, a UIA session and to-device txn ids survive a SIGKILL."""

    def test_restart_keeps_all_e2ee_state(self):
        with tempfile.TemporaryDirectory() as tmp:
            state = os.path.join(tmp, "hs.json")
            proc, self.port = start_server(state=state)
            try:
                alice = self.make_user("alice", device_id="PHONE")
                bob = self.make_user("bob", device_id="BOBDEV")
                self.room_with(alice, bob)
                bob_since = self.sync(bob)["next_batch"]
                alice_since = self.sync(alice)["next_batch"]
                fallback = signed_key(alice, "fb", fallback=True)
                self.upload(alice, {"device_keys": device_keys(alice),
                                    "one_time_keys": one_time_keys(alice, ["A1", "A2"]),
                                    "fallback_keys": {"signed_curve25519:F": fallback}})
                keys = cross_signing_set(alice, "A")
                self.signing_upload(alice, keys)
                signed = device_keys(alice)
                signed["signatures"][alice["user_id"]] = {"ed25519:ASSK": "ssk-sig"}
                self.ok("POST", V3 + "/keys/signatures/upload",
                        {alice["user_id"]: {"PHONE": signed}}, alice["token"])
                self.claim(bob, {alice["user_id"]: {"PHONE": "signed_curve25519"}})
                self.to_device(bob, {alice["user_id"]: {"PHONE": {"n": 1}}}, "t1")
                carried = self.sync(alice, since=alice_since)      # carries n=1, not yet acked
                self.assertEqual(len(carried["to_device"]["events"]), 1)
                self.to_device(bob, {alice["user_id"]: {"PHONE": {"n": 2}}}, "t2")
                session = self.signing_upload(alice, cross_signing_set(alice, "B")
                                              ).json["session"]
                before = self.ok("GET", f"/_fake/devices/{q(alice['user_id'])}")
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                proc.stdout.close()
            proc, _ = start_server(port=self.port, state=state)
            try:
                self.assertEqual(self.ok("GET", f"/_fake/devices/{q(alice['user_id'])}"),
                                 before)
                mine = self.query(alice, {alice["user_id"]: []})
                self.assertEqual(mine["user_signing_keys"][alice["user_id"]],
                                 keys["user_signing_key"])
                self.assertIn("ed25519:ASSK", mine["device_keys"][alice["user_id"]]["PHONE"]
                              ["signatures"][alice["user_id"]])
                claimed = [self.claim(bob, {alice["user_id"]: {"PHONE": "signed_curve25519"}})
                           ["one_time_keys"][alice["user_id"]]["PHONE"] for _ in range(2)]
                self.assertEqual([list(c) for c in claimed],
                                 [["signed_curve25519:A2"], ["signed_curve25519:F"]])
                # The txn id is remembered; the acknowledged message goes, the other stays.
                self.to_device(bob, {alice["user_id"]: {"PHONE": {"n": 1}}}, "t1")
                after = self.sync(alice, since=carried["next_batch"])
                self.assertEqual([e["content"] for e in after["to_device"]["events"]],
                                 [{"n": 2}])
                self.assertEqual(after["device_unused_fallback_key_types"], [])
                self.assertEqual(self.sync(bob, since=bob_since)["device_lists"]["changed"],
                                 [alice["user_id"]])
                done = self.signing_upload(alice, dict(cross_signing_set(alice, "B"),
                                                       auth=self.password_auth(alice, session)))
                self.assertEqual(done.status, 200)
            finally:
                stop_server(proc)


if __name__ == "__main__":
    unittest.main()
