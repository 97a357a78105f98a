/* test_abuse.c — what keeps one person from disturbing everybody, and the bot's admins.
 *
 * Covers: the rate limit (one person flooding !table in ten rooms gets one notice and then
 * nothing until the pause is over; other people are not held up; moves count only when their
 * table refuses them, a six at a six-seat table too; admins are not limited), the cap on open
 * tables per person, the !admin commands and their refusals (not an admin, in a room, a wrong subcommand), closing a table (its results
 * stay in the standings), leaving a room through the adapter, ignoring and unignoring someone
 * (kept across a restart; an ignored person starts nothing), and a table closing at once when
 * the bot is no longer in its room. Every admin action is logged. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "g304.h"
#include "game304.h"
#include "table.h"
#include "test_journal.h"
#include "test_rig.h"

#define ADMIN "root"

TestSuite(abuse, .timeout = 120);

/* Limits small enough to reach: 8 commands a minute (a table is opened with 6), a 2-minute
 * pause, 2 tables a person. */
static void start(rig *r)
{
    rig_init(r, 0, ":memory:");
    r->conf.rate_commands = 8;
    r->conf.rate_seconds = 60;
    r->conf.rate_pause = 120;
    r->conf.tables_per_user = 2;
    snprintf(r->conf.admins, sizeof r->conf.admins, "@someone:example.org, %s", ADMIN);
    rig_core(r);
}

static void say(rig *r, const char *user, const char *room, const char *text)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .room = room, .sender = user, .text = text};
    rig_batch(r, &e, 1);
}

static void whisper(rig *r, const char *user, const char *text)
{
    adapter_event e = {.kind = ADAPTER_MESSAGE, .sender = user, .text = text, .is_private = 1};
    rig_batch(r, &e, 1);
}

/* ---- what the bot said ---- */

typedef struct {
    const char *room, *user, *needle;
    int n;
} heard_count;

static int hear_needle(void *ctx, const store_msg *m)
{
    heard_count *h = ctx;
    h->n += strcmp(m->room, h->room) == 0 && strcmp(m->user, h->user) == 0 && strstr(m->text, h->needle);
    return 0;
}

/* Messages so far to room or user that contain needle. */
static int heard_with(rig *r, const char *room, const char *user, const char *needle)
{
    heard_count h = {room, user, needle, 0};
    rig_outbox_each(r, hear_needle, &h);
    return h.n;
}

static int count_open(void *ctx, const store_table *t)
{
    (void)t;
    ++*(int *)ctx;
    return 0;
}

static int open_tables(rig *r)
{
    int n = 0;
    cr_assert_eq(store_tables_open(r->db, count_open, &n), 0);
    return n;
}

/* alice opens a 304 table of players seats in room, fills the others with computer players
 * and starts it: 6 commands for four seats, 8 for six. */
static void alice_table_of(rig *r, const char *room, int players)
{
    say(r, "alice", room, players == 6 ? "!new 304 6" : "!new 304");
    say(r, "alice", room, "!join 1");
    for (int i = 1; i < players; i++) say(r, "alice", room, "!bot");
    say(r, "alice", room, "!start");
    rig_idle(r);
}

static void alice_table(rig *r, const char *room) { alice_table_of(r, room, 4); }

/* ---- the rate limit ---- */

