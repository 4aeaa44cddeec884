/*
 * test_atomic.c — sc_write_atomic writes the whole file or leaves the old
 * one, and never leaves a temporary file behind; sc_write_atomic_at with a
 * folder's descriptor writes inside that folder only.
 */
#include "formats/atomic.h"
#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* Files in folder other than . and .. */
static int entries_in(const char *folder)
{
    DIR *d = opendir(folder);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static int entries(void) { return entries_in(dir); }

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
    /* The target is a folder: refused, the folder stays, nothing else is
     * made. */
    snprintf(path, sizeof path, "%s/sub", dir);
    CHECK(mkdir(path, 0700) == 0);
    CHECK(sc_write_atomic(path, "x", 1, err, sizeof err) == -1);
    CHECK_STR(err, "it is a folder");
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(entries() == 1);
    rmdir(path);
    /* A link to nothing: refused, the link stays a link. */
    snprintf(path, sizeof path, "%s/dangling", dir);
    CHECK(symlink("nowhere", path) == 0);
    CHECK(sc_write_atomic(path, "x", 1, err, sizeof err) == -1);
    CHECK_STR(err, "a symbolic link to a file that does not exist");
    CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(entries() == 1);
    unlink(path);
}

/* A link is followed (the file it points to is replaced, the link stays);
 * the replaced file keeps its mode; a FIFO is written, not replaced. */
