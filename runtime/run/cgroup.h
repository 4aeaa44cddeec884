/*
 * cgroup.h — the memory a process may still use under its control group's
 * limit (cgroup v2's memory.max, v1's memory.limit_in_bytes), for run's
 * pre-check (docs/run.md#errors, exit 4): a container's limit is usually far below
 * the machine's memory, and past it the kernel kills the process instead of
 * run refusing it with its figures.
 * Tested by: tests/unit/test_cgroup.c.
 */
#ifndef SC_CGROUP_H
#define SC_CGROUP_H

/* The bytes this process's cgroups still allow: over every limited level
 * from its own group up to the hierarchy's root, the least of limit minus
 * usage (0 when a level is over it). A negative number when no level has a
 * limit, or the files cannot be read. */
double sc_cgroup_room(void);

/* The same from a /proc/PID/cgroup file and the cgroup mount root (v1's
 * controllers under ROOT/memory, v2's under ROOT or ROOT/unified). A group
 * whose directory is not under the mount (a cgroup namespace: the process
 * sees "/" as its group) is read at the mount's root. For tests. */
double sc_cgroup_room_at(const char *proc_cgroup, const char *root);

#endif
