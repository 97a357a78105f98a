"""A player's direct chat with the bot is made once, even when the answer to POST /createRoom
never reaches the bot: the real bot (`cardroom run`) against the fake homeserver.

  * killed while the answer is on its way: the fake makes the room at once and holds the
    answer back (a `slow` fault with `process`); the bot is SIGKILLed once the room exists and
    started again; it takes that room (its m.room.create carries the nonce the bot stored
    before asking) and makes no other;
  * the connection drops halfway through the answer, after the room was made (a `drop` fault,
    processed first): the bot does not know whether the room exists, finds it in its next
    sync (which asks for the full state at once), and makes no other.

In both, alice's cards then arrive in that one direct chat, and the bot's log says it took it.

Run:  python3 -m unittest tests/matrix/test_matrix_direct_once.py -v
"""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Harness, bot_binary  # noqa: E402

CREATE = r"^/_matrix/client/v3/createRoom"
OPEN = ["!new 304", "!join", "!bot", "!bot", "!bot", "!start"]   # alice and three computers
TAKEN = "made earlier (its answer never came) is taken instead of a new one"


def setUpModule():
    if not os.access(bot_binary(), os.X_OK):
        raise unittest.SkipTest(f"{bot_binary()} is not built (ninja -C build)")


class DirectChatOnceTest(unittest.TestCase):
    def start(self, h):
        h.make_people(("alice",))
        room = h.game_room(members=())
        h.start_bot(h.write_config())
        h.wait_bot_membership(room)
        return room

    def cards_in(self, h, dm):
        """alice's first cards, said in dm."""
        def said():
            return [e for e in h.bot_events(dm) if "Your first four cards" in e["content"].get("body", "")]
        return h.wait_for(said, 45, "alice's cards in her direct chat")

    def test_killed_while_the_answer_is_held(self):
        h = Harness(self)
        room = self.start(h)
        h.server.add_faults({"method": "POST", "path_regex": CREATE, "action": "slow", "process": True,
                             "delay_ms": 60000})
        for text in OPEN[:-1]:
            h.say_and_wait("alice", room, text)
        h.say("alice", room, OPEN[-1])          # the deal: her cards need a direct chat
        dm = h.wait_for(lambda: (h.dm_rooms("alice") or [None])[0], 45,
                        "the direct chat the fake made (its answer held back)")
        bot = h.bot
        bot.expected_down = True
        bot.kill()
        h.server.clear_faults()
        h.reset_log()
        restarted = time.time() * 1000
        bot.start()
        bot.expected_down = False
        self.cards_in(h, dm)
        self.assertEqual(h.dm_rooms("alice"), [dm], "a second direct chat was made")
        asked = [e for e in h.requests("POST", CREATE) if e["ts"] >= restarted]   # not the held one
        self.assertEqual(asked, [], "the bot asked for another room")
        self.assertIn(TAKEN, bot.stderr())
        h.stop_bot()

    def test_the_answer_is_lost_on_the_way(self):
        h = Harness(self)
        room = self.start(h)
        h.reset_log()                           # the requests from here on are the bot's
        h.server.add_faults({"method": "POST", "path_regex": CREATE, "action": "drop"})
        for text in OPEN:
            h.say_and_wait("alice", room, text)
        dm = h.wait_for(lambda: (h.dm_rooms("alice") or [None])[0], 45, "the direct chat")
        self.cards_in(h, dm)
        self.assertEqual(h.dm_rooms("alice"), [dm], "a second direct chat was made")
        self.assertEqual(len(h.requests("POST", CREATE)), 1, "the bot asked for another room")
        self.assertIn(TAKEN, h.bot.stderr())
        h.stop_bot()


if __name__ == "__main__":
    unittest.main()
