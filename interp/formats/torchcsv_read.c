/*
 * torchcsv_read.c — reads PyTorch pipelining CSV: both dialects, both
 * letter conventions, the wait actions of PyTorch 2.15 (torchcsv.h).
 */
#include "torchcsv_impl.h"
#include "ir/ir_impl.h"
#include "ir/p2p.h"
#include "check/verify.h"

#include <stdlib.h>
#include <string.h>

#include "ir/alloc.h"
#include "readfile.h"

/* ---- reading ----------------------------------------------------------- */

static sc_status push_act(reader *r, act a)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        act *v = sc_realloc(r->a, cap * sizeof *v);
        if (!v)
            return sc_tcsv_fail(r, SC_ERR_NOMEM, "out of memory reading the CSV");
        r->a = v;
        r->cap = cap;
    }
    r->a[r->n++] = a;
    return SC_OK;
}

/* At most 9 digits at *p: the value, -1 when none, -2 when too long. */
static long digits(const char **p, const char *end)
{
    long v = 0;
    int n = 0;
    while (*p < end && **p >= '0' && **p <= '9') {
        if (++n > 9)
            return -2;
        v = v * 10 + (**p - '0');
        (*p)++;
    }
    return n ? v : -1;
}

static const char type_list[] = "F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B, WAIT_SEND_F, "
                                "WAIT_SEND_B, UNSHARD, RESHARD, REDUCE_GRAD, WAIT_REDUCE_GRAD, "
                                "or (a;b)OVERLAP_F_B";

/* One action <stage><TYPE>[<mb>] in [p, end); `a` has row, cell, tok. */
static sc_status parse_action(reader *r, const char *p, const char *end, act *a)
{
    long stage = digits(&p, end);
    if (stage < 0)
        return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": %s", AT(a),
                     stage == -2 ? "stage number too long" : "expected <stage><TYPE>[<mb>], e.g. 0F3");
    const char *t = p;
    while (p < end && ((*p >= 'A' && *p <= 'Z') || *p == '_'))
        p++;
    int type = -1;
    for (int i = 0; i < T_COUNT; i++)
        if ((size_t)(p - t) == strlen(sc_tcsv_type_names[i]) && memcmp(t, sc_tcsv_type_names[i], (size_t)(p - t)) == 0)
            type = i;
    if (type < 0)
        return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": unknown action type '%.*s' (%s)", AT(a),
                     (int)(p - t > 20 ? 20 : p - t), t, type_list);
    long mb = digits(&p, end);
    if (mb == -2)
        return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": microbatch number too long", AT(a));
    if (p != end)
        return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": unexpected characters after the action", AT(a));
    if (mb < 0 && type <= T_WAIT_SEND_B)
        return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": %s needs a microbatch number", AT(a),
                     sc_tcsv_type_names[type]);
    if (stage >= SC_MAX_STAGES || mb >= SC_MAX_MICROBATCHES)
        return sc_tcsv_fail(r, SC_ERR_LIMIT, AT_FMT ": %s %ld is out of range (at most %d)", AT(a),
                     stage >= SC_MAX_STAGES ? "stage" : "microbatch",
                     stage >= SC_MAX_STAGES ? stage : mb,
                     stage >= SC_MAX_STAGES ? SC_MAX_STAGES - 1 : SC_MAX_MICROBATCHES - 1);
    a->type = type;
    a->stage = (int)stage;
    a->mb = (int)mb;
    return SC_OK;
}

