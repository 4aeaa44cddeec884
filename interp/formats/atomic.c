/*
 * atomic.c — whole-file writes through a temporary file and renameat(2),
 * special files written directly, writes confined to a folder's descriptor,
 * and temporary files removed when a signal ends the process (atomic.h).
 */
#define _XOPEN_SOURCE 700 /* realpath, fchown, openat, renameat, unlinkat */
#include "atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* Every name below is relative to dirfd: AT_FDCWD (a path as given), or
 * the folder of a confined write, held open (owned) until sc_atomic_free
 * so that the rename and the removal reach the folder the temporary file
 * was made in, whatever its path names meanwhile. */
struct sc_atomic {
    FILE *f;
    char *name;   /* the path as given, for messages */
    char *target; /* what is replaced: the path, the file its link points to,
                   * or (confined) the last name of the path */
    char *tmp;    /* the temporary file; NULL when written directly or committed */
    int dirfd;
    int closed, close_rc;
};

/* ---- temporary files removed on a signal ---------------------------------
 * The registry holds the names of the temporary files that exist; the
 * handler removes them (unlink is async-signal-safe), puts the signal's
 * previous action back and raises it again. Handlers are installed only
 * over the default action (termination): an ignored signal stays ignored,
 * and a program's own handler is left alone. */

#define MAX_TEMPS 16
#define FIFO_WAIT_S 10 /* how long a FIFO may wait for its reader */
#define FIFO_WAIT_TEXT "10"
static const int cleanup_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ};
#define NSIGS (int)(sizeof cleanup_sigs / sizeof cleanup_sigs[0])
static char *volatile temps[MAX_TEMPS];
static volatile int temp_dirs[MAX_TEMPS]; /* the folder each name is relative to */
static int ntemps;
static struct sigaction saved[NSIGS];
static int installed[NSIGS];

static void on_signal(int sig)
{
    for (int i = 0; i < MAX_TEMPS; i++) {
        char *t = temps[i];
        if (t)
            unlinkat(temp_dirs[i], t, 0); /* async-signal-safe, as unlink */
    }
    for (int k = 0; k < NSIGS; k++)
        if (cleanup_sigs[k] == sig && installed[k])
            sigaction(sig, &saved[k], NULL);
    raise(sig); /* delivered when this handler returns */
}

static void block_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (int k = 0; k < NSIGS; k++)
        sigaddset(&set, cleanup_sigs[k]);
    sigprocmask(SIG_BLOCK, &set, old);
}

/* Adds or removes a name (relative to dirfd); call with the signals
 * blocked. 0, or -1 when the registry is full (the caller refuses the
 * file). */
static int registry(int dirfd, char *tmp, int add)
{
    for (int i = 0; i < MAX_TEMPS; i++) {
        if (add ? temps[i] != NULL : temps[i] != tmp)
            continue;
        temp_dirs[i] = dirfd;
        temps[i] = add ? tmp : NULL;
        ntemps += add ? 1 : -1;
        for (int k = 0; k < NSIGS && add && ntemps == 1; k++) {
            struct sigaction sa, old;
            sigaction(cleanup_sigs[k], NULL, &old);
            installed[k] = old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO);
            if (!installed[k])
                continue;
            saved[k] = old;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_signal;
            sigemptyset(&sa.sa_mask);
            sigaction(cleanup_sigs[k], &sa, NULL);
        }
        for (int k = 0; k < NSIGS && !add && ntemps == 0; k++)
            if (installed[k]) {
                sigaction(cleanup_sigs[k], &saved[k], NULL);
                installed[k] = 0;
            }
        return 0;
    }
    return add ? -1 : 0;
}

/* ---- the writer ----------------------------------------------------------- */

static void fail(sc_atomic *a, int e, char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "cannot write '%s': %s", a->name, what ? what : strerror(e));
}

/* Creates the temporary file "TARGET.tmpXXXXXX" beside a->target in
 * a->dirfd, exclusively and without following a link (O_EXCL, O_NOFOLLOW:
 * a name planted in its place makes another name be tried, never a write
 * through it), registered for the signal handler, with the mode (and
 * owner) of the file it replaces (st, when exists) or 0666 less the umask.
 * Sets a->f and a->tmp: 0, or -1 with err (nothing left behind). */