Test(abuse, flooding_ten_rooms_gets_one_notice_then_silence)
{
    rig r;
    start(&r);
    char rooms[10][8];
    for (int k = 0; k < 10; k++) {
        snprintf(rooms[k], sizeof rooms[k], "#r%d", k);
        say(&r, "flood", rooms[k], "!table");
    }
    int answered = 0;
    for (int k = 0; k < 8; k++) answered += rig_heard(&r, rooms[k], "").n;
    cr_expect_eq(answered, 8, "the first eight commands are answered");
    rig_said h = rig_heard(&r, rooms[8], "");
    cr_expect_eq(h.n, 1, "the ninth gets one notice");
    cr_expect(strstr(h.last, "flood: you are sending me commands faster than I take them, so I will not answer you "
                             "for the next 2 minutes."), "%s", h.last);
    cr_expect_eq(rig_heard(&r, rooms[9], "").n, 0, "then nothing");
    cr_expect(strstr(r.last_info, "flood on mem gave more than 8 commands in 60 s: ignored for 2 minutes"), "%s",
              r.last_info);
    say(&r, "flood", "#r0", "hello, is anybody there?");
    say(&r, "calm", "#r9", "!table");
    cr_expect_eq(rig_heard(&r, "#r9", "").n, 1, "another person is answered");
    r.now += 119 * 1000;
    say(&r, "flood", "#r9", "!table");
    cr_expect_eq(rig_heard(&r, "#r9", "").n, 1, "still paused after 119 s");
    r.now += 1000;
    say(&r, "flood", "#r9", "!table");
    cr_expect_eq(rig_heard(&r, "#r9", "").n, 2, "answered again once the pause is over");
    for (int k = 0; k < 10; k++) say(&r, ADMIN, rooms[k], "!table");
    cr_expect_eq(rig_heard(&r, "#r9", "").n, 3, "an admin is not limited");
    rig_stop(&r);
}

static int stored_seed(void *ctx, int64_t id, int hand_no, uint8_t seed[STORE_SEED_BYTES])
{
    return store_hand_seed(((rig *)ctx)->db, id, hand_no, seed) == 0 ? 0 : -1;
}

/* alice's first legal move at table id as a command (privately: plays and the indicator), or
 * 0 when it is not her turn; with sixes set, a move with a six when she has one. */
static int alice_move_of(rig *r, int64_t id, int sixes, char *text, size_t len, int *private)
{
    caps_solver *judge = caps_solver_new(0);
    table t;
    char err[256];
    table_env env = {.judge = judge, .seed = stored_seed, .ctx = r, .prefix = "!", .private_how = ""};
    journal_entries e = journal_read(r->db, id);
    table_init(&t, id, RIG_NET, "#cards", "alice");
    cr_assert_eq(table_set_game(&t, "304", &r->conf), 0);
    for (int k = 0; k < e.n; k++) cr_assert_eq(table_exec(&t, &env, e.v[k], NULL, err, sizeof err), 0, "%s", err);
    journal_free(&e);
    caps_solver_free(judge);
    const g304_state *s = &game304_of(&t)->st;
    g304_action legal[G304_MAX_LEGAL];
    int n = t.over || s->to_act != 0 ? 0 : g304_legal(s, 0, legal);
    if (n == 0) return 0;
    g304_action m = legal[0];
    for (int i = 0; sixes && i < n; i++)
        if ((legal[i].kind == G304_DO_TRUMP || legal[i].kind == G304_DO_PLAY) && card_str(legal[i].card)[0] == '6') {
            m = legal[i];
            break;
        }
    *private = m.kind == G304_DO_TRUMP || m.kind == G304_DO_PLAY;
    switch (m.kind) {
    case G304_DO_BID: snprintf(text, len, "!bid %d", m.amount); break;
    case G304_DO_TRUMP: snprintf(text, len, "trump %s", card_str(m.card)); break;
    case G304_DO_PLAY: snprintf(text, len, "play %s", card_str(m.card)); break;
    default: snprintf(text, len, "!%s", g304_do_name(m.kind)); break;
    }
    return 1;
}

static int alice_move(rig *r, int64_t id, char *text, size_t len, int *private)
{
    return alice_move_of(r, id, 0, text, len, private);
}

Test(abuse, moves_a_table_takes_do_not_count)
{
    rig r;
    start(&r);
    alice_table(&r, "#cards");
    int moves = 0;
    char text[64];
    int private;
    while (moves < 12 && alice_move(&r, 1, text, sizeof text, &private)) {
        int before = rig_heard(&r, "#cards", "").n;
        if (private) whisper(&r, "alice", text);
        else say(&r, "alice", "#cards", text);
        cr_assert_gt(rig_heard(&r, "#cards", "").n, before, "move %d (%s) was not taken", moves + 1, text);
        rig_idle(&r);
        moves++;
    }
    cr_expect_geq(moves, 10, "alice made %d moves with 2 commands left of 8", moves);
    r.now += 60 * 1000; /* a full bucket again */
    int before = rig_heard(&r, "#cards", "").n;
    for (int i = 0; i < 8; i++) say(&r, "alice", "#cards", "!last");
    cr_expect_eq(rig_heard(&r, "#cards", "").n, before + 8, "the questions are answered");
    cr_expect_null(strstr(rig_heard(&r, "#cards", "").last, "faster"));
    say(&r, "alice", "#cards", "!last");
    cr_expect(strstr(rig_heard(&r, "#cards", "").last, "faster than I take them"), "the ninth question is one too many");
    rig_stop(&r);
}