static const char *trim(const char **b, const char *e)
{
    while (*b < e && (**b == ' ' || **b == '\t'))
        (*b)++;
    while (e > *b && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    return e;
}

/* One cell [b, e) of row, cell: empty, an action, or an OVERLAP_F_B. */
static sc_status parse_cell(reader *r, int row, int cell, const char *b, const char *e)
{
    if ((++r->cells & 4095) == 0 && sc_deadline_passed(r->deadline))
        return sc_tcsv_fail(r, SC_ERR_LIMIT, "time limit reached");
    e = trim(&b, e);
    if (b == e) {
        if (!r->empty_row)
            r->empty_row = row, r->empty_cell = cell;
        return SC_OK;
    }
    act a = {.row = row, .cell = cell, .tok = b, .toklen = (int)(e - b > 1000 ? 1000 : e - b)};
    if (*b != '(') {
        if (parse_action(r, b, e, &a))
            return r->st;
        r->comms |= !is_compute(a.type);
        return push_act(r, a);
    }
    static const char overlap[] = "OVERLAP_F_B";
    const char *close = memchr(b, ')', (size_t)(e - b));
    if (!close || (size_t)(e - close - 1) != sizeof overlap - 1 ||
        memcmp(close + 1, overlap, sizeof overlap - 1) != 0)
        return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": expected (a;b)OVERLAP_F_B", AT(&a));
    size_t at = r->n;
    for (const char *p = b + 1; p < close;) {
        const char *q = memchr(p, ';', (size_t)(close - p));
        if (!q)
            q = close;
        const char *sb = p, *se = trim(&sb, q);
        act sub = a;
        if (parse_action(r, sb, se, &sub))
            return r->st;
        if (!is_compute(sub.type))
            return sc_tcsv_fail(r, SC_ERR_ARG, AT_FMT ": OVERLAP_F_B holds compute actions only", AT(&a));
        if (push_act(r, sub))
            return r->st;
        p = q + 1;
    }
    /* A forward and a backward (I, B or old BW) make an overlapped pair
     * (docs/semantics.md#overlapped-pairs); other overlaps run in turn. */
    if (r->n == at + 2) {
        int t0 = r->a[at].type, t1 = r->a[at + 1].type;
        int back0 = t0 == T_I || t0 == T_B || t0 == T_BW, back1 = t1 == T_I || t1 == T_B || t1 == T_BW;
        if ((t0 == T_F && back1) || (back0 && t1 == T_F))
            r->a[at].pair = 1, r->a[at + 1].pair = 2;
    }
    return SC_OK;
}

/* Splits the text into rows and cells (commas; a cell may be quoted). */
static sc_status parse_text(reader *r, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p && le[-1] == '\r')
            le--;
        if (++r->rows > SC_MAX_DEVICES)
            return sc_tcsv_fail(r, SC_ERR_LIMIT, "more than %d rows (ranks)", SC_MAX_DEVICES);
        int cell = 0;
        const char *c = p;
        for (;;) {
            cell++;
            const char *b = c, *e;
            const char *lead = c;
            while (lead < le && (*lead == ' ' || *lead == '\t'))
                lead++;
            if (lead < le && *lead == '"') { /* quoted cell: no quotes inside */
                b = lead + 1;
                const char *q = memchr(b, '"', (size_t)(le - b));
                if (!q)
                    return sc_tcsv_fail(r, SC_ERR_ARG, "row %d (rank %d), cell %d: unterminated quote",
                                 r->rows, r->rows - 1, cell);
                e = q;
                c = q + 1;
                while (c < le && (*c == ' ' || *c == '\t'))
                    c++;
                if (c < le && *c != ',')
                    return sc_tcsv_fail(r, SC_ERR_ARG, "row %d (rank %d), cell %d: text after a quoted cell",
                                 r->rows, r->rows - 1, cell);
            } else {
                const char *comma = memchr(c, ',', (size_t)(le - c));
                e = comma ? comma : le;
                c = e;
            }
            if (parse_cell(r, r->rows, cell, b, e))
                return r->st;
            if (c >= le)
                break;
            c++; /* past the comma */
        }
        p = nl ? nl + 1 : end;
    }
    if (r->rows == 0)
        return sc_tcsv_fail(r, SC_ERR_ARG, "the file has no rows");
    return SC_OK;
}

/* Passes of one (stage, mb): action index + 1, 0 when absent. */
typedef struct slot {
    uint32_t f, i, w, b, bw;
} slot;

static const char *kind_name(int t)
{
    return t == T_F ? "F" : t == T_I ? "I" : t == T_W ? "W" : t == T_B ? "B" : "BW";
}

