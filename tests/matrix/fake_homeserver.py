#!/usr/bin/env python3
"""A fake Matrix homeserver for cardroom's adapter tests.

Why it exists: the Matrix adapter must be tested over real HTTP, and no Matrix homeserver can be
installed from Debian.  This is a small, single-process server that speaks the parts of the
Matrix Client-Server API v3 the bot uses, written from the specification (not from any client),
so a client bug cannot hide behind a matching server bug.  Sections are cited above each handler
as "CS API §…"; anchors are on https://spec.matrix.org/v1.11/client-server-api/ .

What it is, in one sitting:
  * One model (`Homeserver`): users, devices and access tokens, rooms as ordered event lists,
    filters, account data and the transaction-id cache.  Every change takes one stream position
    from a single counter; sync tokens are those positions ("s<pos>_<epoch>").
  * One lock and one condition variable guard the model.  A `/sync` long-poll waits on the
    condition and is woken by every change; it then recomputes its answer.  That is O(rooms)
    per wake-up, traded for having no per-user queues to keep consistent.
  * Room state is never stored separately: it is folded from the event list (with a per-key
    history so "state at position p" is a bisect).  The event list is the one truth, which is
    also what makes `--state FILE` persistence simple.
  * End-to-end encryption is only key and message storage: device keys, one-time and fallback
    keys, cross-signing keys and signatures, and to-device queues hang off the same model and
    take stream positions like everything else.  Signatures are stored, never verified: the
    client-side tests check them with libolm.
  * A test control API under /_fake/ (users, acting as a user, fault injection, event dumps,
    devices and to-device queues, rate limits, reset, health).  It is not Matrix and never sees
    injected faults.  One of its calls is how tests wait without polling: /_fake/activity
    blocks until a Matrix request arrives, is held or is answered, and lists those steps.
  * Synapse's message rate limit (rc_message: a token bucket per user, 0.2 events per second
    with bursts of 10 on a stock server) can be switched on, from the command line or the
    control API, with Synapse's own arithmetic and answers (429 M_LIMIT_EXCEEDED with
    retry_after_ms).

Command line:
    python3 fake_homeserver.py --port 0 --server-name example.org [--state FILE] [--verbose]
        [--rate-limit [PER_SECOND,BURST]]
prints exactly one line "LISTENING <port>" on stdout once it accepts connections.

Only the Python 3.11 standard library is used.
"""

import argparse
import base64
import bisect
import collections
import json
import math
import os
import re
import secrets
import signal
import socket
import string
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

SPEC_VERSIONS = ["v1.1", "v1.2", "v1.3", "v1.4", "v1.5", "v1.6", "v1.7", "v1.8", "v1.9",
                 "v1.10", "v1.11"]
DEFAULT_ROOM_VERSION = "10"
KNOWN_ROOM_VERSIONS = {str(v) for v in range(1, 12)}
MAX_EVENT_BYTES = 65536            # CS API §"Size limits"
DEFAULT_TIMELINE_LIMIT = 10        # what Synapse uses when the filter gives none
FAKE_AS_DEVICE = "FAKEASDEVICE"    # device of requests made through /_fake/as/{userId}/...
INFINITY = float("inf")
USER_ID_RE = re.compile(r"^@[^:]+:.+$")
ROOM_ID_RE = re.compile(r"^![^:]+:.+$")
ALIAS_RE = re.compile(r"^#[^:]+:.+$")
TOKEN_RE = re.compile(r"^s(\d+)_([A-Za-z0-9]+)$")
STRIPPED_STATE_TYPES = ["m.room.create", "m.room.name", "m.room.avatar", "m.room.topic",
                        "m.room.join_rules", "m.room.canonical_alias", "m.room.encryption"]
SERVER_CONTROLLED_ACCOUNT_DATA = {"m.fully_read", "m.push_rules"}
TO_DEVICE_LIMIT = 100              # per /sync, as §"Send-to-Device messaging" recommends
CROSS_SIGNING_TYPES = ("master", "self_signing", "user_signing")
UIA_FLOWS = [{"stages": ["m.login.password"]}]


class MatrixError(Exception):
    """A standard error response (CS API §"Standard error response")."""

    def __init__(self, status, errcode, error, headers=None, **extra):
        super().__init__(error)
        self.status = status
        self.errcode = errcode
        self.error = error
        self.headers = headers or {}
        self.extra = extra

    def body(self):
        out = {"errcode": self.errcode, "error": self.error}
        out.update(self.extra)
        return out


def forbidden(message):
    return MatrixError(403, "M_FORBIDDEN", message)


def now_ms():
    return int(time.time() * 1000)


def random_letters(n):
    return "".join(secrets.choice(string.ascii_letters) for _ in range(n))


def new_event_id():
    # Room versions 4 and later: "$" + URL-safe unpadded base64 of a hash.  Random is as opaque.
    return "$" + base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def glob_match(pattern, value):
    """Filter type patterns: '*' matches any sequence of characters (CS API §"Filtering")."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, value, re.S) is not None


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------------------------
# Filters: CS API §"Filtering", definitions EventFilter / RoomEventFilter / Filter.
# --------------------------------------------------------------------------------------------

def _check_string_list(value, where):
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MatrixError(400, "M_BAD_JSON", f"{where} must be a list of strings")


def validate_event_filter(value, where):
    if value is None:
        return
    if not isinstance(value, dict):
        raise MatrixError(400, "M_BAD_JSON", f"{where} must be an object")
    limit = value.get("limit")
    if limit is not None and (not is_int(limit) or limit < 0):
        raise MatrixError(400, "M_BAD_JSON", f"{where}.limit must be a non-negative integer")
    for key in ("types", "not_types", "senders", "not_senders", "rooms", "not_rooms"):
        _check_string_list(value.get(key), f"{where}.{key}")


def validate_filter(value):
    if not isinstance(value, dict):
        raise MatrixError(400, "M_BAD_JSON", "The filter must be a JSON object")
    for key in ("presence", "account_data"):
        validate_event_filter(value.get(key), key)
    room = value.get("room")
    if room is None:
        return
    if not isinstance(room, dict):
        raise MatrixError(400, "M_BAD_JSON", "room must be an object")
    for key in ("timeline", "state", "ephemeral", "account_data"):
        validate_event_filter(room.get(key), "room." + key)
    for key in ("rooms", "not_rooms"):
        _check_string_list(room.get(key), "room." + key)


class EventFilter:
    """One EventFilter/RoomEventFilter.  lazy_load_members and contains_url are ignored."""

    def __init__(self, definition, default_limit=None):
        definition = definition or {}
        self.limit = definition.get("limit", default_limit)
        self.types = definition.get("types")
        self.not_types = definition.get("not_types") or []
        self.senders = definition.get("senders")
        self.not_senders = definition.get("not_senders") or []
        self.rooms = definition.get("rooms")
        self.not_rooms = definition.get("not_rooms") or []

    def matches(self, event, room_id=None):
        kind = event.get("type", "")
        if any(glob_match(p, kind) for p in self.not_types):
            return False
        if self.types is not None and not any(glob_match(p, kind) for p in self.types):
            return False
        sender = event.get("sender")
        if sender is not None:
            if sender in self.not_senders:
                return False
            if self.senders is not None and sender not in self.senders:
                return False
        if room_id is not None:
            if room_id in self.not_rooms:
                return False
            if self.rooms is not None and room_id not in self.rooms:
                return False
        return True


class SyncFilter:
    """The top-level Filter as used by /sync."""

    def __init__(self, definition):
        definition = definition or {}
        room = definition.get("room") or {}
        self.rooms = room.get("rooms")
        self.not_rooms = room.get("not_rooms") or []
        self.include_leave = bool(room.get("include_leave", False))
        self.timeline = EventFilter(room.get("timeline"), DEFAULT_TIMELINE_LIMIT)
        self.state = EventFilter(room.get("state"))
        self.room_account_data = EventFilter(room.get("account_data"))
        self.account_data = EventFilter(definition.get("account_data"))

    def room_allowed(self, room_id):
        if room_id in self.not_rooms:
            return False
        return self.rooms is None or room_id in self.rooms


# --------------------------------------------------------------------------------------------
# Rooms: an ordered event list plus indexes rebuilt from it.
# --------------------------------------------------------------------------------------------

class Room:
    """A room is its events in stream order; state is folded from them on demand."""

    def __init__(self, room_id):
        self.room_id = room_id
        self.events = []          # internal event dicts, ascending "pos"
        self.positions = []       # parallel list of "pos", for bisect
        self.by_id = {}           # event_id -> event
        self.key_hist = {}        # (type, state_key) -> ([pos...], [event...])
        self.member_positions = []  # "pos" of every m.room.member event, for device lists

    @classmethod
    def from_events(cls, room_id, events):
        room = cls(room_id)
        for event in events:
            room.add(event)
        return room

    def add(self, event):
        self.events.append(event)
        self.positions.append(event["pos"])
        self.by_id[event["event_id"]] = event
        if "state_key" in event:
            pos_list, ev_list = self.key_hist.setdefault((event["type"], event["state_key"]),
                                                         ([], []))
            pos_list.append(event["pos"])
            ev_list.append(event)
            if event["type"] == "m.room.member":
                self.member_positions.append(event["pos"])

    def state_event(self, kind, state_key, at=INFINITY):
        """The state event for (kind, state_key) in force at stream position `at`."""
        hist = self.key_hist.get((kind, state_key))
        if not hist:
            return None
        i = bisect.bisect_right(hist[0], at)
        return hist[1][i - 1] if i else None

    def state_at(self, at=INFINITY):
        state = {}
        for key, (pos_list, ev_list) in self.key_hist.items():
            i = bisect.bisect_right(pos_list, at)
            if i:
                state[key] = ev_list[i - 1]
        return state

    def content(self, kind, state_key="", at=INFINITY):
        event = self.state_event(kind, state_key, at)
        return event["content"] if event else None

    def membership(self, user_id, at=INFINITY):
        event = self.state_event("m.room.member", user_id, at)
        return event["content"].get("membership") if event else None

    def member_events(self, user_id):
        hist = self.key_hist.get(("m.room.member", user_id))
        return hist[1] if hist else []

    def events_between(self, low, high):
        """Events with low < pos <= high, in stream order."""
        i = bisect.bisect_right(self.positions, low)
        j = bisect.bisect_right(self.positions, high)
        return self.events[i:j]

    def members_changed(self, low, high):
        """Whether any member event has low < pos <= high."""
        i = bisect.bisect_right(self.member_positions, low)
        return i < len(self.member_positions) and self.member_positions[i] <= high

    def creator(self):
        create = self.state_event("m.room.create", "")
        return create["sender"] if create else None

    def join_rule(self):
        content = self.content("m.room.join_rules") or {}
        return content.get("join_rule", "invite")


# --------------------------------------------------------------------------------------------
# Power levels: CS API §"m.room.power_levels" and the room version 10 authorization rules.
# --------------------------------------------------------------------------------------------

def power_levels(room, at=INFINITY):
    """Effective power-level content, with the spec's defaults filled in."""
    content = room.content("m.room.power_levels", "", at)
    if content is None:
        # No power_levels event: the creator has 100, everyone else 0, state needs 0.
        creator = room.creator()
        return {"users": {creator: 100} if creator else {}, "users_default": 0,
                "events": {}, "events_default": 0, "state_default": 0, "ban": 50,
                "kick": 50, "redact": 50, "invite": 0}
    levels = {"users": {}, "users_default": 0, "events": {}, "events_default": 0,
              "state_default": 50, "ban": 50, "kick": 50, "redact": 50, "invite": 0}
    levels.update(content)
    return levels


def user_level(room, user_id, at=INFINITY):
    levels = power_levels(room, at)
    return levels.get("users", {}).get(user_id, levels.get("users_default", 0))


def required_level(room, kind, is_state):
    levels = power_levels(room)
    default = levels["state_default"] if is_state else levels["events_default"]
    return levels.get("events", {}).get(kind, default)


def validate_power_levels(content):
    """Room version 10 requires integer levels (the spec's m.room.power_levels schema)."""
    for key in ("users_default", "events_default", "state_default", "ban", "redact", "kick",
                "invite"):
        if key in content and not is_int(content[key]):
            raise MatrixError(400, "M_BAD_JSON", f"{key} must be an integer")
    for key in ("users", "events", "notifications"):
        if key in content and (not isinstance(content[key], dict)
                               or not all(is_int(v) for v in content[key].values())):
            raise MatrixError(400, "M_BAD_JSON", f"{key} must map to integers")


def check_power_levels_change(room, sender, new):
    """Room version 10 auth rule for m.room.power_levels (step 10 of the authorization rules)."""
    validate_power_levels(new)
    old = room.content("m.room.power_levels") or {}
    mine = user_level(room, sender)
    for key in ("users_default", "events_default", "state_default", "ban", "redact", "kick",
                "invite"):
        if old.get(key) != new.get(key):
            for value in (old.get(key), new.get(key)):
                if value is not None and value > mine:
                    raise forbidden(f"You cannot change {key} above your own level")
    for key in ("events", "notifications"):
        before, after = old.get(key, {}), new.get(key, {})
        for name in set(before) | set(after):
            if before.get(name) != after.get(name):
                for value in (before.get(name), after.get(name)):
                    if value is not None and value > mine:
                        raise forbidden(f"You cannot change {key}.{name} above your own level")
    before, after = old.get("users", {}), new.get("users", {})
    for user in set(before) | set(after):
        if before.get(user) == after.get(user):
            continue
        for value in (before.get(user), after.get(user)):
            if value is not None and value > mine:
                raise forbidden("You cannot give a power level above your own")
        if user != sender and before.get(user) is not None and before[user] >= mine:
            raise forbidden("You cannot change the level of a user at or above your own")


# --------------------------------------------------------------------------------------------
# Event formats: CS API §"Room event format" (ClientEvent) and §"Stripped state".
# --------------------------------------------------------------------------------------------

def client_event(event, viewer=None, with_room_id=True, now=None):
    """An internal event as a ClientEvent for `viewer` = (user_id, device_id)."""
    out = {"type": event["type"], "content": event["content"], "sender": event["sender"],
           "origin_server_ts": event["origin_server_ts"], "event_id": event["event_id"]}
    if with_room_id:
        out["room_id"] = event["room_id"]
    if "state_key" in event:
        out["state_key"] = event["state_key"]
    unsigned = {"age": max(0, (now or now_ms()) - event["origin_server_ts"])}
    if "prev_content" in event:
        unsigned["prev_content"] = event["prev_content"]
        unsigned["replaces_state"] = event["replaces_state"]
    txn = event.get("txn")
    # transaction_id: "if the client being given the event is the same one which sent it";
    # since v1.7 transaction ids are scoped to a device (CS API §"Transaction identifiers").
    if txn and viewer == (event["sender"], txn["device_id"]):
        unsigned["transaction_id"] = txn["txn_id"]
    out["unsigned"] = unsigned
    return out


