/*
 * atomic.h — write a whole file or nothing (exports, SVG, traces).
 *
 *   char err[256];
 *   if (sc_write_atomic("out.csv", text, strlen(text), err, sizeof err) != 0)
 *       fprintf(stderr, "%s\n", err);
 *
 * The data go to a temporary file next to `path` (same folder, so the
 * rename stays on one file system), which is flushed to disk and renamed
 * over `path`. A failure at any step removes the temporary file and leaves
 * `path` as it was: never half-written. Thread-safety: as the file system.
 */
#ifndef SC_ATOMIC_H
#define SC_ATOMIC_H

#include <stddef.h>

/* 0 on success; -1 with a message naming the file and the reason in err. */
int sc_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);

#endif