static int make_temp(sc_atomic *a, int exists, const struct stat *st, char *err, size_t errlen)
{
    static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static unsigned long long seed;
    size_t n = strlen(a->target);
    char *tmp = malloc(n + sizeof ".tmpXXXXXX");
    if (!tmp) {
        fail(a, 0, err, errlen, "out of memory");
        return -1;
    }
    memcpy(tmp, a->target, n);
    memcpy(tmp + n, ".tmpXXXXXX", sizeof ".tmpXXXXXX");
    int fd = -1, e = EEXIST, full = 0;
    sigset_t old;
    block_signals(&old);
    for (int tries = 0; fd < 0 && e == EEXIST && tries < 100; tries++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL +
               (unsigned long long)ts.tv_nsec + ((unsigned long long)getpid() << 32);
        unsigned long long r = seed >> 16;
        for (int i = 0; i < 6; i++, r /= 62)
            tmp[n + 4 + i] = letters[r % 62];
        fd = openat(a->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        e = errno;
    }
    full = fd >= 0 && registry(a->dirfd, tmp, 1) != 0;
    if (full) {
        unlinkat(a->dirfd, tmp, 0);
        close(fd);
        fd = -1;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        free(tmp);
        fail(a, e, err, errlen, full ? "too many files open at once" : NULL);
        return -1;
    }
    a->tmp = tmp; /* from here on sc_atomic_free removes it */
    /* Made 0600: given the mode (and owner) of the file it replaces, or
     * what a plain fopen would (0666 less the umask). */
    mode_t mode;
    if (exists) {
        if (fchown(fd, st->st_uid, st->st_gid) != 0 && fchown(fd, (uid_t)-1, st->st_gid) != 0)
            errno = 0; /* another user's file: ours from now on */
        mode = st->st_mode & 07777;
    } else {
        mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }
    if (fchmod(fd, mode) != 0 || !(a->f = fdopen(fd, "w"))) {
        fail(a, errno, err, errlen, NULL);
        close(fd);
        return -1;
    }
    return 0;
}

/* A path as given (AT_FDCWD): a link followed, a special file written
 * directly, else through a temporary file beside the file itself. */
static int open_plain(sc_atomic *a, const char *path, char *err, size_t errlen)
{
    struct stat st, lst;
    int exists = stat(path, &st) == 0, e = errno;
    if (!exists && e != ENOENT) {
        fail(a, e, err, errlen, NULL);
        return -1;
    }
    if (!exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        fail(a, 0, err, errlen, "it is a symbolic link to a file that does not exist");
        return -1;
    }
    if (exists && S_ISDIR(st.st_mode)) {
        fail(a, 0, err, errlen, "it is a folder");
        return -1;
    }
    if (exists && !S_ISREG(st.st_mode)) { /* FIFO, terminal, device: write to it */
        /* Not forever: a FIFO that no process reads would hold open() until
         * one does. A reader started beside the command may come a little
         * later: asked again (ENXIO) for FIFO_WAIT_S; blocking again for
         * the writes. */
        int fd, fl = -1;
        for (int tries = 0;; tries++) {
            fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK);
            if (fd >= 0 || errno != ENXIO || tries >= FIFO_WAIT_S * 100)
                break;
            nanosleep(&(struct timespec){0, 10000000L}, NULL);
        }
        if (fd >= 0 && ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
            fl = -1;
        if (fd < 0 || fl < 0 || !(a->f = fdopen(fd, "w"))) {
            fail(a, errno, err, errlen,
                 fd < 0 && errno == ENXIO ? "it is a FIFO that no process read within "
                                            FIFO_WAIT_TEXT " s" : NULL);
            if (fd >= 0)
                close(fd);
            return -1;
        }
        return 0;
    }
    /* A regular file, or none yet: through a temporary file beside the
     * file itself (a link's target, so that the link stays a link). */
    if (!(a->target = exists ? realpath(path, NULL) : strdup(path))) {
        fail(a, errno, err, errlen, exists ? NULL : "out of memory");
        return -1;
    }
    return make_temp(a, exists, &st, err, errlen);
}

/* Confined to the folder dirfd: path relative, its folders opened one by
 * one with O_NOFOLLOW (a link among them refused, ".." refused), the last
 * folder held in a->dirfd; the file itself always through a temporary
 * file and renameat there (a link, a FIFO or a device in its place is
 * refused, never written through). */
static int open_inside(sc_atomic *a, int dirfd, const char *path, char *err, size_t errlen)
{
    int rc = -1, cur = dirfd;
    char *buf = strdup(path), *p = buf, *slash;
    if (!buf) {
        fail(a, 0, err, errlen, "out of memory");
        goto exit;
    }
    if (path[0] == '/') {
        fail(a, 0, err, errlen, "an absolute path where a path inside a folder is asked");
        goto exit;
    }
    for (; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
        *slash = '\0';
        if (p[0] == '\0' || strcmp(p, ".") == 0)
            continue;
        if (strcmp(p, "..") == 0) {
            fail(a, 0, err, errlen, "'..' leads out of the folder it is written in");
            goto exit;
        }
        /* A link answers ELOOP, or ENOTDIR with O_DIRECTORY (Linux): asked. */
        struct stat lst;
        int fd = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e = errno;
        int link = fd < 0 && fstatat(cur, p, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
                   S_ISLNK(lst.st_mode);
        if (cur != dirfd)
            close(cur);
        cur = fd;
        if (fd < 0) {
            fail(a, e, err, errlen,
                 link ? "a folder in its path is a symbolic link (none is followed here)" : NULL);
            goto exit;
        }
    }
    struct stat st;
    int exists = 0;
    if (p[0] == '\0' || strcmp(p, ".") == 0 || strcmp(p, "..") == 0) {
        fail(a, 0, err, errlen, "it is a folder");
        goto exit;
    }
    if (fstatat(cur, p, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        exists = 1;
        const char *why = S_ISDIR(st.st_mode) ? "it is a folder"
                          : S_ISLNK(st.st_mode) ? "it is a symbolic link (none is followed here)"
                          : !S_ISREG(st.st_mode) ? "it is not a regular file" : NULL;
        if (why) {
            fail(a, 0, err, errlen, why);
            goto exit;
        }
    } else if (errno != ENOENT) {
        fail(a, errno, err, errlen, NULL);
        goto exit;
    }
    a->dirfd = cur != dirfd ? cur : fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    cur = dirfd; /* a->dirfd owns it now */
    if (a->dirfd < 0) {
        a->dirfd = AT_FDCWD;
        fail(a, errno, err, errlen, NULL);
        goto exit;
    }
    if (!(a->target = strdup(p))) {
        fail(a, 0, err, errlen, "out of memory");
        goto exit;
    }
    rc = make_temp(a, exists, &st, err, errlen);
exit:
    if (cur != dirfd && cur >= 0)
        close(cur);
    free(buf);
    return rc;
}

FILE *sc_atomic_openat(int dirfd, const char *path, const char *name, sc_atomic **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    sc_atomic *a = calloc(1, sizeof *a);
    if (!a || !(a->name = strdup(name ? name : path))) {
        free(a);
        snprintf(err, errlen, "cannot write '%s': out of memory", name ? name : path);
        return NULL;
    }
    a->dirfd = AT_FDCWD;
    int rc = dirfd == AT_FDCWD ? open_plain(a, path, err, errlen)
                               : open_inside(a, dirfd, path, err, errlen);
    if (rc != 0) {
        sc_atomic_free(a); /* removes the temporary file, if one was made */
        return NULL;
    }
    *out = a;
    return a->f;
}

FILE *sc_atomic_open(const char *path, sc_atomic **out, char *err, size_t errlen)
{
    return sc_atomic_openat(AT_FDCWD, path, NULL, out, err, errlen);
}
/* The cause of a write error that the stream flagged earlier, its errno
 * gone since (a large fwrite fails past the buffer): a file-size limit
 * (ulimit -f) reached, or a full file system; a device asked with a write
 * of nothing (/dev/full answers ENOSPC); else EIO. */
static int lost_errno(FILE *f)
{
    struct stat st;
    struct rlimit rl;
    struct statvfs vs;
    int fd = fileno(f);
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY && (rlim_t)st.st_size >= rl.rlim_cur)
        return EFBIG;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && write(fd, "", 0) < 0)
        return errno;
    if (fstatvfs(fd, &vs) == 0 && (vs.f_bavail == 0 || vs.f_bfree == 0))
        return ENOSPC;
    return EIO;
}

int sc_atomic_close(sc_atomic *a, char *err, size_t errlen)
{
    if (a->closed)
        return a->close_rc;
    errno = 0;
    int e = fflush(a->f) != 0 || ferror(a->f) ? (errno ? errno : lost_errno(a->f)) : 0;
    if (!e && a->tmp && fsync(fileno(a->f)) != 0)
        e = errno;
    if (fclose(a->f) != 0 && !e)
        e = errno;
    a->f = NULL;
    a->closed = 1;
    a->close_rc = e ? -1 : 0;
    if (e)
        fail(a, e, err, errlen, NULL);
    return a->close_rc;
}

int sc_atomic_commit(sc_atomic *a, char *err, size_t errlen)
{
    if (sc_atomic_close(a, err, errlen) != 0)
        return -1;
    if (!a->tmp)
        return 0;
    if (renameat(a->dirfd, a->tmp, a->dirfd, a->target) != 0) {
        snprintf(err, errlen, "cannot rename the temporary file onto '%s': %s", a->name,
                 strerror(errno));
        return -1;
    }
    sigset_t old;
    block_signals(&old);
    registry(a->dirfd, a->tmp, 0);
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(a->tmp);
    a->tmp = NULL;
    return 0;
}

void sc_atomic_free(sc_atomic *a)
{
    if (!a)
        return;
    if (a->f)
        fclose(a->f);
    if (a->tmp) {
        sigset_t old;
        block_signals(&old);
        unlinkat(a->dirfd, a->tmp, 0);
        registry(a->dirfd, a->tmp, 0);
        sigprocmask(SIG_SETMASK, &old, NULL);
        free(a->tmp);
    }
    if (a->dirfd != AT_FDCWD)
        close(a->dirfd);
    free(a->name);
    free(a->target);
    free(a);
}

/* The real path of the file that path names, or of its folder joined with
 * its last name when the file does not exist yet; NULL when neither
 * resolves (or out of memory). malloc'd. */
static char *resolved(const char *path)
{
    char *r = realpath(path, NULL);
    if (r || errno != ENOENT)
        return r;
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    size_t n = slash ? (size_t)(slash - path) : 0;
    char *dir = malloc(n + 2);
    if (!dir)
        return NULL;
    if (!slash)
        strcpy(dir, ".");
    else if (n == 0)
        strcpy(dir, "/");
    else {
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    char *rd = realpath(dir, NULL);
    free(dir);
    if (!rd)
        return NULL;
    size_t len = strlen(rd) + strlen(name) + 2;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s/%s", rd, name);
    free(rd);
    return out;
}

int sc_atomic_same(const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return 1;
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ra = resolved(a), *rb = resolved(b);
    int same = ra && rb && strcmp(ra, rb) == 0;
    free(ra);
    free(rb);
    return same;
}

int sc_atomic_check(const char *path, char *err, size_t errlen)
{
    struct stat st, lst;
    char *file = NULL;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "cannot write '%s': it is a folder", path);
            return -1;
        }
        if (!S_ISREG(st.st_mode))
            return 0;
        file = realpath(path, NULL); /* the temporary file goes beside a link's target */
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return -1;
    } else if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        snprintf(err, errlen, "cannot write '%s': it is a symbolic link to a file that does not "
                 "exist", path);
        return -1;
    }
    if (!file)
        file = strdup(path);
    if (!file) {
        snprintf(err, errlen, "cannot write '%s': out of memory", path);
        return -1;
    }
    char *slash = strrchr(file, '/');
    const char *dir = slash ? file : ".";
    if (slash == file)
        dir = "/";
    else if (slash)
        *slash = '\0';
    int rc = access(dir, W_OK | X_OK), e = errno;
    free(file);
    if (rc != 0) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int sc_write_atomic_at(int dirfd, const char *path, const char *name, const void *data,
                       size_t len, char *err, size_t errlen)
{
    sc_atomic *a;
    FILE *f = sc_atomic_openat(dirfd, path, name, &a, err, errlen);
    if (!f)
        return -1;
    int rc = -1;
    if (fwrite(data, 1, len, f) == len || len == 0)
        rc = sc_atomic_commit(a, err, errlen);
    else
        sc_atomic_close(a, err, errlen);
    sc_atomic_free(a);
    return rc;
}

int sc_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    return sc_write_atomic_at(AT_FDCWD, path, NULL, data, len, err, errlen);
}
