/*
 * text.h — the text form of a device's order of passes.
 *
 *   "F0 F1 B0 W0 F2 BW1"     tokens separated by spaces, tabs, newlines or commas
 *   KIND MB [. CHUNK]        KIND is F, B, W or BW; MB the microbatch; CHUNK the
 *                            index of the stage among the device's stages (0 when
 *                            omitted): "F3.1" is the forward of microbatch 3 on
 *                            the device's second stage.
 *   F3+BW1.1                 an overlapped pair (pair.h): a forward and a backward
 *                            (B or BW) joined by '+', run together; either first
 *   '#' starts a comment that runs to the end of the line.
 *
 * sc_order_parse appends the passes to device d's order. On a bad token it
 * returns SC_ERR_ARG and the message names the device, the token's number
 * (from 1) and the token. sc_order_format writes an order back in this form
 * (malloc'd string, caller frees; NULL when out of memory).
 * Tested by: tests/unit/test_vocab.c, tests/unit/test_pair.c.
 */
#ifndef SC_TEXT_H
#define SC_TEXT_H

#include "ir.h"

sc_status sc_order_parse(sc_prog *pg, int d, const char *text, size_t len);
char *sc_order_format(const sc_prog *pg, int d);

#endif
