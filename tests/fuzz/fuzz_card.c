/* fuzz_card.c — libFuzzer target for the card and suit readers (card_parse, card_parse_pack,
 * suit_parse), the first thing chat input reaches. Besides not crashing, a card it accepts must
 * be a real card of its pack whose canonical and pretty texts read back as the same card, and a
 * refusal must come with a one-line message. The 36-card pack (the sixes) reads every 32-card
 * card the same, and the 32-card reader refuses a six. */
#include <string.h>

#include "cards.h"
#include "fuzz_init.h"

static void check_round_trip(card_t c, int pack)
{
    char pretty[CARD_TEXT_MAX];
    const char *canon = card_str(c);
    card_t back = CARD_NONE;
    if (card_parse_pack(canon, strlen(canon), pack, &back, NULL, 0) != 0 || back != c) abort();
    card_pretty(c, pretty);
    if (card_parse_pack(pretty, strlen(pretty), pack, &back, NULL, 0) != 0 || back != c) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    card_t c = CARD_NONE;
    char err[160];
    int ok32 = card_parse(text, size, &c, err, sizeof err) == 0;
    if (ok32) {
        if (c >= CARD_COUNT) abort();
        check_round_trip(c, CARD_COUNT);
    } else if (strchr(err, '\n') || strlen(err) == 0) {
        abort();
    }
    card_t c36 = CARD_NONE;
    if (card_parse_pack(text, size, CARD_IDS, &c36, err, sizeof err) == 0) {
        if (c36 >= CARD_IDS || (ok32 && c36 != c) || (!ok32 && c36 < CARD_COUNT)) abort();
        check_round_trip(c36, CARD_IDS);
    } else if (ok32 || strchr(err, '\n') || strlen(err) == 0) {
        abort();
    }
    int suit = -1;
    if (suit_parse(text, size, &suit) == 0 && (suit < 0 || suit >= SUIT_COUNT)) abort();
    return 0;
}
