/*
 * ir.c — construction, placement, costs and accessors of sc_prog.
 */
#include "ir_impl.h"
#include "ir/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {
#define S(name, status, code, text) text,
#define E(name, code, text)
    SC_EXITS(S, E)
#undef S
#undef E
};
static const int status_codes[] = {
#define S(name, status, code, text) code,
#define E(name, code, text)
    SC_EXITS(S, E)
#undef S
#undef E
};
static const struct exit_row {
    int code;
    const char *name, *text;
} exit_rows[] = {
#define S(name, status, code, text) {code, #name, text},
#define E(name, code, text) {code, #name, text},
    SC_EXITS(S, E)
#undef S
#undef E
};
static const char *const op_names[] = {
#define X(name, cls, flags, mem, cost, look) #name,
    SC_OPS(X)
#undef X
};
_Static_assert(sizeof(op_names) / sizeof(op_names[0]) == SC_OP_COUNT, "op table");
const sc_op_props sc_op_tab[256] = {
#define X(name, cls, flags, mem, cost, look)                                              \
    {SC_OPB_CLASS(SC_OPK_##cls) | SC_OPB_FLAGS(flags), SC_OPK_##cls, SC_OPM_##mem, SC_OPC_##cost},
    SC_OPS(X)
#undef X
};
static const sc_op_look op_looks[SC_OP_COUNT + 1] = { /* the last: no kind */
#define X(name, cls, flags, mem, cost, look) look,
    SC_OPS(X)
#undef X
};
/* sc_op_stage_index: the stage passes' costs are in their order. */
_Static_assert(SC_OPC_TB - SC_OPC_TF == SC_OP_B && SC_OPC_TW - SC_OPC_TF == SC_OP_W &&
                   SC_OPC_TBW - SC_OPC_TF == SC_OP_BW && SC_OP_F == 0,
               "stage passes");

const sc_op_look *sc_op_look_of(int op)
{
    return &op_looks[(unsigned)op < SC_OP_COUNT ? op : SC_OP_COUNT];
}
_Static_assert(SC_OP_COUNT <= 256 && SC_OPM_FREE_ALL < 256 && SC_OPC_TR < 256, "a kind is a byte");
_Static_assert(sizeof(sc_instr) == 16, "sc_instr is 16 bytes");
static const char *const red_names[] = {
#define X(name, text) text,
    SC_REDS(X)
#undef X
};
_Static_assert(sizeof(red_names) / sizeof(red_names[0]) == SC_RED_COUNT, "reduction table");

const char *sc_red_name(int red)
{
    return (unsigned)red < SC_RED_COUNT ? red_names[red] : "?";
}


const char *sc_status_name(sc_status st)
{
    return (unsigned)st < SC_STATUS_COUNT ? status_names[st] : "unknown status";
}

int sc_status_exit_code(sc_status st)
{
    return (unsigned)st < SC_STATUS_COUNT ? status_codes[st] : SC_EXIT_INTERNAL;
}

int sc_exit_row(int i, int *code, const char **name, const char **text)
{
    if (i < 0 || (size_t)i >= sizeof exit_rows / sizeof exit_rows[0])
        return 0;
    *code = exit_rows[i].code;
    *name = exit_rows[i].name;
    *text = exit_rows[i].text;
    return 1;
}

const char *sc_op_name(int op)
{
    return (unsigned)op < SC_OP_COUNT ? op_names[op] : "?";
}

int sc_op_parse(const char *name)
{
    for (int op = 0; op < SC_OP_COUNT; op++)
        if (strcmp(name, op_names[op]) == 0)
            return op;
    return -1;
}

int sc_op_parse_pass(const char *s, size_t n, size_t *len)
{
    int best = -1;
    *len = 0;
    for (int op = 0; op < SC_OP_COUNT; op++) {
        size_t k = strlen(op_names[op]);
        /* R (SC_OPF_FRAC) comes from the lowering, never from an order. */
        if (sc_op_is_pass(op) && !sc_op_has(op, SC_OPF_FRAC) && k <= n && k > *len &&
            memcmp(s, op_names[op], k) == 0)
            best = op, *len = k;
    }
    return best;
}

sc_status sc_vec_push(sc_vec *vec, sc_instr in)
{
    if (vec->n == vec->cap) {
        size_t cap = vec->cap ? vec->cap * 2 : 64;
        sc_instr *v = sc_realloc(vec->v, cap * sizeof *v);
        if (!v)
            return SC_ERR_NOMEM;
        vec->v = v;
        vec->cap = cap;
    }
    vec->v[vec->n++] = in;
    return SC_OK;
}

sc_status sc_vec_reserve(sc_vec *vec, size_t n)
{
    if (n <= vec->cap)
        return SC_OK;
    sc_instr *v = sc_realloc(vec->v, n * sizeof *v);
    if (!v)
        return SC_ERR_NOMEM;
    vec->v = v;
    vec->cap = n;
    return SC_OK;
}

void sc_vec_free(sc_vec *vec)
{
    sc_free(vec->v);
    vec->v = NULL;
    vec->n = vec->cap = 0;
}

sc_status sc_fail(sc_prog *pg, sc_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pg->err, sizeof pg->err, fmt, ap);
    va_end(ap);
    pg->cap_refused = 0; /* sc_fail_cap says otherwise */
    return st;
}

static char new_err[256];

const char *sc_new_errmsg(void) { return new_err; }

sc_prog *sc_prog_new(int P, int S, int m)
{
    if (P < 1 || P > SC_MAX_DEVICES) {
        snprintf(new_err, sizeof new_err, "devices p = %d is out of range (1..%d)", P,
                 SC_MAX_DEVICES);
        return NULL;
    }
    if (S < P || S > SC_MAX_STAGES) {
        snprintf(new_err, sizeof new_err, "stages = %d is out of range (p=%d..%d)", S, P,
                 SC_MAX_STAGES);
        return NULL;
    }
    if (m < 1 || m > SC_MAX_MICROBATCHES) {
        snprintf(new_err, sizeof new_err, "microbatches m = %d is out of range (1..%d)", m,
                 SC_MAX_MICROBATCHES);
        return NULL;
    }
    if ((long)S * m * 3 > SC_MAX_PASSES) {
        snprintf(new_err, sizeof new_err,
                 "stages x microbatches = %d x %d is too large (at most %ld passes)", S, m,
                 SC_MAX_PASSES);
        return NULL;
    }
    sc_prog *pg = sc_calloc(1, sizeof *pg);
    if (!pg)
        goto nomem;
    pg->P = P;
    pg->S = S;
    pg->m = m;
    pg->steps = 1;
    pg->slices = 1;
    pg->copies = 1;
    pg->ep = 1;
    pg->fsdp = sc_fsdp_none();
    pg->nmb = m;
    pg->stage_dev = sc_calloc((size_t)S, sizeof(int));
    pg->chunk = sc_calloc((size_t)S, sizeof(int));
    pg->nchunks = sc_calloc((size_t)P, sizeof(int));
    pg->dev_stages = sc_calloc((size_t)P, sizeof(int *));
    pg->tf = sc_calloc((size_t)S, sizeof(double));
    pg->tb = sc_calloc((size_t)S, sizeof(double));
    pg->tw = sc_calloc((size_t)S, sizeof(double));
    pg->tbw = sc_calloc((size_t)S, sizeof(double));
    pg->topt = sc_calloc((size_t)S, sizeof(double));
    pg->tfb = sc_calloc((size_t)S, sizeof(double));
    pg->ta = sc_calloc((size_t)S, sizeof(double));
    pg->mem = sc_calloc((size_t)S, sizeof(double));
    pg->order = sc_calloc((size_t)P, sizeof(sc_vec));
    pg->stream = sc_calloc((size_t)P, sizeof(sc_vec));
    if (!pg->stage_dev || !pg->chunk || !pg->nchunks || !pg->dev_stages || !pg->tf || !pg->tb ||
        !pg->tw || !pg->tbw || !pg->topt || !pg->tfb || !pg->ta || !pg->mem || !pg->order || !pg->stream)
        goto nomem;
    double share = (double)P / S;
    for (int s = 0; s < S; s++) {
        pg->tf[s] = pg->tb[s] = pg->tw[s] = share;
        pg->tbw[s] = pg->tfb[s] = NAN;
        pg->mem[s] = share;
    }
    pg->w_keep = 1.0;
    pg->mem_limit = INFINITY;
    pg->off.ratio = SC_OFFLOAD_RATIO;
    pg->rc.frac = pg->rc.time = 1;
    pg->coll_bw = INFINITY;
    if (sc_prog_set_placement(pg, SC_PLACE_LOOP, NULL) != SC_OK)
        goto nomem;
    return pg;
nomem:
    snprintf(new_err, sizeof new_err, "out of memory creating a program of %d stages", S);
    sc_prog_free(pg);
    return NULL;
}

void sc_prog_free(sc_prog *pg)
{
    if (!pg)
        return;
    for (int d = 0; d < pg->P; d++) {
        if (pg->order)
            sc_vec_free(&pg->order[d]);
        if (pg->stream)
            sc_vec_free(&pg->stream[d]);
        if (pg->dev_stages)
            sc_free(pg->dev_stages[d]);
    }
    for (int d = 0; pg->cells && d < pg->P; d++)
        sc_free(pg->cells[d].v);
    sc_free(pg->cells);
    sc_free(pg->order);
    sc_free(pg->stream);
    sc_free(pg->vsnap);
    sc_free(pg->dev_stages);
    sc_free(pg->stage_dev);
    sc_free(pg->chunk);
    sc_free(pg->nchunks);
    sc_free(pg->tf);
    sc_free(pg->tb);
    sc_free(pg->tw);
    sc_free(pg->tbw);
    sc_free(pg->topt);
    sc_free(pg->tfb);
    sc_free(pg->ta);
    sc_free(pg->mem);
    sc_free(pg->wks);
    sc_free(pg->mem_cap);
    sc_free(pg->cap_need);
    sc_prog_free_offload_info(pg);
    sc_prog_free_recompute_info(pg);
    sc_free(pg->rc_frac);
    sc_free(pg->coll);
    if (pg->rcache_free)
        pg->rcache_free(pg->rcache);
    for (int i = 0; i < 4; i++)
        sc_free(pg->vcost[i]);
    sc_free(pg->vmem);
    sc_free(pg->len);
    sc_free(pg->len_lin);
    sc_free(pg->len_fix);
    sc_free(pg->len_rec);
    sc_free(pg->model);
    sc_free(pg->slayers);
    sc_free(pg->ep_bytes);
    sc_free(pg->ep_grp);
    sc_free(pg->pbytes);
    sc_free(pg->dbytes);
    if (pg->mdesc_free)
        pg->mdesc_free(pg->mdesc);
    for (int g = 0; g < pg->ngroups; g++)
        sc_free(pg->grp[g]);
    sc_free(pg->grp);
    sc_free(pg->ngrp);
    sc_free(pg->off_frac);
    if (pg->off_levels)
        for (int s = 0; s < pg->S; s++)
            sc_free(pg->off_levels[s]);
    sc_free(pg->off_levels);
    sc_free(pg->off_nlevels);
    sc_free(pg);
}

void sc_prog_free_recompute_info(sc_prog *pg)
{
    if (pg->rc_info) {
        sc_free(pg->rc_info->base_peak);
        sc_free(pg->rc_info->level);
        sc_free(pg->rc_info->count);
        sc_free(pg->rc_info);
        pg->rc_info = NULL;
    }
    sc_free(pg->rc_q);
    pg->rc_q = NULL;
}

void sc_prog_free_offload_info(sc_prog *pg)
{
    if (pg->off_info) {
        sc_free(pg->off_info->base_peak);
        sc_free(pg->off_info->level);
        sc_free(pg->off_info->copy_at);
        sc_free(pg->off_info->copy_dur);
        sc_free(pg->off_info);
        pg->off_info = NULL;
    }
}

void sc_times_free(sc_times *t)
{
    if (!t)
        return;
    sc_free(t->offset);
    sc_free(t->t0);
    sc_free(t->t1);
    *t = (sc_times){0};
}

void sc_prog_invalidate(sc_prog *pg)
{
    pg->verified = 0;
    if (pg->given)
        return; /* streams given as they are (sc_prog_push_stream) stay */
    for (int d = 0; d < pg->P; d++)
        pg->stream[d].n = 0;
    pg->ncoll = 0; /* the streams' collectives go with them */
    pg->lowered = pg->verified = 0;
    pg->nmb = pg->m;
}

sc_status sc_prog_set_placement(sc_prog *pg, sc_place kind, const int *table)
{
    int P = pg->P, S = pg->S;
    int *dev = sc_malloc((size_t)S * sizeof(int));
    if (!dev)
        return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
    for (int s = 0; s < S; s++) {
        switch (kind) {
        case SC_PLACE_LOOP:
            dev[s] = s % P;
            break;
        case SC_PLACE_V:
            if (S != 2 * P) {
                sc_free(dev);
                return sc_fail(pg, SC_ERR_ARG,
                               "placement 'v' needs exactly 2 stages per device (stages = %d, "
                               "devices = %d)",
                               S, P);
            }
            dev[s] = s < P ? s : 2 * P - 1 - s;
            break;
        case SC_PLACE_WAVE: /* chunks back and forth */
            if (S % P != 0) {
                sc_free(dev);
                return sc_fail(pg, SC_ERR_ARG,
                               "placement 'wave' needs the stages in whole chunks of the devices "
                               "(stages = %d, devices = %d)",
                               S, P);
            }
            dev[s] = (s / P) % 2 ? P - 1 - s % P : s % P;
            break;
        case SC_PLACE_TABLE:
            if (table[s] < 0 || table[s] >= P) {
                sc_free(dev);
                return sc_fail(pg, SC_ERR_ARG,
                               "placement: stage %d is placed on device %d, but devices are 0..%d",
                               s, table[s], P - 1);
            }
            dev[s] = table[s];
            break;
        default:
            sc_free(dev);
            return sc_fail(pg, SC_ERR_ARG, "unknown placement kind %d", (int)kind);
        }
    }
    /* Every device must hold at least one stage. */
    int *count = sc_calloc((size_t)P, sizeof(int));
    int **lists = sc_calloc((size_t)P, sizeof(int *));
    if (!count || !lists)
        goto nomem;
    for (int s = 0; s < S; s++)
        count[dev[s]]++;
    for (int d = 0; d < P; d++) {
        if (count[d] == 0) {
            sc_free(dev);
            sc_free(count);
            sc_free(lists);
            return sc_fail(pg, SC_ERR_ARG, "placement: device %d holds no stage", d);
        }
    }
    for (int d = 0; d < P; d++) {
        lists[d] = sc_malloc((size_t)count[d] * sizeof(int));
        if (!lists[d]) {
            for (int e = 0; e < d; e++)
                sc_free(lists[e]);
            goto nomem;
        }
        count[d] = 0;
    }
    for (int s = 0; s < S; s++) {
        int d = dev[s];
        pg->chunk[s] = count[d];
        lists[d][count[d]++] = s;
    }
    for (int d = 0; d < P; d++)
        sc_free(pg->dev_stages[d]);
    sc_free(pg->dev_stages);
    sc_free(pg->nchunks);
    sc_free(pg->stage_dev);
    pg->dev_stages = lists;
    pg->nchunks = count;
    pg->stage_dev = dev;
    sc_prog_invalidate(pg);
    return SC_OK;
nomem:
    sc_free(dev);
    sc_free(count);
    sc_free(lists);
    return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
}

static int bad_time(double t) { return !isfinite(t) || t < 0; }

sc_status sc_prog_set_cost(sc_prog *pg, int s, double tf, double tb, double tw)
{
    if (s < -1 || s >= pg->S)
        return sc_fail(pg, SC_ERR_ARG, "cost: stage %d is out of range (0..%d)", s, pg->S - 1);
    if (bad_time(tf) || bad_time(tb) || bad_time(tw))
        return sc_fail(pg, SC_ERR_ARG,
                       "cost: times must be finite and >= 0 (tf=%g tb=%g tw=%g)", tf, tb, tw);
    for (int i = s < 0 ? 0 : s; i < (s < 0 ? pg->S : s + 1); i++) {
        pg->tf[i] = tf;
        pg->tb[i] = tb;
        pg->tw[i] = tw;
    }
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_cost_bw(sc_prog *pg, int s, double tbw)
{
    if (s < -1 || s >= pg->S)
        return sc_fail(pg, SC_ERR_ARG, "cost: stage %d is out of range (0..%d)", s, pg->S - 1);
    if (tbw == tbw && bad_time(tbw))
        return sc_fail(pg, SC_ERR_ARG, "cost: tbw must be finite and >= 0 (got %g)", tbw);
    for (int i = s < 0 ? 0 : s; i < (s < 0 ? pg->S : s + 1); i++)
        pg->tbw[i] = tbw;
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_cost_optim(sc_prog *pg, int s, double topt)
{
    if (s < -1 || s >= pg->S)
        return sc_fail(pg, SC_ERR_ARG, "cost: stage %d is out of range (0..%d)", s, pg->S - 1);
    if (bad_time(topt))
        return sc_fail(pg, SC_ERR_ARG, "cost: optim must be finite and >= 0 (got %g)", topt);
    for (int i = s < 0 ? 0 : s; i < (s < 0 ? pg->S : s + 1); i++)
        pg->topt[i] = topt;
    sc_prog_invalidate(pg);
    return SC_OK;
}

void sc_prog_set_seconds(sc_prog *pg, int seconds) { pg->seconds = seconds != 0; }

sc_status sc_prog_set_comm(sc_prog *pg, double tcomm)
{
    if (bad_time(tcomm))
        return sc_fail(pg, SC_ERR_ARG, "tcomm must be finite and >= 0 (got %g)", tcomm);
    pg->tcomm = tcomm;
    sc_prog_invalidate(pg);
    return SC_OK;
}

/* The memory model changed: once the program has orders, what was made
 * to fit them (a fit, a rule's knob) and the least peak it recorded were
 * in the old units; a refusal of the caps then names the peak as built
 * (check/caps.c). */
static void units_moved(sc_prog *pg)
{
    int ordered = 0;
    for (int d = 0; d < pg->P && !ordered; d++)
        ordered = pg->order[d].n > 0;
    if (!ordered)
        return;
    pg->units_moved = 1;
    sc_free(pg->cap_need);
    pg->cap_need = NULL;
}

sc_status sc_prog_set_mem(sc_prog *pg, int s, double units)
{
    if (s < -1 || s >= pg->S)
        return sc_fail(pg, SC_ERR_ARG, "mem: stage %d is out of range (0..%d)", s, pg->S - 1);
    if (bad_time(units))
        return sc_fail(pg, SC_ERR_ARG, "activation units must be finite and >= 0 (got %g)", units);
    for (int i = s < 0 ? 0 : s; i < (s < 0 ? pg->S : s + 1); i++)
        if (pg->mem[i] != units) {
            pg->mem[i] = units;
            units_moved(pg);
        }
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_w_keep(sc_prog *pg, double w_keep)
{
    if (!(w_keep >= 0 && w_keep <= 1))
        return sc_fail(pg, SC_ERR_ARG, "w_keep must be within [0, 1] (got %g)", w_keep);
    if (pg->w_keep != w_keep || pg->wks) {
        pg->w_keep = w_keep;
        sc_free(pg->wks), pg->wks = NULL; /* one fraction for every stage again */
        units_moved(pg);
    }
    sc_prog_invalidate(pg);
    return SC_OK;
}

sc_status sc_prog_set_stage_w_keep(sc_prog *pg, int s, double w_keep)
{
    if (s < 0 || s >= pg->S || !(w_keep >= 0 && w_keep <= 1))
        return sc_fail(pg, SC_ERR_ARG, "w_keep of stage %d (0..%d) must be within [0, 1] (got "
                       "%g)", s, pg->S - 1, w_keep);
    if (!pg->wks) {
        if (!(pg->wks = sc_malloc((size_t)pg->S * sizeof(double))))
            return sc_fail(pg, SC_ERR_NOMEM, "out of memory");
        for (int i = 0; i < pg->S; i++)
            pg->wks[i] = pg->w_keep;
    }
    if (pg->wks[s] != w_keep) {
        pg->wks[s] = w_keep;
        units_moved(pg);
    }
    sc_prog_invalidate(pg);
    return SC_OK;
}

int sc_prog_devices(const sc_prog *pg) { return pg->P; }
int sc_prog_stages(const sc_prog *pg) { return pg->S; }
int sc_prog_microbatches(const sc_prog *pg) { return pg->m; }
int sc_prog_stage_device(const sc_prog *pg, int s) { return pg->stage_dev[s]; }
double sc_prog_tf(const sc_prog *pg, int s) { return pg->tf[s]; }
double sc_prog_tb(const sc_prog *pg, int s) { return pg->tb[s]; }
double sc_prog_tw(const sc_prog *pg, int s) { return pg->tw[s]; }
double sc_prog_tbw(const sc_prog *pg, int s) { return sc_op_cost(pg, SC_OP_BW, s); }
double sc_prog_topt(const sc_prog *pg, int s) { return pg->topt[s]; }
int sc_prog_seconds(const sc_prog *pg) { return pg->seconds; }
double sc_prog_tcomm(const sc_prog *pg) { return pg->tcomm; }
double sc_prog_mem(const sc_prog *pg, int s) { return pg->mem[s]; }
double sc_prog_w_keep(const sc_prog *pg) { return pg->w_keep; }
double sc_prog_mem_limit(const sc_prog *pg) { return pg->mem_limit; }
int sc_prog_chunk(const sc_prog *pg, int s) { return pg->chunk[s]; }
int sc_prog_chunks(const sc_prog *pg, int d) { return pg->nchunks[d]; }
int sc_prog_is_lowered(const sc_prog *pg) { return pg->lowered; }
const char *sc_errmsg(const sc_prog *pg) { return pg->err; }

int sc_prog_stage_of(const sc_prog *pg, int d, int chunk)
{
    if (d < 0 || d >= pg->P || chunk < 0 || chunk >= pg->nchunks[d])
        return -1;
    return pg->dev_stages[d][chunk];
}

const sc_instr *sc_prog_order(const sc_prog *pg, int d, size_t *n)
{
    *n = pg->order[d].n;
    return pg->order[d].v;
}

const sc_instr *sc_prog_stream(const sc_prog *pg, int d, size_t *n)
{
    *n = pg->lowered ? pg->stream[d].n : 0;
    return pg->lowered ? pg->stream[d].v : NULL;
}

size_t sc_prog_total_instructions(const sc_prog *pg)
{
    size_t n = 0;
    for (int d = 0; d < pg->P; d++)
        n += pg->lowered ? pg->stream[d].n : pg->order[d].n;
    return n;
}

