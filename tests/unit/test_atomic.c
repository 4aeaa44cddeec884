/*
 * test_atomic.c — sc_write_atomic writes the whole file or leaves the old
 * one, and never leaves a temporary file behind.
 */
#include "formats/atomic.h"
#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Files in dir other than . and .. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

TEST(writes_and_replaces)
{
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    CHECK(sc_write_atomic(path, "first", 5, err, sizeof err) == 0);
    CHECK_STR(slurp(path), "first");
    CHECK(sc_write_atomic(path, "second", 6, err, sizeof err) == 0);
    CHECK(strcmp(slurp(path), "second") == 0);
    CHECK(entries() == 1);
    struct stat st;
    mode_t um = umask(022);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~um));
    umask(um);
    unlink(path);
}

TEST(failure_leaves_nothing)
{
    char path[128], err[256] = "";
    /* No such folder: nothing is created, the message names the file. */
    snprintf(path, sizeof path, "%s/none/out.csv", dir);
    CHECK(sc_write_atomic(path, "x", 1, err, sizeof err) == -1);
    CHECK_STR(err, "none/out.csv");
    CHECK(entries() == 0);
    /* The target is a folder: the rename fails, the folder stays, and the
     * temporary file is removed. */
    snprintf(path, sizeof path, "%s/sub", dir);
    CHECK(mkdir(path, 0700) == 0);
    CHECK(sc_write_atomic(path, "x", 1, err, sizeof err) == -1);
    CHECK_STR(err, "cannot rename the temporary file onto");
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(entries() == 1);
    rmdir(path);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/sc_atomic_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    RUN(writes_and_replaces);
    RUN(failure_leaves_nothing);
    rmdir(dir);
    return harness_done("atomic");
}
