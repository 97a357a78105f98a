/* fuzz_command.c — libFuzzer target for chat commands (cmd_parse_pack), the parser every room
 * and private message reaches. Each input is read with two prefixes ("!" and a longer "cr:"), in
 * a room and in private, with the 32-card pack and the 36-card pack of six-player tables.
 * Besides not crashing, every result must keep the promises of command.h: a known kind; a
 * refusal with a one-line, terminated message; real cards of the pack, seats, suits, bids and
 * players; a caps order of at most 8 distinct cards. Help for the command word must not crash. */
#include <string.h>

#include "command.h"
#include "fuzz_init.h"
#include "g304.h"

static int terminated(const char *s, size_t cap) { return memchr(s, 0, cap) != NULL; }

/* Messages go out to Matrix and IRC as they are: they must be whole UTF-8. */
static int utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int k = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0) return 0;
        for (int i = 1; i < k; i++)
            if ((p[i] & 0xC0) != 0x80) return 0;
        p += k;
    }
    return 1;
}

static void check_caps(const cmd *c, int pack)
{
    cardset_t seen = 0;
    if (c->ncards > 8) abort();
    for (unsigned i = 0; i < c->ncards; i++) {
        if (c->cards[i] >= pack || (seen & CARDSET_BIT(c->cards[i]))) abort();
        seen |= CARDSET_BIT(c->cards[i]);
    }
}

static void check(const cmd *c, int pack)
{
    char help[64];
    if ((int)c->kind < CMD_NONE || c->kind >= CMD_KIND_COUNT || c->pack != pack) abort();
    if (!terminated(c->err, sizeof c->err) || !terminated(c->word, sizeof c->word) ||
        !terminated(c->arg, sizeof c->arg) || !terminated(c->arg2, sizeof c->arg2))
        abort();
    if (c->kind == CMD_BAD && (c->err[0] == 0 || strchr(c->err, '\n') || strchr(c->err, '\r') || !utf8(c->err)))
        abort();
    if (c->kind != CMD_BAD && c->err[0]) abort();
    switch (c->kind) {
    case CMD_PLAY:
    case CMD_TRUMP: if (c->card >= pack) abort(); break;
    case CMD_CAPS: check_caps(c, pack); break;
    case CMD_NEW: if (c->amount != 0 && c->amount != 4 && c->amount != 6) abort(); break;
    case CMD_JOIN:
    case CMD_BOT: if (c->seat < -1 || c->seat > 5) abort(); break;
    case CMD_BID: if (c->amount != G304_PCC && (c->amount < 160 || c->amount > 300)) abort(); break;
    case CMD_CUT: if (c->amount >= pack) abort(); break;
    case CMD_EXCLUDE: if (c->suit < 0 || c->suit >= SUIT_COUNT) abort(); break;
    case CMD_HELP:
        if (c->arg[0] && !cmd_help(c->arg, "!", help, sizeof help)) abort();
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const prefixes[] = {"!", "cr:"};
    char buf[512];
    cmd c;
    static const int packs[] = {CARD_COUNT, CARD_IDS};
    for (int p = 0; p < 2; p++)
        for (int opt = 0; opt < 2; opt++)
            for (int k = 0; k < 2; k++) {
                cmd_parse_pack((const char *)data, size, prefixes[p], opt, packs[k], &c);
                check(&c, packs[k]);
            }
    /* The input as a help topic: NUL-terminated copy, any answer is fine but must fit. */
    size_t n = size < sizeof buf - 1 ? size : sizeof buf - 1;
    char topic[sizeof buf];
    memcpy(topic, data, n);
    topic[n] = 0;
    if (cmd_help(topic, "!", buf, sizeof buf) && !terminated(buf, sizeof buf)) abort();
    return 0;
}
