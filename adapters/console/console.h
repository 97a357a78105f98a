/* console.h — the console adapter: a 304 table in the terminal (design.md, Fixed interfaces 2).
 *
 * The room is stdout lines starting "[#ROOM] ", a private message to user U is a line starting
 * "[@U] " (a message of several lines gives several prefixed lines). Interactively the terminal
 * user is "you" (config [console] user); a line is a command to the room ("bid 160", the
 * prefix is optional here) and "/msg TEXT" sends TEXT to the bot privately; with no open table
 * one is opened with you at South (seat 1 with six players) and computer players in the other
 * seats. With --script every
 * input line is "USER> TEXT" (room) or "USER>> TEXT" (privately to the bot); blank lines and
 * lines starting with '#' are skipped; the bot finishes all computer moves before it reads the
 * next line, so a script always plays out the same way. The position (lines handled) is kept
 * with the state, so after a crash the same script resumes where it stopped. */
#ifndef CARDROOM_CONSOLE_H
#define CARDROOM_CONSOLE_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"

typedef struct {
    int script;         /* --script */
    int fixed_seed;     /* --seed N given */
    int players;        /* --players: the table opened for you, 4 or 6 (0: four) */
    uint64_t seed;
    const char *db;     /* database path (NULL: the config's; scripts default to ":memory:") */
    FILE *in, *out, *err;
} console_options;

/* Runs until the input ends (or, interactively, the match ends and the input ends). Returns
 * the process exit status: 0, 1 (store or setup failure), 2 (a malformed script line). */
int console_run(const cfg *config, const console_options *o);

#endif
