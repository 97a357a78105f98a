/* test_mx_sync.c — reading /sync answers: which events reach the core, invites, direct chats,
 * names, power levels, and refusals of broken answers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "mx_sync.h"

TestSuite(mx_sync, .timeout = 30);

#define ME "@cardroom:example.org"
#define ROOM "!r:example.org"

/* Builds small events as JSON text. */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    static char bufs[64][2048];
    static int at;
    char *b = bufs[at++ % 64];
    va_list ap;
    va_start(ap, f);
    vsnprintf(b, sizeof bufs[0], f, ap);
    va_end(ap);
    return b;
}

static const char *member(const char *user, const char *ms, const char *name)
{
    return fmt("{\"type\":\"m.room.member\",\"state_key\":\"%s\",\"sender\":\"%s\",\"content\":{\"membership\":\"%s\"%s%s%s}}",
               user, user, ms, name ? ",\"displayname\":\"" : "", name ? name : "", name ? "\"" : "");
}

static const char *text(const char *user, const char *body) 
{
    return fmt("{\"type\":\"m.room.message\",\"sender\":\"%s\",\"content\":{\"msgtype\":\"m.text\",\"body\":\"%s\"}}", user, body);
}

static const char *power(int alice, int kick)
{
    return fmt("{\"type\":\"m.room.power_levels\",\"state_key\":\"\",\"sender\":\"@alice:example.org\",\"content\":"
               "{\"users\":{\"@alice:example.org\":%d},\"users_default\":0,\"kick\":%d}}", alice, kick);
}

/* One joined room with state and timeline events (JSON arrays' insides). */
static const char *joined(const char *room, const char *state, const char *timeline)
{
    return fmt("{\"next_batch\":\"s2_1\",\"rooms\":{\"join\":{\"%s\":{\"state\":{\"events\":[%s]},"
               "\"timeline\":{\"limited\":false,\"events\":[%s]}}}}}", room, state, timeline);
}

static void read_ok(mx_state *st, const char *json, int skip, mx_sync_out *o)
{
    char err[256];
    int rc = mx_sync_read(st, json, strlen(json), NULL, skip, o, err, sizeof err);
    cr_assert_eq(rc, 0, "refused: %s\n%s", err, json);
}

Test(mx_sync, messages_in_order_with_names_and_moderators)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    const char *state = fmt("%s,%s,%s,%s", power(100, 50), member("@alice:example.org", "join", "alice"),
                            member("@bob:example.org", "join", "bob"), member(ME, "join", NULL));
    read_ok(st, joined(ROOM, state, fmt("%s,%s", text("@alice:example.org", "!new 304"), text("@bob:example.org", "!join"))), 0, &o);
    cr_assert_eq(o.nev, 2);
    cr_assert_str_eq(o.next_batch, "s2_1");
    cr_assert_eq(o.ev[0].kind, ADAPTER_MESSAGE);
    cr_assert_str_eq(o.ev[0].room, ROOM);
    cr_assert_str_eq(o.ev[0].sender, "@alice:example.org");
    cr_assert_str_eq(o.ev[0].text, "!new 304");
    cr_assert_eq(o.ev[0].moderator, 1, "alice has 100, kick needs 50");
    cr_assert_eq(o.ev[1].moderator, 0, "bob has the default 0");
    cr_assert_eq(o.ev[0].is_private, 0);
    char buf[128];
    cr_assert_str_eq(mx_state_display_name(st, ROOM, "@bob:example.org", buf, sizeof buf), "bob");
    cr_assert_null(mx_state_display_name(st, ROOM, "@carol:example.org", buf, sizeof buf));
    mx_sync_done(&o);
    mx_state_free(st);
}