/* Checks the stage of a non-compute action against the placement. */
static sc_status check_other(reader *r, const act *a, const int *dev, int S)
{
    int s = a->stage, rank = a->row - 1, peer = -1;
    if (a->type == T_SEND_F || a->type == T_RECV_B || a->type == T_WAIT_SEND_F)
        peer = s + 1;
    else if (a->type == T_RECV_F || a->type == T_SEND_B || a->type == T_WAIT_SEND_B)
        peer = s - 1;
    if (s >= S)
        return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": unknown stage %d (the compute actions name stages 0..%d)",
                     AT(a), s, S - 1);
    if (dev[s] != rank)
        return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": stage %d is on rank %d (row %d), not on this rank",
                     AT(a), s, dev[s], dev[s] + 1);
    if (a->type <= T_WAIT_SEND_B) { /* transfers and their waits */
        if (peer < 0 || peer >= S)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": unknown stage %d: %s of stage %d has no peer stage (stages 0..%d)",
                         AT(a), peer, sc_tcsv_type_names[a->type], s, S - 1);
        if (dev[peer] == rank)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": stages %d and %d are both on rank %d: no transfer between them",
                         AT(a), s, peer, rank);
    }
    return SC_OK;
}

/* The file-order checks of one compute action against its slot. */
static sc_status check_order(reader *r, const act *v, const slot *sl, size_t k)
{
    const act *a = &v[k];
    uint32_t inp = sl->i ? sl->i : (sl->w && sl->b ? sl->b : 0); /* old files: B then W */
    int back = a->type != T_W && a->type != T_F;
    if (a->type == T_W) {
        if (!inp)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": W before its input gradient: stage %d, "
                         "microbatch %d has no I (or old-style B) before it", AT(a), a->stage, a->mb);
        if (inp > k + 1)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": W before its input gradient (%s at cell %d)",
                         AT(a), kind_name(v[inp - 1].type), v[inp - 1].cell);
    }
    if (back && (!sl->f || sl->f > k + 1))
        return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": backward before its forward: stage %d, "
                     "microbatch %d has no F before it", AT(a), a->stage, a->mb);
    return SC_OK;
}

/* Pushes the actions as orders (compute_only) or streams (compute_comms). */
static sc_status build(sc_prog *pg, const act *v, size_t n, const slot *tab, int comms,
                       const int *dev)
{
    sc_status st = SC_OK;
    sc_instr half = {0};
    for (size_t k = 0; k < n; k++) {
        const act *a = &v[k];
        int d = a->row - 1, s = a->stage;
        sc_instr in = {.stage = s, .mb = a->mb, .peer = -1};
        switch (a->type) {
        case T_F: in.op = SC_OP_F; break;
        case T_I: in.op = SC_OP_B; break;
        case T_W: in.op = SC_OP_W; break;
        case T_B: { /* old files: B followed by W is the input gradient */
            const slot *sl = &tab[SC_SM(pg, s, a->mb)];
            in.op = sl->w && !sl->i ? SC_OP_B : SC_OP_BW;
            break;
        }
        case T_BW: in.op = SC_OP_BW; break;
        case T_SEND_F: in = (sc_instr){.op = SC_OP_SEND, .dir = SC_DIR_ACT,
                                        .stage = s + 1, .mb = a->mb, .peer = dev[s + 1]}; break;
        case T_RECV_F: in = (sc_instr){.op = SC_OP_RECV, .dir = SC_DIR_ACT,
                                        .stage = s, .mb = a->mb, .peer = dev[s - 1]}; break;
        case T_SEND_B: in = (sc_instr){.op = SC_OP_SEND, .dir = SC_DIR_GRAD,
                                        .stage = s - 1, .mb = a->mb, .peer = dev[s - 1]}; break;
        case T_RECV_B: in = (sc_instr){.op = SC_OP_RECV, .dir = SC_DIR_GRAD,
                                        .stage = s, .mb = a->mb, .peer = dev[s + 1]}; break;
        case T_WAIT_SEND_F: in = (sc_instr){.op = SC_OP_WAIT, .dir = SC_DIR_ACT,
                                             .stage = s + 1, .mb = a->mb, .peer = dev[s + 1]}; break;
        case T_WAIT_SEND_B: in = (sc_instr){.op = SC_OP_WAIT, .dir = SC_DIR_GRAD,
                                             .stage = s - 1, .mb = a->mb, .peer = dev[s - 1]}; break;
        case T_UNSHARD: case T_RESHARD: /* FSDP (docs/fsdp.md#interchange) */
            if (!comms)
                continue;
            in = (sc_instr){.op = a->type == T_UNSHARD ? SC_OP_UNSHARD : SC_OP_RESHARD, .stage = s,
                            .mb = -1, .peer = -1};
            break;
        case T_REDUCE_GRAD: /* FSDP's reduce-scatter; without FSDP, our REDUCE */
            if (!comms || !sc_prog_fsdp(pg)->dp)
                continue;
            in = (sc_instr){.op = SC_OP_REDUCE_GRAD, .stage = s, .mb = -1, .peer = -1};
            break;
        default: continue; /* WAIT_REDUCE_GRAD: OPTIM waits for the reductions */
        }
        if (a->pair == 1 || a->pair == 2) { /* one half of an overlapped pair */
            if (a->pair == 1) {
                half = in;
                continue; /* with the other half, next */
            }
            sc_instr f = half.op == SC_OP_F ? half : in, b = half.op == SC_OP_F ? in : half;
            in = sc_pair_make(f.stage, f.mb, b.op, b.stage, b.mb);
            st = comms ? sc_prog_push_stream(pg, d, in)
                       : sc_prog_push_pair(pg, d, f.stage, f.mb, b.op, b.stage, b.mb);
            if (st == SC_OK && comms)
                st = sc_prog_note_cell(pg, d, a->cell);
            if (st)
                return st;
            continue;
        }
        if ((st = comms ? sc_prog_push_stream(pg, d, in) : sc_prog_push(pg, d, in.op, s, a->mb)) ||
            (comms && (st = sc_prog_note_cell(pg, d, a->cell))))
            return st;
    }
    sc_instr reduce = {.op = SC_OP_REDUCE, .stage = -1, .mb = -1, .peer = -1};
    sc_instr optim = {.op = SC_OP_OPTIM, .stage = -1, .mb = -1, .peer = -1};
    for (int d = 0; comms && !sc_prog_forward_only(pg) && d < pg->P; d++)
        if ((st = sc_prog_push_stream(pg, d, reduce)) || (st = sc_prog_push_stream(pg, d, optim)))
            return st;
    return SC_OK;
}

