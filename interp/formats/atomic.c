/*
 * atomic.c — whole-file writes through a temporary file and rename(2)
 * (atomic.h).
 */
#include "atomic.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sc_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + sizeof ".tmp.XXXXXX");
    if (!tmp) {
        snprintf(err, errlen, "cannot write '%s': out of memory", path);
        return -1;
    }
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    const char *step = "create a temporary file for";
    int fd = mkstemp(tmp), made = fd >= 0;
    if (fd < 0)
        goto fail;
    step = "write";
    /* mkstemp makes it 0600: give it the mode of the file it replaces, or
     * what a plain fopen would (0666 less the umask). */
    struct stat st;
    mode_t mode;
    if (stat(path, &st) == 0)
        mode = st.st_mode & 07777;
    else {
        mode_t um = umask(0);
        umask(um);
        mode = 0666 & ~um;
    }
    if (fchmod(fd, mode) != 0)
        goto fail;
    for (const char *p = data; len > 0;) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            goto fail;
        p += w;
        len -= (size_t)w;
    }
    if (fsync(fd) != 0)
        goto fail;
    int rc = close(fd);
    fd = -1;
    if (rc != 0)
        goto fail;
    step = "rename the temporary file onto";
    if (rename(tmp, path) != 0)
        goto fail;
    free(tmp);
    return 0;
fail:
    snprintf(err, errlen, "cannot %s '%s': %s", step, path, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (made)
        unlink(tmp);
    free(tmp);
    return -1;
}