Test(mx_sync, without_power_levels_the_creator_moderates)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    const char *create = "{\"type\":\"m.room.create\",\"state_key\":\"\",\"sender\":\"@carol:example.org\",\"content\":{}}";
    read_ok(st, joined(ROOM, create, fmt("%s,%s", text("@carol:example.org", "!abort"), text("@bob:example.org", "!abort"))), 0, &o);
    cr_assert_eq(o.nev, 2);
    cr_assert_eq(o.ev[0].moderator, 1);
    cr_assert_eq(o.ev[1].moderator, 0);
    mx_sync_done(&o);
    /* a higher kick level than the user's level: no moderator */
    read_ok(st, joined(ROOM, power(40, 50), text("@alice:example.org", "!abort")), 0, &o);
    cr_assert_eq(o.ev[0].moderator, 0);
    mx_sync_done(&o);
    mx_state_free(st);
}

Test(mx_sync, ignores_own_edits_notices_and_what_came_before_joining)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    const char *edit = "{\"type\":\"m.room.message\",\"sender\":\"@bob:example.org\",\"content\":{\"msgtype\":\"m.text\","
                       "\"body\":\"* !join\",\"m.new_content\":{\"msgtype\":\"m.text\",\"body\":\"!join\"},"
                       "\"m.relates_to\":{\"rel_type\":\"m.replace\",\"event_id\":\"$e\"}}}";
    const char *notice = "{\"type\":\"m.room.message\",\"sender\":\"@otherbot:example.org\",\"content\":"
                         "{\"msgtype\":\"m.notice\",\"body\":\"!new 304\"}}";
    const char *reply = "{\"type\":\"m.room.message\",\"sender\":\"@bob:example.org\",\"content\":{\"msgtype\":\"m.text\","
                        "\"body\":\"> <@alice:example.org> hi\\n> there\\n\\n!hand\",\"m.relates_to\":{\"m.in_reply_to\":"
                        "{\"event_id\":\"$q\"}}}}";
    const char *tl = fmt("%s,%s,%s,%s,%s,%s,%s", text("@alice:example.org", "!old command"), member(ME, "join", NULL),
                         text(ME, "!new 304"), edit, notice, reply, text("@alice:example.org", "!new 304"));
    read_ok(st, joined(ROOM, "", tl), 0, &o);
    cr_assert_eq(o.nev, 2, "got %d events", o.nev);
    cr_assert_str_eq(o.ev[0].text, "!hand", "the reply's quote is dropped");
    cr_assert_str_eq(o.ev[1].text, "!new 304");
    mx_sync_done(&o);
    /* the first sync of a new bot takes no messages at all */
    read_ok(st, joined(ROOM, "", text("@alice:example.org", "!new 304")), 1, &o);
    cr_assert_eq(o.nev, 0);
    mx_sync_done(&o);
    mx_state_free(st);
}

Test(mx_sync, joins_and_leaves_of_members)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    read_ok(st, joined(ROOM, member("@bob:example.org", "join", "bob"),
                       fmt("%s,%s,%s", member("@carol:example.org", "join", "carol"),
                           member("@carol:example.org", "join", "Carol B"), member("@bob:example.org", "leave", NULL))), 0, &o);
    cr_assert_eq(o.nev, 2, "carol joins once (a name change is no join), bob leaves");
    cr_assert_eq(o.ev[0].kind, ADAPTER_JOIN);
    cr_assert_str_eq(o.ev[0].sender, "@carol:example.org");
    cr_assert_eq(o.ev[1].kind, ADAPTER_LEAVE);
    cr_assert_str_eq(o.ev[1].sender, "@bob:example.org");
    char buf[128];
    cr_assert_str_eq(mx_state_display_name(st, ROOM, "@carol:example.org", buf, sizeof buf), "Carol B");
    mx_sync_done(&o);
    mx_state_free(st);
}

Test(mx_sync, same_display_names_are_told_apart)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    read_ok(st, joined(ROOM, fmt("%s,%s", member("@a1:example.org", "join", "sam"), member("@a2:example.org", "join", "sam")), ""), 0, &o);
    char buf[128];
    cr_assert_str_eq(mx_state_display_name(st, ROOM, "@a1:example.org", buf, sizeof buf), "sam (@a1:example.org)");
    mx_sync_done(&o);
    mx_state_free(st);
}

