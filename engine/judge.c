/* judge.c — the Caps judge around g304_apply(): checks a call's stated order when it is made,
 * records when Caps first became certain for each seat (four or six), and puts the verdict into
 * words. */
#include "judge.h"

#include <stdio.h>
#include <string.h>

static uint8_t verdict_of(caps_verdict v)
{
    return v == CAPS_CERTAIN ? G304_CALL_CERTAIN : v == CAPS_NOT_CERTAIN ? G304_CALL_NOT_CERTAIN : G304_CALL_UNKNOWN;
}

/* Whether judge_update() searches for seat s: Caps is open to it and not yet found certain. */
static int unjudged(const g304_state *st, int s)
{
    return st->certain_at[s] == G304_NEVER && g304_caps_open_for(st, s);
}

void judge_update(caps_solver *w, g304_state *st)
{
    for (int s = 0; s < g304_seats(&st->rules); s++) {
        if (!unjudged(st, s)) continue;
        card_t order[G304_TRICKS];
        int n;
        if (caps_check(w, st, s, NULL, 0, order, &n) != CAPS_CERTAIN) continue;
        st->certain_at[s] = (uint8_t)g304_cards_played(st);
        st->certain_n[s] = (uint8_t)n;
        memcpy(st->certain_order[s], order, (size_t)n);
    }
}

g304_code judge_apply(caps_solver *w, g304_state *st, int seat, const g304_action *a, g304_events *ev,
                      g304_error *err)
{
    g304_code c;
    if (a->kind == G304_DO_CAPS && seat >= 0 && seat < g304_seats(&st->rules) && g304_may_caps(st, seat)) {
        /* judged as the caller knew things just before his call, on the order he stated */
        g304_state after = *st;
        card_t order[G304_TRICKS];
        int n;
        after.call_verdict = verdict_of(caps_check(w, st, seat, a->order, a->n, order, &n));
        c = g304_apply(&after, seat, a, ev, err);
        if (c == G304_OK) *st = after;
    } else {
        c = g304_apply(st, seat, a, ev, err);
    }
    if (c == G304_OK) judge_update(w, st);
    return c;
}

int judge_would_search(const g304_state *st, int seat, const g304_action *a)
{
    if (a->kind == G304_DO_CAPS && seat >= 0 && seat < g304_seats(&st->rules) && g304_may_caps(st, seat)) return 1;
    g304_state after = *st;
    if (g304_apply(&after, seat, a, NULL, NULL) != G304_OK) return 0;
    for (int s = 0; s < g304_seats(&after.rules); s++)
        if (unjudged(&after, s)) return 1;
    return 0;
}

static const char *ordinal(int n)
{
    static const char *const words[] = {"0th", "1st", "2nd", "3rd", "4th", "5th"};
    return n >= 0 && n <= 5 ? words[n] : "?";
}

/* "after the 3rd card of trick 4" or "before trick 5" for a moment counted in cards played, with
 * `per` cards to a trick. */
static void moment_text(int played, int per, char *buf, size_t len)
{
    if (played % per == 0)
        snprintf(buf, len, "before the first card of trick %d", played / per + 1);
    else
        snprintf(buf, len, "after the %s card of trick %d", ordinal(played % per), played / per + 1);
}

const char *judge_describe(const g304_state *st, const g304_event *e, const char *const *names, char *buf,
                           size_t len)
{
    char when[64], order[96] = "";
    size_t used = 0;
    for (int i = 0; i < e->n; i++) {
        char one[CARD_TEXT_MAX];
        int k = snprintf(order + used, sizeof order - used, "%s%s", i ? " " : "", card_pretty(e->cards[i], one));
        if (k < 0 || (size_t)k >= sizeof order - used) break;
        used += (size_t)k;
    }
    const g304_result *r = &st->result;
    int caller = e->other;
    char head[200];
    if (e->seat != G304_NO_SEAT) {
        moment_text(e->amount, g304_trick_size(st), when, sizeof when);
        snprintf(head, sizeof head, "Caps was certain for %s %s: %s", names[e->seat], when, order);
    } else { /* a call came before anybody of the team could be certain; the judge stops there */
        snprintf(head, sizeof head, "Caps was not certain for %s when the call came", names[caller]);
    }
    const char *tail;
    char tailbuf[160];
    if (caller == G304_NO_SEAT) {
        tail = e->flag == G304_WRONG_MISSING ? " \xE2\x80\x94 not called: Wrong Caps, \xE2\x88\x92" "2"
                                             : " \xE2\x80\x94 not called (External Caps: no penalty)";
    } else {
        const char *how = e->flag == G304_WRONG_EARLY  ? "too early"
                          : e->flag == G304_WRONG_LATE ? "too late"
                          : st->call_verdict == G304_CALL_UNKNOWN ? "(the game could not judge it in time: no penalty)"
                                                                 : "on time";
        if (!r->caps_won)
            snprintf(tailbuf, sizeof tailbuf, " \xE2\x80\x94 %s called Caps %s and then lost a trick: \xE2\x88\x92" "5",
                     names[caller], how);
        else if (e->flag != G304_WRONG_NONE)
            snprintf(tailbuf, sizeof tailbuf, " \xE2\x80\x94 %s called Caps %s: Wrong Caps, \xE2\x88\x92" "2", names[caller],
                     how);
        else
            snprintf(tailbuf, sizeof tailbuf, " \xE2\x80\x94 %s called Caps %s%s", names[caller], how,
                     r->caps_bonus ? ": +1" : "");
        tail = tailbuf;
    }
    snprintf(buf, len, "%s%s", head, tail);
    return buf;
}
