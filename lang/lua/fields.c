/*
 * fields.c — the lists of each table's fields, made from their rows
 * (fields.h).
 */
#include "fields.h"

#include <string.h>

static const struct row {
    const char *name;
    unsigned tables;
    const char *type, *doc;
} rows[] = {
#define X(name, tables, type, doc) {name, tables, type, doc},
    SC_FIELDS(X)
#undef X
};
#define NROWS (sizeof rows / sizeof rows[0])

static const char *const table_names[] = {
#define X(id, name) name,
    SC_FIELD_TABLES(X)
#undef X
};
_Static_assert(sizeof table_names / sizeof table_names[0] == SC_FT_COUNT, "field tables");

/* The lists, made once (the Lua surface runs on one thread). */
static const char *lists[SC_FT_COUNT][NROWS + 1];
static int made;

const char *const *sc_fields_of(sc_field_table t)
{
    if (!made) {
        for (int k = 0; k < SC_FT_COUNT; k++) {
            size_t n = 0;
            for (size_t i = 0; i < NROWS; i++)
                if (rows[i].tables & (1u << k))
                    lists[k][n++] = rows[i].name;
            lists[k][n] = NULL;
        }
        made = 1;
    }
    static const char *const none[] = {NULL};
    return (unsigned)t < SC_FT_COUNT ? lists[t] : none;
}

int sc_field_in(const char *name, sc_field_table t)
{
    const char *const *f = sc_fields_of(t);
    for (int i = 0; f[i]; i++)
        if (strcmp(f[i], name) == 0)
            return 1;
    return 0;
}

int sc_field_table_named(const char *name)
{
    for (int k = 0; k < SC_FT_COUNT; k++)
        if (strcmp(table_names[k], name) == 0)
            return k;
    return -1;
}

const char *sc_field_table_name(sc_field_table t)
{
    return (unsigned)t < SC_FT_COUNT ? table_names[t] : "?";
}

int sc_field_row(int i, const char **name, unsigned *tables, const char **type, const char **doc)
{
    if (i < 0 || (size_t)i >= NROWS)
        return 0;
    *name = rows[i].name;
    *tables = rows[i].tables;
    *type = rows[i].type;
    *doc = rows[i].doc;
    return 1;
}
