/*
 * test_cgroup.c — run's cgroup pre-check (runtime/run/cgroup.h) on
 * hierarchies written into a temporary folder: v1 and v2, limits at the
 * group and above it, "max", a namespaced group, usage over the limit.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/cgroup.h"

static char dir[64];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0700);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static double room(void)
{
    char proc[512];
    snprintf(proc, sizeof proc, "%s/proc", dir);
    return sc_cgroup_room_at(proc, dir);
}

TEST(v1_group_and_parent)
{
    put("proc", "5:devices:/\n4:memory:/a/b\n1:cpu,cpuacct:/\n0::/\n");
    put("memory/memory.limit_in_bytes", "9223372036854771712\n");
    put("memory/a/memory.limit_in_bytes", "1000000\n");
    put("memory/a/memory.usage_in_bytes", "400000\n");
    put("memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
    put("memory/a/b/memory.usage_in_bytes", "100000\n");
    CHECK_NEAR(room(), 600000, 0); /* the parent's limit binds */
    put("memory/a/b/memory.limit_in_bytes", "300000\n");
    CHECK_NEAR(room(), 200000, 0); /* now the group's own */
    put("memory/a/b/memory.usage_in_bytes", "900000\n");
    CHECK_NEAR(room(), 0, 0); /* over it: nothing left */
}

TEST(v2_unified)
{
    put("proc", "0::/user.slice/job\n");
    put("cgroup.controllers", "cpu memory\n");
    put("user.slice/memory.max", "max\n");
    put("user.slice/job/memory.max", "5000000\n");
    put("user.slice/job/memory.current", "1000000\n");
    CHECK_NEAR(room(), 4000000, 0);
    put("user.slice/job/memory.max", "max\n");
    CHECK(room() < 0); /* no level limited */
}

TEST(namespaced_and_absent)
{
    /* The process sees a group that is not under the mount: the mount's
     * root is its group. */
    put("proc", "0::/not/here\n");
    put("memory.max", "2000000\n");
    put("memory.current", "500000\n");
    CHECK_NEAR(room(), 1500000, 0);
    char proc[512];
    snprintf(proc, sizeof proc, "%s/none", dir);
    CHECK(sc_cgroup_room_at(proc, dir) < 0);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/sc_cgroup_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    RUN(v1_group_and_parent);
    RUN(v2_unified);
    RUN(namespaced_and_absent);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return harness_done("cgroup");
}
