#!/usr/bin/env python3
"""make.py — makes this directory's fixture: journals written by cardroom 0.1.0, and what that
release does next from them.

    tests/data/journal-0.1.0/make.py CARDROOM
    tests/data/journal-0.1.0/make.py --words CARDROOM

CARDROOM is the `cardroom` binary of release 0.1.0 (the tables as they were before every game
sat behind one table interface). Everything is played through `cardroom console --script
--seed 7 --db FILE`, one console room per table (the console has one room per run; a run's
configuration names it, see room_config()), all in one database:

    p-open   304, not started: two people and a computer seated, options set
    p-bid    304, started: its person is to bid
    p-down   304, in play, a card of the current hand still lies face down, its person to play
    p-hands  304 with the cut, after two hands: its person is to act in the third
    p-over   304 played to the end of the match (closed)
    g-open   ContractGrid, not started: one grid arranged, options set
    g-hand   ContractGrid, started: its person is to exclude or bid
    g-play   ContractGrid after a hand, in the second hand's play
    g-over   ContractGrid played to the end of the game (closed)

People's moves are found by trying: a command is kept when the journal grew, so the moves are
legal for whatever the seeds dealt. The database becomes tables.sql (sqlite3 .dump, with the
schema version); then for every table still open, ROOM.in holds a few commands that go on
from there (found the same way) and ROOM.out what CARDROOM printed for them, run on a
database made from tables.sql. tests/test_migration.c checks that a newer cardroom rebuilds
every table of tables.sql and prints exactly ROOM.out for ROOM.in.

When the bot's words change, --words CARDROOM (a build with the new words) rewrites only the
ROOM.out files, with what CARDROOM prints for ROOM.in; it first checks that CARDROOM makes the
same moves and deals as the ROOM.out it replaces (who plays, bids, passes, excludes, cuts or
calls what, and who deals each hand), so the files keep 0.1.0's game in today's words.

The console skips as many script lines as the database says it has handled (its position), so
every run's input starts with that many comment lines; test_migration.c does the same.
"""
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

SEED = "7"
HERE = os.path.dirname(os.path.abspath(__file__))
SUITS = {"\u2660": "S", "\u2665": "H", "\u2666": "D", "\u2663": "C"}
JOKER = "\U0001F0CF"


def room_config(room):
    """The configuration of a room's runs: its name, and no timers (they would make runs
    depend on the clock). test_migration.c writes the same file."""
    return ("[console]\nroom = %s\n[timers]\nremind_after = 0\nidle_takeover = 0\ntable_idle_close = 0\n" % room)


