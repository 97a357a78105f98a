/* mx_http.c — HTTP requests to the homeserver over one libcurl multi handle (see mx_http.h). */
#include "mx_http.h"

#include <curl/curl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct req {
    CURL *easy;
    struct curl_slist *headers;
    char *out;        /* the request body */
    char *in;         /* the answer */
    size_t len, cap;
    int too_big;
    long retry_after_ms;
    mx_http_done done;
    void *ctx;
    struct req *next, *prev;
} req;

struct mx_http {
    CURLM *multi;
    char *base;
    char auth[600];   /* "Authorization: Bearer …" */
    req *reqs;
    int running;
};

static int curl_ready;

mx_http *mx_http_new(const char *base, char *err, size_t errlen)
{
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            snprintf(err, errlen, "libcurl cannot start");
            return NULL;
        }
        curl_ready = 1;
    }
    mx_http *h = calloc(1, sizeof *h);
    if (!h || !(h->multi = curl_multi_init()) || !(h->base = strdup(base))) {
        snprintf(err, errlen, "out of memory");
        mx_http_free(h);
        return NULL;
    }
    size_t n = strlen(h->base);
    while (n && h->base[n - 1] == '/') h->base[--n] = 0;
    curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 16L);
    return h;
}

static void req_free(req *r)
{
    if (!r) return;
    if (r->easy) curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->headers);
    free(r->out);
    free(r->in);
    free(r);
}

static void req_unlink(mx_http *h, req *r)
{
    if (r->prev) r->prev->next = r->next;
    else h->reqs = r->next;
    if (r->next) r->next->prev = r->prev;
    h->running--;
}

void mx_http_free(mx_http *h)
{
    if (!h) return;
    while (h->reqs) {
        req *r = h->reqs;
        curl_multi_remove_handle(h->multi, r->easy);
        req_unlink(h, r);
        mx_response a = {.status = 0, .error = "cancelled", .body = "", .retry_after_ms = -1};
        r->done(r->ctx, &a);
        req_free(r);
    }
    if (h->multi) curl_multi_cleanup(h->multi);
    free(h->base);
    sodium_memzero(h->auth, sizeof h->auth);
    free(h);
}

void mx_http_set_token(mx_http *h, const char *token)
{
    sodium_memzero(h->auth, sizeof h->auth);
    if (token && *token) snprintf(h->auth, sizeof h->auth, "Authorization: Bearer %s", token);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    req *r = ctx;
    size_t add = size * n;
    if (r->len + add > MX_HTTP_MAX_BODY) {
        r->too_big = 1;
        return 0; /* stops the transfer */
    }
    if (r->len + add + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + add + 1) cap *= 2;
        char *in = realloc(r->in, cap);
        if (!in) return 0;
        r->in = in;
        r->cap = cap;
    }
    memcpy(r->in + r->len, p, add);
    r->len += add;
    r->in[r->len] = 0;
    return add;
}

/* Retry-After: seconds (RFC 9110 §10.2.3; an HTTP date is taken as "a second"). */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    req *r = ctx;
    size_t len = size * n;
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
        char v[32];
        size_t k = len - (sizeof name - 1);
        if (k >= sizeof v) k = sizeof v - 1;
        memcpy(v, p + sizeof name - 1, k);
        v[k] = 0;
        char *end;
        long s = strtol(v, &end, 10);
        r->retry_after_ms = end != v && s >= 0 && s < 86400 ? s * 1000 : 1000;
    }
    return len;
}

int mx_http_request(mx_http *h, const char *method, const char *path, const char *body, long timeout_ms,
                    mx_http_done done, void *ctx)
{
    req *r = calloc(1, sizeof *r);
    if (!r) return -1;
    r->done = done;
    r->ctx = ctx;
    r->retry_after_ms = -1;
    size_t ulen = strlen(h->base) + strlen(path) + 1;
    char *url = malloc(ulen);
    r->easy = curl_easy_init();
    if (!url || !r->easy || (body && !(r->out = strdup(body)))) goto fail;
    snprintf(url, ulen, "%s%s", h->base, path);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 20000 ? timeout_ms : 20000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "cardroom");
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (r->out) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->out);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(r->out));
    } else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    }
    r->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (r->headers && h->auth[0]) r->headers = curl_slist_append(r->headers, h->auth);
    if (!r->headers) goto fail;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK) goto fail;
    free(url);
    r->next = h->reqs;
    if (h->reqs) h->reqs->prev = r;
    h->reqs = r;
    h->running++;
    return 0;
fail:
    free(url);
    req_free(r);
    return -1;
}

int mx_http_running(mx_http *h) { return h->running; }

int mx_http_wait(mx_http *h, const int *fds, int nfd, int timeout_ms)
{
    struct curl_waitfd extra[4];
    unsigned n = 0;
    for (int i = 0; i < nfd && n < 4; i++)
        if (fds[i] >= 0) extra[n++] = (struct curl_waitfd){.fd = fds[i], .events = CURL_WAIT_POLLIN};
    int got;
    return curl_multi_poll(h->multi, extra, n, timeout_ms < 0 ? 0 : timeout_ms, &got) == CURLM_OK ? 0 : -1;
}

int mx_http_work(mx_http *h)
{
    int still, finished = 0;
    curl_multi_perform(h->multi, &still);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(h->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode code = m->data.result;
        curl_multi_remove_handle(h->multi, m->easy_handle);
        req_unlink(h, r);
        mx_response a = {.status = 0, .body = r->in ? r->in : "", .len = r->len, .retry_after_ms = r->retry_after_ms};
        if (code == CURLE_OK) curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &a.status);
        else a.error = r->too_big ? "the answer is larger than 64 MiB" : curl_easy_strerror(code);
        r->done(r->ctx, &a);
        req_free(r);
        finished++;
    }
    return finished;
}

void mx_http_push(mx_http *h)
{
    int still;
    curl_multi_perform(h->multi, &still);
}

const char *mx_http_escape(const char *s, char *buf, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    if (!len) return buf;
    for (; *s && o + 4 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~' || c == '!' || c == '@' || c == ':' || c == '$' || c == '+' || c == '=') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    buf[o] = 0;
    return buf;
}
