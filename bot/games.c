/* games.c — the games a table can host, by the name `!new` and the store use (game.h).
 *
 * The one place that lists them: the table core finds a table's game here and knows nothing
 * else of it, so a new game is its own files plus one line below. */
#include <string.h>

#include "game.h"
#include "game304.h"
#include "gamegrid.h"

static const table_game *const games[] = {&game304, &gamegrid};

const table_game *game_find(const char *name)
{
    for (size_t i = 0; i < sizeof games / sizeof games[0]; i++)
        if (strcmp(games[i]->name, name) == 0) return games[i];
    return NULL;
}