Test(mx_sync, room_names)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    char buf[128];
    read_ok(st, joined(ROOM, "{\"type\":\"m.room.canonical_alias\",\"state_key\":\"\",\"sender\":\"@a:b\",\"content\":{\"alias\":\"#cards:example.org\"}}", ""), 0, &o);
    cr_assert_str_eq(mx_state_room_name(st, ROOM, buf, sizeof buf), "#cards:example.org");
    mx_sync_done(&o);
    read_ok(st, joined(ROOM, "{\"type\":\"m.room.name\",\"state_key\":\"\",\"sender\":\"@a:b\",\"content\":{\"name\":\"Card night\"}}", ""), 0, &o);
    cr_assert_str_eq(mx_state_room_name(st, ROOM, buf, sizeof buf), "Card night");
    cr_assert_null(mx_state_room_name(st, "!unknown:example.org", buf, sizeof buf));
    mx_sync_done(&o);
    mx_state_free(st);
}

static const char *invite(const char *room, const char *from, int direct)
{
    return fmt("{\"next_batch\":\"s3_1\",\"rooms\":{\"invite\":{\"%s\":{\"invite_state\":{\"events\":[{\"type\":"
               "\"m.room.member\",\"state_key\":\"" ME "\",\"sender\":\"%s\",\"content\":{\"membership\":\"invite\"%s}}]}}}}}",
               room, from, direct ? ",\"is_direct\":true" : "");
}

Test(mx_sync, invites_follow_the_allow_list)
{
    struct {
        const char *list, *from;
        int ok;
    } rows[] = {
        {"", "@alice:example.org", 1},           {"", "@mallory:evil.org", 0},
        {"*", "@mallory:evil.org", 1},           {"@alice:example.org", "@alice:example.org", 1},
        {"@alice:example.org", "@bob:example.org", 0}, {"other.org, @alice:example.org", "@x:other.org", 1},
        {"other.org", "@x:other.org.evil", 0},   {"other.org", "@x:example.org", 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mx_state *st = mx_state_new(ME, rows[i].list);
        mx_sync_out o;
        read_ok(st, invite("!i:example.org", rows[i].from, 0), 0, &o);
        cr_assert_eq(o.njoin, rows[i].ok, "row %zu", i);
        cr_assert_eq(o.ndecline, !rows[i].ok, "row %zu", i);
        cr_assert_eq(mx_state_invite_allowed(st, rows[i].from), rows[i].ok);
        mx_sync_done(&o);
        mx_state_free(st);
    }
}

Test(mx_sync, direct_chats_make_private_commands)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    read_ok(st, invite("!d:example.org", "@alice:example.org", 1), 0, &o);
    cr_assert_eq(o.njoin, 1);
    cr_assert_eq(o.direct_changed, 1);
    cr_assert_str_eq(mx_state_dm_room(st, "@alice:example.org"), "!d:example.org");
    mx_sync_done(&o);
    read_ok(st, joined("!d:example.org", member("@alice:example.org", "join", "alice"), text("@alice:example.org", "!hand")), 0, &o);
    cr_assert_eq(o.nev, 1);
    cr_assert_eq(o.ev[0].is_private, 1);
    cr_assert_null(o.ev[0].room);
    cr_assert_eq(o.ev[0].moderator, 0);
    mx_sync_done(&o);
    /* m.direct account data: the last room listed is the chat */
    const char *ad = "{\"next_batch\":\"s4_1\",\"account_data\":{\"events\":[{\"type\":\"m.direct\",\"content\":"
                     "{\"@bob:example.org\":[\"!old:example.org\",\"!b:example.org\"],\"@x:y\":5}}]}}";
    read_ok(st, ad, 0, &o);
    cr_assert_str_eq(mx_state_dm_room(st, "@bob:example.org"), "!b:example.org");
    cr_assert_str_eq(mx_state_dm_user(st, "!b:example.org"), "@bob:example.org");
    cr_assert_null(mx_state_dm_user(st, "!old:example.org"));
    mx_sync_done(&o);
    char *j = mx_state_direct_json(st);
    cr_assert_str_eq(j, "{\"@alice:example.org\":[\"!d:example.org\"],\"@bob:example.org\":[\"!b:example.org\"]}");
    free(j);
    /* alice leaves her chat: it is forgotten, a new one will be made */
    read_ok(st, joined("!d:example.org", "", member("@alice:example.org", "leave", NULL)), 0, &o);
    cr_assert_eq(o.nev, 0, "a direct chat's members do not join or leave tables");
    cr_assert_null(mx_state_dm_room(st, "@alice:example.org"));
    mx_sync_done(&o);
    /* the bot is removed from bob's chat */
    read_ok(st, "{\"next_batch\":\"s5_1\",\"rooms\":{\"leave\":{\"!b:example.org\":{}}}}", 0, &o);
    cr_assert_eq(o.direct_changed, 1);
    cr_assert_null(mx_state_dm_room(st, "@bob:example.org"));
    mx_sync_done(&o);
    mx_state_forget_dm(st, "@nobody:example.org");
    mx_state_free(st);
}

