/* netrun.c — see netrun.h. The stop flag and its pipe are the one piece of process-wide state:
 * a signal handler can reach nothing else. */
#include "netrun.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_now;
static int stop_pipe[2] = {-1, -1};

int64_t netrun_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t netrun_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t netrun_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_signal(int sig)
{
    (void)sig;
    stop_now = 1;
    if (stop_pipe[1] >= 0) {
        int saved = errno;
        (void)!write(stop_pipe[1], "x", 1);
        errno = saved;
    }
}

int netrun_stop_init(void)
{
    stop_now = 0;
    if (pipe(stop_pipe) != 0) return -1;
    fcntl(stop_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(stop_pipe[1], F_SETFL, O_NONBLOCK);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

int netrun_stop_fd(void) { return stop_pipe[0]; }

int netrun_stopping(void) { return stop_now != 0; }

void netrun_stop_close(void)
{
    if (stop_pipe[0] >= 0) close(stop_pipe[0]);
    if (stop_pipe[1] >= 0) close(stop_pipe[1]);
    stop_pipe[0] = stop_pipe[1] = -1;
}

/* Whether err is systemd's journal: JOURNAL_STREAM names the device and inode of the stream
 * systemd connected (systemd.exec(5)), and the journal stamps every line itself. */
static int to_journal(FILE *err)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(fileno(err), &st) == 0 &&
           (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void netrun_log(FILE *err, const cfg *config, int level, const char *line)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (level < 0 || level > 3 || level > cfg_log_rank(config)) return;
    char stamp[48] = "";
    if (!to_journal(err)) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
        snprintf(stamp + n, sizeof stamp - n, ".%03ld ", ts.tv_nsec / 1000000);
    }
    fprintf(err, "%scardroom: %s: %s\n", stamp, names[level], line);
    fflush(err);
}
