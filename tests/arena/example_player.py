#!/usr/bin/env python3
"""An outside 304 player for `cardroom arena --a exec:...` (README.md, "The exec protocol").

Reads one request per line (JSON: the seat, its view, its legal moves) and answers one action per
line in the replay format: the weakest card it may play, and a pass or its first legal move otherwise."""
import json
import sys

POWER = {"7": 0, "8": 1, "Q": 2, "K": 3, "T": 4, "A": 5, "9": 6, "J": 7}  # R-CARDS, low to high

for line in sys.stdin:
    request = json.loads(line)
    legal = request["legal"]
    plays = [m for m in legal if m["do"] == "play"]
    if plays:
        move = min(plays, key=lambda m: POWER[m["card"][0]])
    else:
        move = next((m for m in legal if m["do"] == "pass"), legal[0])
    move["seat"] = request["seat"]
    print(json.dumps(move), flush=True)
