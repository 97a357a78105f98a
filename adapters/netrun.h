/* netrun.h — what every network adapter's run loop needs around it (adapters/matrix,
 * adapters/irc): clocks, the stop request (SIGTERM, SIGINT) as a flag and a descriptor to poll,
 * and the log line format: stamped with the time, except in systemd's journal. */
#ifndef CARDROOM_NETRUN_H
#define CARDROOM_NETRUN_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"

/* Monotonic milliseconds and microseconds; the wall clock in milliseconds (the core's timers). */
int64_t netrun_mono_ms(void);
int64_t netrun_mono_us(void);
int64_t netrun_wall_ms(void);

/* Catches SIGTERM and SIGINT (and ignores SIGPIPE) until netrun_stop_close(). Returns 0 or -1. */
int netrun_stop_init(void);
/* Readable once a stop was asked for (-1 before netrun_stop_init). */
int netrun_stop_fd(void);
/* Whether a stop was asked for. */
int netrun_stopping(void);
void netrun_stop_close(void);

/* Writes "YYYY-MM-DD HH:MM:SS.mmm cardroom: LEVEL: line" (local time) to err when level (0
 * error, 1 warn, 2 info, 3 debug) is within the configured log level; without the time when
 * err is systemd's journal (JOURNAL_STREAM), which has its own. */
void netrun_log(FILE *err, const cfg *config, int level, const char *line);

#endif