Test(abuse, a_six_played_at_a_six_seat_table_does_not_count)
{
    rig r;
    start(&r);
    alice_table_of(&r, "#cards", 6); /* the whole bucket: one more command counted is over the limit */
    int moves = 0, sixes = 0;
    char text[64];
    int private;
    while (sixes < 3 && moves < 400) {
        cr_assert(alice_move_of(&r, 1, 1, text, sizeof text, &private), "no move for alice after %d", moves);
        int before = rig_heard(&r, "#cards", "").n;
        if (private) whisper(&r, "alice", text);
        else say(&r, "alice", "#cards", text);
        cr_assert_gt(rig_heard(&r, "#cards", "").n, before, "move %d (%s) was not taken", moves + 1, text);
        sixes += strstr(text, " 6") != NULL;
        rig_idle(&r);
        moves++;
    }
    cr_expect_eq(sixes, 3, "alice played %d sixes in %d moves", sixes, moves);
    rig_stop(&r);
}

Test(abuse, refused_moves_count)
{
    rig r;
    start(&r);
    alice_table(&r, "#cards");
    say(&r, "bob", "#cards", "!bid 160");
    cr_expect_str_eq(rig_heard(&r, "#cards", "").last, "bob: you are not playing at this table (!join to sit down).");
    say(&r, "bob", "#cards", "!pass");
    say(&r, "bob", "#cards", "JH");
    cr_expect(strstr(rig_heard(&r, "#cards", "").last, "bob: you are not playing"), "a card alone is chat: no answer");
    for (int i = 0; i < 7; i++) say(&r, "bob", "#cards", "!bid 170");
    cr_expect(strstr(rig_heard(&r, "#cards", "").last, "bob: you are sending me commands faster than I take them"),
              "the ninth refused move is over the limit: %s", rig_heard(&r, "#cards", "").last);
    int heard = rig_heard(&r, "#cards", "").n;
    say(&r, "bob", "#cards", "!bid 180");
    cr_expect_eq(rig_heard(&r, "#cards", "").n, heard, "then his refusals are not said");
    rig_stop(&r);
}

/* ---- the cap on open tables ---- */

Test(abuse, a_person_may_open_only_so_many_tables)
{
    rig r;
    start(&r);
    r.conf.rate_commands = 0;
    say(&r, "alice", "#a", "!new 304");
    say(&r, "alice", "#b", "!new grid");
    say(&r, "alice", "#c", "!new 304");
    cr_expect_eq(open_tables(&r), 2);
    cr_expect_str_eq(rig_heard(&r, "#c", "").last,
                     "alice: you have 2 open tables, the most one person may open: finish or !abort one first.");
    say(&r, "alice", "#a", "!new 304");
    cr_expect(strstr(rig_heard(&r, "#a", "").last, "is already open here"), "still one table per room");
    say(&r, "bob", "#c", "!new 304");
    cr_expect_eq(open_tables(&r), 3, "the cap is per person");
    say(&r, "alice", "#a", "!abort");
    say(&r, "alice", "#d", "!new 304");
    cr_expect_eq(open_tables(&r), 3, "a closed table no longer counts");
    cr_expect_eq(core_table_of(r.core, RIG_NET, "#d"), 4);
    say(&r, ADMIN, "#e", "!new 304");
    say(&r, ADMIN, "#f", "!new 304");
    say(&r, ADMIN, "#g", "!new 304");
    cr_expect_eq(open_tables(&r), 6, "admins are not capped");
    rig_stop(&r);
}

/* ---- admins ---- */

