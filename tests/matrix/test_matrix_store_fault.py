"""The bot on Matrix when its database cannot be written: the real bot (`cardroom run`) against
the fake homeserver, and another process (this test) holding the database's write lock.

A match goes on for a few lines; then the test takes the write lock (BEGIN IMMEDIATE) and alice
sends commands. The bot's next write waits out SQLite's busy timeout and fails: the bot tells
the room once that it takes no commands, and syncs no more. Once that notice is in the room the
test lets the lock go; the bot tries again, says in the room that it works again, asks for the
same /sync again from the last next_batch it stored, and answers what was sent meanwhile. Apart
from the two notices, the room and the direct chats then hold exactly what `cardroom console
--script --seed 1` prints for the same lines, and the log says it once each.

One bot per database: a second `cardroom run` on the database of a running bot stops at once
with exit status 3, naming the first one's process, which goes on.

Run:  python3 -m unittest tests/matrix/test_matrix_store_fault.py -v
"""

import os
import sqlite3
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Harness, Transcript, bot_binary, console_reference, read_script  # noqa: E402

DOWN = "I cannot write to my database (another program holds the database)"
UP = "My database works again"


def setUpModule():
    if not os.access(bot_binary(), os.X_OK):
        raise unittest.SkipTest(f"{bot_binary()} is not built (ninja -C build)")


class StoreFaultTest(unittest.TestCase):
    maxDiff = None

    def test_a_held_write_lock_is_waited_out(self):
        h = Harness(self)
        h.make_people()
        room = h.game_room()
        h.start_bot(h.write_config())
        h.wait_bot_membership(room)
        lines = read_script(limit=14)            # the table opened, the deal, some bids
        h.play(lines[:10], room)

        lock = sqlite3.connect(h.bot.db, timeout=30, isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        for line in lines[10:]:                  # kept by the bot while it cannot write
            target = h.dm_room(line.user) if line.private else room
            h.say(line.user, target, line.text)

        def notices(text):
            return [e for e in h.bot_events(room) if e["content"].get("body", "").startswith(text)]
        h.wait_for(lambda: notices(DOWN), 60, "the bot's word that it cannot write")
        lock.execute("ROLLBACK")
        lock.close()
        h.wait_for(lambda: notices(UP), 60, "the bot's word that it works again")

        want = console_reference(lines)

        def without_notices():
            got = h.transcript(room, sorted(want.private))
            return Transcript([x for x in got.room if not x.startswith((DOWN, UP))], got.private)
        deadline = h.deadline(60)
        while True:
            seen = h.news_seen()
            if not h.mismatch(without_notices(), want) or not h.await_news(seen, deadline):
                break
        problem = h.mismatch(without_notices(), want)
        if problem:
            h.fail("after the store worked again the bot's messages differ from the console's:\n" + problem)
        self.assertEqual((len(notices(DOWN)), len(notices(UP))), (1, 1))
        log = h.bot.stderr()
        self.assertEqual(log.count("store failed during"), 1, log)
        self.assertEqual(log.count("the store works again"), 1, log)
        h.stop_bot()

    def test_a_second_bot_on_the_same_database_is_refused(self):
        h = Harness(self)
        h.make_people()
        room = h.game_room()
        config = h.write_config()
        first = h.start_bot(config)
        h.wait_bot_membership(room)              # it runs: the database is its own by now
        second = subprocess.run([bot_binary(), "run", "--config", config, "--db", first.db, "--seed", "1"],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, env=h.bot_env(),
                                cwd=h.dir, timeout=60)
        self.assertEqual(second.returncode, 3, second.stderr)
        self.assertIn(f"{first.db} is in use by another cardroom (process {first.proc.pid}): one bot per database",
                      second.stderr)
        self.assertTrue(first.alive(), "the first bot stopped")
        h.stop_bot()


if __name__ == "__main__":
    unittest.main()