/* Each stage's rank into dev[S] (first: the action that placed it, [S]):
 * one rank a stage, no stage on none, every rank holding one; the other
 * actions checked against it. 0, or SC_ERR_* with the message. */
static sc_status place_stages(reader *r, int S, int *dev, size_t *first)
{
    const act *v = r->a;
    size_t n = r->n;
    int P = r->rows;
    for (int s = 0; s < S; s++)
        dev[s] = -1;
    for (size_t k = 0; k < n; k++) {
        const act *a = &v[k];
        if (!is_compute(a->type))
            continue;
        if (dev[a->stage] < 0) {
            dev[a->stage] = a->row - 1;
            first[a->stage] = k;
        } else if (dev[a->stage] != a->row - 1) {
            const act *o = &v[first[a->stage]];
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": stage %d on two ranks: rank %d (row %d, "
                                "cell %d) and rank %d", AT(a), a->stage, o->row - 1, o->row, o->cell,
                                a->row - 1);
        }
    }
    for (size_t k = 0; k < n; k++) {
        sc_status st = is_compute(v[k].type) ? SC_OK : check_other(r, &v[k], dev, S);
        if (st)
            return st;
    }
    for (int s = 0; s < S; s++)
        if (dev[s] < 0) { /* a gap: name the first cell beyond it */
            size_t k = 0;
            while (k < n && !(is_compute(v[k].type) && v[k].stage > s))
                k++;
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": unknown stage %d: stages are 0..S-1, "
                                "each on one rank, and stage %d is on no rank", AT(&v[k]),
                                v[k].stage, s);
        }
    {
        char *has = sc_calloc((size_t)P, 1);
        if (!has)
            return sc_tcsv_fail(r, SC_ERR_NOMEM, "out of memory");
        for (int s = 0; s < S; s++)
            has[dev[s]] = 1;
        int none = -1;
        for (int d = P - 1; d >= 0; d--)
            if (!has[d])
                none = d;
        sc_free(has);
        if (none >= 0)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, "row %d (rank %d) holds no stage: every rank "
                                "needs a compute action", none + 1, none);
    }
    return SC_OK;
}

/* The passes of every (stage, microbatch) into tab[S * m]: each once, one
 * backward (none in a forward-only file, fwd), in order, none missing. 0,
 * or SC_ERR_* with the message. */