Test(abuse, admin_refusals)
{
    rig r;
    start(&r);
    whisper(&r, "mallory", "!admin list");
    cr_expect_str_eq(rig_heard(&r, "", "mallory").last, "only the bot's admins may use !admin.");
    cr_expect(strstr(r.last_info, "mallory on mem is not an admin and was refused !admin list"), "%s", r.last_info);
    say(&r, "mallory", "#a", "!admin close 1");
    cr_expect_str_eq(rig_heard(&r, "#a", "").last, "mallory: !admin works only in a private message to me.");
    say(&r, ADMIN, "#a", "!admin list");
    cr_expect_str_eq(rig_heard(&r, "#a", "").last, ADMIN ": !admin works only in a private message to me.");
    whisper(&r, ADMIN, "admin frob");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last,
                     "admin takes list, close TABLE, leave ROOM, ignore USER or unignore USER: see !help admin");
    whisper(&r, ADMIN, "admin close twelve");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "admin close takes a table number, like !admin close 12");
    whisper(&r, ADMIN, "admin close 7");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "there is no open table 7: !admin list shows them.");
    whisper(&r, "@someone:example.org", "admin list");
    cr_expect_str_eq(rig_heard(&r, "", "@someone:example.org").last, "No table is open.");
    whisper(&r, "@SOMEONE:example.org", "admin list");
    cr_expect_str_eq(rig_heard(&r, "", "@SOMEONE:example.org").last, "only the bot's admins may use !admin.",
                     "a Matrix user id must match exactly");
    whisper(&r, "ROOT", "admin list");
    cr_expect_str_eq(rig_heard(&r, "", "ROOT").last, "No table is open.", "an IRC name in any case");
    rig_stop(&r);
}

static int standing_of(rig *r, const char *room, const char *user, store_standing *row)
{
    int rc = store_standing_get(r->db, RIG_NET, room, user, row);
    cr_assert_geq(rc, 0);
    return rc == 0;
}

Test(abuse, admin_lists_and_closes_tables_results_stay)
{
    rig r;
    start(&r);
    alice_table(&r, "#cards");
    say(&r, "bob", "#other", "!new grid");
    say(&r, "bob", "#other", "!join");
    whisper(&r, ADMIN, "admin list");
    const char *list = rig_heard(&r, "", ADMIN).last;
    cr_expect(strstr(list, "Open tables: 2"), "%s", list);
    cr_expect(strstr(list, "\ntable 1 · mem #cards · 304, under way · alice, 3 computers · last move 0 min ago"),
              "%s", list);
    cr_expect(strstr(list, "\ntable 2 · mem #other · ContractGrid, not started · bob · last move 0 min ago"), "%s",
              list);

    /* alice goes away: the computers play on for her until a hand has been scored. */
    adapter_event gone = {.kind = ADAPTER_LEAVE, .room = "#cards", .sender = "alice"};
    rig_batch(&r, &gone, 1);
    store_standing before;
    for (int guard = 0; !standing_of(&r, "#cards", "alice", &before); guard++) {
        cr_assert_lt(guard, 100000);
        cr_assert_geq(core_tick(r.core), 0);
        cr_assert_geq(core_flush(r.core), 0);
    }
    cr_assert_eq(open_tables(&r), 2, "the match goes on");
    whisper(&r, ADMIN, "admin close 1");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "table 1 in #cards is closed; its results stay in the standings.");
    cr_expect_eq(heard_with(&r, "#cards", "", "A bot admin closes table 1; its results stay in the standings."), 1);
    cr_expect_str_eq(rig_heard(&r, "#cards", "").last, "The table is closed.");
    cr_expect(strstr(r.last_info, "admin root on mem closed table 1 (mem #cards)"), "%s", r.last_info);
    cr_expect_eq(open_tables(&r), 1);
    cr_expect_eq(core_table_of(r.core, RIG_NET, "#cards"), 0);
    rig_idle(&r);
    store_standing after;
    cr_assert(standing_of(&r, "#cards", "alice", &after));
    cr_expect_eq(memcmp(&before, &after, sizeof before), 0, "alice's standing is kept as it was");
    whisper(&r, ADMIN, "admin close 1");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "there is no open table 1: !admin list shows them.");
    rig_stop(&r);
}

