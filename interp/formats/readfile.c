/*
 * readfile.c — a whole file within bounds (readfile.h).
 */
#include "readfile.h"
#include "errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ir/alloc.h"

#define CHUNK ((size_t)1 << 20) /* one read(2) at most; the deadline is checked between */

double sc_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int sc_deadline_passed(double deadline) { return deadline > 0 && sc_clock_now() >= deadline; }

/* Checks the bytes [from, to) of buf against the format; *lead: 1 while
 * only blanks were seen (JSON). SC_OK, or SC_ERR_ARG with the reason. */
static sc_status sniff(const sc_read *rd, const char *buf, size_t from, size_t to, int *lead,
                       char *err, size_t errlen)
{
    const char *z = memchr(buf + from, 0, to - from);
    if (rd->format == SC_READ_JSON)
        for (size_t i = from; *lead && i < to; i++) {
            unsigned char c = (unsigned char)buf[i];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
                continue;
            if (c != '{' && c != '[')
                return sc_errbuf(err, errlen, "not JSON: byte %zu is 0x%02x, where JSON starts "
                                 "with '{' or '['", i, c);
            *lead = 0;
        }
    if (z)
        return sc_errbuf(err, errlen, "not %s: a NUL byte at offset %zu",
                         rd->format == SC_READ_JSON ? "JSON" : "text", (size_t)(z - buf));
    return SC_OK;
}

/* Waits until fd has bytes (or an end) or the deadline passes: 1 ready,
 * 0 out of time, -1 with errno. */
static int wait_readable(int fd, double deadline)
{
    for (;;) {
        int ms = -1;
        if (deadline > 0) {
            double left = deadline - sc_clock_now();
            if (left <= 0)
                return 0;
            ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, ms);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* Makes room for `more` bytes past rd->len and a NUL, up to the cap
 * (there is always room for one byte more than max_bytes). */
static sc_status grow(sc_read *rd, size_t *cap, size_t more)
{
    size_t need = rd->len + more + 1;
    if (need <= *cap)
        return SC_OK;
    size_t n = *cap ? 2 * *cap : need; /* a regular file gets its size, a stream doubles */
    if (n < need)
        n = need;
    if (rd->max_bytes && n > rd->max_bytes + 2)
        n = rd->max_bytes + 2; /* one byte past the cap tells "more", one for the NUL */
    char *b = sc_realloc(rd->text, n);
    if (!b)
        return SC_ERR_NOMEM;
    rd->text = b;
    *cap = n;
    return SC_OK;
}

sc_status sc_read_file(const char *path, sc_read *rd, char *err, size_t errlen)
{
    rd->text = NULL;
    rd->len = 0;
    rd->errnum = rd->over = 0;
    if (errlen)
        err[0] = 0;
    sc_status st = SC_OK;
    size_t cap = 0;
    int lead = 1;
    /* Non-blocking, so that neither open (a FIFO without a writer) nor a
     * read (a stalled writer, a terminal) waits past the deadline. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        rd->errnum = errno;
        st = sc_errbuf(err, errlen, "%s", strerror(errno));
        goto fail;
    }
    if (S_ISREG(sb.st_mode) && rd->max_bytes && (unsigned long long)sb.st_size > rd->max_bytes) {
        rd->over = SC_READ_OVER_BYTES;
        snprintf(err, errlen, "more than %zu bytes", rd->max_bytes);
        st = SC_ERR_LIMIT;
        goto fail;
    }
    if (S_ISREG(sb.st_mode) && (st = grow(rd, &cap, (size_t)sb.st_size + 1)) != SC_OK) /* + EOF */
        goto fail;
    for (;;) {
        if (sc_deadline_passed(rd->deadline)) {
            rd->over = SC_READ_OVER_TIME;
            snprintf(err, errlen, "still reading when the time limit was reached");
            st = SC_ERR_LIMIT;
            goto fail;
        }
        if ((st = grow(rd, &cap, S_ISREG(sb.st_mode) ? 1 : CHUNK / 16)) != SC_OK)
            goto fail;
        size_t want = cap - rd->len - 1;
        ssize_t n = read(fd, rd->text + rd->len, want < CHUNK ? want : CHUNK);
        if (n == 0)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = wait_readable(fd, rd->deadline);
            if (w > 0 || (w == 0 && rd->deadline > 0))
                continue; /* ready, or the deadline: the check above ends it */
        }
        if (n < 0) {
            rd->errnum = errno;
            st = sc_errbuf(err, errlen, "%s", strerror(errno));
            goto fail;
        }
        if ((st = sniff(rd, rd->text, rd->len, rd->len + (size_t)n, &lead, err, errlen)) != SC_OK)
            goto fail;
        rd->len += (size_t)n;
        if (rd->max_bytes && rd->len > rd->max_bytes) {
            rd->over = SC_READ_OVER_BYTES;
            snprintf(err, errlen, "more than %zu bytes", rd->max_bytes);
            st = SC_ERR_LIMIT;
            goto fail;
        }
    }
    if ((st = grow(rd, &cap, 0)) != SC_OK) /* room for the NUL (an empty file) */
        goto fail;
    rd->text[rd->len] = 0;
    close(fd);
    return SC_OK;
fail:
    if (fd >= 0)
        close(fd);
    sc_free(rd->text);
    rd->text = NULL;
    rd->len = 0;
    return st;
}
