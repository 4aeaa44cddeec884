/*
 * module_find.c — the search for a module's file (module_find.h).
 */
#include "module_find.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sc_module_find(const char *file, const char *env, char *path, size_t len)
{
    const char *e = getenv(env);
    if (e && *e) {
        snprintf(path, len, "%s", e);
        return 0;
    }
    size_t room = strlen(file) + sizeof "build/"; /* what goes after the folder's slash */
    ssize_t n = len > room ? readlink("/proc/self/exe", path, len - room) : -1;
    char *slash = n > 0 ? (path[n] = 0, strrchr(path, '/')) : NULL;
    if (!slash) {
        snprintf(path, len, ".");
        return -1;
    }
    static const char *const places[] = {"%s", "build/%s"};
    for (size_t i = 0; i < sizeof places / sizeof *places; i++) {
        snprintf(slash + 1, room, places[i], file);
        if (access(path, R_OK) == 0)
            return 0;
    }
    *slash = 0;
    return -1;
}
