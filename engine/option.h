/* option.h — reading the values of table options (g304_rules_set, grid_rules_set): a small
 * whole number in a range, and a yes/no word. No allocation, no globals. */
#ifndef CARDROOM_OPTION_H
#define CARDROOM_OPTION_H

/* A decimal number without sign from lo to hi: 0 and *out, or -1. */
int option_uint(const char *s, int lo, int hi, int *out);
/* 1 for true/on/yes/1, 0 for false/off/no/0 (any case), -1 for anything else. */
int option_bool(const char *s);

#endif