class Runner:
    def __init__(self, cardroom, work):
        self.cardroom = cardroom
        self.work = work

    def run(self, db, room, lines):
        """Runs lines in room on db (changed in place); returns stdout."""
        ini = os.path.join(self.work, room + ".ini")
        with open(ini, "w") as f:
            f.write(room_config(room))
        stdin = "#\n" * position(db) + "".join(line + "\n" for line in lines)
        p = subprocess.run([self.cardroom, "console", "--script", "--seed", SEED, "--db", db, "--config", ini],
                           input=stdin.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        if p.returncode != 0 or p.stderr:
            sys.exit("cardroom failed in %s (%d): %s" % (room, p.returncode, p.stderr.decode()))
        return p.stdout.decode()


def position(db):
    if not os.path.exists(db):
        return 0
    con = sqlite3.connect(db)
    try:
        row = con.execute("SELECT position FROM positions WHERE adapter = 'console'").fetchone()
    except sqlite3.OperationalError:
        row = None
    con.close()
    return int(row[0]) if row else 0


def journal_size(db, room):
    con = sqlite3.connect(db)
    row = con.execute("SELECT count(*) FROM journal JOIN tables ON tables.id = journal.table_id "
                      "WHERE tables.room = ?", (room,)).fetchone()
    con.close()
    return row[0]


def cards_of(text):
    """'♠ K · ♥ J 9 A · ♦ 🃏 J (trump)' -> ['KS', 'JH', '9H', 'AH', 'JK', 'JD']."""
    out = []
    text = re.sub(r"\(.*?\)", "", text)
    for group in text.split("\u00b7"):
        words = group.split()
        if not words:
            continue
        if words[0] == JOKER:
            out.append("JK")
            continue
        suit = SUITS.get(words[0])
        if not suit:
            continue
        for rank in words[1:]:
            out.append("JK" if rank == JOKER else ("T" if rank == "10" else rank) + suit)
    return out


class Room:
    """One table: its setup lines, the person who plays it, and when to stop."""

    def __init__(self, name, person, setup, stop, grid=False, then=()):
        self.name, self.person, self.setup, self.stop, self.grid = name, person, setup, stop, grid
        self.then = list(then)  # what starts it, when it goes on in a newer cardroom
        self.said = ""  # everything printed for this room so far

    def room_lines(self):
        tag = "[#%s] " % self.name
        return [line[len(tag):] for line in self.said.splitlines() if line.startswith(tag)]

    def private(self, user):
        tag = "[@%s] " % user
        return [line[len(tag):] for line in self.said.splitlines() if line.startswith(tag)]

    def to_act(self):
        """(user, what) of the last turn said in the room, or None."""
        for line in reversed(self.room_lines()):
            m = re.match(r"(\S+) \((?:South|East|North|West|seat \d)\)(?::| to) (\w+)", line)
            if m:
                return m.group(1), m.group(2)
        return None

    def hand_no(self):
        n = 0
        for line in self.room_lines():
            m = re.match(r"Hand (\d+) ", line)
            if m:
                n = int(m.group(1))
        return n

    def current_hand_lines(self):
        lines = self.room_lines()
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].startswith("Hand "):
                return lines[i:]
        return lines

    def hand_of(self, user):
        for line in reversed(self.private(user)):
            m = re.search(r"Your hand: (.*)", line)
            if m:
                return cards_of(m.group(1))
        return []

    def candidates(self):
        turn = self.to_act()
        if not turn:
            return []
        user, what = turn
        if self.grid:
            if what == "exclude":
                return ["%s> !exclude %s" % (user, s) for s in ("spades", "hearts", "diamonds", "clubs")]
            if what == "bid":
                return ["%s> !mark %s%d" % (user, c, r) for r in range(1, 5) for c in "abcd"]
            return ["%s> !play %s" % (user, c) for c in self.hand_of(user)]
        if what == "bid":
            return ["%s> !pass" % user] + ["%s> !bid %d" % (user, b) for b in range(160, 260, 10)]
        if what == "cut":
            return ["%s> !cut 0" % user]
        if what == "choose":
            return ["%s>> trump %s" % (user, c) for c in self.hand_of(user)]
        out = []
        for c in self.hand_of(user):
            out += ["%s> !play %s" % (user, c), "%s>> play %s" % (user, c)]
        return out


def play(runner, db, room, work, limit=400):
    """Makes the room's person move (by trying) until room.stop(room) holds."""
    for _ in range(limit):
        if room.stop(room):
            return
        for line in room.candidates():
            trial = os.path.join(work, "trial.db")
            shutil.copy(db, trial)
            before = journal_size(trial, room.name)
            said = runner.run(trial, room.name, [line])
            if journal_size(trial, room.name) > before:
                shutil.copy(trial, db)
                room.said += said
                break
        else:
            sys.exit("%s: no move is taken at: %s" % (room.name, room.to_act()))
    sys.exit("%s: the state wanted was never reached" % room.name)


def closed(db, room):
    con = sqlite3.connect(db)
    row = con.execute("SELECT closed IS NOT NULL FROM tables WHERE room = ? ORDER BY id DESC", (room,)).fetchone()
    con.close()
    return bool(row and row[0])