def pdu_size(event, server_name):
    """Approximate size of the event in the federation format as Canonical JSON, which is
    what the 65536-byte limit applies to (CS API §"Size limits"): the client fields plus the
    fields a room version 10 PDU adds (auth and prev events, depth, hashes, signatures)."""
    pdu = {k: event[k] for k in ("type", "sender", "origin_server_ts", "content", "room_id")}
    if "state_key" in event:
        pdu["state_key"] = event["state_key"]
    pdu.update({"auth_events": ["$" + "A" * 43] * 4, "prev_events": ["$" + "A" * 43],
                "depth": 10 ** 9, "origin": server_name, "hashes": {"sha256": "A" * 43},
                "signatures": {server_name: {"ed25519:a_AAAA": "A" * 86}},
                "unsigned": {"age_ts": event["origin_server_ts"]}})
    return len(json.dumps(pdu, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode("utf-8"))


def stripped_event(event):
    return {"type": event["type"], "state_key": event["state_key"],
            "content": event["content"], "sender": event["sender"]}


# --------------------------------------------------------------------------------------------
# End-to-end encryption data: CS API §"End-to-End Encryption" (key algorithms, DeviceKeys,
# CrossSigningKey).  Shapes are checked; signatures are not verified.
# --------------------------------------------------------------------------------------------

def check_user_id(user_id):
    if not isinstance(user_id, str) or not USER_ID_RE.match(user_id):
        raise MatrixError(400, "M_INVALID_PARAM", f"Invalid user ID {user_id!r}")


def validate_device_keys(value, user_id, device_id):
    """DeviceKeys: user_id, device_id, algorithms, keys and signatures are required, and the
    keys must be those of the device that made the request (§"POST /keys/upload": "Must match
    the device ID used when logging in")."""
    if not isinstance(value, dict):
        raise MatrixError(400, "M_BAD_JSON", "device_keys must be an object")
    for field, kind in (("user_id", str), ("device_id", str), ("algorithms", list),
                        ("keys", dict), ("signatures", dict)):
        if not isinstance(value.get(field), kind):
            raise MatrixError(400, "M_BAD_JSON", f"device_keys.{field} is missing or has the "
                                                 "wrong type")
    if not all(isinstance(a, str) for a in value["algorithms"]) or not all(
            isinstance(k, str) for k in value["keys"].values()):
        raise MatrixError(400, "M_BAD_JSON", "device_keys.algorithms and keys hold strings")
    if value["user_id"] != user_id or value["device_id"] != device_id:
        raise MatrixError(400, "M_INVALID_PARAM", "device_keys must be for the user and device "
                                                  "of the access token")


def parse_key_map(value, where):
    """one_time_keys / fallback_keys: {"<algorithm>:<key_id>": key string or KeyObject}.
    Returns [(key_id, algorithm, key)] in the order given."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise MatrixError(400, "M_BAD_JSON", f"{where} must be an object")
    out = []
    for key_id, key in value.items():
        algorithm, colon, name = key_id.partition(":")
        if not (algorithm and colon and name):
            raise MatrixError(400, "M_INVALID_PARAM", f"{where}: {key_id!r} is not "
                                                      "<algorithm>:<key_id>")
        if not (isinstance(key, str) or (isinstance(key, dict)
                                         and isinstance(key.get("key"), str))):
            raise MatrixError(400, "M_BAD_JSON", f"{where}.{key_id} must be a key string or a "
                                                 "KeyObject")
        out.append((key_id, algorithm, key))
    return out


def without(obj, *fields):
    return {k: v for k, v in obj.items() if k not in fields}


def one_time_keys_match(old, new):
    """The same one-time key again, ignoring signatures (Synapse's _one_time_keys_match: a
    retried upload may carry different signatures)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return old == new
    return without(old, "signatures") == without(new, "signatures")


def one_time_key_counts(record):
    """Unclaimed one-time keys per algorithm.  signed_curve25519 is always present (0 when
    none are left), as Synapse does, though the spec lets a missing algorithm mean zero."""
    counts = {"signed_curve25519": 0}
    for key_id in (record or {}).get("one_time_keys", {}):
        algorithm = key_id.split(":", 1)[0]
        counts[algorithm] = counts.get(algorithm, 0) + 1
    return counts


def unused_fallback_key_types(record):
    return sorted(algorithm for algorithm, entry in (record or {}).get("fallback_keys",
                                                                        {}).items()
                  if not entry["used"])


def public_key_of(cross_signing_key):
    """The unpadded-base64 public key of a CrossSigningKey: the part after "ed25519:" of its
    only key ID, which is also how /keys/signatures/upload names it."""
    return next(iter(cross_signing_key["keys"])).split(":", 1)[-1]


def check_cross_signing_key(key, user_id, kind):
    """CrossSigningKey: user_id of the uploader, `usage` containing the kind, exactly one key.
    Errors as Synapse's _check_cross_signing_key: 400 M_INVALID_PARAM "Invalid <kind> key"."""
    if (not isinstance(key, dict) or key.get("user_id") != user_id
            or not isinstance(key.get("usage"), list) or kind not in key["usage"]
            or not isinstance(key.get("keys"), dict) or len(key["keys"]) != 1
            or not all(isinstance(v, str) for v in key["keys"].values())
            or not isinstance(key.get("signatures", {}), dict)):
        raise MatrixError(400, "M_INVALID_PARAM", f"Invalid {kind} key")


def require_same_key(signed, stored):
    """§"POST /keys/signatures/upload": "The signed JSON object must match the key previously
    uploaded ... with the exception of the signatures property" (unsigned is ignored too)."""
    if without(signed, "signatures", "unsigned") != without(stored, "signatures", "unsigned"):
        raise MatrixError(400, "M_UNKNOWN", "Key does not match")   # Synapse's answer


def unreachable():
    """A `failures` entry for another server: the fake does not federate."""
    return {"status": 503, "message": "The fake homeserver does not federate"}


# --------------------------------------------------------------------------------------------
# The model.  Every public method expects the caller to hold `self.lock`.
# --------------------------------------------------------------------------------------------

class Homeserver:
    """All server state and every operation on it."""

    def __init__(self, server_name, state_file=None, rate_limit=None):
        self.server_name = server_name
        self.rate_limit_start = rate_limit
        self.state_file = state_file
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.faults = []
        self.holds = set()           # names of "hold" faults not yet released
        self.held = collections.Counter()  # name -> requests waiting on it now
        self.rate_limit = rate_limit  # {"per_second", "burst_count"} or None: no limit
        self.rate_actions = {}       # user_id -> [action_count, time_start] (Synapse's bucket)
        self.request_log = collections.deque(maxlen=10000)
        # Steps of Matrix requests as they happen (arrived, held, answered), for tests to wait
        # on: numbered from 1 in this process, which `boot` names (a restart starts over).
        self.activity = collections.deque(maxlen=10000)
        self.activity_seq = 0
        self.boot = random_letters(8)
        self._fresh()
        if state_file and os.path.exists(state_file):
            self._load()

    # ---- lifecycle and persistence ----------------------------------------------------------

    def _fresh(self):
        self.epoch = random_letters(8)
        self.pos = 0
        self.users = {}              # user_id -> {password, displayname, avatar_url}
        self.tokens = {}             # access_token -> {user_id, device_id}
        self.devices = {}            # user_id -> {device_id: {display_name}}
        self.rooms = {}              # room_id -> Room
        self.aliases = {}            # #alias -> room_id
        self.filters = {}            # user_id -> [filter, ...]; the id is the index
        self.account_data = {}       # user_id -> {type: {content, pos}}
        self.room_account_data = {}  # user_id -> {room_id: {type: {content, pos}}}
        self.txns = {}               # "user|device|path" -> response body
        self.user_rooms = {}         # user_id -> set of room_ids with a member event for them
        # End-to-end encryption.  Per-device data lives in the device record (self.devices):
        # "device_keys", "one_time_keys" {"alg:id": key} in upload order, "fallback_keys"
        # {alg: {key_id, key, used}}, "otk_pos" (last claim) and "inbox" (to-device messages
        # [{pos, sender, type, content, sent_in}]), so logging a device out drops all of it.
        self.cross_signing = {}      # user_id -> {"master"|"self_signing"|"user_signing": key}
        self.key_signatures = {}     # target user -> target key id -> signer -> {key id: sig}
        self.key_changes = []        # [[pos, subject user_id, audience user_id or None]]
        self.key_change_positions = []  # parallel list of pos, for bisect
        self.uia_sessions = {}       # session id -> {user_id}

    def reset(self):
        self._fresh()
        self.faults = []
        self.release_holds()
        self.rate_limit = self.rate_limit_start
        self.rate_actions = {}
        self.request_log.clear()
        self._changed()

    def _snapshot(self):
        return {"format": 1, "server_name": self.server_name, "epoch": self.epoch,
                "pos": self.pos, "users": self.users, "tokens": self.tokens,
                "devices": self.devices,
                "rooms": {rid: room.events for rid, room in self.rooms.items()},
                "aliases": self.aliases, "filters": self.filters,
                "account_data": self.account_data,
                "room_account_data": self.room_account_data, "txns": self.txns,
                "cross_signing": self.cross_signing, "key_signatures": self.key_signatures,
                "key_changes": self.key_changes, "uia_sessions": self.uia_sessions}

    def _save(self):
        """Atomic write: a kill at any instant leaves the old file or the new one.  No fsync:
        a killed process loses nothing already written, only a power cut would.  json.dumps,
        not json.dump: the latter streams through the pure-Python encoder, ~10x slower."""
        if not self.state_file:
            return
        tmp = self.state_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(self._snapshot(), separators=(",", ":")))
        os.replace(tmp, self.state_file)

    def _load(self):
        try:
            with open(self.state_file, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            raise SystemExit(f"{self.state_file}: cannot load state: {exc}") from None
        if data.get("format") != 1 or data.get("server_name") != self.server_name:
            raise SystemExit(f"{self.state_file}: not a state file for {self.server_name}")
        self.epoch, self.pos = data["epoch"], data["pos"]
        self.users, self.tokens, self.devices = data["users"], data["tokens"], data["devices"]
        self.aliases, self.filters = data["aliases"], data["filters"]
        self.account_data = data["account_data"]
        self.room_account_data = data["room_account_data"]
        self.txns = data["txns"]
        self.cross_signing = data.get("cross_signing", {})
        self.key_signatures = data.get("key_signatures", {})
        self.key_changes = data.get("key_changes", [])
        self.key_change_positions = [entry[0] for entry in self.key_changes]
        self.uia_sessions = data.get("uia_sessions", {})
        for room_id, events in data["rooms"].items():
            room = Room.from_events(room_id, events)
            self.rooms[room_id] = room
            for (kind, key) in room.key_hist:
                if kind == "m.room.member":
                    self.user_rooms.setdefault(key, set()).add(room_id)

    def _changed(self):
        self._save()
        self.cond.notify_all()

    def _next_pos(self):
        self.pos += 1
        return self.pos

    # ---- tokens ------------------------------------------------------------------------------

    def stream_token(self, pos):
        return f"s{pos}_{self.epoch}"

    def parse_token(self, token):
        """A since/from/to token.  Synapse answers an unparseable one with 400 M_UNKNOWN
        "Invalid stream token" (synapse/types StreamToken.from_string); a token from another
        epoch (before /_fake/reset) or from the future is treated the same way."""
        match = TOKEN_RE.match(token or "")
        if not match or match.group(2) != self.epoch or int(match.group(1)) > self.pos:
            raise MatrixError(400, "M_UNKNOWN", "Invalid stream token")
        return int(match.group(1))

    # ---- users, devices, access tokens --------------------------------------------------------

    def qualify(self, user):
        if user.startswith("@"):
            if not USER_ID_RE.match(user):
                raise MatrixError(400, "M_INVALID_PARAM", f"Invalid user ID {user!r}")
            return user
        return f"@{user}:{self.server_name}"

    def add_user(self, user, password, displayname=None, avatar_url=None):
        user_id = self.qualify(user)
        self.users[user_id] = {"password": password, "displayname": displayname,
                               "avatar_url": avatar_url}
        self._changed()
        return user_id

    def authenticate(self, token):
        """CS API §"Using access tokens": 401 M_MISSING_TOKEN / M_UNKNOWN_TOKEN."""
        if not token:
            raise MatrixError(401, "M_MISSING_TOKEN", "Missing access token")
        info = self.tokens.get(token)
        if info is None:
            raise MatrixError(401, "M_UNKNOWN_TOKEN", "Unrecognised access token",
                              soft_logout=False)
        return info["user_id"], info["device_id"]

    def login(self, body):
        if body.get("type") != "m.login.password":
            raise MatrixError(400, "M_UNKNOWN", "Unknown login type")
        user = self._login_user(body)
        password = body.get("password")
        if not isinstance(password, str):
            raise MatrixError(400, "M_MISSING_PARAM", "Missing password")
        user_id = self.qualify(user)
        record = self.users.get(user_id)
        if record is None or not secrets.compare_digest(record["password"], password):
            raise forbidden("Invalid username or password")
        device_id = body.get("device_id")
        if not isinstance(device_id, str) or not device_id:
            device_id = random_letters(10).upper()
        devices = self.devices.setdefault(user_id, {})
        if device_id in devices:
            # §"Relationship between access tokens and devices": when the client sets the
            # device_id, the server invalidates tokens previously assigned to that device.
            self._revoke_tokens(user_id, device_id)
        else:
            devices[device_id] = {"display_name": body.get("initial_device_display_name")}
        token = "fhs_" + secrets.token_urlsafe(24)
        self.tokens[token] = {"user_id": user_id, "device_id": device_id}
        self._changed()
        return {"user_id": user_id, "access_token": token, "device_id": device_id,
                "home_server": self.server_name}

    @staticmethod
    def _login_user(body):
        identifier = body.get("identifier")
        if identifier is None:
            if "medium" in body or "address" in body:
                raise forbidden("Unknown third-party identifier")
            user = body.get("user")                       # deprecated top-level field
        elif not isinstance(identifier, dict):
            raise MatrixError(400, "M_BAD_JSON", "identifier must be an object")
        elif identifier.get("type") == "m.id.user":
            user = identifier.get("user")
        elif identifier.get("type") in ("m.id.thirdparty", "m.id.phone"):
            raise forbidden("Unknown third-party identifier")  # §"Login": 403 for unknown 3PID
        else:
            raise MatrixError(400, "M_UNKNOWN", "Unknown identifier type")
        if not isinstance(user, str) or not user:
            raise MatrixError(400, "M_MISSING_PARAM", "Missing user")
        return user

    def _revoke_tokens(self, user_id, device_id=None):
        for token, info in list(self.tokens.items()):
            if info["user_id"] == user_id and device_id in (None, info["device_id"]):
                del self.tokens[token]

    def logout(self, user_id, device_id, everywhere=False):
        """§"POST /logout": the token is invalidated and its device deleted."""
        # Deleting a device that had identity keys is a device-list change (§"GET
        # /keys/changes": "removed an existing device with identity keys").
        if everywhere:
            self._revoke_tokens(user_id)
            removed = self.devices.pop(user_id, {})
            self.txns = {k: v for k, v in self.txns.items() if not k.startswith(user_id + "|")}
        else:
            self._revoke_tokens(user_id, device_id)
            gone = self.devices.get(user_id, {}).pop(device_id, None)
            removed = {device_id: gone} if gone else {}
            prefix = f"{user_id}|{device_id}|"
            self.txns = {k: v for k, v in self.txns.items() if not k.startswith(prefix)}
        for gone_id, record in removed.items():
            self.key_signatures.get(user_id, {}).pop(gone_id, None)
            if "device_keys" in record:
                self._key_change(user_id)
        self._changed()

    # ---- filters -------------------------------------------------------------------------------

    def create_filter(self, user_id, target, definition):
        if target != user_id:
            raise forbidden("Cannot create filters for other users")
        validate_filter(definition)
        filters = self.filters.setdefault(user_id, [])
        filters.append(definition)
        self._changed()
        return str(len(filters) - 1)

    def get_filter(self, user_id, target, filter_id):
        if target != user_id:
            raise forbidden("Cannot get filters for other users")
        filters = self.filters.get(user_id, [])
        if not filter_id.isdigit() or int(filter_id) >= len(filters):
            raise MatrixError(404, "M_NOT_FOUND", "No such filter")
        return filters[int(filter_id)]

    def sync_filter(self, user_id, param):
        """The `filter` parameter of /sync: inline JSON if it starts with '{', else an id.
        Errors as Synapse: bad inline JSON 400 M_NOT_JSON, unknown id 400 M_INVALID_PARAM."""
        if param is None:
            return SyncFilter({})
        if param.startswith("{"):
            try:
                definition = json.loads(param)
            except ValueError:
                raise MatrixError(400, "M_NOT_JSON", "Invalid filter JSON") from None
            validate_filter(definition)
            return SyncFilter(definition)
        filters = self.filters.get(user_id, [])
        if not param.isdigit() or int(param) >= len(filters):
            raise MatrixError(400, "M_INVALID_PARAM", "No such filter")
        return SyncFilter(filters[int(param)])

    # ---- events --------------------------------------------------------------------------------

    def _emit(self, room, sender, kind, content, state_key=None, txn=None):
        """Append one event to a room: the only place events are made."""
        event = {"event_id": new_event_id(), "room_id": room.room_id, "type": kind,
                 "sender": sender, "origin_server_ts": now_ms(), "content": content}
        if state_key is not None:
            event["state_key"] = state_key
            previous = room.state_event(kind, state_key)
            if previous is not None:
                event["prev_content"] = previous["content"]
                event["replaces_state"] = previous["event_id"]
        if txn is not None:
            event["txn"] = txn
        if pdu_size(event, self.server_name) > MAX_EVENT_BYTES:
            raise MatrixError(413, "M_TOO_LARGE", "Event is larger than 65536 bytes")
        event["pos"] = self._next_pos()
        room.add(event)
        if kind == "m.room.member":
            self.user_rooms.setdefault(state_key, set()).add(room.room_id)
        return event

    def room_for(self, room_id):
        """A room the user may address; unknown rooms look like rooms one is not in (403)."""
        room = self.rooms.get(room_id)
        if room is None:
            raise forbidden(f"You are not a member of room {room_id}")
        return room

    def readable_upto(self, room, user_id):
        """Highest position the user may read: now if joined, their leave if they left."""
        membership = room.membership(user_id)
        if membership == "join":
            return self.pos
        if membership in ("leave", "ban") and any(
                e["content"].get("membership") == "join" for e in room.member_events(user_id)):
            return room.state_event("m.room.member", user_id)["pos"]
        raise forbidden("You aren't a member of the room and weren't previously a member of "
                        "the room.")

    def visible(self, room, user_id, event):
        """CS API §"Room History Visibility" (module): the algorithm for one event."""
        if event["type"] == "m.room.member" and event.get("state_key") == user_id:
            return True
        history = room.content("m.room.history_visibility", "", event["pos"] - 1) or {}
        visibility = history.get("history_visibility", "shared")
        if visibility == "world_readable":
            return True
        membership = room.membership(user_id, event["pos"])
        if membership == "join":
            return True
        if visibility == "shared":
            return any(e["pos"] >= event["pos"] and e["content"].get("membership") == "join"
                       for e in room.member_events(user_id))
        return visibility == "invited" and membership == "invite"

    # ---- profile -------------------------------------------------------------------------------

    def profile(self, user_id):
        record = self.users.get(user_id)
        if record is None:
            raise MatrixError(404, "M_NOT_FOUND", "Profile not found")
        out = {}
        for key in ("displayname", "avatar_url"):
            if record.get(key) is not None:
                out[key] = record[key]
        return out

    def set_profile(self, user_id, target, key, value):
        """§"PUT /profile/{userId}/{keyName}"; §"Events on Change of Profile Information":
        a fresh join event in every joined room carries the new value."""
        if target != user_id:
            raise forbidden("Cannot set another user's profile")
        if key not in ("displayname", "avatar_url"):
            raise MatrixError(400, "M_INVALID_PARAM", "Invalid profile key.")
        if value is not None and not isinstance(value, str):
            raise MatrixError(400, "M_BAD_JSON", f"{key} must be a string")
        self.users[user_id][key] = value
        for room_id in sorted(self.user_rooms.get(user_id, ())):
            room = self.rooms[room_id]
            if room.membership(user_id) == "join":
                content = dict(room.content("m.room.member", user_id))
                content[key] = value
                self._emit(room, user_id, "m.room.member", content, user_id)
        self._changed()

    def _member_profile(self, user_id):
        record = self.users.get(user_id) or {}
        return {k: record[k] for k in ("displayname", "avatar_url") if record.get(k)}

    # ---- membership ----------------------------------------------------------------------------

    def change_membership(self, room, sender, target, new, extra=None):
        """Every membership transition, with the checks of CS API §"Room membership" and the
        room version 10 authorization rules for m.room.member.  Returns the event or None for
        a no-op (the spec makes inviting an invited user, and joining twice, succeed)."""
        if not USER_ID_RE.match(target or ""):
            raise MatrixError(400, "M_INVALID_PARAM", f"Invalid user ID {target!r}")
        old = room.membership(target)
        mine = room.membership(sender)
        level = user_level(room, sender)
        levels = power_levels(room)
        if new == "join":
            if sender != target:
                raise forbidden("Cannot force another user to join")
            if old == "ban":
                raise forbidden("You are banned from this room.")
            if old == "join" and not extra:
                return None
            if old not in ("join", "invite") and room.join_rule() != "public":
                raise forbidden("You are not invited to this room.")
        elif new == "invite":
            if mine != "join":
                raise forbidden(f"You are not in room {room.room_id}")
            if old == "ban":
                raise forbidden(f"{target} is banned from the room")
            if old == "join":
                raise forbidden(f"{target} is already in the room")
            if old == "invite":
                return None
            if level < levels.get("invite", 0):
                raise forbidden("You do not have a high enough power level to invite")
        elif new == "leave" and sender == target:
            if old is None:
                raise forbidden(f"You are not a member of room {room.room_id}")
            if old == "ban":
                raise forbidden("You are banned from this room.")
            if old == "leave":
                return None
        elif new == "leave":
            if mine != "join":
                raise forbidden(f"You are not in room {room.room_id}")
            if old == "ban":
                if level < levels.get("ban", 50):
                    raise forbidden("You do not have a high enough power level to unban")
            elif old in ("join", "invite", "knock"):
                if level < levels.get("kick", 50) or level <= user_level(room, target):
                    raise forbidden("You do not have a high enough power level to kick "
                                    "this user")
            else:
                raise forbidden(f"{target} is not in the room")
        elif new == "ban":
            if mine != "join":
                raise forbidden(f"You are not in room {room.room_id}")
            if level < levels.get("ban", 50) or (target != sender
                                                 and level <= user_level(room, target)):
                raise forbidden("You do not have a high enough power level to ban this user")
            if old == "ban":
                return None
        else:
            raise MatrixError(400, "M_BAD_JSON", f"Unsupported membership {new!r}")
        content = self._member_profile(target) if new in ("join", "invite") else {}
        content.update(extra or {})
        content["membership"] = new
        event = self._emit(room, sender, "m.room.member", content, target)
        self._changed()
        return event

    def resolve_room(self, room_id_or_alias):
        if ALIAS_RE.match(room_id_or_alias):
            room_id = self.aliases.get(room_id_or_alias)
            if room_id is None:
                raise MatrixError(404, "M_NOT_FOUND", "Room alias not found")
            return self.rooms[room_id]
        room = self.rooms.get(room_id_or_alias)
        if room is None:
            raise MatrixError(404, "M_NOT_FOUND", "No known servers")   # Synapse's words
        return room

    # ---- room creation ---------------------------------------------------------------------

    def create_room(self, user_id, body, before_join=None):
        """CS API §"POST /_matrix/client/v3/createRoom": events in the spec's order 1-8.
        before_join() runs once the room exists and may refuse the creator's join (Synapse's
        rate limit does): the room is then left as it is, with nobody in it."""
        request = self._check_create_request(body)
        request["invite"] = [u for u in request["invite"] if u != user_id]
        levels = self._initial_power_levels(user_id, request, request["initial_state"])
        room_id = f"!{random_letters(18)}:{self.server_name}"
        room = Room(room_id)
        self.rooms[room_id] = room
        preset, initial = request["preset"], request["initial_state"]
        # 1. m.room.create
        create = dict(request["creation_content"])
        create["room_version"] = request["room_version"]
        if int(request["room_version"]) < 11:
            create["creator"] = user_id
        self._emit(room, user_id, "m.room.create", create, "")
        if before_join is not None:
            try:
                before_join()
            except MatrixError:
                self._changed()
                raise
        # 2. the creator joins
        joined = self._member_profile(user_id)
        joined["membership"] = "join"
        self._emit(room, user_id, "m.room.member", joined, user_id)
        # 3. power levels: Synapse's defaults; presets as in the spec's table
        self._emit(room, user_id, "m.room.power_levels", levels, "")
        # 4. canonical alias
        if request["alias"]:
            self.aliases[request["alias"]] = room_id
            self._emit(room, user_id, "m.room.canonical_alias", {"alias": request["alias"]}, "")
        # 5. preset state, unless initial_state sets the same key
        preset_state = {
            "m.room.join_rules": {"join_rule": "public" if preset == "public_chat" else "invite"},
            "m.room.history_visibility": {"history_visibility": "shared"},
            "m.room.guest_access": {"guest_access": "forbidden" if preset == "public_chat"
                                    else "can_join"},
        }
        for kind, content in preset_state.items():
            if (kind, "") not in initial:
                self._emit(room, user_id, kind, content, "")
        # 6. initial_state, in order
        for (kind, key), content in initial.items():
            if kind not in ("m.room.create", "m.room.power_levels", "m.room.member"):
                self._emit(room, user_id, kind, content, key)
        # 7. name and topic
        if request["name"] is not None:
            self._emit(room, user_id, "m.room.name", {"name": request["name"]}, "")
        if request["topic"] is not None:
            self._emit(room, user_id, "m.room.topic", {"topic": request["topic"]}, "")
        # 8. invites, with is_direct on each invite when asked
        for invitee in request["invite"]:
            extra = {"is_direct": True} if request["is_direct"] else None
            self.change_membership(room, user_id, invitee, "invite", extra)
        self._changed()
        return room_id

    def _check_create_request(self, body):
        def typed(key, kind, default):
            value = body.get(key, default)
            if value is not default and not isinstance(value, kind):
                raise MatrixError(400, "M_BAD_JSON", f"{key} has the wrong type")
            return value

        visibility = typed("visibility", str, "private")
        preset = typed("preset", str, None) or (
            "public_chat" if visibility == "public" else "private_chat")
        if preset not in ("private_chat", "trusted_private_chat", "public_chat"):
            raise MatrixError(400, "M_BAD_JSON", f"Unknown preset {preset!r}")
        version = typed("room_version", str, DEFAULT_ROOM_VERSION)
        if version not in KNOWN_ROOM_VERSIONS:
            raise MatrixError(400, "M_UNSUPPORTED_ROOM_VERSION",
                              f"Room version {version!r} is not supported")
        invite = typed("invite", list, [])
        for user in invite:
            if not isinstance(user, str) or not USER_ID_RE.match(user):
                raise MatrixError(400, "M_INVALID_PARAM", f"Invalid user ID {user!r}")
        initial = {}
        for item in typed("initial_state", list, []):
            if (not isinstance(item, dict) or not isinstance(item.get("type"), str)
                    or not isinstance(item.get("content"), dict)
                    or not isinstance(item.get("state_key", ""), str)):
                raise MatrixError(400, "M_BAD_JSON", "initial_state entries need type and "
                                                     "content")
            initial[(item["type"], item.get("state_key", ""))] = item["content"]
        alias_name = typed("room_alias_name", str, None)
        alias = f"#{alias_name}:{self.server_name}" if alias_name else None
        if alias and alias in self.aliases:
            raise MatrixError(400, "M_ROOM_IN_USE", "Room alias already taken")
        return {"preset": preset, "room_version": version,
                "invite": list(dict.fromkeys(invite)),
                "initial_state": initial, "alias": alias,
                "name": typed("name", str, None), "topic": typed("topic", str, None),
                "is_direct": bool(typed("is_direct", bool, False)),
                "creation_content": typed("creation_content", dict, {}),
                "power_level_content_override": typed("power_level_content_override",
                                                      dict, {})}

    @staticmethod
    def _initial_power_levels(user_id, request, initial):
        """Synapse's default power levels (room.py RoomCreationHandler), with the presets'
        override {"invite": 0} for private chats, and for trusted_private_chat "all invitees
        are given the same power level as the room creator" (createRoom preset table)."""
        levels = {"users": {user_id: 100}, "users_default": 0,
                  "events": {"m.room.name": 50, "m.room.power_levels": 100,
                             "m.room.history_visibility": 100, "m.room.canonical_alias": 50,
                             "m.room.avatar": 50, "m.room.tombstone": 100,
                             "m.room.server_acl": 100, "m.room.encryption": 100},
                  "events_default": 0, "state_default": 50, "ban": 50, "kick": 50,
                  "redact": 50, "invite": 50}
        if request["preset"] == "trusted_private_chat":
            for invitee in request["invite"]:
                levels["users"][invitee] = 100
        if request["preset"] in ("private_chat", "trusted_private_chat"):
            levels["invite"] = 0
        if ("m.room.power_levels", "") in initial:
            levels = dict(initial[("m.room.power_levels", "")])
        levels.update(request["power_level_content_override"])
        try:
            validate_power_levels(levels)
        except MatrixError as err:   # createRoom: "the initial state ... is invalid"
            raise MatrixError(400, "M_INVALID_ROOM_STATE", err.error) from None
        return levels

    # ---- rate limits ---------------------------------------------------------------------------

    def ratelimit(self, user_id, device_id, update=False):
        """Synapse's rc_message limiter (synapse/api/ratelimiting.py, Ratelimiter.can_do_action,
        as RequestRatelimiter applies it to every event a client makes but memberships, and to
        createRoom): a bucket per user that leaks per_second; an action is refused when the
        actions not yet leaked out exceed burst_count - 1.  Synapse checks before it makes the
        event (update=False: a refused request counts for nothing) and counts the event once
        it is made (update=True).  A refusal is 429 M_LIMIT_EXCEEDED with retry_after_ms until
        the next action is allowed.  Requests made through /_fake/as are never limited."""
        limit = self.rate_limit
        if limit is None or device_id == FAKE_AS_DEVICE:
            return
        now = time.time()
        rate, burst = limit["per_second"], limit["burst_count"]
        count, start = self.rate_actions.get(user_id, (0.0, now))
        performed = count - (now - start) * rate
        if performed < 0:
            count, start, performed = 0.0, now, 0.0
        allowed = performed <= burst - 1
        if allowed and update:
            count += 1
        self.rate_actions[user_id] = (count, start)
        if not allowed:
            allowed_at = max(now, start + (count - burst + 1) / rate)
            raise MatrixError(429, "M_LIMIT_EXCEEDED", "Too Many Requests",
                              retry_after_ms=int(1000 * (allowed_at - now)))

    # ---- the plaintext audit -------------------------------------------------------------------

    def plaintext_in_encrypted(self):
        """Every non-state event sent in a room after the room had m.room.encryption, whose type
        is not m.room.encrypted: what a client must never send (E2EE §"Messaging
        Algorithms").  Read from the rooms' event lists, so it survives restarts with --state."""
        found = []
        for room in self.rooms.values():
            for event in room.events:
                if "state_key" in event or event["type"] == "m.room.encrypted":
                    continue
                if room.state_event("m.room.encryption", "", event["pos"] - 1) is not None:
                    found.append({"room_id": room.room_id, "event_id": event["event_id"],
                                  "sender": event["sender"], "type": event["type"],
                                  "pos": event["pos"],
                                  "txn_id": (event.get("txn") or {}).get("txn_id")})
        return found

    # ---- holding requests ----------------------------------------------------------------------

    def hold(self, name, method, target):
        """A request under a "hold" fault waits here until the hold is released, then runs."""
        with self.cond:
            self.held[name] += 1
            self.note_activity("held", method, target)
            try:
                while name in self.holds:
                    self.cond.wait()
            finally:
                self.held[name] -= 1

    def release_holds(self, name=None):
        with self.cond:
            names = set(self.holds) if name is None else {name}
            self.holds -= names
            self.faults = [r for r in self.faults
                           if not (r["action"] == "hold" and r["name"] in names)]
            self.cond.notify_all()

    # ---- activity (a test hook) ----------------------------------------------------------------

    def note_activity(self, stage, method, target, status=None):
        """Records one step of a Matrix request and wakes whoever waits for one."""
        with self.cond:
            self.activity_seq += 1
            self.activity.append({"seq": self.activity_seq, "stage": stage, "method": method,
                                  "path": target, "status": status})
            self.cond.notify_all()

    def activity_after(self, seq, boot, timeout):
        """The steps after seq (all of them when boot is not this process's), waiting up to
        timeout seconds for one when there are none yet."""
        deadline = time.monotonic() + timeout
        with self.cond:
            if boot != self.boot:
                seq = 0
            while self.activity_seq <= seq:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.cond.wait(remaining)
            return {"boot": self.boot, "seq": self.activity_seq,
                    "steps": [step for step in self.activity if step["seq"] > seq]}

    # ---- sending -------------------------------------------------------------------------------

    @staticmethod
    def txn_key(user_id, device_id, path):
        return f"{user_id}|{device_id}|{path}"

    def send_message(self, user_id, device_id, room_id, kind, txn_id, content, path):
        """CS API §"PUT /_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}" with
        §"Transaction identifiers": a retransmission (same device, same path) gets the first
        answer back and makes no second event.  Errors are not remembered (as Synapse), so a
        request refused before joining can be retried after."""
        key = self.txn_key(user_id, device_id, path)
        if key in self.txns:
            return self.txns[key]
        room = self.room_for(room_id)
        if room.membership(user_id) != "join":
            raise forbidden(f"You are not joined to room {room_id}")
        if user_level(room, user_id) < required_level(room, kind, is_state=False):
            raise forbidden(f"You do not have permission to send {kind} events")
        event = self._emit(room, user_id, kind, content,
                           txn={"device_id": device_id, "txn_id": txn_id})
        self.txns[key] = {"event_id": event["event_id"]}
        self._changed()
        return self.txns[key]

    def set_state(self, user_id, room_id, kind, state_key, content):
        """CS API §"PUT /_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}"."""
        room = self.room_for(room_id)
        if kind == "m.room.member":
            membership = content.get("membership")
            extra = {k: v for k, v in content.items() if k != "membership"}
            event = self.change_membership(room, user_id, state_key, membership, extra)
            return (event or room.state_event(kind, state_key))["event_id"]
        if room.membership(user_id) != "join":
            raise forbidden(f"You are not joined to room {room_id}")
        if state_key.startswith("@") and state_key != user_id:
            # ClientEvent.state_key: keys that are user IDs may only be set by that user.
            raise forbidden("You cannot set state keyed by another user's ID")
        if user_level(room, user_id) < required_level(room, kind, is_state=True):
            raise forbidden(f"You do not have permission to send {kind} events")
        if kind == "m.room.power_levels":
            check_power_levels_change(room, user_id, content)
        if kind == "m.room.canonical_alias":
            self._check_aliases(room, content)
        current = room.state_event(kind, state_key)
        if current and current["sender"] == user_id and current["content"] == content:
            return current["event_id"]       # Synapse deduplicates identical state
        event = self._emit(room, user_id, kind, content, state_key)
        self._changed()
        return event["event_id"]

    def _check_aliases(self, room, content):
        aliases = [content["alias"]] if content.get("alias") else []
        aliases += content.get("alt_aliases") or []
        for alias in aliases:
            if not isinstance(alias, str) or not ALIAS_RE.match(alias):
                raise MatrixError(400, "M_INVALID_PARAM", f"Invalid alias {alias!r}")
            if self.aliases.get(alias) != room.room_id:
                raise MatrixError(400, "M_BAD_ALIAS",
                                  f"The alias '{alias}' does not point to this room.")

    # ---- account data --------------------------------------------------------------------------

    def _account_data_table(self, user_id, room_id):
        if room_id is None:
            return self.account_data.setdefault(user_id, {})
        if not ROOM_ID_RE.match(room_id):
            raise MatrixError(400, "M_INVALID_PARAM", f"{room_id} is not a valid room ID.")
        return self.room_account_data.setdefault(user_id, {}).setdefault(room_id, {})

    def put_account_data(self, user_id, target, kind, content, room_id=None):
        """CS API §"PUT /_matrix/client/v3/user/{userId}/account_data/{type}" (and per room)."""
        if target != user_id:
            raise forbidden("Cannot add account data for other users.")
        if kind in SERVER_CONTROLLED_ACCOUNT_DATA:
            raise MatrixError(405, "M_BAD_JSON", f"Cannot set {kind} through this API.")
        table = self._account_data_table(user_id, room_id)
        table[kind] = {"content": content, "pos": self._next_pos()}
        self._changed()

    def get_account_data(self, user_id, target, kind, room_id=None):
        if target != user_id:
            raise forbidden("Cannot get account data for other users.")
        entry = self._account_data_table(user_id, room_id).get(kind)
        if entry is None:
            raise MatrixError(404, "M_NOT_FOUND", "Account data not found.")
        return entry["content"]

    # ---- end-to-end encryption: CS API §"End-to-End Encryption" --------------------------------

    def _device(self, user_id, device_id, create=False):
        """The device record, made on demand for keys uploaded by a device that never logged
        in (FAKEASDEVICE), as Synapse's check_device_registered does."""
        devices = self.devices.setdefault(user_id, {}) if create else self.devices.get(user_id,
                                                                                       {})
        record = devices.get(device_id)
        if record is None and create:
            record = devices[device_id] = {"display_name": None}
        return record

    def is_local(self, user_id):
        return user_id.split(":", 1)[1] == self.server_name

    def known_user(self, user_id):
        return user_id in self.users or user_id in self.devices

    def _key_change(self, subject, audience=None):
        """Record that `subject`'s device list or cross-signing keys changed.  audience None:
        everyone sharing a room with subject sees it in device_lists.changed (and subject
        itself, as Synapse always tells users about their own devices); otherwise only that
        user sees it (user-signing keys and signatures of other users' keys)."""
        pos = self._next_pos()
        self.key_changes.append([pos, subject, audience])
        self.key_change_positions.append(pos)

    def upload_keys(self, user_id, device_id, body):
        """§"POST /_matrix/client/v3/keys/upload".  Everything is checked before anything is
        stored, so a refused upload changes nothing."""
        device_keys = body.get("device_keys")   # null is read as absent, as Synapse did
        if device_keys is not None:
            validate_device_keys(device_keys, user_id, device_id)
        one_time = parse_key_map(body.get("one_time_keys"), "one_time_keys")
        fallback = parse_key_map(body.get("fallback_keys"), "fallback_keys")
        algorithms = [algorithm for _, algorithm, _ in fallback]
        if len(set(algorithms)) != len(algorithms):
            # fallback_keys: "There can only be at most one key per algorithm uploaded".
            raise MatrixError(400, "M_INVALID_PARAM", "At most one fallback key per algorithm")
        record = self._device(user_id, device_id, create=True)
        stored = record.get("device_keys")
        if device_keys is not None and stored is not None and stored["keys"] != device_keys["keys"]:
            # Device keys are long-lived (§"Device keys"): a new identity needs a new device.
            raise MatrixError(400, "M_INVALID_PARAM",
                              f"Device keys for {device_id} already exist and are different")
        existing = record.get("one_time_keys", {})
        for key_id, _, key in one_time:
            if key_id in existing and not one_time_keys_match(existing[key_id], key):
                raise MatrixError(400, "M_INVALID_PARAM",
                                  f"One time key {key_id} already exists and is different")
        changed = "one_time_keys" not in record
        if device_keys is not None and device_keys != stored:
            record["device_keys"] = device_keys
            self._key_change(user_id)
            changed = True
        for key_id, _, key in one_time:
            if key_id not in existing:
                existing[key_id] = key
                changed = True
        record["one_time_keys"] = existing
        fallbacks = record.setdefault("fallback_keys", {})
        for key_id, algorithm, key in fallback:
            current = fallbacks.get(algorithm)
            if current and current["key_id"] == key_id and current["key"] == key:
                continue      # the same key again keeps its "used" flag, as in Synapse
            fallbacks[algorithm] = {"key_id": key_id, "key": key, "used": False}
            changed = True
        if changed:
            self._changed()
        return {"one_time_key_counts": one_time_key_counts(record)}

    def _signed_view(self, target_user, target_key, obj, viewer):
        """A device or cross-signing key with the signatures from /keys/signatures/upload the
        viewer may see (§"POST /keys/query" master_keys): the owner's own signatures are shown
        to everyone, another user's signature only to that user (as Synapse)."""
        out = json.loads(json.dumps(obj))
        sigs = self.key_signatures.get(target_user, {}).get(target_key, {})
        for signer, by_key in sorted(sigs.items()):
            if signer in (target_user, viewer):
                out.setdefault("signatures", {}).setdefault(signer, {}).update(by_key)
        return out

    def device_keys_view(self, user_id, device_id, record, viewer):
        out = self._signed_view(user_id, device_id, record["device_keys"], viewer)
        unsigned = dict(out.get("unsigned") or {})
        if record.get("display_name"):
            unsigned["device_display_name"] = record["display_name"]
        out["unsigned"] = unsigned
        return out

    def cross_signing_view(self, user_id, kind, viewer):
        key = self.cross_signing.get(user_id, {}).get(kind)
        return None if key is None else self._signed_view(user_id, public_key_of(key), key,
                                                          viewer)

    def query_keys(self, viewer, body):
        """§"POST /_matrix/client/v3/keys/query".  Users on other servers cannot be reached
        (no federation) and are recorded in `failures` under their server name; unknown local
        users and devices are left out, as the spec says."""
        if "device_keys" not in body:
            raise MatrixError(400, "M_MISSING_PARAM", "Missing device_keys")
        query = body["device_keys"]
        if not isinstance(query, dict):
            raise MatrixError(400, "M_BAD_JSON", "device_keys must be an object")
        for user_id, wanted in query.items():
            check_user_id(user_id)
            if not isinstance(wanted, list) or not all(isinstance(d, str) for d in wanted):
                raise MatrixError(400, "M_BAD_JSON", "device_keys values must be lists of "
                                                     "device IDs")
        out = {"device_keys": {}, "failures": {}, "master_keys": {}, "self_signing_keys": {},
               "user_signing_keys": {}}
        for user_id, wanted in query.items():
            if not self.is_local(user_id):
                out["failures"][user_id.split(":", 1)[1]] = unreachable()
                continue
            if not self.known_user(user_id):
                continue
            devices = {}
            for device_id, record in sorted(self.devices.get(user_id, {}).items()):
                if "device_keys" in record and (not wanted or device_id in wanted):
                    devices[device_id] = self.device_keys_view(user_id, device_id, record,
                                                               viewer)
            out["device_keys"][user_id] = devices
            kinds = ("master", "self_signing") + (("user_signing",) if user_id == viewer
                                                  else ())
            for kind in kinds:
                key = self.cross_signing_view(user_id, kind, viewer)
                if key is not None:
                    out[kind + "_keys"][user_id] = key
        return out

    def claim_keys(self, body):
        """§"POST /_matrix/client/v3/keys/claim" and §"One-time and fallback keys": each
        one-time key is given out once, oldest first; when a device has none left for the
        algorithm its fallback key is given instead (again and again) and marked used."""
        if "one_time_keys" not in body:
            raise MatrixError(400, "M_MISSING_PARAM", "Missing one_time_keys")
        query = body["one_time_keys"]
        if not isinstance(query, dict):
            raise MatrixError(400, "M_BAD_JSON", "one_time_keys must be an object")
        for user_id, devices in query.items():
            check_user_id(user_id)
            if not isinstance(devices, dict) or not all(isinstance(a, str)
                                                        for a in devices.values()):
                raise MatrixError(400, "M_BAD_JSON", "one_time_keys maps users to "
                                                     "{device: algorithm}")
        out = {"one_time_keys": {}, "failures": {}}
        changed = False
        for user_id, devices in query.items():
            if not self.is_local(user_id):
                out["failures"][user_id.split(":", 1)[1]] = unreachable()
                continue
            for device_id, algorithm in devices.items():
                record = self.devices.get(user_id, {}).get(device_id)
                if record is None:
                    continue
                claimed = self._claim_one(record, algorithm)
                if claimed is not None:
                    out["one_time_keys"].setdefault(user_id, {})[device_id] = claimed
                    changed = True
        if changed:
            self._changed()
        return out

    def _claim_one(self, record, algorithm):
        keys = record.get("one_time_keys", {})
        for key_id in keys:
            if key_id.split(":", 1)[0] == algorithm:
                record["otk_pos"] = self._next_pos()
                return {key_id: keys.pop(key_id)}
        fallback = record.get("fallback_keys", {}).get(algorithm)
        if fallback is None:
            return None
        if not fallback["used"]:
            fallback["used"] = True
            record["otk_pos"] = self._next_pos()
        return {fallback["key_id"]: fallback["key"]}

    def shares_room(self, a, b, at=INFINITY):
        """Both users joined to one room at stream position `at` (§"GET /keys/changes")."""
        common = self.user_rooms.get(a, set()) & self.user_rooms.get(b, set())
        return any(self.rooms[r].membership(a, at) == "join"
                   and self.rooms[r].membership(b, at) == "join" for r in common)

    def device_list_changes(self, user_id, since, upto):
        """(changed, left) for `device_lists` in /sync and for /keys/changes, between stream
        positions since and upto.  changed: users sharing a room with user_id at `upto` whose
        device or cross-signing keys changed (and user_id itself after its own changes), plus
        users who share a room at `upto` but did not at `since`; left: users who shared a room
        at `since` and no longer do (§"Extensions to /sync" of E2EE and its note)."""
        changed, left = set(), set()
        candidates = set()
        for room_id in self.user_rooms.get(user_id, ()):
            room = self.rooms[room_id]
            if not room.members_changed(since, upto):
                continue
            for event in room.events_between(since, upto):
                if event["type"] != "m.room.member":
                    continue
                if event["state_key"] == user_id:   # we joined or left: all members count
                    candidates.update(key for (kind, key) in room.key_hist
                                      if kind == "m.room.member")
                else:
                    candidates.add(event["state_key"])
        candidates.discard(user_id)
        for other in candidates:
            before, after = self.shares_room(user_id, other, since), self.shares_room(
                user_id, other, upto)
            if after and not before:
                changed.add(other)
            elif before and not after:
                left.add(other)
        i = bisect.bisect_right(self.key_change_positions, since)
        j = bisect.bisect_right(self.key_change_positions, upto)
        for _, subject, audience in self.key_changes[i:j]:
            if audience is not None:
                if audience == user_id:
                    changed.add(subject)
            elif subject == user_id or self.shares_room(user_id, subject, upto):
                changed.add(subject)
        return sorted(changed), sorted(left - changed)

    def send_to_device(self, user_id, device_id, kind, body, path):
        """§"PUT /_matrix/client/v3/sendToDevice/{eventType}/{txnId}" with §"Transaction
        identifiers" (per device and path, like room sends).  Messages for unknown devices,
        unknown users and users on other servers are dropped: there is no federation."""
        key = self.txn_key(user_id, device_id, path)
        if key in self.txns:
            return self.txns[key]
        if "messages" not in body:
            raise MatrixError(400, "M_MISSING_PARAM", "Missing messages")
        messages = body["messages"]
        if not isinstance(messages, dict):
            raise MatrixError(400, "M_BAD_JSON", "messages must be an object")
        for target, by_device in messages.items():
            check_user_id(target)
            if not isinstance(by_device, dict) or not all(isinstance(c, dict)
                                                          for c in by_device.values()):
                raise MatrixError(400, "M_BAD_JSON", "messages maps users to {device: "
                                                     "content object}")
            for content in by_device.values():
                if len(encode(content)) > MAX_EVENT_BYTES:
                    raise MatrixError(413, "M_TOO_LARGE", f"device message to {target} too "
                                                          "large to fit in a single EDU")
        pos = self._next_pos()
        for target, by_device in messages.items():
            devices = self.devices.get(target, {})
            for target_device, content in by_device.items():
                # "The device ID may also be *, meaning all known devices for the user."
                chosen = sorted(devices) if target_device == "*" else [target_device]
                for chosen_id in chosen:
                    if chosen_id in devices:
                        devices[chosen_id].setdefault("inbox", []).append(
                            {"pos": pos, "sender": user_id, "type": kind, "content": content,
                             "sent_in": None})
        self.txns[key] = {}
        self._changed()
        return {}

    def acknowledge_to_device(self, user_id, device_id, since):
        """§"Send-to-Device messaging", server behaviour: a /sync with the next_batch of the
        response that carried messages means they were delivered; delete them.  A message
        is deleted only once a `since` at or after the response that carried it comes back,
        so messages held back by the 100-per-sync limit are not lost."""
        record = self.devices.get(user_id, {}).get(device_id)
        inbox = record.get("inbox") if record else None
        if not inbox:
            return
        kept = [m for m in inbox if m["sent_in"] is None or m["sent_in"] > since]
        if len(kept) != len(inbox):
            record["inbox"] = kept
            self._save()

    def mark_delivered(self, messages, since, next_batch):
        """Tag the messages of an answer with its next_batch position.  That position must be
        after `since`, or a retry of a lost answer (same since) would delete them unseen; when
        the stream has not moved (messages held back by the limit) the answer gets a new,
        empty position.  Returns the next_batch position."""
        if not messages:
            return next_batch
        if since is not None and next_batch <= since:
            next_batch = self._next_pos()
        for message in messages:
            message["sent_in"] = next_batch
        self._save()
        return next_batch

    def upload_cross_signing(self, user_id, body):
        """§"POST /_matrix/client/v3/keys/device_signing/upload".  User-interactive auth is
        required except, as v1.11 says (MSC3967) and Synapse does, when the user has no master
        key yet, or when every key in the request equals the stored one (then nothing
        happens).  As in Synapse, the auth check comes before the keys are checked."""
        new = {}
        for kind in CROSS_SIGNING_TYPES:
            value = body.get(kind + "_key")
            if value is not None:
                new[kind] = value
        stored = self.cross_signing.get(user_id, {})
        if "master" in stored:
            if all(stored.get(kind) == key for kind, key in new.items()):
                return 200, {}
            challenge = self.check_uia(user_id, body.get("auth"))
            if challenge is not None:
                return challenge
        for kind, key in new.items():
            check_cross_signing_key(key, user_id, kind)
        master = new.get("master") or stored.get("master")
        if master is None:
            raise MatrixError(400, "M_MISSING_PARAM", "No master key available")
        master_id = next(iter(master["keys"]))
        for kind in ("self_signing", "user_signing"):
            # "Must be signed by the accompanying master key, or by the user's most recently
            # uploaded master key": the signature must be there (it is not verified).
            if kind in new and master_id not in (new[kind].get("signatures") or {}).get(
                    user_id, {}):
                raise MatrixError(400, "M_INVALID_SIGNATURE",
                                  f"The {kind} key is not signed by the master key")
        for kind, key in new.items():
            if public_key_of(key) in self.devices.get(user_id, {}):
                raise forbidden("Key ID in use")     # the spec's 403 case
        self.cross_signing.setdefault(user_id, {}).update(new)
        if "master" in new or "self_signing" in new:
            self._key_change(user_id)
        if "user_signing" in new:
            self._key_change(user_id, audience=user_id)
        self._changed()
        return 200, {}

    def check_uia(self, user_id, auth):
        """CS API §"User-Interactive Authentication API" with the one stage m.login.password
        (§"Password-based").  Returns None when authenticated, else the (401, body) answer:
        {flows, params, session} first, and with errcode M_FORBIDDEN and `completed` after a
        wrong password.  A session is good for one successful request."""
        if auth is None:
            session = secrets.token_urlsafe(12)
            self.uia_sessions[session] = {"user_id": user_id}
            self._changed()
            return 401, {"flows": UIA_FLOWS, "params": {}, "session": session}
        if not isinstance(auth, dict):
            raise MatrixError(400, "M_BAD_JSON", "auth must be an object")
        session = auth.get("session")
        if session is not None and not isinstance(session, str):
            raise MatrixError(400, "M_BAD_JSON", "auth.session must be a string")
        if session is None:
            session = secrets.token_urlsafe(12)
            self.uia_sessions[session] = {"user_id": user_id}
        elif self.uia_sessions.get(session, {}).get("user_id") != user_id:
            raise MatrixError(400, "M_UNKNOWN", "Unknown session ID")
        if auth.get("type") != "m.login.password":
            raise MatrixError(400, "M_UNRECOGNIZED", "Unrecognised auth type")
        user = self._login_user(auth)
        password = auth.get("password")
        if not isinstance(password, str):
            raise MatrixError(400, "M_MISSING_PARAM", "Missing password")
        record = self.users.get(user_id)
        if (self.qualify(user) == user_id and record is not None
                and secrets.compare_digest(record["password"], password)):
            del self.uia_sessions[session]
            return None
        self._changed()
        return 401, {"errcode": "M_FORBIDDEN", "error": "Invalid password", "completed": [],
                     "flows": UIA_FLOWS, "params": {}, "session": session}

    def upload_signatures(self, user_id, body):
        """§"POST /_matrix/client/v3/keys/signatures/upload".  The shapes Synapse accepts:
        for the uploader's own keys, a device signed by the self-signing key or the master key
        signed by the uploader's devices; for another user, that user's master key signed by
        the uploader's user-signing key.  The signed object must equal the stored key apart
        from `signatures` and `unsigned`; the signatures themselves are not verified."""
        for target, objects in body.items():
            if not isinstance(objects, dict) or not all(isinstance(o, dict)
                                                        for o in objects.values()):
                raise MatrixError(400, "M_INVALID_PARAM", "Invalid parameter")
        failures = {}
        changed = False
        for target, objects in body.items():
            for key_id, signed in objects.items():
                try:
                    self._store_signature(user_id, target, key_id, signed)
                    changed = True
                except MatrixError as err:
                    failures.setdefault(target, {})[key_id] = {
                        "errcode": err.errcode, "error": err.error, "status": err.status}
        if changed:
            self._changed()
        return {"failures": failures}

    def _store_signature(self, user_id, target, key_id, signed):
        sigs = (signed.get("signatures") or {}).get(user_id)
        if not isinstance(sigs, dict) or not sigs:
            raise MatrixError(400, "M_INVALID_SIGNATURE", "No signature from the uploader")
        mine = self.cross_signing.get(user_id, {})
        if target == user_id:
            master = mine.get("master")
            if master is not None and key_id == public_key_of(master):
                # The master key signed by the user's own devices.
                devices = self.devices.get(user_id, {})
                for signer_key in sigs:
                    signer_device = signer_key.split(":", 1)[-1]
                    keys = (devices.get(signer_device, {}).get("device_keys") or {}).get(
                        "keys", {})
                    if signer_key not in keys:
                        raise MatrixError(400, "M_INVALID_SIGNATURE",
                                          f"{signer_key} is not a key of one of your devices")
                require_same_key(signed, master)
                accepted = dict(sigs)
            else:
                ssk = mine.get("self_signing")
                if ssk is None:
                    raise MatrixError(404, "M_NOT_FOUND", f"No self_signing key found for "
                                                          f"{user_id}")
                record = self.devices.get(user_id, {}).get(key_id)
                if record is None or "device_keys" not in record:
                    raise MatrixError(404, "M_NOT_FOUND", "Unknown device")
                ssk_id = next(iter(ssk["keys"]))
                if ssk_id not in sigs:
                    raise MatrixError(400, "M_INVALID_SIGNATURE", "Not signed by the "
                                                                  "self-signing key")
                require_same_key(signed, record["device_keys"])
                accepted = {ssk_id: sigs[ssk_id]}
            audience = None
        else:
            usk = mine.get("user_signing")
            if usk is None:
                raise MatrixError(404, "M_NOT_FOUND", f"No user_signing key found for "
                                                      f"{user_id}")
            master = self.cross_signing.get(target, {}).get("master")
            if master is None:
                raise MatrixError(404, "M_NOT_FOUND", f"No master key found for {target}")
            if key_id != public_key_of(master):
                raise MatrixError(404, "M_NOT_FOUND", "Unknown device")
            usk_id = next(iter(usk["keys"]))
            if usk_id not in sigs:
                raise MatrixError(400, "M_INVALID_SIGNATURE", "Not signed by the user-signing "
                                                              "key")
            require_same_key(signed, master)
            accepted = {usk_id: sigs[usk_id]}
            audience = user_id     # only the signer hears of it (Synapse's signature stream)
        store = self.key_signatures.setdefault(target, {}).setdefault(key_id, {}).setdefault(
            user_id, {})
        if any(store.get(k) != v for k, v in accepted.items()):
            store.update(accepted)
            self._key_change(target, audience)


# --------------------------------------------------------------------------------------------
# /sync: CS API §"Syncing" and §"GET /_matrix/client/v3/sync".
# --------------------------------------------------------------------------------------------

class SyncBuilder:
    """One /sync answer for one user and device, from stream position `since` to `now`.

    Room sections follow Synapse's reading of the spec:
      * joined, and joined at `since` too: the new events (last `limit` of them, `limited`
        when more), and in `state` the delta from `since` to the start of the timeline;
      * initial sync, newly joined, or full_state: the last `limit` events of the room and
        the full state at the start of the timeline;
      * invited since `since`: stripped state plus the invite event (§"Stripped state");
      * left/kicked/banned since `since`: under `leave`, the timeline up to the leave event;
        on an initial sync only with room.include_leave (§"Leaving rooms").
    State events that the timeline filter hides are not lost: they are put in `state`.
    The E2EE extensions (§"Extensions to /sync" of E2EE and of Send-to-Device messaging):
    the device's pending to-device messages (at most 100), device_lists (empty lists on an
    initial sync, where the spec leaves them out), the device's one-time key counts and its
    unused fallback key types.
    """

    def __init__(self, hs, user_id, device_id, since, sync_filter, full_state):
        self.hs = hs
        self.user_id = user_id
        self.viewer = (user_id, device_id)
        self.device_id = device_id
        self.delivered = []       # the to-device messages in the answer, to tag once sent
        self.since = since
        self.filter = sync_filter
        self.full_state = full_state
        self.now = hs.pos
        self.clock = now_ms()

    def build(self):
        """Returns (response, has_news).  has_news is what ends a long-poll."""
        rooms = {"join": {}, "invite": {}, "leave": {}}
        for room_id in sorted(self.hs.user_rooms.get(self.user_id, ())):
            if self.filter.room_allowed(room_id):
                self._room(self.hs.rooms[room_id], rooms)
        account_data = self._account_data(self.hs.account_data.get(self.user_id, {}),
                                          self.filter.account_data)
        response = {"next_batch": self.hs.stream_token(self.now), "rooms": rooms,
                    "account_data": {"events": account_data},
                    "presence": {"events": []}}
        e2ee_news = self._e2ee(response)
        has_news = bool(account_data or any(rooms.values()) or e2ee_news)
        return response, has_news

    def _e2ee(self, response):
        record = self.hs.devices.get(self.user_id, {}).get(self.device_id)
        self.delivered = ((record or {}).get("inbox") or [])[:TO_DEVICE_LIMIT]
        response["to_device"] = {"events": [{"sender": m["sender"], "type": m["type"],
                                             "content": m["content"]}
                                            for m in self.delivered]}
        changed, left = ([], []) if self.since is None else self.hs.device_list_changes(
            self.user_id, self.since, self.now)
        if self.since is not None and self.full_state:
            # Synapse (handlers/sync.py, SyncResultBuilder.calculate_user_changes) reads the
            # member events of the full state as new joins: every member comes as changed.
            changed = sorted(set(changed) | self._joined_members())
        response["device_lists"] = {"changed": changed, "left": left}
        response["device_one_time_keys_count"] = one_time_key_counts(record)
        response["device_unused_fallback_key_types"] = unused_fallback_key_types(record)
        # A claim of this device's keys is news for it too, so it can upload more at once.
        claimed = (record is not None and self.since is not None
                   and record.get("otk_pos", 0) > self.since)
        return bool(self.delivered or changed or left or claimed)

    def _joined_members(self):
        members = set()
        for room_id in self.hs.user_rooms.get(self.user_id, ()):
            room = self.hs.rooms[room_id]
            if room.membership(self.user_id, self.now) != "join":
                continue
            members.update(key for (kind, key), e in room.state_at(self.now).items()
                           if kind == "m.room.member"
                           and e["content"].get("membership") in ("join", "invite", "knock"))
        return members

    def _room(self, room, rooms):
        now_member = room.state_event("m.room.member", self.user_id, self.now)
        membership = now_member["content"].get("membership")
        before = (room.membership(self.user_id, self.since)
                  if self.since is not None else None)
        if membership == "join":
            full = self.since is None or before != "join" or self.full_state
            newly = self.since is not None and before != "join"
            entry = self._timeline_entry(room, self.now, full, newly)
            if entry is not None:
                entry["ephemeral"] = {"events": []}
                entry["summary"] = self._summary(room)
                rooms["join"][room.room_id] = entry
        elif membership == "invite":
            if self.since is None or now_member["pos"] > self.since:
                rooms["invite"][room.room_id] = {"invite_state": {
                    "events": self._invite_state(room, now_member)}}
        elif membership in ("leave", "ban"):
            self._left_room(room, now_member, rooms)

    def _left_room(self, room, leave_event, rooms):
        if self.since is None:
            if not self.filter.include_leave:
                return
            entry = self._timeline_entry(room, leave_event["pos"], full=True, newly=False)
        elif leave_event["pos"] > self.since:
            entry = self._timeline_entry(room, leave_event["pos"], full=self.full_state,
                                         newly=False, force=True)
        else:
            return
        if entry is not None:
            rooms["leave"][room.room_id] = entry

    def _timeline_entry(self, room, upto, full, newly, force=False):
        low = 0 if (self.since is None or newly) else self.since
        if not (full or force) and room.positions[-1] <= low and not self._room_account_data(
                room, full):
            return None             # nothing happened here since `since`: the common case
        candidates = [e for e in room.events_between(low, upto)
                      if self.filter.timeline.matches(e, room.room_id)
                      and self.hs.visible(room, self.user_id, e)]
        limit = self.filter.timeline.limit
        timeline = candidates[len(candidates) - limit:] if limit else []
        start = timeline[0]["pos"] - 1 if timeline else upto
        state = self._state(room, start, upto, timeline, full)
        account_data = self._room_account_data(room, full)
        if not (full or force or timeline or state or account_data):
            return None
        return {"timeline": {"events": [self._event(e) for e in timeline],
                             "limited": len(candidates) > len(timeline),
                             "prev_batch": self.hs.stream_token(start)},
                "state": {"events": [self._event(e) for e in state]},
                "account_data": {"events": account_data}}

    def _state(self, room, start, upto, timeline, full):
        at_start = room.state_at(start)
        if full or self.since is None:
            chosen = dict(at_start)
        else:
            at_since = room.state_at(self.since)
            chosen = {k: e for k, e in at_start.items() if at_since.get(k) is not e}
        in_timeline = {e["event_id"] for e in timeline}
        for key, event in room.state_at(upto).items():
            if event["pos"] > start and event["event_id"] not in in_timeline:
                chosen[key] = event          # hidden from the timeline by the filter
        return sorted((e for e in chosen.values()
                       if self.filter.state.matches(e, room.room_id)),
                      key=lambda e: e["pos"])

    def _invite_state(self, room, invite):
        state = room.state_at(invite["pos"])
        events = [stripped_event(state[(kind, "")]) for kind in STRIPPED_STATE_TYPES
                  if (kind, "") in state]
        events.append(stripped_event(invite))
        return events

    def _summary(self, room):
        members = [e for (kind, _), e in room.state_at(self.now).items()
                   if kind == "m.room.member"]
        joined = [e for e in members if e["content"].get("membership") == "join"]
        invited = [e for e in members if e["content"].get("membership") == "invite"]
        heroes = sorted((e for e in joined + invited if e["state_key"] != self.user_id),
                        key=lambda e: e["pos"])[:5]
        return {"m.heroes": [e["state_key"] for e in heroes],
                "m.joined_member_count": len(joined),
                "m.invited_member_count": len(invited)}

    def _room_account_data(self, room, full):
        table = self.hs.room_account_data.get(self.user_id, {}).get(room.room_id, {})
        return self._account_data(table, self.filter.room_account_data, full)

    def _account_data(self, table, event_filter, full=False):
        since = -1 if (full or self.since is None) else self.since
        out = []
        for kind, entry in sorted(table.items(), key=lambda item: item[1]["pos"]):
            event = {"type": kind, "content": entry["content"]}
            if since < entry["pos"] <= self.now and event_filter.matches(event):
                out.append(event)
        return out

    def _event(self, event):
        return client_event(event, self.viewer, with_room_id=False, now=self.clock)


# --------------------------------------------------------------------------------------------
# HTTP API: requests, routing and one handler per endpoint.
# --------------------------------------------------------------------------------------------

class Request:
    """What a handler sees of one HTTP request."""

    def __init__(self, method, path, query, body, headers, params):
        self.method = method
        self.path = path
        self.query = query
        self.raw_body = body
        self.headers = headers
        self.params = params
        self.user_id = None
        self.device_id = None
        self.token = None

    def arg(self, name, default=None):
        values = self.query.get(name)
        return values[0] if values else default

    def int_arg(self, name, default):
        value = self.arg(name)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise MatrixError(400, "M_INVALID_PARAM", f"{name} must be an integer") from None

    def json(self, allow_empty=False):
        """CS API §"API Standards": bodies are JSON objects.  Errors as Synapse's
        parse_json_object_from_request: not JSON 400 M_NOT_JSON, not an object M_BAD_JSON."""
        if not self.raw_body.strip() and allow_empty:
            return {}
        try:
            value = json.loads(self.raw_body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise MatrixError(400, "M_NOT_JSON", "Content not JSON.") from None
        if not isinstance(value, dict):
            raise MatrixError(400, "M_BAD_JSON", "Content must be a JSON object.")
        return value


ROUTES = []     # [(compiled regex, {method: (function, needs_auth)})]


def route(method, pattern, auth=True):
    """Register a handler.  Path parameters are `([^/]+)` groups matched on the raw path and
    percent-decoded afterwards, so an encoded '/' inside a state key stays inside it."""
    compiled = re.compile("^" + pattern + "$")

    def register(function):
        for regex, methods in ROUTES:
            if regex.pattern == compiled.pattern:
                methods[method] = (function, auth)
                return function
        ROUTES.append((compiled, {method: (function, auth)}))
        return function
    return register


V3 = "/_matrix/client/v3"
P = "([^/]+)"


# CS API §"GET /_matrix/client/versions"
@route("GET", "/_matrix/client/versions", auth=False)
def api_versions(hs, req):
    return 200, {"versions": SPEC_VERSIONS, "unstable_features": {}}


# CS API §"GET /_matrix/client/v3/login"
@route("GET", V3 + "/login", auth=False)
def api_login_flows(hs, req):
    return 200, {"flows": [{"type": "m.login.password"}]}


# CS API §"POST /_matrix/client/v3/login" and §"Login" (legacy API)
@route("POST", V3 + "/login", auth=False)
def api_login(hs, req):
    return 200, hs.login(req.json())


# CS API §"POST /_matrix/client/v3/logout"
@route("POST", V3 + "/logout")
def api_logout(hs, req):
    hs.logout(req.user_id, req.device_id)
    return 200, {}


# CS API §"POST /_matrix/client/v3/logout/all"
@route("POST", V3 + "/logout/all")
def api_logout_all(hs, req):
    hs.logout(req.user_id, req.device_id, everywhere=True)
    return 200, {}


# CS API §"GET /_matrix/client/v3/account/whoami"
@route("GET", V3 + "/account/whoami")
def api_whoami(hs, req):
    return 200, {"user_id": req.user_id, "device_id": req.device_id, "is_guest": False}


# CS API §"POST /_matrix/client/v3/user/{userId}/filter"
@route("POST", V3 + "/user/" + P + "/filter")
def api_create_filter(hs, req):
    return 200, {"filter_id": hs.create_filter(req.user_id, req.params[0], req.json())}


# CS API §"GET /_matrix/client/v3/user/{userId}/filter/{filterId}"
@route("GET", V3 + "/user/" + P + "/filter/" + P)
def api_get_filter(hs, req):
    return 200, hs.get_filter(req.user_id, req.params[0], req.params[1])


# CS API §"GET /_matrix/client/v3/sync".  The request is held on the condition variable until
# there is news for this user or `timeout` ms pass.  As Synapse, an initial sync and a
# full_state sync answer at once.  §"Send-to-Device messaging": `since` acknowledges the
# to-device messages of the answer that gave it out; those are deleted first.
@route("GET", V3 + "/sync")
def api_sync(hs, req):
    sync_filter = hs.sync_filter(req.user_id, req.arg("filter"))
    since_token = req.arg("since")
    since = hs.parse_token(since_token) if since_token is not None else None
    full_state = req.arg("full_state", "false") == "true"
    if req.arg("set_presence") not in (None, "offline", "online", "unavailable"):
        raise MatrixError(400, "M_INVALID_PARAM", "set_presence must be offline, online or "
                                                  "unavailable")
    timeout = max(0, req.int_arg("timeout", 0)) / 1000.0
    deadline = time.monotonic() + timeout
    epoch = hs.epoch
    if since is not None:
        hs.acknowledge_to_device(req.user_id, req.device_id, since)
    while True:
        if hs.epoch != epoch:
            raise MatrixError(400, "M_UNKNOWN", "Invalid stream token")
        builder = SyncBuilder(hs, req.user_id, req.device_id, since, sync_filter, full_state)
        response, has_news = builder.build()
        remaining = deadline - time.monotonic()
        if has_news or since is None or full_state or remaining <= 0:
            next_batch = hs.mark_delivered(builder.delivered, since, builder.now)
            response["next_batch"] = hs.stream_token(next_batch)
            return 200, response
        hs.cond.wait(remaining)


# CS API §"POST /_matrix/client/v3/createRoom"
@route("POST", V3 + "/createRoom")
def api_create_room(hs, req):
    # As Synapse 1.67 (handlers/room.py, create_room): the request counts against the message
    # limit at once, and the creator's join counts again once the room exists; a refused join
    # leaves the room behind, empty, and answers 429: a new room needs two turns of the bucket.
    body = req.json()
    hs.ratelimit(req.user_id, req.device_id, update=True)
    room_id = hs.create_room(req.user_id, body,
                             before_join=lambda: hs.ratelimit(req.user_id, req.device_id, update=True))
    return 200, {"room_id": room_id}


# CS API §"POST /_matrix/client/v3/join/{roomIdOrAlias}"
@route("POST", V3 + "/join/" + P)
def api_join_alias(hs, req):
    return _join(hs, req, hs.resolve_room(req.params[0]))


# CS API §"POST /_matrix/client/v3/rooms/{roomId}/join"
@route("POST", V3 + "/rooms/" + P + "/join")
def api_join(hs, req):
    return _join(hs, req, hs.resolve_room(req.params[0]))


def _join(hs, req, room):
    body = req.json(allow_empty=True)
    extra = {"reason": body["reason"]} if isinstance(body.get("reason"), str) else None
    hs.change_membership(room, req.user_id, req.user_id, "join", extra)
    return 200, {"room_id": room.room_id}


def _target_and_extra(req):
    body = req.json()
    target = body.get("user_id")
    if not isinstance(target, str):
        raise MatrixError(400, "M_MISSING_PARAM", "Missing user_id")
    extra = {"reason": body["reason"]} if isinstance(body.get("reason"), str) else None
    return target, extra


# CS API §"POST /_matrix/client/v3/rooms/{roomId}/invite"
@route("POST", V3 + "/rooms/" + P + "/invite")
def api_invite(hs, req):
    target, extra = _target_and_extra(req)
    hs.change_membership(hs.room_for(req.params[0]), req.user_id, target,
                         "invite", extra)
    return 200, {}


# CS API §"POST /_matrix/client/v3/rooms/{roomId}/leave"
@route("POST", V3 + "/rooms/" + P + "/leave")
def api_leave(hs, req):
    body = req.json(allow_empty=True)
    extra = {"reason": body["reason"]} if isinstance(body.get("reason"), str) else None
    hs.change_membership(hs.room_for(req.params[0]), req.user_id, req.user_id,
                         "leave", extra)
    return 200, {}


# CS API §"POST /_matrix/client/v3/rooms/{roomId}/kick"
@route("POST", V3 + "/rooms/" + P + "/kick")
def api_kick(hs, req):
    target, extra = _target_and_extra(req)
    room = hs.room_for(req.params[0])
    if room.membership(target) not in ("join", "invite", "knock"):
        raise forbidden(f"{target} is not in the room")
    hs.change_membership(room, req.user_id, target, "leave", extra)
    return 200, {}


# CS API §"POST /_matrix/client/v3/rooms/{roomId}/ban"
@route("POST", V3 + "/rooms/" + P + "/ban")
def api_ban(hs, req):
    target, extra = _target_and_extra(req)
    hs.change_membership(hs.room_for(req.params[0]), req.user_id, target,
                         "ban", extra)
    return 200, {}


# CS API §"POST /_matrix/client/v3/rooms/{roomId}/unban"
@route("POST", V3 + "/rooms/" + P + "/unban")
def api_unban(hs, req):
    target, extra = _target_and_extra(req)
    room = hs.room_for(req.params[0])
    if room.membership(target) != "ban":
        raise MatrixError(400, "M_BAD_STATE", f"{target} is not banned")
    hs.change_membership(room, req.user_id, target, "leave", extra)
    return 200, {}


# CS API §"GET /_matrix/client/v3/joined_rooms"
@route("GET", V3 + "/joined_rooms")
def api_joined_rooms(hs, req):
    rooms = [rid for rid in sorted(hs.user_rooms.get(req.user_id, ()))
             if hs.rooms[rid].membership(req.user_id) == "join"]
    return 200, {"joined_rooms": rooms}


# CS API §"PUT /_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}"
@route("PUT", V3 + "/rooms/" + P + "/send/" + P + "/" + P)
def api_send(hs, req):
    room_id, kind, txn_id = req.params
    cached = hs.txns.get(hs.txn_key(req.user_id, req.device_id, req.path))
    if cached is not None:   # a retransmission is known by device and path alone
        return 200, cached
    content = req.json()
    hs.ratelimit(req.user_id, req.device_id)
    answer = hs.send_message(req.user_id, req.device_id, room_id, kind, txn_id, content, req.path)
    hs.ratelimit(req.user_id, req.device_id, update=True)
    return 200, answer


# CS API §"PUT /_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}" (an empty
# state key may drop the trailing slash)
@route("PUT", V3 + "/rooms/" + P + "/state/" + P + "(?:/([^/]*))?")
def api_put_state(hs, req):
    room_id, kind, state_key = req.params
    content = req.json()
    if kind != "m.room.member":       # memberships have limits of their own in Synapse
        hs.ratelimit(req.user_id, req.device_id)
    event_id = hs.set_state(req.user_id, room_id, kind, state_key or "", content)
    if kind != "m.room.member":
        hs.ratelimit(req.user_id, req.device_id, update=True)
    return 200, {"event_id": event_id}


# CS API §"GET /_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}"
@route("GET", V3 + "/rooms/" + P + "/state/" + P + "(?:/([^/]*))?")
def api_get_state_event(hs, req):
    room_id, kind, state_key = req.params
    room = hs.room_for(room_id)
    event = room.state_event(kind, state_key or "", hs.readable_upto(room, req.user_id))
    if event is None:
        raise MatrixError(404, "M_NOT_FOUND", "Event not found.")
    if req.arg("format") == "event":
        return 200, client_event(event, (req.user_id, req.device_id))
    return 200, event["content"]


# CS API §"GET /_matrix/client/v3/rooms/{roomId}/state"
@route("GET", V3 + "/rooms/" + P + "/state")
def api_get_state(hs, req):
    room = hs.room_for(req.params[0])
    state = room.state_at(hs.readable_upto(room, req.user_id)).values()
    viewer = (req.user_id, req.device_id)
    return 200, [client_event(e, viewer) for e in sorted(state, key=lambda e: e["pos"])]


# CS API §"GET /_matrix/client/v3/rooms/{roomId}/members"
@route("GET", V3 + "/rooms/" + P + "/members")
def api_members(hs, req):
    room = hs.room_for(req.params[0])
    upto = hs.readable_upto(room, req.user_id)
    if req.arg("at") is not None:
        upto = min(upto, hs.parse_token(req.arg("at")))
    want, exclude = req.arg("membership"), req.arg("not_membership")
    chunk = []
    for (kind, _), event in sorted(room.state_at(upto).items(), key=lambda kv: kv[1]["pos"]):
        if kind != "m.room.member":
            continue
        membership = event["content"].get("membership")
        # "When specified alongside not_membership, the two parameters create an 'or'."
        if want is not None and exclude is not None:
            keep = membership == want or membership != exclude
        else:
            keep = (want is None or membership == want) and membership != exclude
        if keep:
            chunk.append(client_event(event, (req.user_id, req.device_id)))
    return 200, {"chunk": chunk}


# CS API §"GET /_matrix/client/v3/rooms/{roomId}/joined_members"
@route("GET", V3 + "/rooms/" + P + "/joined_members")
def api_joined_members(hs, req):
    room = hs.room_for(req.params[0])
    if room.membership(req.user_id) != "join":
        raise forbidden("You aren't a member of the room.")
    joined = {}
    for (kind, key), event in room.state_at().items():
        if kind == "m.room.member" and event["content"].get("membership") == "join":
            info = {}
            for field, name in (("displayname", "display_name"), ("avatar_url", "avatar_url")):
                if isinstance(event["content"].get(field), str):
                    info[name] = event["content"][field]
            joined[key] = info
    return 200, {"joined": joined}


# CS API §"GET /_matrix/client/v3/rooms/{roomId}/event/{eventId}"
@route("GET", V3 + "/rooms/" + P + "/event/" + P)
def api_get_event(hs, req):
    room = hs.rooms.get(req.params[0])
    event = room.by_id.get(req.params[1]) if room else None
    try:
        upto = hs.readable_upto(room, req.user_id) if event else None
    except MatrixError:
        upto = None
    if (event is None or upto is None or event["pos"] > upto
            or not hs.visible(room, req.user_id, event)):
        raise MatrixError(404, "M_NOT_FOUND", "Event not found.")
    return 200, client_event(event, (req.user_id, req.device_id))


# CS API §"GET /_matrix/client/v3/rooms/{roomId}/messages".  Tokens are stream positions:
# a token p stands between the events at p and p+1, so prev_batch from /sync works here.
@route("GET", V3 + "/rooms/" + P + "/messages")
def api_messages(hs, req):
    room = hs.room_for(req.params[0])
    upto = hs.readable_upto(room, req.user_id)
    direction = req.arg("dir")
    if direction not in ("b", "f"):
        raise MatrixError(400, "M_INVALID_PARAM", "dir must be 'b' or 'f'")
    limit = max(0, req.int_arg("limit", 10))
    start = req.arg("from")
    start = hs.parse_token(start) if start is not None else (hs.pos if direction == "b" else 0)
    end = req.arg("to")
    end = hs.parse_token(end) if end is not None else None
    event_filter = EventFilter(_inline_json(req.arg("filter")))
    if direction == "b":
        events = list(reversed(room.events_between(end or 0, min(start, upto))))
    else:
        events = room.events_between(start, min(end if end is not None else upto, upto))
    events = [e for e in events if event_filter.matches(e, room.room_id)
              and hs.visible(room, req.user_id, e)]
    chunk = events[:limit]
    out = {"start": hs.stream_token(start),
           "chunk": [client_event(e, (req.user_id, req.device_id)) for e in chunk],
           "state": []}
    if len(events) > len(chunk) and chunk:
        last = chunk[-1]["pos"]
        out["end"] = hs.stream_token(last - 1 if direction == "b" else last)
    return 200, out


def _inline_json(text):
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise MatrixError(400, "M_NOT_JSON", "Invalid filter JSON") from None
    validate_event_filter(value, "filter")
    return value


# CS API §"GET /_matrix/client/v3/user/{userId}/account_data/{type}"
@route("GET", V3 + "/user/" + P + "/account_data/" + P)
def api_get_account_data(hs, req):
    return 200, hs.get_account_data(req.user_id, req.params[0], req.params[1])


# CS API §"PUT /_matrix/client/v3/user/{userId}/account_data/{type}"
@route("PUT", V3 + "/user/" + P + "/account_data/" + P)
def api_put_account_data(hs, req):
    hs.put_account_data(req.user_id, req.params[0], req.params[1], req.json())
    return 200, {}


# CS API §"GET /_matrix/client/v3/user/{userId}/rooms/{roomId}/account_data/{type}"
@route("GET", V3 + "/user/" + P + "/rooms/" + P + "/account_data/" + P)
def api_get_room_account_data(hs, req):
    user, room_id, kind = req.params
    return 200, hs.get_account_data(req.user_id, user, kind, room_id)


# CS API §"PUT /_matrix/client/v3/user/{userId}/rooms/{roomId}/account_data/{type}"
@route("PUT", V3 + "/user/" + P + "/rooms/" + P + "/account_data/" + P)
def api_put_room_account_data(hs, req):
    user, room_id, kind = req.params
    hs.put_account_data(req.user_id, user, kind, req.json(), room_id)
    return 200, {}


# CS API §"GET /_matrix/client/v3/profile/{userId}" (no authentication required)
@route("GET", V3 + "/profile/" + P, auth=False)
def api_profile(hs, req):
    return 200, hs.profile(req.params[0])


# CS API §"GET /_matrix/client/v3/profile/{userId}/{keyName}"
@route("GET", V3 + "/profile/" + P + "/" + P, auth=False)
def api_profile_field(hs, req):
    profile = hs.profile(req.params[0])
    if req.params[1] not in profile:
        raise MatrixError(404, "M_NOT_FOUND", "Profile field not found")
    return 200, {req.params[1]: profile[req.params[1]]}


# CS API §"PUT /_matrix/client/v3/profile/{userId}/{keyName}"
@route("PUT", V3 + "/profile/" + P + "/" + P)
def api_set_profile_field(hs, req):
    user, key = req.params
    body = req.json()
    if key not in body:
        raise MatrixError(400, "M_MISSING_PARAM", f"Missing {key}")
    hs.set_profile(req.user_id, user, key, body[key])
    return 200, {}


# CS API §"POST /_matrix/client/v3/keys/upload"
@route("POST", V3 + "/keys/upload")
def api_keys_upload(hs, req):
    return 200, hs.upload_keys(req.user_id, req.device_id, req.json())


# CS API §"POST /_matrix/client/v3/keys/query"
@route("POST", V3 + "/keys/query")
def api_keys_query(hs, req):
    return 200, hs.query_keys(req.user_id, req.json())


# CS API §"POST /_matrix/client/v3/keys/claim"
@route("POST", V3 + "/keys/claim")
def api_keys_claim(hs, req):
    return 200, hs.claim_keys(req.json())


# CS API §"GET /_matrix/client/v3/keys/changes".  `from` is required (400 M_MISSING_PARAM, as
# Synapse); `to` bounds the answer when given (Synapse ignores it and answers up to now).
@route("GET", V3 + "/keys/changes")
def api_keys_changes(hs, req):
    start = req.arg("from")
    if start is None:
        raise MatrixError(400, "M_MISSING_PARAM", "Missing from")
    low = hs.parse_token(start)
    high = hs.parse_token(req.arg("to")) if req.arg("to") is not None else hs.pos
    changed, left = hs.device_list_changes(req.user_id, low, max(low, high))
    return 200, {"changed": changed, "left": left}


# CS API §"PUT /_matrix/client/v3/sendToDevice/{eventType}/{txnId}"
@route("PUT", V3 + "/sendToDevice/" + P + "/" + P)
def api_send_to_device(hs, req):
    cached = hs.txns.get(hs.txn_key(req.user_id, req.device_id, req.path))
    if cached is not None:   # a retransmission is known by device and path alone
        return 200, cached
    return 200, hs.send_to_device(req.user_id, req.device_id, req.params[0], req.json(),
                                  req.path)


# CS API §"POST /_matrix/client/v3/keys/device_signing/upload" (Cross-signing), with
# §"User-Interactive Authentication API"
@route("POST", V3 + "/keys/device_signing/upload")
def api_device_signing_upload(hs, req):
    return hs.upload_cross_signing(req.user_id, req.json())


# CS API §"POST /_matrix/client/v3/keys/signatures/upload"
@route("POST", V3 + "/keys/signatures/upload")
def api_signatures_upload(hs, req):
    return 200, hs.upload_signatures(req.user_id, req.json())


def find_route(path):
    """(methods, params) for a path, or (None, None).  A path known under another method is
    answered 405, an unknown one 404, both M_UNRECOGNIZED (CS API §"Common error codes")."""
    for regex, methods in ROUTES:
        match = regex.match(path)
        if match:
            params = [unquote(g) if g is not None else None for g in match.groups()]
            return methods, params
    return None, None


def access_token(req):
    """CS API §"Using access tokens": the Authorization header, or the deprecated
    access_token query parameter; homeservers MUST support both."""
    header = req.headers.get("Authorization")
    if header is not None:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise MatrixError(401, "M_MISSING_TOKEN", "Invalid Authorization header")
        return value.strip()
    return req.arg("access_token")


def handle_matrix(hs, method, path, query, body, headers, as_user=None):
    """Run one Client-Server API request under the model lock.  Returns (status, object,
    extra headers)."""
    methods, params = find_route(path)
    if methods is None:
        raise MatrixError(404, "M_UNRECOGNIZED", "Unrecognized request")
    if method not in methods:
        raise MatrixError(405, "M_UNRECOGNIZED", "Unrecognized request")
    function, needs_auth = methods[method]
    req = Request(method, path, query, body, headers, params)
    with hs.lock:
        if as_user is not None:
            if as_user not in hs.users:
                raise MatrixError(404, "M_NOT_FOUND", f"No such user {as_user}")
            req.user_id, req.device_id = as_user, FAKE_AS_DEVICE
        elif needs_auth:
            req.token = access_token(req)
            req.user_id, req.device_id = hs.authenticate(req.token)
        status, obj = function(hs, req)
    return status, obj, {}


# --------------------------------------------------------------------------------------------
# Test control API (/_fake/...) and fault injection.  Not Matrix; never faulted.
# --------------------------------------------------------------------------------------------

FAULT_ACTIONS = {"429", "500", "error", "slow", "drop", "garbage", "huge", "hold"}


def validate_fault(rule):
    if not isinstance(rule, dict) or rule.get("action") not in FAULT_ACTIONS:
        raise MatrixError(400, "M_BAD_JSON", f"A fault needs an action in {sorted(FAULT_ACTIONS)}")
    try:
        re.compile(rule.get("path_regex", ""))
    except re.error as exc:
        raise MatrixError(400, "M_BAD_JSON", f"Bad path_regex: {exc}") from None
    count = rule.get("count", 1)
    if not is_int(count) or (count < 1 and count != -1):
        raise MatrixError(400, "M_BAD_JSON", "count must be a positive integer or -1")
    rule = dict(rule)
    rule["count"] = count
    rule.setdefault("path_regex", "")
    rule.setdefault("process", rule["action"] == "drop")
    if rule["action"] == "hold":
        rule.setdefault("name", "hold")
        if not isinstance(rule["name"], str) or not rule["name"]:
            raise MatrixError(400, "M_BAD_JSON", "A hold needs a name")
    return rule


def validate_rate_limit(data):
    """{"per_second": >0, "burst_count": >=1}, or null / {} to switch the limit off."""
    if data is None or data == {}:
        return None
    if not isinstance(data, dict):
        raise MatrixError(400, "M_BAD_JSON", "Expected an object")
    rate, burst = data.get("per_second"), data.get("burst_count")
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0 \
            or not is_int(burst) or burst < 1:
        raise MatrixError(400, "M_BAD_JSON", "per_second must be above 0 and burst_count at "
                                             "least 1")
    return {"per_second": float(rate), "burst_count": burst}


def take_fault(hs, method, target):
    """The first rule matching this request, its count used up by one (-1 = forever)."""
    with hs.lock:
        for rule in hs.faults:
            if rule.get("method") not in (None, method):
                continue
            if not re.search(rule["path_regex"], target):
                continue
            if rule["count"] != -1:
                rule["count"] -= 1
                if rule["count"] == 0:
                    hs.faults.remove(rule)
            return dict(rule)
    return None


def dump_event(event):
    out = client_event(event)
    txn = event.get("txn")
    if txn:
        out["unsigned"]["transaction_id"] = txn["txn_id"]
    out["fake"] = {"pos": event["pos"], "device_id": txn["device_id"] if txn else None}
    return out


def handle_control(hs, method, path, query, body, headers):
    """The /_fake/ API.  Returns (status, object, extra headers)."""
    req = Request(method, path, query, body, headers, [])
    as_match = re.match(r"^/_fake/as/([^/]+)(/_matrix/.*)$", path)
    if as_match:
        return handle_matrix(hs, method, as_match.group(2), query, body, headers,
                             as_user=unquote(as_match.group(1)))
    with hs.lock:
        if path == "/_fake/health" and method == "GET":
            return 200, {"ok": True, "server_name": hs.server_name,
                         "stream_position": hs.pos, "epoch": hs.epoch}, {}
        if path == "/_fake/reset" and method == "POST":
            hs.reset()
            return 200, {}, {}
        if path == "/_fake/users" and method == "POST":
            data = req.json()
            if not isinstance(data.get("user_id"), str) or not isinstance(
                    data.get("password"), str):
                raise MatrixError(400, "M_BAD_JSON", "user_id and password are required")
            user_id = hs.add_user(data["user_id"], data["password"], data.get("displayname"),
                                  data.get("avatar_url"))
            return 200, {"user_id": user_id}, {}
        send = re.match(r"^/_fake/as/([^/]+)/send$", path)
        if send and method == "POST":
            return 200, control_send(hs, unquote(send.group(1)), req.json()), {}
        if path == "/_fake/rooms" and method == "GET":
            rooms = {rid: {"members": {k: e["content"].get("membership")
                                       for (t, k), e in room.state_at().items()
                                       if t == "m.room.member"}}
                     for rid, room in hs.rooms.items()}
            return 200, {"rooms": rooms}, {}
        events = re.match(r"^/_fake/rooms/([^/]+)/events$", path)
        if events and method == "GET":
            room = hs.rooms.get(unquote(events.group(1)))
            if room is None:
                raise MatrixError(404, "M_NOT_FOUND", "Unknown room")
            return 200, {"events": [dump_event(e) for e in room.events]}, {}
        devices = re.match(r"^/_fake/devices/([^/]+)$", path)
        if devices and method == "GET":
            return 200, control_devices(hs, unquote(devices.group(1))), {}
        inbox = re.match(r"^/_fake/to_device/([^/]+)/([^/]+)$", path)
        if inbox and method == "GET":
            return 200, control_to_device(hs, unquote(inbox.group(1)),
                                          unquote(inbox.group(2))), {}
        if path == "/_fake/faults":
            return control_faults(hs, method, req)
        if path == "/_fake/holds" and method == "GET":
            return 200, {"active": sorted(hs.holds),
                         "waiting": {k: v for k, v in hs.held.items() if v}}, {}
        hold = re.match(r"^/_fake/holds/([^/]+)$", path)
        if hold and method == "DELETE":
            hs.release_holds(unquote(hold.group(1)))
            return 200, {}, {}
        if path == "/_fake/ratelimit":
            if method == "POST":
                hs.rate_limit = validate_rate_limit(req.json(allow_empty=True))
                hs.rate_actions = {}
            return 200, {"rate_limit": hs.rate_limit}, {}
        if path == "/_fake/activity" and method == "GET":
            timeout = min(max(0, req.int_arg("timeout_ms", 0)), 60000) / 1000.0
            return 200, hs.activity_after(req.int_arg("after", 0), req.arg("boot"), timeout), {}
        if path == "/_fake/plaintext" and method == "GET":
            return 200, {"events": hs.plaintext_in_encrypted()}, {}
        if path == "/_fake/requests":
            if method == "DELETE":
                hs.request_log.clear()
                return 200, {}, {}
            if method == "GET":
                return 200, {"requests": list(hs.request_log)}, {}
    raise MatrixError(404, "M_UNRECOGNIZED", "Unknown control request")


def control_send(hs, user, data):
    """POST /_fake/as/{userId}/send {room_id, type, content, state_key?, txn_id?}."""
    user_id = hs.qualify(user)
    if user_id not in hs.users:
        raise MatrixError(404, "M_NOT_FOUND", f"No such user {user_id}")
    room_id, kind = data.get("room_id"), data.get("type", "m.room.message")
    content = data.get("content")
    if not isinstance(room_id, str) or not isinstance(kind, str) or not isinstance(content,
                                                                                   dict):
        raise MatrixError(400, "M_BAD_JSON", "room_id, type and content are required")
    if "state_key" in data:
        return {"event_id": hs.set_state(user_id, room_id, kind, data["state_key"], content)}
    txn_id = data.get("txn_id") or secrets.token_hex(8)
    path = f"{V3}/rooms/{room_id}/send/{kind}/{txn_id}"
    return hs.send_message(user_id, FAKE_AS_DEVICE, room_id, kind, txn_id, content, path)


def control_devices(hs, user):
    """GET /_fake/devices/{userId}: every device with its keys as stored (no signatures from
    /keys/signatures/upload merged in), one-time keys, fallback keys and pending to-device
    count, plus the cross-signing keys and the stored signatures."""
    user_id = hs.qualify(user)
    if not hs.known_user(user_id):
        raise MatrixError(404, "M_NOT_FOUND", f"No such user {user_id}")
    devices = {}
    for device_id, record in sorted(hs.devices.get(user_id, {}).items()):
        devices[device_id] = {
            "display_name": record.get("display_name"),
            "device_keys": record.get("device_keys"),
            "one_time_keys": record.get("one_time_keys", {}),
            "one_time_key_counts": one_time_key_counts(record),
            "fallback_keys": record.get("fallback_keys", {}),
            "unused_fallback_key_types": unused_fallback_key_types(record),
            "pending_to_device": len(record.get("inbox", [])),
        }
    return {"user_id": user_id, "devices": devices,
            "cross_signing": hs.cross_signing.get(user_id, {}),
            "signatures": hs.key_signatures.get(user_id, {})}


def control_to_device(hs, user, device_id):
    """GET /_fake/to_device/{userId}/{deviceId}: the device's pending to-device messages in
    order, each with fake: {pos, sent_in} (sent_in: position of the /sync answer that carried
    it, null if not yet sent)."""
    user_id = hs.qualify(user)
    record = hs.devices.get(user_id, {}).get(device_id)
    if record is None:
        raise MatrixError(404, "M_NOT_FOUND", f"No device {device_id} for {user_id}")
    return {"events": [{"sender": m["sender"], "type": m["type"], "content": m["content"],
                        "fake": {"pos": m["pos"], "sent_in": m["sent_in"]}}
                       for m in record.get("inbox", [])]}


def control_faults(hs, method, req):
    if method == "GET":
        return 200, {"faults": hs.faults}, {}
    if method == "DELETE":
        hs.faults = []
        hs.release_holds()
        return 200, {}, {}
    if method == "POST":
        try:
            rules = json.loads(req.raw_body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise MatrixError(400, "M_NOT_JSON", "Content not JSON.") from None
        if isinstance(rules, dict):
            rules = rules.get("rules", [rules])
        if not isinstance(rules, list):
            raise MatrixError(400, "M_BAD_JSON", "Expected a list of rules")
        rules = [validate_fault(rule) for rule in rules]
        hs.faults.extend(rules)
        hs.holds.update(rule["name"] for rule in rules if rule["action"] == "hold")
        return 200, {"faults": hs.faults}, {}
    raise MatrixError(405, "M_UNRECOGNIZED", "Unrecognized request")


# --------------------------------------------------------------------------------------------
# The HTTP server.
# --------------------------------------------------------------------------------------------

CORS_HEADERS = {  # CS API §"Web Browser Clients"
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, PUT, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": "X-Requested-With, Content-Type, Authorization",
}


def encode(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive (libcurl reuses connections); every answer has a length."""

    protocol_version = "HTTP/1.1"
    # The head and the body go out in two writes; with Nagle's algorithm on, the body would wait
    # for the client's delayed ACK (~40 ms on Linux) — a delay no real homeserver has.
    disable_nagle_algorithm = True
    server_version = "cardroom-fake-homeserver/1.0"
    sys_version = ""

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake_homeserver: " + (fmt % args) + "\n")

    def do_GET(self):
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    def _read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self):
        hs = self.server.hs
        self._status = None
        try:
            body = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        split = urlsplit(self.path)
        query = parse_qs(split.query, keep_blank_values=True)
        entry = {"ts": now_ms(), "method": self.command, "path": self.path, "fault": None}
        try:
            if self.command == "OPTIONS":
                self._send(200, b"{}")
            elif split.path.startswith("/_fake/"):
                self._answer(*self._run(handle_control, hs, split.path, query, body))
            else:
                hs.note_activity("arrived", self.command, self.path)
                rule = take_fault(hs, self.command, self.path)
                entry["fault"] = rule["action"] if rule else None
                if rule and rule["action"] == "429":
                    entry["asked_ms"] = asked_ms(rule)
                self._matrix(hs, rule, split.path, query, body, entry)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        entry["status"] = self._status
        if not split.path.startswith("/_fake/"):
            with hs.lock:
                hs.request_log.append(entry)
                hs.note_activity("answered", self.command, self.path, self._status)

    def _run(self, function, hs, path, query, body):
        try:
            return function(hs, self.command, path, query, body, self.headers)
        except MatrixError as err:
            return err.status, err.body(), err.headers
        except Exception:   # a bug in the fake: say so loudly, answer as a homeserver would
            traceback.print_exc(file=sys.stderr)
            return 500, {"errcode": "M_UNKNOWN", "error": "Internal server error"}, {}

    def _matrix(self, hs, rule, path, query, body, entry):
        if rule is None:
            self._answer(*self._run(handle_matrix, hs, path, query, body))
            return
        action = rule["action"]
        if action == "slow":
            # With process: the request is done at once and its answer held back (a client
            # that dies meanwhile never learns what was done).
            real = self._run(handle_matrix, hs, path, query, body) if rule["process"] else None
            time.sleep(rule.get("delay_ms", 1000) / 1000.0)
            self._answer(*(real or self._run(handle_matrix, hs, path, query, body)))
            return
        if action == "hold":
            hs.hold(rule["name"], self.command, self.path)
            self._answer(*self._run(handle_matrix, hs, path, query, body))
            return
        real = self._run(handle_matrix, hs, path, query, body) if rule["process"] else None
        if action == "drop":
            self._drop(rule, real)
        else:
            self._answer(*fault_response(rule))

    def _drop(self, rule, real):
        """Close the connection mid-response: after nothing, after the headers, or (default)
        after half of the body, with a Content-Length promising all of it."""
        status, obj, _ = real or (200, {}, {})
        payload = encode(obj)
        stage = rule.get("drop_after", "partial")
        self.close_connection = True
        self._status = "dropped"
        if stage != "nothing":
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if stage == "partial":
                self.wfile.write(payload[:max(1, len(payload) // 2)])
            self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _answer(self, status, obj, headers):
        payload = obj if isinstance(obj, bytes) else encode(obj)
        self._send(status, payload, headers)

    def _send(self, status, payload, headers=None):
        self._status = status
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in CORS_HEADERS.items():
            self.send_header(name, value)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


def asked_ms(rule):
    """The wait an injected 429 asks for: Retry-After (whole seconds) and/or retry_after_ms, the
    shorter one when both are given."""
    ms = rule.get("retry_after_ms", 1000)
    waits = ([math.ceil(ms / 1000) * 1000] if rule.get("header", True) else []) + (
        [ms] if rule.get("body_ms", True) else [])
    return min(waits)


def fault_response(rule):
    """(status, body, headers) of an injected answer."""
    action = rule["action"]
    if action == "429":
        # CS API §"Rate limiting": M_LIMIT_EXCEEDED, retry_after_ms (deprecated, still sent)
        # and the Retry-After header in seconds (RFC 9110), since v1.10.
        ms = rule.get("retry_after_ms", 1000)
        body = {"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests (injected)"}
        if rule.get("body_ms", True):
            body["retry_after_ms"] = ms
        headers = {"Retry-After": str(math.ceil(ms / 1000))} if rule.get("header", True) else {}
        return 429, body, headers
    if action == "500":
        return 500, {"errcode": "M_UNKNOWN", "error": "Internal server error (injected)"}, {}
    if action == "error":
        return (rule.get("status", 500),
                {"errcode": rule.get("errcode", "M_UNKNOWN"),
                 "error": rule.get("error", "Injected error")}, {})
    if action == "garbage":
        return 200, b'{"next_batch": "s1_x", "rooms": {"join": {<<< this is not JSON', {}
    if action == "huge":
        size = rule.get("size_bytes", 5 * 1024 * 1024)
        frame = (b'{"padding":"', b'"}')
        return 200, frame[0] + b"x" * max(0, size - len(b"".join(frame))) + frame[1], {}
    raise AssertionError(action)


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--server-name", default="example.org")
    parser.add_argument("--state", help="persist all state to this JSON file and reload it")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    parser.add_argument("--rate-limit", nargs="?", const="0.2,10", metavar="PER_SECOND,BURST",
                        help="Synapse's message rate limit (rc_message; without a value its "
                             "defaults, 0.2,10)")
    args = parser.parse_args(argv)
    rate_limit = None
    if args.rate_limit:
        try:
            rate, burst = args.rate_limit.split(",")
            rate_limit = validate_rate_limit({"per_second": float(rate), "burst_count": int(burst)})
        except (ValueError, MatrixError):
            parser.error("--rate-limit takes PER_SECOND,BURST, e.g. 0.2,10")
    hs = Homeserver(args.server_name, args.state, rate_limit)
    server = FakeServer((args.host, args.port), Handler)
    server.hs = hs
    server.verbose = args.verbose
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"LISTENING {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
