/* fuzz_card.c — libFuzzer target for the card and suit readers (card_parse, suit_parse), the
 * first thing chat input reaches. Besides not crashing, a card it accepts must be a real card
 * whose canonical and pretty texts read back as the same card, and a refusal must come with
 * a one-line message. */
#include <string.h>

#include "cards.h"
#include "fuzz_init.h"

static void check_round_trip(card_t c)
{
    char pretty[CARD_TEXT_MAX];
    const char *canon = card_str(c);
    card_t back = CARD_NONE;
    if (card_parse(canon, strlen(canon), &back, NULL, 0) != 0 || back != c) abort();
    card_pretty(c, pretty);
    if (card_parse(pretty, strlen(pretty), &back, NULL, 0) != 0 || back != c) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    card_t c = CARD_NONE;
    char err[160];
    if (card_parse(text, size, &c, err, sizeof err) == 0) {
        if (c >= CARD_COUNT) abort();
        check_round_trip(c);
    } else if (strchr(err, '\n') || strlen(err) == 0) {
        abort();
    }
    int suit = -1;
    if (suit_parse(text, size, &suit) == 0 && (suit < 0 || suit >= SUIT_COUNT)) abort();
    return 0;
}
