/*
 * instr_name.c — the name of an instruction as the dump, the errors and the
 * trace write it (sc_instr_format, ir.h).
 */
#include "ir.h"
#include "numfmt.h"

#include <stdio.h>

/* Appends s to buf[*at] (room permitting: it stops one short of len) and
 * a decimal x, for the names written most (a trace names every pass and
 * transfer): snprintf cost more than the rest of an event. */
static void name_put(char *buf, size_t len, size_t *at, const char *s)
{
    while (*s && *at + 1 < len)
        buf[(*at)++] = *s++;
    buf[*at] = 0;
}

static void name_int(char *buf, size_t len, size_t *at, int x)
{
    char t[SC_NUMFMT_MAX];
    int n = sc_fmt_int(t, x);
    for (int i = 0; i < n && *at + 1 < len; i++)
        buf[(*at)++] = t[i];
    buf[*at] = 0;
}

/* "OP s<stage> mb<mb>" */
static size_t name_pass(const sc_instr *in, char *buf, size_t len)
{
    size_t at = 0;
    name_put(buf, len, &at, sc_op_name(in->op));
    name_put(buf, len, &at, " s");
    name_int(buf, len, &at, in->stage);
    name_put(buf, len, &at, " mb");
    name_int(buf, len, &at, in->mb);
    return at;
}

void sc_instr_format(const sc_instr *in, char *buf, size_t len)
{
    if (len == 0)
        return;
    switch (sc_op_class_of(in->op)) {
    case SC_OPK_STAGE:
        if (!sc_op_has(in->op, SC_OPF_FRAC)) {
            name_pass(in, buf, len);
            return;
        } /* R: its fraction of the record */
        snprintf(buf, len, "%s s%d mb%d %.4g%%", sc_op_name(in->op), in->stage, in->mb,
                 100.0 * in->frac / SC_FRAC_ONE);
        return;
    case SC_OPK_VOCAB: /* the device's own shard */
        snprintf(buf, len, "%s mb%d", sc_op_name(in->op), in->mb);
        return;
    case SC_OPK_XFER:
    case SC_OPK_WAIT: { /* its SEND's operands: "OP act s1 mb0 -> d1" */
        size_t at = 0;
        name_put(buf, len, &at, sc_op_name(in->op));
        name_put(buf, len, &at, in->dir == SC_DIR_ACT ? " act s" : " grad s");
        name_int(buf, len, &at, in->stage);
        name_put(buf, len, &at, " mb");
        name_int(buf, len, &at, in->mb);
        name_put(buf, len, &at, sc_op_has(in->op, SC_OPF_IN) ? " <- d" : " -> d");
        name_int(buf, len, &at, in->peer);
        return;
    }
    case SC_OPK_COLL: {
        char st[24] = "", mb[24] = "", part[24] = "";
        int red = sc_op_has(in->op, SC_OPF_REDUCES);
        if (in->stage >= 0)
            snprintf(st, sizeof st, " s%d", in->stage);
        if (in->mb >= 0)
            snprintf(mb, sizeof mb, " mb%d", in->mb);
        if (sc_coll_part(in))
            snprintf(part, sizeof part, " part %d", sc_coll_part(in));
        snprintf(buf, len, "%s%s%s %s%s%s%s", sc_op_name(in->op), red ? " " : "",
                 red ? sc_red_name(in->dir) : "", sc_op_name(sc_coll_what(in)), st, mb, part);
        return;
    }
    case SC_OPK_FSDP: /* the stage's parameters */
        snprintf(buf, len, "%s s%d", sc_op_name(in->op), in->stage);
        return;
    case SC_OPK_HOST:
        snprintf(buf, len, "%s s%d mb%d %.4g%%", sc_op_name(in->op), in->stage, in->mb,
                 100.0 * in->frac / SC_FRAC_ONE);
        return;
    case SC_OPK_PAIR: {
        sc_instr b = sc_pair_half(in);
        snprintf(buf, len, "F s%d mb%d + %s s%d mb%d", in->stage, in->mb, sc_op_name(b.op),
                 b.stage, b.mb);
        return;
    }
    case SC_OPK_STEP: break;
    }
    snprintf(buf, len, "%s", sc_op_name(in->op));
}