Test(mx_sync, leaving_a_room_forgets_it)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    read_ok(st, joined(ROOM, member("@bob:example.org", "join", "bob"), ""), 0, &o);
    mx_sync_done(&o);
    cr_assert(mx_state_joined(st, ROOM));
    cr_assert_eq(mx_state_room_count(st), 1);
    read_ok(st, "{\"next_batch\":\"s6_1\",\"rooms\":{\"leave\":{\"" ROOM "\":{\"timeline\":{\"events\":[]}}}}}", 0, &o);
    cr_assert_not(mx_state_joined(st, ROOM));
    cr_assert_eq(mx_state_room_count(st), 0);
    cr_assert_eq(o.nev, 1, "the core hears that the bot left (or was kicked or banned)");
    cr_assert_eq(o.ev[0].kind, ADAPTER_GONE);
    cr_assert_str_eq(o.ev[0].room, ROOM);
    cr_assert_str_eq(o.ev[0].sender, ME);
    mx_sync_done(&o);
    mx_state_free(st);
}

Test(mx_sync, broken_answers_are_refused_and_bad_events_skipped)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    char err[256];
    const char *bad[] = {"", "not json", "[1,2]", "{}", "{\"next_batch\":5}", "{\"next_batch\":\"\"}", "{\"padding\":\"xxxx\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        cr_assert_eq(mx_sync_read(st, bad[i], strlen(bad[i]), NULL, 0, &o, err, sizeof err), -1, "%s", bad[i]);
        cr_assert_neq(err[0], 0);
    }
    char big[1200];
    memset(big, 'a', sizeof big);
    big[sizeof big - 1] = 0;
    const char *long_token = fmt("{\"next_batch\":\"%s\"}", big);
    cr_assert_eq(mx_sync_read(st, long_token, strlen(long_token), NULL, 0, &o, err, sizeof err), -1);
    /* wrong types everywhere inside a good answer: skipped */
    const char *odd = "{\"next_batch\":\"s7_1\",\"rooms\":{\"join\":{\"" ROOM "\":{\"timeline\":{\"events\":[5,null,"
                      "{\"type\":\"m.room.message\"},{\"type\":\"m.room.message\",\"sender\":7,\"content\":{}},"
                      "{\"type\":\"m.room.message\",\"sender\":\"@a:b\",\"content\":{\"msgtype\":\"m.text\",\"body\":3}},"
                      "{\"type\":\"m.room.message\",\"sender\":\"@a:b\",\"content\":{\"msgtype\":\"m.text\",\"body\":\"ok\"}}]}},"
                      "\"!x:y\":[]},\"invite\":5,\"leave\":\"no\"},\"account_data\":{\"events\":{}}}";
    read_ok(st, odd, 0, &o);
    cr_assert_eq(o.nev, 1);
    cr_assert_str_eq(o.ev[0].text, "ok");
    cr_assert_eq(o.events_seen, 6);
    mx_sync_done(&o);
    mx_state_free(st);
}

