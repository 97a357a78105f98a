/* fuzz_config.c — libFuzzer target for the configuration file (cfg_load): any bytes as the INI
 * file must give either a configuration whose every value is in range, or one line naming the
 * file and what is wrong — and leave the caller's configuration untouched on error. The file is
 * an anonymous memory file, so no disk is touched. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_init.h"

static void check_values(const cfg *c)
{
    size_t n = strnlen(c->prefix, sizeof c->prefix);
    if (n == 0 || n == sizeof c->prefix) abort();
    if (strnlen(c->database, sizeof c->database) == sizeof c->database || !c->database[0]) abort();
    if (c->threads < 1 || c->threads > 64) abort();
    if (c->remind_after < 0 || c->idle_takeover < 0 || c->table_idle_close < 0) abort();
    if (c->bot_delay_ms < 0 || c->bot_delay_ms > 60000) abort();
    if (c->rules.start_tokens < 1 || c->rules.start_tokens > 100) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("cardroom-fuzz.ini", 0);
    if (fd < 0) return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64], err[CFG_ERR];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    cfg c, before;
    cfg_defaults(&c);
    before = c;
    if (cfg_load(&c, path, err, sizeof err) == 0) {
        check_values(&c);
    } else {
        if (memcmp(&c, &before, sizeof c) != 0) abort(); /* an error leaves the struct as it was */
        if (!err[0] || strchr(err, '\n') || !strstr(err, path)) abort();
    }
    close(fd);
    return 0;
}