Test(abuse, admin_makes_the_bot_leave_a_room)
{
    rig r;
    start(&r);
    alice_table(&r, "#cards");
    int room_before = rig_heard(&r, "#cards", "").n;
    whisper(&r, ADMIN, "admin leave #cards");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "I leave #cards and closed table 1.");
    cr_assert_eq(r.nleft, 1, "the adapter is asked to leave once the table's closing is stored");
    cr_expect_str_eq(r.left[0], "#cards");
    cr_expect_eq(rig_heard(&r, "#cards", "").n, room_before, "nothing more goes to the room");
    cr_expect(strstr(rig_heard(&r, "", "alice").last, "[#cards · table 1] The table is closed: a bot admin made me "
                                                     "leave that room. Its results stay in the standings."),
              "%s", rig_heard(&r, "", "alice").last);
    cr_expect(strstr(r.last_info, "admin root on mem made the bot leave #cards and closed table 1"), "%s",
              r.last_info);
    cr_expect_eq(open_tables(&r), 0);
    /* The network then reports the bot gone: nothing more happens. */
    adapter_event e = {.kind = ADAPTER_GONE, .room = "#cards", .sender = "cardroom"};
    rig_batch(&r, &e, 1);
    whisper(&r, ADMIN, "admin leave #empty");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "I leave #empty.");
    cr_expect_eq(r.nleft, 2);
    rig_stop(&r);
}

Test(abuse, a_table_closes_when_the_bot_is_removed_from_its_room)
{
    rig r;
    start(&r);
    alice_table(&r, "#cards");
    say(&r, "bob", "#cards", "!table");
    int room_before = rig_heard(&r, "#cards", "").n;
    adapter_event e = {.kind = ADAPTER_GONE, .room = "#cards", .sender = "cardroom"};
    rig_batch(&r, &e, 1);
    cr_expect_eq(open_tables(&r), 0, "closed at once, not after the idle timer");
    cr_expect_eq(rig_heard(&r, "#cards", "").n, room_before, "the room hears nothing: the bot is not there");
    cr_expect(strstr(rig_heard(&r, "", "alice").last, "[#cards · table 1] The table is closed: I am no longer in that "
                                                     "room. Its results stay in the standings."),
              "%s", rig_heard(&r, "", "alice").last);
    cr_expect_eq(rig_heard(&r, "", "bob").n, 0, "only the people seated are told");
    cr_expect(strstr(r.last_info, "no longer in #cards on mem: table 1 closes"), "%s", r.last_info);
    rig_stop(&r);
}

Test(abuse, ignored_people_start_nothing_until_unignored_even_after_a_restart)
{
    rig r;
    start(&r);
    whisper(&r, ADMIN, "admin ignore spammer");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "I ignore spammer from now on (!admin unignore spammer undoes it).");
    cr_expect(strstr(r.last_info, "admin root on mem ignores spammer"), "%s", r.last_info);
    whisper(&r, ADMIN, "admin ignore spammer");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "I already ignore spammer.");
    whisper(&r, ADMIN, "admin ignore @someone:example.org");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "@someone:example.org is one of my admins: I do not ignore admins.");
    say(&r, "spammer", "#a", "!new 304");
    say(&r, "spammer", "#a", "!help");
    whisper(&r, "spammer", "help");
    cr_expect_eq(open_tables(&r), 0, "an ignored person opens no table");
    cr_expect_eq(rig_heard(&r, "#a", "").n + rig_heard(&r, "", "spammer").n, 0, "and gets no answer");

    core_free(r.core); /* a restart: the store keeps the list */
    rig_core(&r);
    say(&r, "spammer", "#a", "!new 304");
    cr_expect_eq(open_tables(&r), 0, "still ignored after a restart");
    whisper(&r, ADMIN, "admin unignore spammer");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "I listen to spammer again.");
    cr_expect(strstr(r.last_info, "admin root on mem no longer ignores spammer"), "%s", r.last_info);
    whisper(&r, ADMIN, "admin unignore spammer");
    cr_expect_str_eq(rig_heard(&r, "", ADMIN).last, "I do not ignore spammer.");
    say(&r, "spammer", "#a", "!new 304");
    cr_expect_eq(open_tables(&r), 1, "heard again");
    rig_stop(&r);
}