Test(mx_sync, limited_timelines_are_counted)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    const char *lim = "{\"next_batch\":\"s8_1\",\"rooms\":{\"join\":{\"" ROOM "\":{\"timeline\":{\"limited\":true,\"events\":[]}}}}}";
    read_ok(st, lim, 0, &o);
    cr_assert_eq(o.limited, 1);
    mx_sync_done(&o);
    read_ok(st, lim, 1, &o);
    cr_assert_eq(o.limited, 0, "on the first sync nothing was missed");
    mx_sync_done(&o);
    mx_state_free(st);
}

Test(mx_sync, gaps_are_found_and_read_before_the_timeline)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    char err[256];
    const char *answer = fmt("{\"next_batch\":\"s9_1\",\"rooms\":{\"join\":{\"" ROOM "\":{\"timeline\":{\"limited\":true,"
                             "\"prev_batch\":\"s5_1\",\"events\":[%s]},\"state\":{\"events\":[]}},\"!quiet:example.org\":"
                             "{\"timeline\":{\"limited\":false,\"prev_batch\":\"s1_1\",\"events\":[]}}}}}",
                             text("@alice:example.org", "!start"));
    int n = -1;
    char *gaps = mx_sync_gaps(answer, strlen(answer), &n);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(gaps, "[[\"" ROOM "\",\"s5_1\"]]");
    free(gaps);
    cr_assert_null(mx_sync_gaps("{\"limited\": true", 17, &n), "a limited answer that does not parse");
    gaps = mx_sync_gaps("nope", 4, &n); /* nothing limited: not even parsed */
    cr_assert_str_eq(gaps, "[]");
    cr_assert_eq(n, 0);
    free(gaps);
    const char *spaced = "{\"rooms\":{\"join\":{\"!s:x\":{\"timeline\":{\"prev_batch\":\"p\",\"limited\" :\n true}}}}}";
    gaps = mx_sync_gaps(spaced, strlen(spaced), &n);
    cr_assert_eq(n, 1, "blanks around the colon");
    free(gaps);
    const char *fetched = fmt("{\"" ROOM "\":[%s,%s]}", text("@alice:example.org", "!join"), text("@bob:example.org", "!join"));
    cr_assert_eq(mx_sync_read(st, answer, strlen(answer), fetched, 0, &o, err, sizeof err), 0, "%s", err);
    cr_assert_eq(o.nev, 3);
    cr_assert_str_eq(o.ev[0].text, "!join");
    cr_assert_str_eq(o.ev[0].sender, "@alice:example.org");
    cr_assert_str_eq(o.ev[1].sender, "@bob:example.org");
    cr_assert_str_eq(o.ev[2].text, "!start");
    cr_assert_eq(o.limited, 0, "the gap was filled");
    mx_sync_done(&o);
    /* without the fetched events the gap is counted */
    cr_assert_eq(mx_sync_read(st, answer, strlen(answer), NULL, 0, &o, err, sizeof err), 0);
    cr_assert_eq(o.nev, 1);
    cr_assert_eq(o.limited, 1);
    mx_sync_done(&o);
    mx_state_free(st);
}

/* ---- whether a room is encrypted: yes for good, no only from what this run saw ---- */

typedef struct {
    char learnt[8][64];
    int n;
} enc_seen;

static void on_encrypted(void *ctx, const char *room)
{
    enc_seen *e = ctx;
    cr_assert_lt(e->n, 8);
    snprintf(e->learnt[e->n++], sizeof e->learnt[0], "%s", room);
}

static const char *encryption(void)
{
    return "{\"type\":\"m.room.encryption\",\"state_key\":\"\",\"sender\":\"@alice:example.org\","
           "\"content\":{\"algorithm\":\"m.megolm.v1.aes-sha2\"}}";
}

