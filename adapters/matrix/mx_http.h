/* mx_http.h — HTTP requests to the homeserver over one libcurl multi handle.
 *
 * Every request runs in the background: mx_http_request() starts it, mx_http_wait() waits on
 * the connections (and one more descriptor, the core's wake-up) and mx_http_work() finishes
 * what is done by calling each request's callback once. The access token goes in the
 * Authorization header, never in a URL, and nothing here logs a header or a body. */
#ifndef CARDROOM_MX_HTTP_H
#define CARDROOM_MX_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* The largest answer we take (a first sync of a big account is a few MiB). */
#define MX_HTTP_MAX_BODY ((size_t)64 << 20)

typedef struct mx_http mx_http;

typedef struct {
    long status;          /* the HTTP status, or 0 when no answer came (see error) */
    const char *error;    /* for status 0: what went wrong ("connection refused", ...) */
    const char *body;     /* the answer, NUL-terminated (may be empty) */
    size_t len;
    long retry_after_ms;  /* a Retry-After header, in ms; -1 without one */
} mx_response;

typedef void (*mx_http_done)(void *ctx, const mx_response *r);

/* base: "https://matrix.example.org" (no trailing slash needed). NULL on failure, with err. */
mx_http *mx_http_new(const char *base, char *err, size_t errlen);
void mx_http_free(mx_http *h);

/* The access token for later requests ("" none). */
void mx_http_set_token(mx_http *h, const char *token);

/* Starts METHOD base+path (path already escaped, starting with '/') with body (JSON or NULL),
 * giving up after timeout_ms. done(ctx, answer) is called exactly once from mx_http_work(),
 * also when the request fails or is cancelled by mx_http_free(). Returns 0, or -1 (done is
 * not called). */
int mx_http_request(mx_http *h, const char *method, const char *path, const char *body, long timeout_ms,
                    mx_http_done done, void *ctx);

/* Requests still running. */
int mx_http_running(mx_http *h);

/* Waits up to timeout_ms for network activity or for one of the nfd descriptors (those < 0
 * are skipped) to be readable. Returns 0, or -1 if waiting failed. */
int mx_http_wait(mx_http *h, const int *fds, int nfd, int timeout_ms);
/* Moves every transfer along and calls the callbacks of those that finished. Returns how many
 * finished. */
int mx_http_work(mx_http *h);
/* Moves every transfer along without finishing any: new requests leave now, callbacks wait
 * for the next mx_http_work(). */
void mx_http_push(mx_http *h);

/* Percent-encodes s for one path segment into buf. Returns buf. */
const char *mx_http_escape(const char *s, char *buf, size_t len);

#endif
