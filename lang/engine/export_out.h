/*
 * export_out.h — an export of one program, checked and written once for
 * every front end: the command line's `export` (cli_export.c) and the C
 * library's stagecraft_export_text_with, so the Python package's
 * Program.export(fmt) is the command's output, byte for byte.
 *
 *     sc_eng_err e;
 *     sc_eng_err *prev = sc_eng_catch(&e);
 *     int version;
 *     const sc_sim *sim;
 *     int code = sc_eng_export_prepare(L, lp, "torch-csv", "2.14", 0, &version, &sim);
 *     sc_eng_release(prev);
 *     if (!code)
 *         sc_eng_export_write(f, lp->pg, sim, "torch-csv", "zb-h1", version, NULL);
 *
 * Errors are the engine's (engine.h): a code of the exit-code table and
 * the command's one-line message. Tested by: tests/py/test_package.py, the
 * export goldens.
 */
#ifndef SC_EXPORT_OUT_H
#define SC_EXPORT_OUT_H

#include <lua.h>
#include <stdio.h>

#include "formats/svg.h"
#include "lua/sc_lua.h"

/* --torch VERSION: the dialect's number (torchcsv.h) into *v; 0, or 2
 * with the message. */
int sc_eng_torch_version(const char *s, int *v);
/* What PyTorch (and with titan, torchtitan) cannot load: 0, or the code
 * with the message. comms: the torch-csv-comms file. */
int sc_eng_torch_check(const sc_prog *pg, int comms, int titan);
/* The placement's kind: 1 loop (stage s on rank s mod P), 2 V (two stages
 * per rank, rank d holds d and 2P-1-d), 0 any other table. */
int sc_eng_placement_kind(const sc_prog *pg);
/* Everything an export checks before it writes, in the command's order:
 * the format, --torch and --torchtitan, the program lowered for the
 * format (torch-csv-comms: for the file's reading; the caller puts the
 * target back when the program lives on), verified and simulated (*sim),
 * one training step for a CSV, what PyTorch loads. *version: the CSV's
 * dialect. L: for the memory limit's message (NULL: interp's). */
int sc_eng_export_prepare(lua_State *L, sc_lprog *lp, const char *format, const char *torch,
                          int titan, int *version, const sc_sim **sim);
/* Writes the export of pg simulated as sim in format to f: name is the
 * title of json and svg; svg: width and window (NULL: the defaults). */
sc_status sc_eng_export_write(FILE *f, sc_prog *pg, const sc_sim *sim, const char *format,
                              const char *name, int version, const sc_svg_opts *svg);

#endif