Test(mx_sync, encryption_is_unknown_until_seen_and_encrypted_for_good)
{
    mx_state *st = mx_state_new(ME, "");
    enc_seen seen = {0};
    mx_sync_hooks hooks = {.encrypted = on_encrypted, .ctx = &seen};
    mx_state_set_hooks(st, &hooks);
    mx_sync_out o;
    cr_assert_eq(mx_state_encryption(st, ROOM), MX_ENC_UNKNOWN, "nothing is known before an answer");
    cr_assert_not(mx_state_members_known(st, ROOM));

    /* a room whose whole state came without m.room.encryption is not encrypted */
    read_ok(st, joined(ROOM, member("@bob:example.org", "join", "bob"), ""), 0, &o);
    mx_sync_done(&o);
    cr_assert_eq(mx_state_encryption(st, ROOM), MX_ENC_NO);
    cr_assert(mx_state_members_known(st, ROOM));
    /* ... until it turns encryption on; the adapter hears it once */
    read_ok(st, joined(ROOM, "", encryption()), 0, &o);
    mx_sync_done(&o);
    read_ok(st, joined(ROOM, encryption(), ""), 0, &o);
    mx_sync_done(&o);
    cr_assert_eq(mx_state_encryption(st, ROOM), MX_ENC_YES);
    cr_assert_eq(seen.n, 1);
    cr_assert_str_eq(seen.learnt[0], ROOM);
    mx_state_set_encryption(st, ROOM, MX_ENC_NO);
    cr_assert_eq(mx_state_encryption(st, ROOM), MX_ENC_YES, "encryption is never turned off");
    /* leaving and coming back: still encrypted */
    read_ok(st, "{\"next_batch\":\"s6_1\",\"rooms\":{\"leave\":{\"" ROOM "\":{}}}}", 0, &o);
    mx_sync_done(&o);
    cr_assert_eq(mx_state_encryption(st, ROOM), MX_ENC_YES);
    cr_assert_not(mx_state_members_known(st, ROOM), "a room left: its members are no longer known");

    /* what the adapter stored or asked: yes from the store, no from the homeserver's 404 */
    mx_state_set_encryption(st, "!stored:example.org", MX_ENC_YES);
    cr_assert_eq(mx_state_encryption(st, "!stored:example.org"), MX_ENC_YES);
    cr_assert_not(mx_state_members_known(st, "!stored:example.org"), "encrypted, but whom to is not known yet");
    mx_state_set_encryption(st, "!asked:example.org", MX_ENC_NO);
    cr_assert_eq(mx_state_encryption(st, "!asked:example.org"), MX_ENC_NO);
    read_ok(st, "{\"next_batch\":\"s7_1\",\"rooms\":{\"leave\":{\"!asked:example.org\":{}}}}", 0, &o);
    mx_sync_done(&o);
    cr_assert_eq(mx_state_encryption(st, "!asked:example.org"), MX_ENC_UNKNOWN, "a no is not kept past leaving");
    cr_assert_eq(seen.n, 1, "what the adapter told the state is not told back");

    /* an invite's stripped state may already say it; so may the bot's own new direct chat */
    char *inv = strdup(invite("!i:example.org", "@alice:example.org", 0));
    char *at = strstr(inv, "\"events\":[") + strlen("\"events\":[");
    char *with = malloc(strlen(inv) + 512);
    snprintf(with, strlen(inv) + 512, "%.*s%s,%s", (int)(at - inv), inv, encryption(), at);
    read_ok(st, with, 0, &o);
    cr_assert_eq(o.njoin, 1);
    mx_sync_done(&o);
    cr_assert_eq(mx_state_encryption(st, "!i:example.org"), MX_ENC_YES);
    cr_assert_eq(seen.n, 2);
    cr_assert_str_eq(seen.learnt[1], "!i:example.org");
    mx_state_made_dm(st, "!dm:example.org", "@alice:example.org", 1);
    cr_assert_eq(mx_state_encryption(st, "!dm:example.org"), MX_ENC_YES);
    cr_assert(mx_state_members_known(st, "!dm:example.org"));
    mx_state_made_dm(st, "!plain:example.org", "@bob:example.org", 0);
    cr_assert_eq(mx_state_encryption(st, "!plain:example.org"), MX_ENC_NO);
    free(with);
    free(inv);
    mx_state_free(st);
}

/* ---- who a player means: `!standings alice`, a display name, a mention pill ---- */

