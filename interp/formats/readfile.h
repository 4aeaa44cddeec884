/*
 * readfile.h — the whole of a file a user names (a trace, a CSV schedule,
 * a cost file), read within bounds: at most max_bytes, until a deadline,
 * into interp's counted memory (ir/alloc.h: --max-mem charges it), and
 * only as far as its bytes can be the format asked for.
 *
 *     sc_read rd = {.format = SC_READ_JSON, .max_bytes = 1 << 30,
 *                   .deadline = sc_clock_now() + 60};
 *     char err[256];
 *     if (sc_read_file("trace.json", &rd, err, sizeof err) != SC_OK)
 *         ...   // err: "not JSON: ..."; rd.errnum, rd.over say which failure
 *     sc_json_parse(rd.text, rd.len, ...);
 *     sc_free(rd.text);
 *
 * Any file may be named: a regular file larger than max_bytes is refused
 * before a byte is read (its size is known); a FIFO, a socket's or a
 * terminal's stream, a character device (/dev/zero, /dev/urandom) or
 * /dev/stdin as a pipe is read as it comes, without ever blocking past the
 * deadline (the file is opened and read non-blocking, and a wait for more
 * bytes is a poll(2) that ends at the deadline; a FIFO that no process
 * writes reads as empty). Every chunk is checked as it arrives, so that a
 * stream that cannot be the format stops at its first bad bytes: text has
 * no NUL byte; JSON has none either and starts, after blanks, with '{' or
 * '['. /dev/zero is refused at its first byte.
 *
 * Ownership: rd.text (NUL-terminated, rd.len bytes before the NUL) belongs
 * to the caller, freed with sc_free. Thread-safety: none needed (no global
 * state).
 *
 * Tested by: tests/unit/test_readers.c.
 */
#ifndef SC_READFILE_H
#define SC_READFILE_H

#include <stddef.h>

#include "ir/ir.h"

/* What the bytes must be: text (no NUL byte) or JSON (text that starts
 * with '{' or '[' after blanks). */
typedef enum sc_read_format { SC_READ_TEXT, SC_READ_JSON } sc_read_format;

/* Which bound stopped a read (rd.over after SC_ERR_LIMIT). */
enum { SC_READ_OVER_BYTES = 1, SC_READ_OVER_TIME = 2 };

typedef struct sc_read {
    /* in */
    sc_read_format format;
    size_t max_bytes;    /* 0: no cap */
    double deadline;     /* sc_clock_now() seconds; 0: none */
    /* out */
    char *text;          /* SC_OK: the bytes (sc_free); else NULL */
    size_t len;
    int errnum;          /* SC_ERR_ARG: the errno of open or read, 0 when the bytes are not the format */
    int over;            /* SC_ERR_LIMIT: SC_READ_OVER_BYTES or SC_READ_OVER_TIME */
} sc_read;

/* Reads path into rd (see above). SC_OK; SC_ERR_ARG with err "No such
 * file or directory" (strerror, rd.errnum set) or "not JSON: its first
 * byte is 0x00 ..." (the format's refusal, no path: the caller names the
 * file); SC_ERR_LIMIT with err "more than N bytes" or "still reading after
 * S s" (rd.over); SC_ERR_NOMEM when the counted allocator refused. */
sc_status sc_read_file(const char *path, sc_read *rd, char *err, size_t errlen);

/* The clock of deadlines: CLOCK_MONOTONIC, in seconds. */
double sc_clock_now(void);

/* 1 when the deadline (0: none) has passed. Cheap enough for every few
 * thousand items of a loop, not for every one. */
int sc_deadline_passed(double deadline);

#endif
