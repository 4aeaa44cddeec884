/*
 * export.c — the names of the export formats (export.h).
 */
#include "export.h"

#include <string.h>

static const char *const names[] = {
#define X(id, name) name,
    SC_EXPORT_FORMATS(X)
#undef X
};

int sc_export_format_named(const char *name)
{
    for (int i = 0; i < SC_FMT_COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* The list, joined at compile time: the names with ", " between them. */
#define X(id, name) ", " name
static const char list[] = SC_EXPORT_FORMATS(X);
#undef X

const char *sc_export_format_list(void) { return list + 2; }
