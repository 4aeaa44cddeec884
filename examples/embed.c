/*
 * embed.c — stagecraft from C, built against the installed library
 * (docs/embed.md):
 *
 *     make install PREFIX=$HOME/.local
 *     export PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig
 *     cc -o embed examples/embed.c $(pkg-config --cflags --libs stagecraft)
 *     ./embed zb-h1 p=4 m=8
 *
 * Loads the recipe with the parameters, verifies and simulates it, prints
 * the figures and writes its torch-csv export to RECIPE.csv. Exit status:
 * the library's code (docs/errors.md), as the command line's.
 */
#include <stagecraft.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: embed RECIPE [NAME=VALUE]...\n");
        return STAGECRAFT_USAGE;
    }
    stagecraft *sc = stagecraft_open();
    if (!sc) {
        fprintf(stderr, "embed: out of memory\n");
        return STAGECRAFT_NOMEM;
    }
    stagecraft_program *p = NULL;
    stagecraft_figures f;
    char out[256];
    snprintf(out, sizeof out, "%s.csv", argv[1]);
    int rc = stagecraft_load(sc, argv[1], (const char *const *)argv + 2, &p);
    if (rc == STAGECRAFT_OK)
        rc = stagecraft_check(p);
    if (rc == STAGECRAFT_OK)
        rc = stagecraft_simulate(p, &f);
    if (rc == STAGECRAFT_OK)
        rc = stagecraft_export(p, "torch-csv", out);
    if (rc != STAGECRAFT_OK) {
        fprintf(stderr, "embed: %s (%s, code %d)\n", stagecraft_errmsg(sc),
                stagecraft_code_name(rc), rc);
    } else {
        printf("stagecraft %s: %s: %d devices, %d stages, %d microbatches, %lld instructions\n",
               stagecraft_version(), argv[1], f.devices, f.stages, f.microbatches,
               f.instructions);
        printf("makespan %g  bubble %.2f%%  peak", f.makespan, 100 * f.bubble_rate);
        for (int d = 0; d < f.devices; d++)
            printf(" %g", f.peak_memory[d]);
        printf("\nwrote %s\n", out);
    }
    stagecraft_program_free(p);
    stagecraft_close(sc);
    return rc;
}
