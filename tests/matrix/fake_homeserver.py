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
  * A test control API under /_fake/ (users, acting as a user, fault injection, event dumps,
    reset, health).  It is not Matrix and never sees injected faults.

Command line:
    python3 fake_homeserver.py --port 0 --server-name example.org [--state FILE] [--verbose]
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
# The model.  Every public method expects the caller to hold `self.lock`.
# --------------------------------------------------------------------------------------------

class Homeserver:
    """All server state and every operation on it."""

    def __init__(self, server_name, state_file=None):
        self.server_name = server_name
        self.state_file = state_file
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.faults = []
        self.request_log = collections.deque(maxlen=10000)
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

    def reset(self):
        self._fresh()
        self.faults = []
        self.request_log.clear()
        self._changed()

    def _snapshot(self):
        return {"format": 1, "server_name": self.server_name, "epoch": self.epoch,
                "pos": self.pos, "users": self.users, "tokens": self.tokens,
                "devices": self.devices,
                "rooms": {rid: room.events for rid, room in self.rooms.items()},
                "aliases": self.aliases, "filters": self.filters,
                "account_data": self.account_data,
                "room_account_data": self.room_account_data, "txns": self.txns}

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
        if everywhere:
            self._revoke_tokens(user_id)
            self.devices.pop(user_id, None)
            self.txns = {k: v for k, v in self.txns.items() if not k.startswith(user_id + "|")}
        else:
            self._revoke_tokens(user_id, device_id)
            self.devices.get(user_id, {}).pop(device_id, None)
            prefix = f"{user_id}|{device_id}|"
            self.txns = {k: v for k, v in self.txns.items() if not k.startswith(prefix)}
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

    def create_room(self, user_id, body):
        """CS API §"POST /_matrix/client/v3/createRoom": events in the spec's order 1-8."""
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
    """

    def __init__(self, hs, user_id, device_id, since, sync_filter, full_state):
        self.hs = hs
        self.user_id = user_id
        self.viewer = (user_id, device_id)
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
                    "presence": {"events": []}, "to_device": {"events": []}}
        has_news = bool(account_data or any(rooms.values()))
        return response, has_news

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
# full_state sync answer at once.
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
    while True:
        if hs.epoch != epoch:
            raise MatrixError(400, "M_UNKNOWN", "Invalid stream token")
        builder = SyncBuilder(hs, req.user_id, req.device_id, since, sync_filter, full_state)
        response, has_news = builder.build()
        remaining = deadline - time.monotonic()
        if has_news or since is None or full_state or remaining <= 0:
            return 200, response
        hs.cond.wait(remaining)


# CS API §"POST /_matrix/client/v3/createRoom"
@route("POST", V3 + "/createRoom")
def api_create_room(hs, req):
    return 200, {"room_id": hs.create_room(req.user_id, req.json())}


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
    return 200, hs.send_message(req.user_id, req.device_id, room_id, kind, txn_id, req.json(),
                                req.path)


# CS API §"PUT /_matrix/client/v3/rooms/{roomId}/state/{eventType}/{stateKey}" (an empty
# state key may drop the trailing slash)
@route("PUT", V3 + "/rooms/" + P + "/state/" + P + "(?:/([^/]*))?")
def api_put_state(hs, req):
    room_id, kind, state_key = req.params
    event_id = hs.set_state(req.user_id, room_id, kind, state_key or "", req.json())
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

FAULT_ACTIONS = {"429", "500", "error", "slow", "drop", "garbage", "huge"}


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
    return rule


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
        if path == "/_fake/faults":
            return control_faults(hs, method, req)
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


def control_faults(hs, method, req):
    if method == "GET":
        return 200, {"faults": hs.faults}, {}
    if method == "DELETE":
        hs.faults = []
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
        hs.faults.extend(validate_fault(rule) for rule in rules)
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
                rule = take_fault(hs, self.command, self.path)
                entry["fault"] = rule["action"] if rule else None
                self._matrix(hs, rule, split.path, query, body, entry)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        entry["status"] = self._status
        if not split.path.startswith("/_fake/"):
            with hs.lock:
                hs.request_log.append(entry)

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
            time.sleep(rule.get("delay_ms", 1000) / 1000.0)
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
    args = parser.parse_args(argv)
    hs = Homeserver(args.server_name, args.state)
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