def rooms(db_of):
    def playing(what):
        return lambda r: r.to_act() is not None and r.to_act()[1] in what

    def face_down(r):
        return (r.to_act() is not None and r.to_act()[1] in ("lead", "play")
                and any("stays face down" in line or "stay face down" in line for line in r.current_hand_lines()))

    return [
        Room("p-open", "pat", ["pat> !new 304", "pat> !join", "quin> !join 3", "pat> !bot 2",
                               "pat> !set start_tokens 6", "quin> !set scoring bank"], lambda r: True,
             then=["rex> !join", "pat> !start"]),
        Room("p-bid", "kim", ["kim> !new 304", "kim> !join", "kim> !bot", "kim> !bot", "kim> !bot",
                              "kim> !set step_above_200 20", "kim> !start"], playing(("bid",))),
        Room("p-down", "lee", ["lee> !new 304", "lee> !join 2", "lee> !bot", "lee> !bot", "lee> !bot", "lee> !start"],
             face_down),
        Room("p-hands", "max", ["max> !new 304", "max> !join 4", "max> !bot", "max> !bot", "max> !bot",
                                "max> !set cut true", "max> !start"],
             lambda r: r.hand_no() >= 3 and r.to_act() is not None),
        Room("p-over", "ned", ["ned> !new 304", "ned> !join", "ned> !bot", "ned> !bot", "ned> !bot",
                               "ned> !set start_tokens 1", "ned> !start"], lambda r: closed(db_of(), "p-over")),
        Room("g-open", "ora", ["ora> !new grid", "ora> !join 1", "ora> !grid random", "pia> !join 3",
                               "ora> !set small true", "pia> !set cap 90"], lambda r: True, grid=True,
             then=["ora> !grid random", "pia> !grid random", "ora> !bot 2", "pia> !set bids 1", "ora> !start"]),
        Room("g-hand", "quy", ["quy> !new grid", "quy> !join 2", "quy> !bot", "quy> !bot", "quy> !set bids 1",
                               "quy> !grid random", "quy> !start"], playing(("exclude", "bid")), grid=True),
        Room("g-play", "rio", ["rio> !new grid", "rio> !join", "rio> !bot", "rio> !bot", "rio> !set small true",
                               "rio> !set bids 1", "rio> !grid random", "rio> !start"],
             lambda r: r.hand_no() >= 2 and playing(("lead", "play"))(r), grid=True),
        Room("g-over", "sam", ["sam> !new grid", "sam> !join", "sam> !bot", "sam> !bot", "sam> !set small true",
                               "sam> !set bids 1", "sam> !set cap 25", "sam> !grid random", "sam> !start"],
             lambda r: closed(db_of(), "g-over"), grid=True),
    ]


def next_lines(runner, base, room, work):
    """What a newer cardroom is asked of an open table: the table, a hand, what starts it if it
    has not started, then moves (found by trying on base) until three are taken, and the
    standings."""
    lines = ["%s> !table" % room.person, "%s>> hand" % room.person] + room.then
    history = room.said
    trial = os.path.join(work, "next.db")
    for _ in range(3):
        shutil.copy(base, trial)
        room.said = history + runner.run(trial, room.name, lines)
        size = journal_size(trial, room.name)
        for line in room.candidates():
            shutil.copy(base, trial)
            runner.run(trial, room.name, lines + [line])
            if journal_size(trial, room.name) > size:
                lines.append(line)
                break
        else:
            break
    return lines + ["%s> !standings" % room.person]


def dump(db, path):
    con = sqlite3.connect(db)
    version = con.execute("PRAGMA user_version").fetchone()[0]
    con.close()
    text = subprocess.run(["sqlite3", db, ".dump"], stdout=subprocess.PIPE, check=True).stdout.decode()
    with open(path, "w") as f:
        f.write("-- Journals written by cardroom 0.1.0: nine tables (304 and ContractGrid, before the start,\n"
                "-- bidding, in play with a card face down, after some hands, finished), made by make.py in\n"
                "-- this directory with `cardroom console --script --seed 7` of that release; `sqlite3 .dump`\n"
                "-- of its database, with the schema version.\n")
        f.write("PRAGMA user_version=%d;\n" % version)
        f.write(text)


