"""End-to-end encryption tests of cardroom's Matrix adapter: the real bot (`cardroom run`)
against the fake homeserver, with people who are real E2EE clients (olm_client.py, on libolm).

What the bot must do (Client-Server API, "End-to-End Encryption"): upload signed device keys,
signed one-time keys and a fallback key, keep its identity across restarts and its one-time
keys topped up; create its direct chats encrypted and send only m.room.encrypted (Megolm) in
encrypted rooms, sharing the room key by Olm with every verified device of the members and
with no device whose self-signature fails; decrypt what people send it once they shared their
key; refuse replayed messages and sessions used under another sender's name; keep all of it
over a restart.  test_00 checks the test client itself (two clients through the fake, no bot).

Run (the olm bindings are Debian's python3-olm, so use the system Python):
      /usr/bin/python3 -m unittest tests/matrix/test_matrix_e2ee.py -v
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (BOT_ID, BOT_LOCALPART, BOT_PASSWORD, BOT_TXN_RE, HEAD_RE,  # noqa: E402
                     PLAYERS, ROOM_NAME, SLACK, Harness, Transcript, bot_binary,
                     matrix_reference, normalize_private, parse_script, q, read_script)

try:
    import olm  # noqa: F401
    from olm_client import (MARK, MEGOLM, OLM, DecryptError, OlmClient,  # noqa: F401
                            check_signature, encrypted_room_state)
    OLM_MISSING = None
except ImportError as exc:        # not Debian's /usr/bin/python3, or no python3-olm
    OLM_MISSING = exc

STORE_KEY = "cardroom e2ee test store key"
ALGORITHM = "signed_curve25519"
LOW_OTK = 50                      # "at least about half of 100" one-time keys on the server
BOT_SENDS = r"^/_matrix/client/v3/rooms/[^/]+/send/m\.room\.(message|encrypted)/cr\d+"
BOT_SYNCS = r"^/_matrix/client/v3/sync"
E2EE_KILL_SEED = 1304
SETUP = ("alice> !new 304\nalice> !join\nalice> !bot\nalice> !bot\nalice> !bot\n"
         "alice> !start\n")


def setUpModule():
    if OLM_MISSING is not None:
        raise unittest.SkipTest(f"python3-olm is not importable ({OLM_MISSING}); run with "
                                f"/usr/bin/python3")


class E2EEHarness(Harness):
    """The harness, with the test clients' own requests (marked x_olm_client=...) left out of
    the bot's activity: their /sync must not count as the bot having handled something."""

    def since_pos(self, entry):
        return None if MARK in entry["path"] else super().since_pos(entry)

    def counts(self, step):
        return MARK not in step["path"]

    def requests(self, method=None, path_regex=None):
        return [e for e in super().requests(method, path_regex) if MARK not in e["path"]]

    def bot_env(self, password=BOT_PASSWORD, token=None):
        env = super().bot_env(password, token)
        env["CARDROOM_MATRIX_STORE_KEY"] = STORE_KEY
        return env

    def base_url(self):
        return f"http://127.0.0.1:{self.server.port}"

    def olm_user(self, name, device_id, keys=True, **upload):
        """A person who is an E2EE client (logged in on device_id, keys uploaded); the harness
        then acts as them with the same token (h.send, h.join, h.dm_room)."""
        self.make_user(name, login=False)
        client = OlmClient(self.base_url(), name, "pw-" + name, device_id)
        if keys:
            client.upload_keys(**upload)
        self.users[name] = client.login_info()
        return client

    def bot_account(self):
        self.server.ok("POST", "/_fake/users", {"user_id": BOT_LOCALPART,
                                                "password": BOT_PASSWORD,
                                                "displayname": "cardroom"})

    def bot_devices(self):
        return self.server.ok("GET", f"/_fake/devices/{q(BOT_ID)}")["devices"]

    def bot_device(self, timeout=20):
        """(device_id, record) of the bot's device once its keys, one-time keys and fallback
        key are on the server."""
        def ready():
            for device_id, record in self.bot_devices().items():
                if record["device_keys"] and record["one_time_keys"] and \
                        record["fallback_keys"]:
                    return device_id, record
            return None
        return self.wait_for(ready, timeout, "the bot's device keys, one-time keys and "
                                             "fallback key on the server")

    def e2ee_log(self):
        """The bot's E2EE requests and sends so far, for failure messages."""
        wanted = r"/keys/|/sendToDevice/|/send/|/createRoom|/login"
        return "\n".join(f"  {e['method']} {e['path'][:110]} -> {e['status']}"
                         for e in self.requests(None, wanted)[-40:]) or "  (none)"


