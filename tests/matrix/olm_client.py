"""A small Matrix end-to-end encryption client for the tests, on python-olm and urllib.

It follows the Client-Server API, "End-to-End Encryption" (m.olm.v1.curve25519-aes-sha2 for
to-device messages, m.megolm.v1.aes-sha2 for rooms), and is strict about what it receives:
everything that breaks a rule of the spec is recorded in `problems` (the tests assert it stays
empty), and what cannot be decrypted raises `DecryptError` with the reason.

    c = OlmClient(base_url, "alice", "pw-alice", "ALICE1")   # /login with its own device id
    c.upload_keys()                    # signed device keys, signed one-time keys, fallback key
    c.sync()                           # one /sync (since token): to-device Olm, invites, rooms
    c.decrypt(event)                   # a room's m.room.encrypted event -> Decrypted
    c.encrypt(room_id, content)        # shares its Megolm key by Olm if needed -> content
    c.send_encrypted(room_id, content) # ... and sends it as m.room.encrypted
    c.send_event(room_id, type, content)   # any event;  c.replay(room_id, event): same again
    c.sync_until(predicate)            # the /sync loop (since token) until predicate() is true
    c.second_device("ALICE2")          # another login of the same user, with its own keys

Every request carries the query parameter `x_olm_client=<device>`, so the tests can tell the
client's requests (its /sync in particular) from the bot's in the fake's request log.
Only python3-olm (Debian's /usr/bin/python3) and the standard library are used.
"""

import collections
import json
import time
import urllib.error
import urllib.parse
import urllib.request

import olm

OLM = "m.olm.v1.curve25519-aes-sha2"
MEGOLM = "m.megolm.v1.aes-sha2"
V3 = "/_matrix/client/v3"
MARK = "x_olm_client"

Decrypted = collections.namedtuple("Decrypted", "type content room_id session_id index")


class MatrixError(Exception):
    def __init__(self, method, path, status, body):
        super().__init__(f"{method} {path} -> {status} {body!r:.300}")
        self.status, self.body = status, body


class DecryptError(Exception):
    pass