Test(mx_sync, find_user_by_id_localpart_name_or_link)
{
    mx_state *st = mx_state_new(ME, "");
    mx_sync_out o;
    char buf[300];
    read_ok(st, joined(ROOM, fmt("%s,%s,%s,%s", member("@alice:example.org", "join", "Alice Liddell"),
                                 member("@bob:other.org", "leave", "Bob"), member("@twin1:example.org", "join", "Twin"),
                                 member("@twin2:example.org", "join", "Twin")), ""),
            0, &o);
    mx_sync_done(&o);
    static const struct {
        const char *text, *want;
    } rows[] = {
        {"@alice:example.org", "@alice:example.org"},
        {"alice", "@alice:example.org"},
        {"@alice", "@alice:example.org"},
        {"ALICE", "@alice:example.org"},
        {"Alice Liddell", "@alice:example.org"},
        {"alice liddell", "@alice:example.org"},
        {"bob", "@bob:other.org"},                 /* gone from the room, still a member entry */
        {"Bob", "@bob:other.org"},
        {"Twin", NULL},                            /* two members with that name */
        {"twin1", "@twin1:example.org"},
        {"carol", "@carol:example.org"},           /* nobody here: a user of the bot's server */
        {"@Carol", "@carol:example.org"},
        {"Carol Jones", NULL},
        {"https://matrix.to/#/@dave:elsewhere.org", "@dave:elsewhere.org"},
        {"https://matrix.to/#/%40dave%3Aelsewhere.org?via=elsewhere.org", "@dave:elsewhere.org"},
        {"https://matrix.to/#/%40dave%00x%3Aelsewhere.org", NULL},
        {"@", NULL},
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *got = mx_state_find_user(st, ROOM, rows[i].text, buf, sizeof buf);
        if (rows[i].want) cr_expect_str_eq(got ? got : "(null)", rows[i].want, "for \"%s\"", rows[i].text);
        else cr_expect_null(got, "for \"%s\": %s", rows[i].text, got);
    }
    cr_expect_null(mx_state_find_user(st, ROOM, "alice", buf, 5), "too long for the buffer");
    mx_state_free(st);
}

static const char *pilled(const char *body, const char *html)
{
    return fmt("{\"type\":\"m.room.message\",\"sender\":\"@bob:example.org\",\"content\":{\"msgtype\":\"m.text\","
               "\"body\":\"%s\",\"format\":\"org.matrix.custom.html\",\"formatted_body\":\"%s\"}}", body, html);
}

Test(mx_sync, mention_pills_become_user_ids)
{
    static const struct {
        const char *body, *html, *want;
    } rows[] = {
        {"!standings Alice", "!standings <a href=\\\"https://matrix.to/#/@alice:example.org\\\">Alice</a>",
         "!standings @alice:example.org"},
        {"!standings A & B", "!standings <a href='https://matrix.to/#/%40ab%3Aexample.org'>A &amp; B</a>",
         "!standings @ab:example.org"},
        {"Alice: !standings Alice", "<a href=\\\"https://matrix.to/#/@alice:example.org\\\">Alice</a>: !standings "
         "<a href=\\\"https://matrix.to/#/@alice:example.org\\\">Alice</a>", "@alice:example.org: !standings @alice:example.org"},
        {"!standings Alice", "!standings <a href=\\\"https://example.org/alice\\\">Alice</a>", "!standings Alice"},
        {"!standings Alice", "!standings <a href=\\\"https://matrix.to/#/!room:example.org\\\">Alice</a>",
         "!standings Alice"},
        {"!standings Alice", "!standings <a href=\\\"https://matrix.to/#/@alice:example.org\\\">Alice", "!standings Alice"},
        {"!standings Eve", "!standings <a href=\\\"https://matrix.to/#/@alice:example.org\\\">Alice</a>", "!standings Eve"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mx_state *st = mx_state_new(ME, "");
        mx_sync_out o;
        read_ok(st, joined(ROOM, "", pilled(rows[i].body, rows[i].html)), 0, &o);
        cr_assert_eq(o.nev, 1);
        cr_expect_str_eq(o.ev[0].text, rows[i].want, "row %zu: %s", i, o.ev[0].text);
        mx_sync_done(&o);
        mx_state_free(st);
    }
}
