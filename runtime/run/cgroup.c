/*
 * cgroup.c — the memory a process may still use under its control groups
 * (cgroup.h).
 */
#include "cgroup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A number in file dir/name: 1 and *v when it holds one; 0 when it is
 * absent, says "max" (v2: no limit) or cannot be read. */
static int read_bytes(const char *dir, const char *name, double *v)
{
    char path[4096], text[64];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    char *end;
    unsigned long long x = ok ? strtoull(text, &end, 10) : 0;
    if (!ok || end == text)
        return 0;
    *v = (double)x;
    return 1;
}

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The least room over the levels from base/group up to base (limit and
 * usage files named lim and use; a v1 limit of 2^62 or more is none). */
static double walk_up(const char *base, const char *group, const char *lim, const char *use,
                      double room)
{
    char dir[4096];
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", base, group) >= sizeof dir || !is_dir(dir))
        snprintf(dir, sizeof dir, "%s", base); /* a namespace: its root is the group */
    size_t keep = strlen(base);
    for (;;) {
        double l, u;
        if (read_bytes(dir, lim, &l) && l < 4611686018427387904.0) {
            double r = read_bytes(dir, use, &u) ? l - u : l;
            r = r > 0 ? r : 0;
            room = room < 0 || r < room ? r : room;
        }
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= keep || !slash || (size_t)(slash - dir) < keep)
            break;
        *slash = '\0';
    }
    return room;
}

double sc_cgroup_room_at(const char *proc_cgroup, const char *root)
{
    FILE *f = fopen(proc_cgroup, "r");
    if (!f)
        return -1;
    double room = -1;
    char line[4096], base[4096];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctl = c1 + 1, *group = c2 + 1;
        if (strcmp(group, "/") == 0)
            group = "";
        if (*ctl == '\0') { /* v2: unified, at the root or beside v1's */
            static const char *const at[] = {"", "/unified"};
            for (int i = 0; i < 2; i++) {
                snprintf(base, sizeof base, "%s%s", root, at[i]);
                char probe[4200];
                snprintf(probe, sizeof probe, "%s/cgroup.controllers", base);
                FILE *p = fopen(probe, "r");
                if (!p)
                    continue;
                fclose(p);
                room = walk_up(base, group, "memory.max", "memory.current", room);
            }
            continue;
        }
        char *save = NULL;
        for (char *t = strtok_r((char *)ctl, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (strcmp(t, "memory") == 0) {
                snprintf(base, sizeof base, "%s/memory", root);
                room = walk_up(base, group, "memory.limit_in_bytes", "memory.usage_in_bytes",
                               room);
            }
    }
    fclose(f);
    return room;
}

double sc_cgroup_room(void)
{
    return sc_cgroup_room_at("/proc/self/cgroup", "/sys/fs/cgroup");
}