TEST(links_modes_fifos)
{
    char real[128], link[128], fifo[128], err[256];
    snprintf(real, sizeof real, "%s/real.csv", dir);
    snprintf(link, sizeof link, "%s/link.csv", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(sc_write_atomic(real, "old", 3, err, sizeof err) == 0);
    CHECK(chmod(real, 0604) == 0);
    CHECK(symlink("real.csv", link) == 0);
    CHECK(sc_write_atomic(link, "new", 3, err, sizeof err) == 0);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK_STR(slurp(real), "new");
    CHECK(stat(real, &st) == 0 && (st.st_mode & 0777) == 0604);
    CHECK(entries() == 2);
    CHECK(mkfifo(fifo, 0600) == 0);
    pid_t pid = fork();
    if (pid == 0) { /* the reader: copies the FIFO into real.csv */
        char buf[64] = "";
        FILE *in = fopen(fifo, "r"), *out = fopen(real, "w");
        size_t n = in ? fread(buf, 1, sizeof buf, in) : 0;
        int ok = in && out && fwrite(buf, 1, n, out) == n && fclose(out) == 0;
        _exit(ok ? 0 : 1);
    }
    CHECK(pid > 0);
    CHECK(sc_write_atomic(fifo, "piped", 5, err, sizeof err) == 0);
    int status = -1;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_STR(slurp(real), "piped");
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK(entries() == 3);
    unlink(fifo);
    unlink(link);
    unlink(real);
}

/* Several files: written all, then committed; one not committed is
 * removed and its target left as it was. */
TEST(all_or_nothing)
{
    char a_path[128], b_path[128], err[256];
    snprintf(a_path, sizeof a_path, "%s/a.txt", dir);
    snprintf(b_path, sizeof b_path, "%s/b.txt", dir);
    CHECK(sc_write_atomic(a_path, "keep", 4, err, sizeof err) == 0);
    sc_atomic *a, *b;
    FILE *fa = sc_atomic_open(a_path, &a, err, sizeof err);
    FILE *fb = sc_atomic_open(b_path, &b, err, sizeof err);
    CHECK(fa && fb);
    CHECK(entries() == 3); /* a.txt and two temporary files */
    fputs("new a", fa);
    fputs("new b", fb);
    sc_atomic_free(a); /* say b failed: a is not committed either */
    sc_atomic_free(b);
    CHECK_STR(slurp(a_path), "keep");
    CHECK(entries() == 1);
    unlink(a_path);
}

/* Two outputs that would land in one file (run --trace F --profile F). */
TEST(same_file)
{
    char a[128], b[128], c[128], sub[96];
    snprintf(a, sizeof a, "%s/same.json", dir);
    snprintf(sub, sizeof sub, "%s/s", dir);
    CHECK(mkdir(sub, 0700) == 0);
    snprintf(b, sizeof b, "%s/s/../same.json", dir);
    snprintf(c, sizeof c, "%s/other.json", dir);
    CHECK(sc_atomic_same("-", "-") && sc_atomic_same(a, a));
    CHECK(sc_atomic_same(a, b));  /* not there yet: one folder, one name */
    CHECK(!sc_atomic_same(a, c) && !sc_atomic_same("-", a));
    CHECK(sc_write_atomic(a, "x", 1, (char[64]){0}, 64) == 0);
    CHECK(link(a, c) == 0);       /* a hard link: one file, two names */
    CHECK(sc_atomic_same(a, c) && sc_atomic_same(b, c));
    unlink(c);
    unlink(a);
    rmdir(sub);
}

/* Confined to a folder's descriptor: subfolders walked without links, no
 * "..", no absolute path, no link in the file's place; after the folder's
 * path is swapped for a link to another folder, the write still lands in
 * the folder the descriptor holds; a rename that fails leaves nothing. */
TEST(confined_to_a_descriptor)
{
    char in[128], other[128], path[160], err[256];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    CHECK(mkdir(in, 0700) == 0 && mkdir(other, 0700) == 0);
    int fd = open(in, O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0);
    snprintf(path, sizeof path, "%s/sub", in);
    CHECK(mkdir(path, 0700) == 0);
    CHECK(sc_write_atomic_at(fd, "sub/a.txt", "shown.txt", "a", 1, err, sizeof err) == 0);
    snprintf(path, sizeof path, "%s/sub/a.txt", in);
    CHECK_STR(slurp(path), "a");
    /* A link among the folders, even to a folder inside, is not followed. */
    snprintf(path, sizeof path, "%s/alias", in);
    CHECK(symlink("sub", path) == 0);
    CHECK(sc_write_atomic_at(fd, "alias/b.txt", "shown.txt", "b", 1, err, sizeof err) == -1);
    CHECK_STR(err, "cannot write 'shown.txt': a folder in its path is a symbolic link");
    snprintf(path, sizeof path, "%s/link.txt", in);
    CHECK(symlink("../other/t.txt", path) == 0);
    CHECK(sc_write_atomic_at(fd, "link.txt", NULL, "c", 1, err, sizeof err) == -1);
    CHECK_STR(err, "cannot write 'link.txt': it is a symbolic link");
    CHECK(sc_write_atomic_at(fd, "../other/d.txt", NULL, "d", 1, err, sizeof err) == -1);
    CHECK_STR(err, "leads out of the folder");
    CHECK(sc_write_atomic_at(fd, "/tmp/e.txt", NULL, "e", 1, err, sizeof err) == -1);
    CHECK(entries_in(other) == 0);
    CHECK(entries_in(in) == 3); /* sub, alias, link.txt */
    /* The folder's path swapped for a link to another folder. */
    char held[128];
    snprintf(held, sizeof held, "%s/held", dir);
    CHECK(rename(in, held) == 0 && symlink("other", in) == 0);
    CHECK(sc_write_atomic_at(fd, "f.txt", NULL, "f", 1, err, sizeof err) == 0);
    CHECK(sc_write_atomic_at(fd, "sub/g.txt", NULL, "g", 1, err, sizeof err) == 0);
    CHECK(entries_in(other) == 0);
    snprintf(path, sizeof path, "%s/f.txt", held);
    CHECK_STR(slurp(path), "f");
    /* A rename that fails (a folder put in the file's place meanwhile): no
     * temporary file stays. */
    sc_atomic *a;
    FILE *f = sc_atomic_openat(fd, "h.txt", NULL, &a, err, sizeof err);
    CHECK(f != NULL);
    CHECK(f && entries_in(held) == 5);
    CHECK(mkdirat(fd, "h.txt", 0700) == 0);
    CHECK(f && sc_atomic_commit(a, err, sizeof err) == -1);
    sc_atomic_free(a);
    CHECK(entries_in(held) == 5); /* sub alias link.txt f.txt h.txt/ */
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", held, in, other);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/sc_atomic_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    RUN(writes_and_replaces);
    RUN(failure_leaves_nothing);
    RUN(links_modes_fifos);
    RUN(all_or_nothing);
    RUN(same_file);
    RUN(confined_to_a_descriptor);
    rmdir(dir);
    return harness_done("atomic");
}