static sc_status pass_table(reader *r, int S, int m, const int *dev, int fwd, slot *tab)
{
    static const char no_back[] = "no backward (I and W, or B)";
    const act *v = r->a;
    size_t n = r->n;
    for (size_t k = 0; k < n; k++) {
        const act *a = &v[k];
        if (!is_compute(a->type))
            continue;
        slot *sl = &tab[(size_t)a->stage * (size_t)m + (size_t)a->mb];
        uint32_t *p = a->type == T_F ? &sl->f : a->type == T_I ? &sl->i : a->type == T_W ? &sl->w
                    : a->type == T_B ? &sl->b : &sl->bw;
        if (*p)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": pass twice: %s of stage %d, microbatch "
                                "%d is also at cell %d", AT(a), kind_name(a->type), a->stage, a->mb,
                                v[*p - 1].cell);
        *p = (uint32_t)k + 1;
    }
    for (size_t k = 0; k < n; k++) {
        const act *a = &v[k];
        if (!is_compute(a->type))
            continue;
        const slot *sl = &tab[(size_t)a->stage * (size_t)m + (size_t)a->mb];
        int fulls = (sl->bw != 0) + (sl->b && !(sl->w && !sl->i));
        int inps = (sl->i != 0) + (sl->b && sl->w && !sl->i);
        if (a->type != T_F && fulls + inps > 1)
            return sc_tcsv_fail(r, SC_ERR_PROGRAM, AT_FMT ": pass twice: stage %d, microbatch %d "
                                "has more than one backward (I, B, BW)", AT(a), a->stage, a->mb);
        sc_status st = check_order(r, v, sl, k);
        if (st)
            return st;
    }
    for (int s = 0; s < S; s++)
        for (int mb = 0; mb < m; mb++) {
            const slot *sl = &tab[(size_t)s * (size_t)m + (size_t)mb];
            const char *what = NULL;
            if (!sl->f)
                what = "no F";
            else if (fwd)
                ;
            else if (!sl->i && !sl->b && !sl->bw)
                what = no_back;
            else if (sl->i && !sl->w)
                what = "an I but no W";
            if (what)
                return sc_tcsv_fail(r, SC_ERR_PROGRAM, "row %d (rank %d): missing microbatch: stage "
                                    "%d has %s of microbatch %d (the file names microbatches "
                                    "0..%d%s)", dev[s] + 1, dev[s], s, what, mb, m - 1,
                                    what == no_back ? "; it mixes forward-only and training "
                                    "passes: a forward-only file has no backward anywhere" : "");
        }
    return SC_OK;
}

/* The program of the actions on P ranks (dev: each stage's; tab: the
 * passes'), or NULL with the message. */
static sc_prog *make_prog(reader *r, int S, int m, const int *dev, int fwd, const slot *tab)
{
    const act *v = r->a;
    size_t n = r->n;
    sc_prog *pg = sc_prog_new(r->rows, S, m);
    if (!pg) {
        sc_tcsv_fail(r, SC_ERR_LIMIT, "%s", sc_new_errmsg());
        goto fail;
    }
    if (sc_prog_set_placement(pg, SC_PLACE_TABLE, dev) != SC_OK) {
        sc_tcsv_fail(r, SC_ERR_PROGRAM, "%s", sc_errmsg(pg));
        goto fail;
    }
    /* A file with UNSHARD has FSDP (docs/fsdp.md#interchange): its UNSHARD,
     * RESHARD and REDUCE_GRAD are proved; their memory and time are 0 (a
     * file does not say them), so that its figures are the passes'. */
    int fsdp = 0;
    for (size_t k = 0; k < n && r->comms; k++)
        fsdp |= v[k].type == T_UNSHARD;
    sc_fsdp_cfg fc = sc_fsdp_default();
    fc.units = 0;
    sc_status st = fsdp ? sc_prog_set_fsdp(pg, &fc) : SC_OK;
    if (st == SC_OK && fwd)
        st = sc_prog_set_forward_only(pg, 1);
    if (st == SC_OK)
        st = build(pg, v, n, tab, r->comms, dev);
    /* A compute_comms file is one (p2p.h): in the NCCL mode its cells are
     * proved as PyTorch posts them, each alone. */
    if (st == SC_OK && r->comms)
        st = sc_prog_set_lower_target(pg, SC_LOWER_FILE);
    if (st) { /* out of memory, or a device's order too long */
        sc_tcsv_fail(r, st, "%s", sc_errmsg(pg));
        goto fail;
    }
    return pg;
fail:
    sc_prog_free(pg);
    return NULL;
}