MOVE_RE = re.compile(r"(?:\b(\w+) \((South|East|North|West|seat \d)(?:, away)?\)|\bcomputer \(?(South|East|North|"
                     r"West|seat \d)\)?) (plays|bids|passes|excludes|cuts|does not cut|calls)([^.!\u2014;\n]*)")
DEAL_RE = re.compile(r"^Hand (\d+) \u2014 dealer (?:\w+ \(|computer \(?)(South|East|North|West|seat \d)")


def moves(text):
    """The moves and deals a console transcript says in its rooms, in the words of any release:
    [(seat, verb, what)] and [("deal", hand, dealer)]."""
    out = []
    for line in text.splitlines():
        m = re.match(r"\[#[^\]]*\] (.*)$", line)
        if not m:
            continue
        body = m.group(1)
        d = DEAL_RE.match(body)
        if d:
            out.append(("deal", d.group(1), d.group(2)))
            continue  # the rest of a deal's line says who is to act, not a move
        for mv in MOVE_RE.finditer(body):
            out.append((mv.group(2) or mv.group(3), mv.group(4), mv.group(5).strip()))
    return out


def rewrite_words(cardroom):
    """--words: ROOM.out in CARDROOM's words, after checking it makes the same moves."""
    work = tempfile.mkdtemp(prefix="cardroom-fixture-")
    runner = Runner(os.path.abspath(cardroom), work)
    base = os.path.join(work, "base.db")
    con = sqlite3.connect(base)
    with open(os.path.join(HERE, "tables.sql")) as f:
        con.executescript(f.read())
    con.close()
    for name in sorted(os.listdir(HERE)):
        if not name.endswith(".in"):
            continue
        room = name[:-3]
        with open(os.path.join(HERE, name)) as f:
            lines = f.read().splitlines()
        with open(os.path.join(HERE, room + ".out")) as f:
            before = f.read()
        db = os.path.join(work, "words.db")
        shutil.copy(base, db)
        said = runner.run(db, room, lines)
        if moves(said) != moves(before) or not moves(said):
            sys.exit("%s: %s does not make the moves of %s.out:\n%s\n%s" % (room, cardroom, room, moves(before),
                                                                            moves(said)))
        with open(os.path.join(HERE, room + ".out"), "w") as f:
            f.write(said)
    shutil.rmtree(work)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--words":
        rewrite_words(sys.argv[2])
        return
    if len(sys.argv) != 2:
        sys.exit("usage: make.py CARDROOM | make.py --words CARDROOM")
    work = tempfile.mkdtemp(prefix="cardroom-fixture-")
    runner = Runner(os.path.abspath(sys.argv[1]), work)
    db = os.path.join(work, "tables.db")
    made = rooms(lambda: db)
    for room in made:
        room.said += runner.run(db, room.name, room.setup)
        play(runner, db, room, work)
    sql = os.path.join(HERE, "tables.sql")
    dump(db, sql)

    base = os.path.join(work, "base.db")
    con = sqlite3.connect(base)
    with open(sql) as f:
        con.executescript(f.read())
    con.close()
    for room in made:
        if closed(base, room.name):
            continue
        lines = next_lines(runner, base, room, work)
        expect = os.path.join(work, "expect.db")
        shutil.copy(base, expect)
        said = runner.run(expect, room.name, lines)
        with open(os.path.join(HERE, room.name + ".in"), "w") as f:
            f.write("".join(line + "\n" for line in lines))
        with open(os.path.join(HERE, room.name + ".out"), "w") as f:
            f.write(said)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