def canonical(obj):
    """Canonical JSON (appendix "Canonical JSON"): sorted keys, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def signed_part(obj):
    """What a signature covers (appendix "Signing JSON"): without signatures and unsigned."""
    return {k: v for k, v in obj.items() if k not in ("signatures", "unsigned")}


def check_signature(obj, user_id, key_id, ed25519):
    """None if obj carries a valid signature of user_id by ed25519 (id key_id), else why not."""
    sig = ((obj.get("signatures") or {}).get(user_id) or {}).get(key_id)
    if not isinstance(sig, str):
        return f"no signature {user_id}/{key_id}"
    try:
        olm.ed25519_verify(ed25519, canonical(signed_part(obj)), sig)
    except olm.OlmVerifyError as err:
        return f"bad signature {user_id}/{key_id}: {err}"
    return None


class OlmClient:
    def __init__(self, base_url, user, password, device_id, display_name=None):
        self.base = base_url.rstrip("/")
        self.password = password
        self.txn = 0
        self.token = None
        self.device_id = device_id
        body = {"type": "m.login.password", "identifier": {"type": "m.id.user", "user": user},
                "password": password, "device_id": device_id}
        if display_name:
            body["initial_device_display_name"] = display_name
        out = self.call("POST", "/login", body)
        self.user_id, self.token = out["user_id"], out["access_token"]
        assert out["device_id"] == device_id, out
        self.account = olm.Account()
        keys = self.account.identity_keys
        self.curve25519, self.ed25519 = keys["curve25519"], keys["ed25519"]
        self.sessions = {}      # their curve25519 key -> [olm.Session], newest first
        self.devices = {}       # user -> {device_id: {"curve25519", "ed25519"}}, verified
        self.rejected = {}      # user -> {device_id: why its keys were refused}
        self.inbound = {}       # (room_id, session_id) -> dict(session, sender, sender_key, ...)
        self.outbound = {}      # room_id -> {"session": OutboundGroupSession, "shared": set}
        self.seen = {}          # (session_id, message index) -> event_id (replay check)
        self.to_device = []     # decrypted to-device messages (see _to_device)
        self.to_device_raw = []  # every to-device event as /sync gave it
        self.problems = []      # broken rules seen in what others sent
        self.invites = {}       # room_id -> invite state from /sync
        self.timeline = collections.defaultdict(list)   # room_id -> events from /sync
        self.device_changes = []     # device_lists.changed of every /sync
        self.otk_counts = {}
        self.since = None

    # ---- HTTP ------------------------------------------------------------------------------------

    def request(self, method, path, body=None, query=None):
        """(status, JSON answer) of one Client-Server request (path below /_matrix/client/v3
        unless it starts with /_)."""
        query = dict(query or {}, **{MARK: self.device_id})
        url = self.base + (path if path.startswith("/_") else V3 + path)
        url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                return err.code, json.loads(raw)
            except ValueError:
                return err.code, raw

    def call(self, method, path, body=None, query=None):
        status, out = self.request(method, path, body, query)
        if status != 200:
            raise MatrixError(method, path, status, out)
        return out

    def next_txn(self):
        self.txn += 1
        return f"olm{self.txn}"

    def login_info(self):
        """For harness.Harness.users: the same shape as Harness.login returns."""
        return {"user_id": self.user_id, "token": self.token, "device_id": self.device_id}

    def second_device(self, device_id, display_name=None):
        """A new login of the same user with another device id (its own Olm account)."""
        localpart = self.user_id[1:].split(":", 1)[0]
        return OlmClient(self.base, localpart, self.password, device_id, display_name)

    # ---- keys (§"Uploading keys") ----------------------------------------------------------------

    def sign(self, obj):
        signed = dict(obj)
        signed["signatures"] = {self.user_id: {f"ed25519:{self.device_id}":
                                               self.account.sign(canonical(signed_part(obj)))}}
        return signed

    def device_keys(self, bad_signature=False):
        keys = {"user_id": self.user_id, "device_id": self.device_id,
                "algorithms": [OLM, MEGOLM],
                "keys": {f"curve25519:{self.device_id}": self.curve25519,
                         f"ed25519:{self.device_id}": self.ed25519}}
        signed = self.sign(keys)
        if bad_signature:     # a real signature, but of other content: must not verify
            other = self.sign(dict(keys, algorithms=[OLM]))
            signed["signatures"] = other["signatures"]
        return signed

    def upload_keys(self, one_time=10, fallback=True, device_keys=True, bad_signature=False):
        """Uploads the device keys (once is enough; again only re-sends the same), `one_time`
        new signed one-time keys and, if asked, a new signed fallback key."""
        body = {}
        if device_keys:
            body["device_keys"] = self.device_keys(bad_signature)
        if one_time:
            self.account.generate_one_time_keys(one_time)
            body["one_time_keys"] = {f"signed_curve25519:{kid}": self.sign({"key": key})
                                     for kid, key in self.account.one_time_keys[
                                         "curve25519"].items()}
        if fallback:
            self.account.generate_fallback_key()
            body["fallback_keys"] = {
                f"signed_curve25519:{kid}": self.sign({"key": key, "fallback": True})
                for kid, key in self.account.fallback_key["curve25519"].items()}
        out = self.call("POST", "/keys/upload", body)
        self.account.mark_keys_as_published()
        self.otk_counts = out.get("one_time_key_counts", {})
        return out

    def query_devices(self, users):
        """/keys/query for users; keeps the devices whose keys are well-formed and self-signed
        (§"Downloading keys"); returns {user: {device: keys}} of those."""
        out = self.call("POST", "/keys/query", {"device_keys": {u: [] for u in users}})
        for user in users:
            verified, refused = {}, {}
            for device_id, obj in (out["device_keys"].get(user) or {}).items():
                why = self.check_device(user, device_id, obj)
                if why:
                    refused[device_id] = why
                else:
                    verified[device_id] = {"curve25519": obj["keys"][f"curve25519:{device_id}"],
                                           "ed25519": obj["keys"][f"ed25519:{device_id}"]}
                old = self.devices.get(user, {}).get(device_id)
                if old and not why and old["ed25519"] != verified[device_id]["ed25519"]:
                    self.problems.append(f"{user}/{device_id} changed its ed25519 key")
                    verified[device_id] = old
            self.devices[user] = verified
            self.rejected[user] = refused
        return {u: self.devices[u] for u in users}

    @staticmethod
    def check_device(user, device_id, obj):
        if obj.get("user_id") != user or obj.get("device_id") != device_id:
            return "user_id/device_id do not match"
        keys = obj.get("keys") or {}
        ed, curve = keys.get(f"ed25519:{device_id}"), keys.get(f"curve25519:{device_id}")
        if not isinstance(ed, str) or not isinstance(curve, str):
            return "missing curve25519 or ed25519 key"
        if OLM not in (obj.get("algorithms") or []):
            return "no Olm algorithm"
        return check_signature(obj, user, f"ed25519:{device_id}", ed)

    def claim_keys(self, targets):
        """/keys/claim a signed_curve25519 key for each (user, device); {target: key} of the
        ones whose signature verifies."""
        query = {}
        for user, device in targets:
            query.setdefault(user, {})[device] = "signed_curve25519"
        out = self.call("POST", "/keys/claim", {"one_time_keys": query})
        keys = {}
        for user, device in targets:
            for key_id, obj in ((out["one_time_keys"].get(user) or {}).get(device) or {}).items():
                why = (check_signature(obj, user, f"ed25519:{device}",
                                       self.devices[user][device]["ed25519"])
                       if isinstance(obj, dict) else "not a signed key")
                if why:
                    self.problems.append(f"one-time key {key_id} of {user}/{device}: {why}")
                else:
                    keys[(user, device)] = obj["key"]
        return keys

    # ---- /sync -----------------------------------------------------------------------------------

    def sync(self, timeout_ms=0, limit=50):
        query = {"timeout": str(timeout_ms),
                 "filter": json.dumps({"room": {"timeline": {"limit": limit}}})}
        if self.since:
            query["since"] = self.since
        out = self.call("GET", "/sync", query=query)
        for event in out.get("to_device", {}).get("events", []):
            self.to_device_raw.append(event)
            self._to_device(event)
        for room_id, room in out["rooms"]["join"].items():
            self.invites.pop(room_id, None)
            for event in room.get("timeline", {}).get("events", []):
                self.timeline[room_id].append(dict(event, room_id=room_id))
        for room_id, room in out["rooms"]["invite"].items():
            self.invites[room_id] = room
        changed = out.get("device_lists", {}).get("changed", [])
        self.device_changes.append(changed)
        for user in changed:          # forget them: the next share queries them again
            self.devices.pop(user, None)
        self.otk_counts = out.get("device_one_time_keys_count", self.otk_counts)
        self.since = out["next_batch"]
        return out

    def sync_until(self, predicate, timeout=20.0, interval=0.1):
        """Syncs until predicate() is true (returns its value) or the time is up (None)."""
        deadline = time.monotonic() + timeout
        while True:
            self.sync()
            value = predicate()
            if value or time.monotonic() > deadline:
                return value or None
            time.sleep(interval)

    # ---- Olm (to-device) ------------------------------------------------------------------------

    def _olm_decrypt(self, sender_key, kind, body):
        sessions = self.sessions.setdefault(sender_key, [])
        if kind == 0:
            message = olm.OlmPreKeyMessage(body)
            for session in sessions:
                if session.matches(message, sender_key):
                    return session.decrypt(message)
            session = olm.InboundSession(self.account, message, sender_key)
            plaintext = session.decrypt(message)
            try:
                self.account.remove_one_time_keys(session)
            except olm.OlmAccountError:
                pass                   # made with our fallback key: it stays
            sessions.insert(0, session)
            return plaintext
        message = olm.OlmMessage(body)
        for session in sessions:
            try:
                return session.decrypt(message)
            except olm.OlmSessionError:
                continue
        raise DecryptError(f"no Olm session with {sender_key} decrypts this normal message")

    def _to_device(self, event):
        """A to-device event.  m.room.encrypted (Olm) is decrypted and its payload checked
        (§"m.olm.v1.curve25519-aes-sha2": sender, recipient, recipient_keys, keys,
        sender_device); m.room_key in it becomes an inbound group session."""
        sender, content = event.get("sender"), event.get("content") or {}
        if event.get("type") != "m.room.encrypted":
            self.to_device.append({"sender": sender, "type": event.get("type"),
                                   "content": content, "encrypted": False})
            return
        where = f"to-device m.room.encrypted from {sender}"
        mine = (content.get("ciphertext") or {}).get(self.curve25519)
        if content.get("algorithm") != OLM or not mine:
            self.problems.append(f"{where}: algorithm {content.get('algorithm')!r} or no "
                                 f"ciphertext for our key")
            return
        sender_key = content.get("sender_key")
        try:
            payload = json.loads(self._olm_decrypt(sender_key, mine.get("type"),
                                                   mine.get("body")))
        except (olm.OlmSessionError, olm.OlmAccountError, DecryptError, ValueError) as err:
            self.problems.append(f"{where}: cannot decrypt: {err}")
            return
        want = {"sender": sender, "recipient": self.user_id,
                "recipient_keys": {"ed25519": self.ed25519}}
        bad = [k for k, v in want.items() if payload.get(k) != v]
        ed = (payload.get("keys") or {}).get("ed25519")
        device = payload.get("sender_device")
        if not isinstance(ed, str) or not isinstance(device, str) or "type" not in payload or \
                not isinstance(payload.get("content"), dict):
            bad.append("keys.ed25519/sender_device/type/content")
        else:
            known = self.devices.get(sender, {}).get(device)
            if known is None:
                self.query_devices([sender])
                known = self.devices.get(sender, {}).get(device)
            if known is None or known["curve25519"] != sender_key or known["ed25519"] != ed:
                bad.append(f"sender device {device} with keys {sender_key}/{ed} is not a "
                           f"verified device of {sender}")
        if bad:
            self.problems.append(f"{where}: payload fields wrong: {bad}: {payload}")
            return
        record = {"sender": sender, "sender_device": device, "sender_key": sender_key,
                  "ed25519": ed, "type": payload["type"], "content": payload["content"],
                  "encrypted": True}
        self.to_device.append(record)
        if payload["type"] == "m.room_key":
            self._room_key(record)

    def _room_key(self, record):
        c = record["content"]
        try:
            if c.get("algorithm") != MEGOLM:
                raise ValueError(f"algorithm {c.get('algorithm')!r}")
            session = olm.InboundGroupSession(c["session_key"])
            if session.id != c["session_id"]:
                raise ValueError("session_id does not match the session key")
            room_id = c["room_id"]
        except (KeyError, ValueError, olm.OlmGroupSessionError) as err:
            self.problems.append(f"m.room_key from {record['sender']}: {err}: {c}")
            return
        old = self.inbound.get((room_id, session.id))
        if old and old["sender_key"] != record["sender_key"]:
            self.problems.append(f"m.room_key {session.id} from a second sender key")
            return
        if old is None or old["session"].first_known_index > session.first_known_index:
            self.inbound[(room_id, session.id)] = dict(record, session=session,
                                                       room_id=room_id)

    def room_keys(self, sender=None):
        """The m.room_key contents received (from sender)."""
        return [m["content"] for m in self.to_device if m["type"] == "m.room_key"
                and (sender is None or m["sender"] == sender)]

    # ---- Megolm (rooms) --------------------------------------------------------------------------

    def decrypt(self, event, room_id=None):
        """A room event (m.room.encrypted, Megolm) -> Decrypted, or DecryptError."""
        room_id = room_id or event.get("room_id")
        content = event.get("content") or {}
        if event.get("type") != "m.room.encrypted" or content.get("algorithm") != MEGOLM:
            raise DecryptError(f"not a Megolm event: {event.get('type')} "
                               f"{content.get('algorithm')}")
        entry = self.inbound.get((room_id, content.get("session_id")))
        if entry is None:
            raise DecryptError(f"unknown session {content.get('session_id')}")
        if entry["sender"] != event.get("sender"):
            raise DecryptError(f"session of {entry['sender']} used by {event.get('sender')}")
        if content.get("sender_key") not in (None, entry["sender_key"]):
            raise DecryptError("sender_key does not match the session's")
        try:
            plaintext, index = entry["session"].decrypt(content["ciphertext"])
        except (olm.OlmGroupSessionError, KeyError) as err:
            raise DecryptError(f"cannot decrypt: {err}") from None
        first = self.seen.setdefault((content["session_id"], index), event.get("event_id"))
        if first != event.get("event_id"):
            raise DecryptError(f"replay of message index {index} (first in {first})")
        payload = json.loads(plaintext)
        if payload.get("room_id") != room_id:
            raise DecryptError(f"payload room_id {payload.get('room_id')} is not {room_id}")
        return Decrypted(payload.get("type"), payload.get("content"), room_id,
                         content["session_id"], index)

    def try_decrypt(self, event, room_id=None):
        try:
            return self.decrypt(event, room_id)
        except DecryptError:
            return None

    def members(self, room_id):
        """Joined and invited members (§"Sending an encrypted message event")."""
        out = self.call("GET", f"/rooms/{q(room_id)}/members")
        return sorted(e["state_key"] for e in out["chunk"]
                      if e["content"].get("membership") in ("join", "invite"))

    def olm_encrypt(self, user, device, kind, content):
        """The to-device m.room.encrypted content for one device (a session must exist)."""
        keys = self.devices[user][device]
        payload = {"type": kind, "content": content, "sender": self.user_id,
                   "sender_device": self.device_id, "keys": {"ed25519": self.ed25519},
                   "recipient": user, "recipient_keys": {"ed25519": keys["ed25519"]}}
        message = self.sessions[keys["curve25519"]][0].encrypt(json.dumps(payload))
        return {"algorithm": OLM, "sender_key": self.curve25519,
                "ciphertext": {keys["curve25519"]: {"type": message.message_type,
                                                    "body": message.ciphertext}}}

    def new_group_session(self, room_id):
        session = olm.OutboundGroupSession()
        self.outbound[room_id] = {"session": session, "shared": set()}
        inbound = olm.InboundGroupSession(session.session_key)   # to read our own messages
        self.inbound[(room_id, session.id)] = {
            "session": inbound, "sender": self.user_id, "sender_key": self.curve25519,
            "ed25519": self.ed25519, "sender_device": self.device_id, "room_id": room_id}
        return self.outbound[room_id]

    def share_room_key(self, room_id, users=None):
        """Sends the room's Megolm key to every verified device of the members that lacks it
        (claiming one-time keys for devices without an Olm session)."""
        out = self.outbound.get(room_id) or self.new_group_session(room_id)
        users = users or self.members(room_id)
        devices = self.query_devices(users)
        targets = [(u, d) for u in users for d in sorted(devices[u])
                   if (u, d) != (self.user_id, self.device_id) and (u, d) not in out["shared"]]
        need = [(u, d) for u, d in targets if not self.sessions.get(devices[u][d]["curve25519"])]
        if need:
            for (u, d), key in self.claim_keys(need).items():
                curve = devices[u][d]["curve25519"]
                self.sessions.setdefault(curve, []).insert(
                    0, olm.OutboundSession(self.account, curve, key))
        session = out["session"]
        key = {"algorithm": MEGOLM, "room_id": room_id, "session_id": session.id,
               "session_key": session.session_key}
        messages = {}
        for u, d in targets:
            if self.sessions.get(devices[u][d]["curve25519"]):
                messages.setdefault(u, {})[d] = self.olm_encrypt(u, d, "m.room_key", key)
                out["shared"].add((u, d))
        if messages:
            self.call("PUT", f"/sendToDevice/m.room.encrypted/{self.next_txn()}",
                      {"messages": messages})
        return messages

    def encrypt(self, room_id, content, kind="m.room.message", users=None):
        """The m.room.encrypted content for an event (sharing the room key first)."""
        self.share_room_key(room_id, users)
        session = self.outbound[room_id]["session"]
        ciphertext = session.encrypt(json.dumps({"type": kind, "content": content,
                                                 "room_id": room_id}))
        return {"algorithm": MEGOLM, "sender_key": self.curve25519, "ciphertext": ciphertext,
                "session_id": session.id, "device_id": self.device_id}

    def rotate(self, room_id):
        self.outbound.pop(room_id, None)

    def send_event(self, room_id, kind, content):
        return self.call("PUT", f"/rooms/{q(room_id)}/send/{q(kind)}/{self.next_txn()}",
                         content)["event_id"]

    def replay(self, room_id, event):
        """Sends an event's content again as a new event (same ciphertext, new event id)."""
        return self.send_event(room_id, event["type"], event["content"])

    def send_encrypted(self, room_id, content, kind="m.room.message"):
        if isinstance(content, str):
            content = {"msgtype": "m.text", "body": content}
        return self.send_event(room_id, "m.room.encrypted", self.encrypt(room_id, content, kind))

    # ---- rooms -----------------------------------------------------------------------------------

    def create_room(self, **body):
        return self.call("POST", "/createRoom", body)["room_id"]

    def join(self, room_id):
        return self.call("POST", f"/join/{q(room_id)}", {})["room_id"]

    def accept_invites(self):
        joined = []
        for room_id in list(self.invites):
            self.join(room_id)
            self.invites.pop(room_id, None)
            joined.append(room_id)
        return joined


def encrypted_room_state():
    """initial_state for /createRoom that turns on Megolm (§"m.room.encryption")."""
    return [{"type": "m.room.encryption", "state_key": "",
             "content": {"algorithm": MEGOLM}}]


def q(value):
    return urllib.parse.quote(value, safe="")