/* Everything after the split into actions; returns the program or NULL. */
static sc_prog *resolve(reader *r, sc_torch_dialect *dialect)
{
    const act *v = r->a;
    size_t n = r->n;
    int S = 0, m = 0;
    sc_prog *pg = NULL;
    int *dev = NULL;
    size_t *first = NULL;
    slot *tab = NULL;
    *dialect = r->comms ? SC_TORCH_COMPUTE_COMMS : SC_TORCH_COMPUTE_ONLY;
    if (r->comms && r->empty_row) {
        sc_tcsv_fail(r, SC_ERR_ARG, "row %d (rank %d), cell %d: empty cell in a compute_comms file "
              "(a file with SEND/RECV/REDUCE_GRAD actions is fully lowered: no idle cells)",
              r->empty_row, r->empty_row - 1, r->empty_cell);
        goto fail;
    }
    for (size_t k = 0; k < n; k++)
        if (is_compute(v[k].type)) {
            S = v[k].stage + 1 > S ? v[k].stage + 1 : S;
            m = v[k].mb + 1 > m ? v[k].mb + 1 : m;
        }
    if (S == 0) {
        sc_tcsv_fail(r, SC_ERR_PROGRAM, "no compute action (F, I, W, B) in the file");
        goto fail;
    }
    dev = sc_malloc((size_t)S * sizeof(int));
    first = sc_malloc((size_t)S * sizeof(size_t));
    if (!dev || !first) {
        sc_tcsv_fail(r, SC_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (place_stages(r, S, dev, first))
        goto fail;
    if ((long)S * m * 3 > SC_MAX_PASSES || n >= UINT32_MAX) {
        sc_tcsv_fail(r, SC_ERR_LIMIT, "stages x microbatches = %d x %d is too large (at most %ld passes)",
              S, m, SC_MAX_PASSES);
        goto fail;
    }
    if (r->comms) {
        unsigned char *sent = sc_calloc(2 * (size_t)S * (size_t)m + 1, 1);
        sc_status wst = sent ? sc_tcsv_check_waits(r, v, n, S, m, sent)
                             : sc_tcsv_fail(r, SC_ERR_NOMEM, "out of memory");
        sc_free(sent);
        if (wst)
            goto fail;
    }
    sc_status fst;
    int fwd = sc_tcsv_forward_only(r, v, n, &fst); /* docs/interchange.md#forward-only */
    if (fst)
        goto fail;
    tab = sc_calloc((size_t)S * (size_t)m, sizeof(slot));
    if (!tab) {
        sc_tcsv_fail(r, SC_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (pass_table(r, S, m, dev, fwd, tab))
        goto fail;
    if (r->comms && !fwd) {
        size_t *at = sc_calloc((size_t)S + 1, sizeof *at);
        sc_status rst = at ? sc_tcsv_check_reduces(r, v, n, S, dev, at)
                           : sc_tcsv_fail(r, SC_ERR_NOMEM, "out of memory");
        sc_free(at);
        if (rst)
            goto fail;
    }
    pg = make_prog(r, S, m, dev, fwd, tab);
    if (!pg)
        goto fail;
    sc_free(dev);
    sc_free(first);
    sc_free(tab);
    return pg;
fail:
    sc_prog_free(pg);
    sc_free(dev);
    sc_free(first);
    sc_free(tab);
    return NULL;
}

sc_prog *sc_torchcsv_read(const char *text, size_t len, sc_torch_dialect *dialect,
                          sc_status *st, char *err, size_t errlen)
{
    return sc_torchcsv_read_until(text, len, 0, dialect, st, err, errlen);
}

sc_prog *sc_torchcsv_read_until(const char *text, size_t len, double deadline,
                                sc_torch_dialect *dialect, sc_status *st, char *err,
                                size_t errlen)
{
    reader r = {.err = err, .errlen = errlen, .deadline = deadline};
    sc_prog *pg = NULL;
    *dialect = SC_TORCH_COMPUTE_ONLY;
    if (errlen)
        err[0] = 0;
    if (parse_text(&r, text, len) == SC_OK)
        pg = resolve(&r, dialect);
    sc_free(r.a);
    *st = pg ? SC_OK : r.st;
    return pg;
}