class E2EETestBase(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.started = time.monotonic()

    def tearDown(self):
        if os.environ.get("CARDROOM_MX_VERBOSE"):
            sys.stderr.write(f"\n{self.id()}: {time.monotonic() - self.started:.1f} s\n")


class ClientSelfTest(E2EETestBase):
    """The test client against itself through the fake (no bot): keys, Olm and Megolm both
    ways, a second device, a device with a bad self-signature, replays, forged senders and
    the fallback key."""

    def test_00_client_self_check(self):
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        bob = h.olm_user("bob", "BOB1")
        room = alice.create_room(preset="private_chat", invite=[bob.user_id], name="E2EE",
                                 initial_state=encrypted_room_state())
        self.assertTrue(bob.sync_until(lambda: room in bob.invites, 5))
        self.assertEqual(bob.accept_invites(), [room])

        first = alice.send_encrypted(room, "hello bob")
        event = self.event(h, room, first)
        self.assertEqual(event["type"], "m.room.encrypted")
        self.assertNotIn("hello", str(event["content"]))
        bob.sync()
        got = bob.decrypt(event)
        self.assertEqual((got.type, got.content["body"], got.index), ("m.room.message",
                                                                      "hello bob", 0))
        self.assertEqual(alice.decrypt(event).content["body"], "hello bob")   # our own
        answer = bob.send_encrypted(room, "hello alice")
        alice.sync()
        self.assertEqual(alice.decrypt(self.event(h, room, answer)).content["body"],
                         "hello alice")
        self.assertEqual([k["room_id"] for k in alice.room_keys(bob.user_id)], [room])

        # Replays and forged senders are refused.
        again = alice.replay(room, event)
        with self.assertRaisesRegex(DecryptError, "replay"):
            bob.decrypt(self.event(h, room, again))
        forged = bob.send_event(room, "m.room.encrypted", event["content"])
        with self.assertRaisesRegex(DecryptError, "used by"):
            alice.decrypt(self.event(h, room, forged))

        # A second device of alice gets the key for later messages only; a device with a
        # bad self-signature gets nothing; bob's second device has only a fallback key.
        alice2 = alice.second_device("ALICE2")
        alice2.upload_keys()
        bad = alice.second_device("ALICEBAD")
        bad.upload_keys(bad_signature=True)
        bob2 = bob.second_device("BOB2")
        bob2.upload_keys(one_time=0)
        later = alice.send_encrypted(room, "later")
        for client in (alice2, bad, bob, bob2):
            client.sync()
        self.assertIsNone(alice2.try_decrypt(self.event(h, room, first)))
        self.assertEqual(alice2.decrypt(self.event(h, room, later)).content["body"], "later")
        self.assertEqual(bob2.decrypt(self.event(h, room, later)).index, 1)
        self.assertEqual(bad.to_device_raw, [])
        self.assertIn("ALICEBAD", alice.rejected[alice.user_id])
        self.assertRegex(alice.rejected[alice.user_id]["ALICEBAD"], "bad signature")
        self.assertEqual(set(alice.devices[alice.user_id]), {"ALICE1", "ALICE2"})
        fallback = h.server.ok("GET", f"/_fake/devices/{q(bob.user_id)}")["devices"]["BOB2"]
        self.assertTrue(fallback["fallback_keys"][ALGORITHM]["used"])

        # New sessions after a rotation reach everyone.  Olm: alice's first message to bob
        # was a pre-key message, bob answered on the session it made (normal messages), so
        # alice's next one is a normal message too.
        alice.rotate(room)
        bob.rotate(room)
        last = bob.send_encrypted(room, "rotated")
        for client in (alice, alice2):
            client.sync()
            self.assertEqual(client.decrypt(self.event(h, room, last)).content["body"],
                             "rotated")
        again = alice.send_encrypted(room, "rotated too")
        bob.sync()
        self.assertEqual(bob.decrypt(self.event(h, room, again)).content["body"], "rotated too")

        def olm_types(sender, receiver):
            return [m["content"]["ciphertext"][receiver.curve25519]["type"]
                    for m in receiver.to_device_raw if m["sender"] == sender.user_id
                    and receiver.curve25519 in m["content"]["ciphertext"]]
        self.assertEqual(olm_types(alice, bob), [0, 1])
        self.assertEqual(olm_types(bob, alice), [1, 1])
        for client in (alice, alice2, bad, bob, bob2):
            self.assertEqual(client.problems, [], client.device_id)

    @staticmethod
    def event(h, room, event_id):
        return next(e for e in h.server.events(room) if e["event_id"] == event_id)


class MatrixE2EETest(E2EETestBase):

    @classmethod
    def setUpClass(cls):
        binary = bot_binary()
        if not os.access(binary, os.X_OK):
            raise unittest.SkipTest(f"{binary} is not built (ninja -C build)")
        helptext = subprocess.run([binary, "help"], capture_output=True, text=True).stdout
        if not re.search(r"^\s+run\b", helptext, re.M):
            raise unittest.SkipTest(f"{binary} has no 'run' command (no Matrix adapter)")

    # ---- shared set-ups and checks ---------------------------------------------------------

    def start_bot(self, h):
        """The bot (its direct chats encrypted, as by default; harness.py turns that off for
        the transport tests), started and its keys on the server: (device_id, record)."""
        h.bot_account()
        h.reset_log()
        h.start_bot(h.write_config(encrypt_direct_chats=True))
        return h.bot_device()

    def encrypted_room(self, h, alice, invite=()):
        """alice's room "Card night" with m.room.encryption in its initial state, the bot
        invited (and joined) along with `invite`."""
        room = h.create_room("alice", ROOM_NAME, invite=[BOT_ID, *invite],
                             initial_state=encrypted_room_state())
        h.wait_bot_membership(room)
        return room

    def say(self, h, client, name, room, text, timeout=30):
        """name says text in room, encrypted by client (sharing its key first); waits until
        the bot has handled it.  Returns (event_id, pos, encrypted content)."""
        content = client.encrypt(room, {"msgtype": "m.text", "body": text})
        event_id, pos = h.send(name, room, content, kind="m.room.encrypted")
        h.wait_handled(pos, f"{name}: {text!r} (encrypted)", timeout)
        return event_id, pos, content

    @staticmethod
    def bot_events(h, room):
        """The bot's events in room apart from state (its membership, a DM's set-up)."""
        return [e for e in h.server.events(room) if e["sender"] == BOT_ID
                and "state_key" not in e]

    def decrypted(self, h, client, room, count, timeout=30, what=None):
        """Waits until the bot has sent at least count events in room and client (syncing)
        decrypts them all; returns [(event, Decrypted)]."""
        deadline = h.deadline(timeout)
        while True:
            seen = h.news_seen()
            client.sync()
            events = self.bot_events(h, room)
            pairs = [(e, client.try_decrypt(e, room)) for e in events]
            if len(pairs) >= count and all(d for _, d in pairs):
                return pairs
            h.check_bot()
            if not h.await_news(seen, deadline):
                break
        report = []
        for event in events:
            try:
                got = client.decrypt(event, room)
                report.append(f"  {event['type']}: {got.content.get('body', '')[:70]!r}")
            except DecryptError as err:
                report.append(f"  {event['type']} {str(event['content'])[:90]}: {err}")
        h.fail(f"{client.device_id} expected {count} decryptable bot events in {room} "
               f"({what or ''}) within {timeout * SLACK} s; the bot sent {len(events)}:\n"
               + "\n".join(report) +
               f"\nroom keys {client.device_id} got from the bot: "
               f"{[(k.get('room_id'), k.get('session_id')) for k in client.room_keys(BOT_ID)]}"
               f"\nclient problems: {client.problems}"
               f"\nthe bot's E2EE requests:\n{h.e2ee_log()}")

    @staticmethod
    def bodies(pairs):
        return [d.content.get("body", "") for _, d in pairs]

    def assert_only_encrypted(self, h, room, client):
        """No bot event in the room is in plaintext, each decrypts to an m.notice
        m.room.message of this room, and the bot's to-device messages are all Olm."""
        for event in self.bot_events(h, room):
            self.assertEqual(event["type"], "m.room.encrypted",
                             f"a plaintext bot event in an encrypted room: {event}")
            self.assertEqual(event["content"].get("algorithm"), MEGOLM)
            got = client.decrypt(event, room)
            self.assertEqual(got.type, "m.room.message")
            self.assertEqual(got.content.get("msgtype"), "m.notice", got.content)
        from_bot = [m for m in client.to_device_raw if m["sender"] == BOT_ID]
        self.assertTrue(from_bot, "no to-device message from the bot")
        for message in from_bot:
            self.assertEqual((message["type"], message["content"].get("algorithm")),
                             ("m.room.encrypted", OLM), f"to-device message {message}")
        self.assertEqual(client.problems, [], "what the bot sent broke the rules")

    def assert_key_sharing_order(self, h, claim):
        """Before its first m.room.encrypted event the bot queried the devices, claimed a
        one-time key (when it had no Olm session yet) and sent the room key by Olm; it never
        sent an m.room_key in the clear."""
        log = h.requests()
        paths = [e["path"] for e in log]

        def first(regex):
            return next((i for i, p in enumerate(paths) if re.search(regex, p)), None)
        send = first(r"/send/m\.room\.encrypted/cr")
        steps = {"/keys/query": first(r"^/_matrix/client/v3/keys/query"),
                 "/sendToDevice/m.room.encrypted": first(r"/sendToDevice/m\.room\.encrypted/")}
        if claim:
            steps["/keys/claim"] = first(r"^/_matrix/client/v3/keys/claim")
        self.assertIsNotNone(send, "no m.room.encrypted event sent by the bot")
        for what, at in steps.items():
            self.assertTrue(at is not None and at < send,
                            f"no {what} before the bot's first m.room.encrypted event:\n"
                            f"{h.e2ee_log()}")
        self.assertEqual([p for p in paths if re.search(r"/sendToDevice/m\.room_key/", p)], [])

    # ---- holding the bot's requests (fake_homeserver "hold" faults) ------------------------

    @staticmethod
    def hold(h, name, path_regex, method):
        h.server.add_faults({"action": "hold", "name": name, "path_regex": path_regex,
                             "method": method, "count": -1})

    @staticmethod
    def wait_held(h, name, timeout=30):
        h.wait_for(lambda: h.server.ok("GET", "/_fake/holds")["waiting"].get(name, 0) > 0,
                   timeout, f"a request of the bot held by {name!r}")

    @staticmethod
    def release(h, name):
        h.server.ok("DELETE", f"/_fake/holds/{q(name)}")

    def restart_blind(self, h, clean):
        """Stops the bot (SIGTERM when clean, else SIGKILL) and starts it again while the
        homeserver answers none of its /sync requests, so it knows only what it stored; once
        its first /sync is waiting (its queued messages have been offered by then), the sync
        is let through."""
        if clean:
            h.stop_bot()
        else:
            h.bot.expected_down = True
            h.bot.kill()
        self.hold(h, "sync", BOT_SYNCS, "GET")
        h.bot.expected_down = False
        h.bot.start()
        self.wait_held(h, "sync")
        return lambda: self.release(h, "sync")

    def e2ee_transcript(self, h, clients, room, expected, timeout=60):
        """The bot's lines as the players read them (the room decrypted by the first player,
        each DM by its owner), once at least what is expected arrived and decrypts (or
        something differs) and nothing more can come from the bot (so a late duplicate
        shows)."""
        users = sorted(expected.private)

        def read():
            out = Transcript(private={u: [] for u in users})
            reader = clients[users[0]]
            reader.sync()
            for event in self.bot_events(h, room):
                got = reader.try_decrypt(event, room)
                if got is None:
                    return None
                out.room.extend(got.content.get("body", "").split("\n"))
            for user in users:
                clients[user].sync()
                events = sorted((e for dm in h.dm_rooms(user) for e in self.bot_events(h, dm)),
                                key=lambda e: e["fake"]["pos"])
                for event in events:
                    got = clients[user].try_decrypt(event)
                    if got is None:
                        return None
                    out.private[user].extend(normalize_private(line) for line in
                                             got.content.get("body", "").split("\n"))
            return out

        def ready():
            got = read()
            if got is None:
                return None
            prefix, complete = h.prefix_ok(got, expected)
            return got if (complete or not prefix) else None
        h.wait_for(ready, timeout, "the bot's messages, decrypted")
        h.wait_quiet("its messages", timeout)
        return h.wait_for(read, timeout, "the bot's messages, decrypted, at the end")

    def assert_txn_ids_once(self, h, rooms):
        """Every bot event (none in the clear) carries a txn id cr<N> used once: no message
        was posted twice, under one txn id or two."""
        seen = {}
        for room in rooms:
            for event in self.bot_events(h, room):
                self.assertEqual(event["type"], "m.room.encrypted", event)
                txn = event["unsigned"].get("transaction_id")
                self.assertRegex(txn or "", BOT_TXN_RE)
                self.assertNotIn(txn, seen, f"txn id {txn} posted twice")
                seen[txn] = event["event_id"]
        return seen

    def warnings_after(self, h, mark):
        lines = h.bot.stderr().splitlines()[mark:]
        return [line for line in lines if re.search(r"cardroom: (warn|error): ", line)]

    # ---- 1 -----------------------------------------------------------------------------------

    def test_01_keys_uploaded(self):
        """Signed device keys (olm + megolm, curve25519/ed25519, a valid self-signature), at
        least 50 signed one-time keys and a signed fallback key; a low count is topped up;
        after a restart the same identity and no conflicting upload."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        device, record = self.start_bot(h)
        keys = record["device_keys"]
        self.assertEqual(len(h.bot_devices()), 1)
        self.assertEqual((keys["user_id"], keys["device_id"]), (BOT_ID, device))
        self.assertEqual(set(keys["algorithms"]), {OLM, MEGOLM})
        self.assertEqual(set(keys["keys"]), {f"curve25519:{device}", f"ed25519:{device}"})
        ed25519 = keys["keys"][f"ed25519:{device}"]
        self.assertIsNone(check_signature(keys, BOT_ID, f"ed25519:{device}", ed25519))
        queried = alice.query_devices([BOT_ID])[BOT_ID]
        self.assertEqual(alice.rejected[BOT_ID], {}, "the bot's keys do not verify")
        self.assertEqual(queried, {device: {"curve25519": keys["keys"][f"curve25519:{device}"],
                                            "ed25519": ed25519}})

        def check_otks(rec):
            for key_id, obj in rec["one_time_keys"].items():
                self.assertTrue(key_id.startswith(ALGORITHM + ":"), key_id)
                self.assertIsInstance(obj, dict, f"{key_id} is not a signed key")
                self.assertIsNone(check_signature(obj, BOT_ID, f"ed25519:{device}", ed25519),
                                  key_id)
            fallback = rec["fallback_keys"].get(ALGORITHM)
            self.assertIsNotNone(fallback, "no signed_curve25519 fallback key")
            self.assertIs(fallback["key"].get("fallback"), True, fallback)
            self.assertIsNone(check_signature(fallback["key"], BOT_ID, f"ed25519:{device}",
                                              ed25519))
        check_otks(record)
        self.assertGreaterEqual(record["one_time_key_counts"][ALGORITHM], LOW_OTK)
        self.assertIn(ALGORITHM, record["unused_fallback_key_types"])

        # Others claim 45 one-time keys (the count goes low): the bot uploads more.
        claimed = set()

        def drain():
            uploads = len(h.requests("POST", r"/keys/upload"))
            for _ in range(45):
                claimed.add(alice.claim_keys([(BOT_ID, device)])[(BOT_ID, device)])
            self.assertEqual(alice.problems, [])
            h.wait_for(lambda: len(h.requests("POST", r"/keys/upload")) > uploads and
                       h.bot_devices()[device]["one_time_key_counts"][ALGORITHM] >= LOW_OTK,
                       20, f"the bot to top its one-time keys up to {LOW_OTK}")
        drain()
        topped = h.bot_devices()[device]
        check_otks(topped)
        fresh = {o["key"] for o in topped["one_time_keys"].values()}
        self.assertEqual(fresh & claimed, set(), "claimed one-time keys uploaded again")

        # Restart (SIGTERM): same device, same keys, no refused upload; still topping up.
        whoami = len(h.requests("GET", r"/account/whoami"))
        h.stop_bot()
        h.bot.expected_down = False
        h.bot.start()
        h.wait_for(lambda: len(h.requests("GET", r"/account/whoami")) > whoami, 20,
                   "the restarted bot's whoami")
        drain()
        after = h.bot_devices()
        self.assertEqual(list(after), [device], "the bot made another device")
        self.assertEqual(after[device]["device_keys"], keys, "the device keys changed")
        check_otks(after[device])
        fresh = {o["key"] for o in after[device]["one_time_keys"].values()}
        self.assertEqual(fresh & claimed, set(), "claimed one-time keys uploaded again")
        bad = [e for e in h.requests("POST", r"/keys/upload") if e["status"] != 200]
        self.assertEqual(bad, [], "refused key uploads (different keys for the same device?)")
        self.assertEqual(len(h.requests("POST", r"^/_matrix/client/v3/login")), 1)
        self.assertTrue(h.bot.alive())
        h.stop_bot()

    # ---- 2 -----------------------------------------------------------------------------------

    def test_02_encrypted_dm_hand(self):
        """alice starts a table with three computer players in a plain room: the bot's DM to
        her is encrypted from its first state, every bot event in it is m.room.encrypted,
        and she decrypts exactly the console's private lines; her encrypted !hand there is
        answered, encrypted, with her cards."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        room = h.create_room("alice", ROOM_NAME, invite=[BOT_ID])
        self.start_bot(h)
        h.wait_bot_membership(room)
        lines = parse_script(SETUP)
        ref = matrix_reference(parse_script(SETUP + "alice>> !hand\n"))
        before_hand = matrix_reference(lines).private["alice"]
        self.assertTrue(before_hand and len(ref.private["alice"]) > len(before_hand))
        for line in lines:
            h.say_and_wait(line.user, room, line.text)
        h.assert_transcript(room, Transcript(room=ref.room))     # the plain room stays plain

        dm = h.dm_room("alice")
        state = [e for e in h.server.events(dm) if e["type"] == "m.room.encryption"]
        self.assertTrue(state, "the bot's DM has no m.room.encryption state; its events: "
                        + ", ".join(f"{e['type']}/{e['sender']}" for e in h.server.events(dm)))
        self.assertEqual(state[0]["content"].get("algorithm"), MEGOLM)
        invite = next(e for e in h.server.events(dm) if e["type"] == "m.room.member"
                      and e["state_key"] == alice.user_id)
        self.assertLess(state[0]["fake"]["pos"], invite["fake"]["pos"],
                        "m.room.encryption is not in the DM's initial state")

        def dm_lines(pairs):
            return [normalize_private(line) for b in self.bodies(pairs) for line in b.split("\n")]

        self.decrypted(h, alice, dm, 1, what="the first DM lines")
        h.wait_for(lambda: len(dm_lines(self.decrypted(h, alice, dm, 1))) >= len(before_hand),
                   20, "all of alice's private lines")
        pairs = self.decrypted(h, alice, dm, 1)
        self.assertEqual(dm_lines(pairs), before_hand)
        for body in self.bodies(pairs):
            self.assertTrue(body.startswith(f"[{ROOM_NAME} · table 1] "), body)
        self.assertTrue(any("Your first four cards" in b for b in self.bodies(pairs)))

        shown = len(pairs)
        self.say(h, alice, "alice", dm, "!hand")
        self.decrypted(h, alice, dm, shown + 1, what="the answer to !hand")
        h.wait_for(lambda: len(dm_lines(self.decrypted(h, alice, dm, 1))) >=
                   len(ref.private["alice"]), 20, "the whole answer to !hand")
        h.wait_quiet("the answer to !hand")
        pairs = self.decrypted(h, alice, dm, shown + 1)
        self.assertEqual(dm_lines(pairs), ref.private["alice"])
        self.assertTrue(all(HEAD_RE.match(b) for b in self.bodies(pairs)))
        self.assert_only_encrypted(h, dm, alice)
        keys = alice.room_keys(BOT_ID)
        self.assertTrue(keys and all(k["room_id"] == dm for k in keys), keys)
        self.assert_key_sharing_order(h, claim=True)     # alice's first contact with the bot
        self.assertEqual([e["content"].get("body") for e in h.bot_events(dm)], [])

    # ---- 3 -----------------------------------------------------------------------------------

    def test_03_encrypted_room(self):
        """In a room alice created with m.room.encryption, her encrypted !new 304 is
        understood and the bot's answer is encrypted: she decrypts the console's line."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        self.start_bot(h)
        room = self.encrypted_room(h, alice)
        self.say(h, alice, "alice", room, "!new 304")
        ref = matrix_reference(parse_script("alice> !new 304\n")).room
        self.decrypted(h, alice, room, 1, what="the answer to !new 304")
        h.wait_quiet("the answer to !new 304")
        pairs = self.decrypted(h, alice, room, 1)
        self.assertEqual(self.bodies(pairs), ref)
        self.assertTrue(ref[0].startswith("Table 1 is open for 304"))
        self.assert_only_encrypted(h, room, alice)
        self.assertEqual(h.bot_events(room), [], "plaintext m.room.message from the bot")
        self.assert_key_sharing_order(h, claim=False)    # alice's Olm session may be reused
        keys = alice.room_keys(BOT_ID)
        self.assertEqual({(k["room_id"], k["session_id"]) for k in keys},
                         {(room, d.session_id) for _, d in pairs})

    # ---- 4 -----------------------------------------------------------------------------------

    def test_04_new_device(self):
        """alice logs in a second device: once the bot has seen the device-list change, its
        next message in the encrypted room reaches the new device too, the earlier one does
        not (a new session, or the old one from a later index)."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        self.start_bot(h)
        room = self.encrypted_room(h, alice)
        self.say(h, alice, "alice", room, "!new 304")
        earlier = self.decrypted(h, alice, room, 1, what="the answer to !new 304")
        alice2 = alice.second_device("ALICE2")
        alice2.upload_keys()
        h.wait_handled(h.stream_position(), "alice's second device (a device-list change)")
        self.say(h, alice, "alice", room, "!join")
        ref = matrix_reference(parse_script("alice> !new 304\nalice> !join\n")).room
        deadline = h.deadline(30)
        while True:
            seen = h.news_seen()
            alice2.sync()
            events = self.bot_events(h, room)
            later = [alice2.try_decrypt(e, room) for e in events[len(earlier):]]
            if later and all(later):
                break
            h.check_bot()
            if not h.await_news(seen, deadline):
                errors = []
                for e in events:
                    try:
                        alice2.decrypt(e, room)
                        errors.append("ok")
                    except DecryptError as err:
                        errors.append(str(err))
                h.fail(f"ALICE2 cannot decrypt the bot's message after it joined: {errors}; "
                       f"room keys it got from the bot: {alice2.room_keys(BOT_ID)}; problems "
                       f"{alice2.problems}\nthe bot's E2EE requests:\n{h.e2ee_log()}")
        self.assertEqual([d.content["body"] for d in later], ref[1:])
        for event, _ in earlier:
            with self.assertRaises(DecryptError, msg="ALICE2 read a message sent before it "
                                                      "existed"):
                alice2.decrypt(event, room)
        self.decrypted(h, alice, room, 2)          # the first device still reads everything
        self.assert_only_encrypted(h, room, alice)
        self.assertEqual(alice2.problems, [])
        self.assertEqual({k["room_id"] for k in alice2.room_keys(BOT_ID)}, {room})

    # ---- 5 -----------------------------------------------------------------------------------

    def test_05_bad_device_not_trusted(self):
        """A device of alice's whose keys carry a wrong self-signature (one there before the
        room, one added later) gets no room key from the bot; her good device does."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        bad = alice.second_device("ALICEBAD1")
        bad.upload_keys(bad_signature=True)
        self.assertIsNotNone(check_signature(bad.device_keys(bad_signature=True), alice.user_id,
                                             "ed25519:ALICEBAD1", bad.ed25519))
        self.start_bot(h)
        room = self.encrypted_room(h, alice)
        self.say(h, alice, "alice", room, "!new 304")
        self.decrypted(h, alice, room, 1, what="the answer to !new 304 (good device)")
        bad2 = alice.second_device("ALICEBAD2")
        bad2.upload_keys(bad_signature=True)
        h.wait_handled(h.stream_position(), "alice's second bad device (a device-list change)")
        self.say(h, alice, "alice", room, "!join")
        self.decrypted(h, alice, room, 2, what="the answer to !join (good device)")
        h.wait_quiet("the answer to !join")
        for client in (bad, bad2):
            client.sync()
            from_bot = [m for m in client.to_device_raw if m["sender"] == BOT_ID]
            self.assertEqual(client.room_keys(BOT_ID), [], f"{client.device_id} got a room key")
            self.assertEqual(from_bot, [], f"the bot sent to-device messages to the untrusted "
                                           f"{client.device_id}")
            for event in self.bot_events(h, room):
                self.assertIsNone(client.try_decrypt(event, room))
        self.assert_only_encrypted(h, room, alice)
        self.assertTrue(alice.room_keys(BOT_ID))

    # ---- 6 -----------------------------------------------------------------------------------

    def test_06_replay_refused(self):
        """alice's encrypted command sent again as a new event (same ciphertext) gets no
        second answer and a warning; the same ciphertext sent by bob (claiming alice's
        session as his) gets none either; a fresh command is still answered."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        h.make_user("bob")
        self.start_bot(h)
        room = self.encrypted_room(h, alice, invite=["bob"])
        h.join("bob", room)
        _, _, content = self.say(h, alice, "alice", room, "!new 304")
        self.decrypted(h, alice, room, 1, what="the answer to !new 304")
        h.wait_quiet("the answer to !new 304")
        answered = len(self.bot_events(h, room))

        mark = len(h.bot.stderr().splitlines())
        _, pos = h.send("alice", room, content, kind="m.room.encrypted")
        h.wait_handled(pos, "the replayed !new 304")
        h.wait_quiet("the replayed !new 304")
        self.assertEqual(len(self.bot_events(h, room)), answered,
                         f"the bot answered a replayed event: "
                         f"{self.bodies(self.decrypted(h, alice, room, answered))}")
        self.assertTrue(self.warnings_after(h, mark), "no warning about the replay:\n"
                        + "\n".join(h.bot.stderr().splitlines()[mark:][-20:]))

        _, pos = h.send("bob", room, content, kind="m.room.encrypted")
        h.wait_handled(pos, "bob's event with alice's session")
        h.wait_quiet("bob's event with alice's session")
        self.assertEqual(len(self.bot_events(h, room)), answered,
                         "the bot acted on alice's session under bob's name")

        self.say(h, alice, "alice", room, "!table")
        pairs = self.decrypted(h, alice, room, answered + 1, what="the answer to !table")
        self.assertRegex(pairs[-1][1].content["body"], r"^Table 1 \(not started\)")
        self.assert_only_encrypted(h, room, alice)

    # ---- 7 -----------------------------------------------------------------------------------

    def test_07_restart_keeps_decrypting(self):
        """The bot stopped (SIGTERM) and started again between two encrypted commands of the
        same Megolm session keeps its Olm/Megolm state: the second is answered, and its
        identity keys are unchanged."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        device, record = self.start_bot(h)
        room = self.encrypted_room(h, alice)
        self.say(h, alice, "alice", room, "!new 304")
        self.decrypted(h, alice, room, 1, what="the answer to !new 304")
        h.stop_bot()
        h.bot.expected_down = False
        h.bot.start()
        self.say(h, alice, "alice", room, "!join")
        pairs = self.decrypted(h, alice, room, 2, what="the answer to !join after the restart")
        ref = matrix_reference(parse_script("alice> !new 304\nalice> !join\n")).room
        self.assertEqual(self.bodies(pairs), ref)
        after = h.bot_devices()
        self.assertEqual(list(after), [device])
        self.assertEqual(after[device]["device_keys"], record["device_keys"])
        self.assertEqual(alice.query_devices([BOT_ID])[BOT_ID][device]["ed25519"],
                         record["device_keys"]["keys"][f"ed25519:{device}"])
        self.assert_only_encrypted(h, room, alice)
        self.assertEqual(len(h.requests("POST", r"^/_matrix/client/v3/login")), 1)
        h.stop_bot()

    # ---- 8 -----------------------------------------------------------------------------------

    def test_08_rotation_after_100_messages(self):
        """The bot's group session in a room carries 100 messages (indexes 0-99); the 101st
        starts a new session, which alice receives by Olm too."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        self.start_bot(h)
        room = self.encrypted_room(h, alice)
        self.say(h, alice, "alice", room, "!new 304")
        for _ in range(100):
            self.say(h, alice, "alice", room, "!table")
        pairs = self.decrypted(h, alice, room, 101, what="101 answers")
        h.wait_quiet("101 answers")
        pairs = self.decrypted(h, alice, room, 101)
        self.assertEqual(len(pairs), 101)
        sessions = [d.session_id for _, d in pairs]
        self.assertEqual(len(set(sessions[:100])), 1, "the session changed within 100 messages")
        self.assertEqual([d.index for _, d in pairs[:100]], list(range(100)))
        self.assertNotEqual(sessions[100], sessions[0], "no new session after 100 messages")
        self.assertEqual(pairs[100][1].index, 0)
        self.assertEqual({k["session_id"] for k in alice.room_keys(BOT_ID)}, set(sessions))
        self.assert_only_encrypted(h, room, alice)

    # ---- 9 -----------------------------------------------------------------------------------

    def test_09_cross_signing(self):
        """With a password login the bot uploads master, self-signing and user-signing keys
        (after the interactive-auth round: 401, then the password), the master key signed by
        its device and the other two by the master key, and signs its device with the
        self-signing key; all checked with libolm."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        # an older master key is on the account already, so replacing it needs the password
        h.bot_account()
        old = olm.Account().identity_keys["ed25519"]
        h.server.as_user(BOT_LOCALPART, "POST", "/_matrix/client/v3/keys/device_signing/upload",
                         {"master_key": {"user_id": BOT_ID, "usage": ["master"],
                                         "keys": {f"ed25519:{old}": old}}})
        device, record = self.start_bot(h)
        ed = record["device_keys"]["keys"][f"ed25519:{device}"]

        def answer():
            return alice.call("POST", "/_matrix/client/v3/keys/query",
                              {"device_keys": {BOT_ID: []}})

        h.wait_for(lambda: any(k.startswith("ed25519:") and k != f"ed25519:{device}"
                               for k in answer()["device_keys"][BOT_ID][device]
                               .get("signatures", {}).get(BOT_ID, {})),
                   20, "the bot to sign its device with its self-signing key")
        q = answer()
        master = q["master_keys"][BOT_ID]
        ssk = q["self_signing_keys"][BOT_ID]
        self.assertEqual(master["usage"], ["master"])
        self.assertEqual(ssk["usage"], ["self_signing"])
        (mk_id, mk), = master["keys"].items()
        (sk_id, sk), = ssk["keys"].items()
        self.assertIsNone(check_signature(master, BOT_ID, f"ed25519:{device}", ed))
        self.assertIsNone(check_signature(ssk, BOT_ID, mk_id, mk))
        self.assertIsNone(check_signature(q["device_keys"][BOT_ID][device], BOT_ID, sk_id, sk))
        uploads = h.requests("POST", r"/keys/device_signing/upload")
        self.assertEqual([r["status"] for r in uploads], [401, 200],
                         "the first upload is asked for the password, the second carries it")
        err = h.bot.stderr()
        self.assertIn("info: matrix: uploading cross-signing keys: the homeserver asks for the account's "
                      "password", err)
        self.assertEqual(self.warnings_after(h, 0), [], "the expected 401 of the first step logged as a "
                                                        "failure")
        # the owner's own view has the user-signing key, signed by the master key
        bot_view = h.server.as_user(BOT_LOCALPART, "POST", "/_matrix/client/v3/keys/query",
                                    {"device_keys": {BOT_ID: []}})
        usk = bot_view["user_signing_keys"][BOT_ID]
        self.assertEqual(usk["usage"], ["user_signing"])
        self.assertIsNone(check_signature(usk, BOT_ID, mk_id, mk))
        # after a restart nothing is uploaded again (start_bot clears the request log)
        h.stop_bot()
        self.start_bot(h)
        h.wait_handled(h.stream_position(), "the restarted bot's first answer")
        self.assertEqual(h.requests("POST", r"/keys/device_signing/upload"), [])
        self.assertEqual(answer()["master_keys"][BOT_ID], master, "the master key changed")

    # ---- 10 ----------------------------------------------------------------------------------

    def test_10_lost_encryption_state_is_never_silent(self):
        """The bot's encryption keys vanish from its database while its device and token stay:
        it must not upload new keys for the same device, but stop with a clear error and exit
        status 2 (which the systemd unit does not restart)."""
        import sqlite3
        h = E2EEHarness(self)
        device, record = self.start_bot(h)
        h.stop_bot()
        db = sqlite3.connect(h.bot.db)
        with db:
            db.execute("DELETE FROM kv WHERE ns IN ('e2ee', 'olm', 'megolm.in', 'megolm.out')")
        db.close()
        h.bot.expected_down = True
        h.bot.start()
        rc = h.bot.wait_exit(120)
        self.assertIsNotNone(rc, "the bot went on without its encryption keys")
        self.assertEqual(rc, 2)
        with open(h.bot.stderr_path, encoding="utf-8") as f:
            err = f.read()
        self.assertIn("other encryption keys for device", err)
        keys = h.bot_devices()[device]
        self.assertEqual(keys["device_keys"], record["device_keys"], "the device keys were replaced")

    # ---- 11 ----------------------------------------------------------------------------------

    def test_11_queued_messages_stay_encrypted_across_restarts(self):
        """Messages queued for an encrypted room and an encrypted DM when the bot stops (a
        clean SIGTERM with one send under way and the rest never tried; then a SIGKILL after a
        send was made but its answer lost) go out encrypted after restarts during which the
        homeserver answers no /sync: the bot keeps which rooms are encrypted, waits for what
        it must know, and a retry sends what the first attempt sent under the same txn id."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        self.start_bot(h)
        room = self.encrypted_room(h, alice)
        for line in parse_script(SETUP):
            self.say(h, alice, "alice", room, line.text)
        dm = h.dm_room("alice")
        script = SETUP

        # 1. sends held: the first message of each destination under way, the others queued
        self.hold(h, "send", BOT_SENDS, "PUT")
        self.say(h, alice, "alice", room, "!table")
        self.say(h, alice, "alice", dm, "!hand")
        script += "alice> !table\nalice>> !hand\n"
        self.wait_held(h, "send")
        release_sync = self.restart_blind(h, clean=True)
        self.release(h, "send")         # the stopped bot's send arrives late, and is made
        release_sync()

        # 2. a send made, its answer lost, the retry held: SIGKILL
        h.server.add_faults({"action": "drop", "path_regex": BOT_SENDS, "method": "PUT",
                             "process": True},
                            {"action": "hold", "name": "resend", "path_regex": BOT_SENDS,
                             "method": "PUT", "count": -1})
        self.say(h, alice, "alice", room, "!last")
        script += "alice> !last\n"
        self.wait_held(h, "resend")
        release_sync = self.restart_blind(h, clean=False)
        self.release(h, "resend")
        release_sync()

        expected = matrix_reference(parse_script(script))
        expected = Transcript(expected.room, {"alice": expected.private["alice"]})
        got = self.e2ee_transcript(h, {"alice": alice}, room, expected)
        problem = h.mismatch(got, expected)
        if problem:
            h.fail("the bot's messages (decrypted) differ from the console's:\n" + problem)
        self.assert_txn_ids_once(h, [room, dm])
        self.assert_only_encrypted(h, room, alice)
        self.assert_only_encrypted(h, dm, alice)
        drops = [e for e in h.requests("PUT", BOT_SENDS) if e["fault"] == "drop"]
        self.assertEqual(len(drops), 1, "the lost answer was not tried")

    # ---- 12 ----------------------------------------------------------------------------------

    def test_12_match_with_crashes_stays_encrypted(self):
        """Two hands of the match in an encrypted room, four people on E2EE clients, the DMs
        encrypted, and the bot SIGKILLed at random moments (seeded), some restarts while the
        homeserver answers no /sync: the players read exactly what the console prints, every
        bot event is encrypted, and no txn id is used twice."""
        rng = random.Random(E2EE_KILL_SEED)
        h = E2EEHarness(self)
        clients = {name: h.olm_user(name, name.upper() + "1") for name in PLAYERS}
        self.start_bot(h)
        room = h.create_room("alice", ROOM_NAME, invite=[BOT_ID, *PLAYERS[1:]],
                             initial_state=encrypted_room_state())
        for name in PLAYERS[1:]:
            h.join(name, room)
        h.wait_bot_membership(room)
        lines = read_script(limit=150)
        expected = matrix_reference(lines)
        kills = set(rng.sample(range(6, len(lines) - 2), 10))
        for i, line in enumerate(lines):
            target = h.dm_room(line.user) if line.private else room
            content = clients[line.user].encrypt(target, {"msgtype": "m.text", "body": line.text})
            _, pos = h.send(line.user, target, content, kind="m.room.encrypted")
            if i in kills:
                time.sleep(rng.choice((0.0, 0.0, 0.05, 0.2)))
                if rng.random() < 0.5:
                    self.restart_blind(h, clean=False)()
                else:
                    h.restart_bot()
            h.wait_handled(pos, f"script line {line.number} ({line})", 60)
        got = self.e2ee_transcript(h, clients, room, expected, timeout=120)
        problem = h.mismatch(got, expected)
        if problem:
            h.fail("the bot's messages (decrypted) differ from the console's:\n" + problem)
        self.assert_txn_ids_once(h, [room] + [dm for u in PLAYERS for dm in h.dm_rooms(u)])
        self.assertEqual(len(h.requests("POST", r"^/_matrix/client/v3/login")), 1)

    # ---- 13 ----------------------------------------------------------------------------------

    def test_13_room_key_kept_across_restarts(self):
        """The bot's Megolm session of a room outlives restarts (SIGTERM and SIGKILL, with its
        members' device lists asked again): the messages after them continue its ratchet and
        the players get no new room key; a member leaving still makes a new one."""
        h = E2EEHarness(self)
        alice = h.olm_user("alice", "ALICE1")
        bob = h.olm_user("bob", "BOB1")
        self.start_bot(h)
        room = self.encrypted_room(h, alice, invite=["bob"])
        h.join("bob", room)
        said = ["!new 304", "!join"]
        self.say(h, alice, "alice", room, said[0])
        self.decrypted(h, alice, room, 1, what="the answer to !new 304")
        for n, clean in ((2, True), (3, False)):
            if clean:
                h.stop_bot()
            else:
                h.bot.expected_down = True
                h.bot.kill()
            h.bot.expected_down = False
            h.bot.start()
            self.say(h, alice, "alice", room, said[n - 1] if n - 1 < len(said) else "!table")
            self.decrypted(h, alice, room, n, what=f"the answer after restart {n - 1}")
        pairs = self.decrypted(h, alice, room, 3)
        self.assertEqual(len({d.session_id for _, d in pairs}), 1,
                         f"a new room key after a restart: {[(d.session_id, d.index) for _, d in pairs]}")
        self.assertEqual([d.index for _, d in pairs], [0, 1, 2])
        for client in (alice, bob):
            client.sync()
            keys = [k for k in client.room_keys(BOT_ID) if k["room_id"] == room]
            self.assertEqual(len({k["session_id"] for k in keys}), 1, f"{client.device_id}: {keys}")
        # bob leaves: the next message is under a new key, which he does not get
        h.user_ok("bob", "POST", f"/_matrix/client/v3/rooms/{q(room)}/leave", {})
        self.say(h, alice, "alice", room, "!table")
        pairs = self.decrypted(h, alice, room, 4, what="the answer after bob left")
        self.assertNotEqual(pairs[3][1].session_id, pairs[0][1].session_id)
        bob.sync()
        self.assertNotIn(pairs[3][1].session_id, {k["session_id"] for k in bob.room_keys(BOT_ID)})
        self.assert_only_encrypted(h, room, alice)


if __name__ == "__main__":
    unittest.main()
