/*
 * atomic.h — write a whole file or nothing (exports, SVG, traces).
 *
 *   char err[256];
 *   sc_atomic *a;
 *   FILE *f = sc_atomic_open("out.csv", &a, err, sizeof err);
 *   if (!f) { fprintf(stderr, "%s\n", err); return; }
 *   fputs(text, f);
 *   if (sc_atomic_close(a, err, sizeof err) != 0 ||    // every write error shows here
 *       sc_atomic_commit(a, err, sizeof err) != 0)     // the rename
 *       fprintf(stderr, "%s\n", err);
 *   sc_atomic_free(a);         // removes the temporary file unless committed
 *
 * A regular file (or a path that does not exist yet) is written through a
 * temporary file "PATH.tmpXXXXXX" in its folder (same file system, so the
 * rename is atomic), flushed to disk and renamed over PATH at commit. The
 * new file gets the mode of the file it replaces (owner and group too where
 * the process may set them), or 0666 less the umask. A symbolic link is
 * followed: the file it points to is replaced and the link stays; a link to
 * nothing is refused. Anything else that exists (a FIFO, a terminal, a
 * device, /dev/stdout) is written directly: there is no file to replace, so
 * nothing is renamed over it. A folder is refused, and so is a FIFO that no
 * process reads within 10 s (opening it would wait for a reader forever).
 *
 * Confined to a folder: sc_atomic_openat with a folder's descriptor (the
 * sandbox's --allow-write DIR, opened once) writes only inside that folder,
 * whatever happens to its path or to the links in it meanwhile. The path
 * is relative to the descriptor; its folders are opened one at a time with
 * openat(O_DIRECTORY | O_NOFOLLOW) (a symbolic link among them, "..", or an
 * absolute path is refused); the temporary file is created there with
 * O_CREAT | O_EXCL | O_NOFOLLOW, renamed with renameat and removed with
 * unlinkat, relative to the folder's own descriptor, held until
 * sc_atomic_free. A link, a FIFO or a device in the file's place is
 * refused, never written through. AT_FDCWD: a path as given, as above.
 *
 * Several files, all or nothing: open all, write all, close all; commit
 * them only when every close succeeded (each rename is atomic; the renames
 * happen after everything was written). sc_atomic_free of a file not
 * committed removes its temporary file and leaves PATH as it was.
 *
 * Signals: while a temporary file exists, SIGINT, SIGTERM, SIGHUP, SIGPIPE
 * and SIGXFSZ remove it before the signal's previous action runs (a killed
 * export leaves nothing behind; SIGKILL cannot be caught).
 *
 * Not thread-safe (one writer at a time per process).
 *
 * Tested by: tests/unit/test_atomic.c.
 */
#ifndef SC_ATOMIC_H
#define SC_ATOMIC_H

#include <stddef.h>
#include <stdio.h>

typedef struct sc_atomic sc_atomic;

/* Starts writing path; the stream to write to (owned by *out), or NULL
 * with a message naming the file and the reason in err. */
FILE *sc_atomic_open(const char *path, sc_atomic **out, char *err, size_t errlen);
/* sc_atomic_open relative to dirfd: AT_FDCWD (the same), or a folder's
 * descriptor (not taken over) confining the write to it (above). name:
 * what messages call the file (NULL: path). */
FILE *sc_atomic_openat(int dirfd, const char *path, const char *name, sc_atomic **out,
                       char *err, size_t errlen);
/* Flushes, syncs and closes the stream: 0, or -1 with the first write
 * error in err (the temporary file stays until sc_atomic_free). */
int sc_atomic_close(sc_atomic *a, char *err, size_t errlen);
/* Closes if still open, then renames the temporary file over the path
 * (nothing for a FIFO or device): 0, or -1 with err. */
int sc_atomic_commit(sc_atomic *a, char *err, size_t errlen);
/* Closes, removes the temporary file unless committed, frees. NULL: no-op. */
void sc_atomic_free(sc_atomic *a);

/* What sc_atomic_open would refuse, checked without creating anything, so
 * that a command that computes for long (run --trace, --profile) fails
 * before it starts: a folder, a link to nothing, a folder that does not
 * exist or cannot be written. 0, or -1 with sc_atomic_open's message. A
 * FIFO or a device is not probed (opening one could disturb its reader). */
int sc_atomic_check(const char *path, char *err, size_t errlen);

/* Whether two outputs would land in one file (the second write would
 * replace the first): the same text ("-", standard output, included), one
 * existing file (links followed, hard links too), or a name not there yet
 * in the same folder. A command with several outputs refuses that before
 * it computes anything. */
int sc_atomic_same(const char *a, const char *b);

/* The whole buffer at once: 0 on success; -1 with a message naming the
 * file and the reason in err, path unchanged. */
int sc_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* The same relative to dirfd, as sc_atomic_openat. */
int sc_write_atomic_at(int dirfd, const char *path, const char *name, const void *data,
                       size_t len, char *err, size_t errlen);

#endif
