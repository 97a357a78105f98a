/* option.c — see option.h. */
#include "option.h"

#include <strings.h>

int option_uint(const char *s, int lo, int hi, int *out)
{
    int v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (*s - '0');
        if (v > hi) return -1;
    }
    if (v < lo) return -1;
    *out = v;
    return 0;
}

int option_bool(const char *s)
{
    static const char *const yes[] = {"true", "on", "yes", "1"}, *const no[] = {"false", "off", "no", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) return 1;
        if (strcasecmp(s, no[i]) == 0) return 0;
    }
    return -1;
}
