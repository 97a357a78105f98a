"""The bot on IRC when its database cannot be written: the real bot (`cardroom run`) on ngircd,
and another process (this test) holding the database's write lock.

The match of tests/matrix/match-seed1.txt goes on for ten lines; then the test takes the write
lock (BEGIN IMMEDIATE) and the players send four more lines. The bot's next write waits out
SQLite's busy timeout and fails: the bot tells the channel once that it takes no commands, and
keeps each line's events in order. Once that notice is read the test lets the lock go; the bot
tries again, says in the channel that it works again and hands the kept lines to the core one
by one. Apart from the two notices, the channel and each player's private messages then hold
exactly what `cardroom console --script --seed 1` prints for the same fourteen lines, and the
log says it once each.

Run:  python3 -m unittest tests/irc/test_irc_store_fault.py -v
"""

import os
import sqlite3
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import test_irc_bot as ib  # noqa: E402  (the bot, the clients, the match script)
from ircservers import ClientError, NgircdServer  # noqa: E402

DOWN = "I cannot write to my database (another program holds the database)"
UP = "My database works again"


class StoreFaultOnNgircd(ib.IrcTestCase):
    def setUp(self):
        super().setUp()
        self.server = NgircdServer().start()

    def tearDown(self):
        super().tearDown()
        self.server.cleanup(kill=True)

    def test_a_held_write_lock_is_waited_out(self):
        lines = ib.mh.read_script(limit=14)
        want = ib.mh.console_reference(lines)
        bot = self.bot({"server": "localhost", "port": self.server.port, "tls": "false", "nick": "cardroom",
                        "channels": ib.CHANNEL, "flood_burst": 10, "flood_interval_ms": 5})
        people = {}
        for name in ib.PLAYERS:
            people[name] = self.client(name)
            people[name].join(ib.CHANNEL)
        for c in people.values():
            self.wait_bot_in(c)

        def say(line):
            self.say(people[line.user], "cardroom" if line.private else ib.CHANNEL, line.text)
        for line in lines[:10]:
            say(line)
        lock = sqlite3.connect(bot.db, timeout=30, isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        for line in lines[10:]:
            say(line)

        def channel(c):
            return [ib.plain(m.params[1]) for m in c.received
                    if m.nick == "cardroom" and m.command == "NOTICE" and len(m.params) == 2
                    and m.params[0].lower() == ib.CHANNEL]
        alice = people["alice"]
        alice.read_until(lambda m: any(x.startswith(DOWN) for x in channel(alice)), timeout=60)
        lock.execute("ROLLBACK")
        lock.close()
        alice.read_until(lambda m: any(x.startswith(UP) for x in channel(alice)), timeout=60)

        def private(c):
            return ib.squash([ib.mh.normalize_private(ib.plain(m.params[1])) for m in list(c.received)
                              if m.nick == "cardroom" and m.command == "PRIVMSG" and len(m.params) == 2
                              and not m.params[0].startswith("#")])

        def heard():
            room = [x for x in channel(alice) if not x.startswith((DOWN, UP))]
            return ib.squash(room), {name: private(c) for name, c in people.items()}
        expected = ib.squash(want.room), {name: ib.squash(want.private.get(name, [])) for name in ib.PLAYERS}
        # Each client is waited for as its messages arrive (the assertion below names what differs).
        for name, c in people.items():
            def settled(m, name=name, c=c):
                return private(c) == expected[1][name] and (c is not alice or heard()[0] == expected[0])
            try:
                c._wait(settled, 120, 0, "the bot's lines after the store worked again")
            except ClientError:
                break
        self.assertEqual(heard(), expected, "what the bot said after the store worked again")
        self.assertEqual([x.startswith(DOWN) for x in channel(alice)].count(True), 1)
        self.assertEqual([x.startswith(UP) for x in channel(alice)].count(True), 1)
        self.assertEqual(bot.stop(), 0, bot.tail())
        log = bot.log_text()
        self.assertEqual(log.count("store failed during"), 1, log)
        self.assertEqual(log.count("the store works again"), 1, log)


if __name__ == "__main__":
    unittest.main()
