/*
 * bound.c — the lower bound on the makespan (bound.h); the proofs of its
 * terms are docs/bound.md, and the names below follow it.
 *
 * Durations. A pass alone takes its cost plus the all-to-all part ta; an
 * overlapped pair can hide ta and save the stages' pair gains g = tf + tb -
 * tfb, so nothing here counts ta, and with G the largest gain of any stage:
 *   on a path (a pass's own duration; a pair lasts at least this long for
 *   either of its halves):  cF = tf - G,  cB = min(tb, tbw) - G  (B or BW),
 *   the end of a path at its first stage (B then W, or BW):
 *                           cE = min(cB' + tw, tbw - G), cB' = tb - G
 *   (each clamped at 0), and in a device's work (a pair's time is at least
 *   the sum of its halves less half of each half's gain):
 *                           wF = tf - g/2,  wB = min(tb, tbw) - g/2,
 *                           wBW = min(tb + tw, tbw) - g/2.
 * Without pair costs G = g = 0 and these are the plain costs.
 */
#include "bound.h"
#include "ir/alloc.h"
#include "ir/offload_cfg.h"
#include "ir/recompute_cfg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *sc_bound_term_name(int term)
{
    static const char *const names[] = {
#define X(name, text) text,
        SC_BOUND_TERMS(X)
#undef X
    };
    return term >= 0 && term < SC_BOUND_TERM_COUNT ? names[term] : "?";
}

double sc_bound_gap(double makespan, double bound)
{
    if (!(bound > 0))
        return makespan > 0 ? INFINITY : 0;
    double g = (makespan - bound) / bound;
    /* A makespan on the bound, summed in another order, is 0 % from it:
     * never "-0.00 %". */
    return g < 0 && g > -1e-9 ? 0 : g;
}

static double pos(double x) { return x > 0 ? x : 0; }

/* The costs of stage s as docs/bound.md counts them. */
typedef struct stage_cost {
    double cF, cB, cE;   /* on a path */
    double wF, wB, wBW;  /* in a device's work */
} stage_cost;

static double gain(const sc_prog *pg, int s)
{
    double tfb = sc_prog_tfb(pg, s);
    return tfb == tfb ? pos(sc_prog_tf(pg, s) + sc_prog_tb(pg, s) - tfb) : 0;
}

/* One path: the stages a..b one microbatch runs through (copies: its
 * copy's), and how many microbatches of all steps take it. Earliest
 * times along it, from the start of the first F: fs[s] the start of F(s);
 * C[s] the round trip from the start of F(s) to the end of B(s); after[s]
 * what the path needs after the end of B(s). */
typedef struct path {
    int a, b;
    long n;
    int mb; /* with lengths (lengths.h): its one microbatch, whose costs it walks; else -1 */
} path;

static double comm(const sc_prog *pg, int s, int t, int mb)
{
    return sc_prog_stage_device(pg, s) != sc_prog_stage_device(pg, t) ? sc_prog_msg_time(pg, mb)
                                                                        : 0;
}

/* The costs of stages a..b for microbatch mb (-1: the program's own), G
 * the largest gain of a pair (docs/bound.md; with lengths each pass's gain
 * scales as its pass, so G is the largest of those). */
static void stage_costs(const sc_prog *pg, double G, int a, int b, int mb, stage_cost *c)
{
    for (int s = a; s <= b; s++) {
        double tf = sc_prog_tf(pg, s), tb = sc_prog_tb(pg, s), tw = sc_prog_tw(pg, s);
        double tbw = sc_prog_tbw(pg, s), g = gain(pg, s), gb = g;
        if (mb >= 0) {
            double kf = sc_prog_len_scale(pg, SC_LK_F, s, mb);
            double kb = sc_prog_len_scale(pg, SC_LK_B, s, mb);
            tf *= kf;
            tb *= kb;
            tw *= sc_prog_len_scale(pg, SC_LK_W, s, mb);
            tbw = sc_prog_pass_time(pg, SC_OP_BW, s, mb);
            g *= kf;
            gb *= kb;
        }
        c[s] = (stage_cost){.cF = pos(tf - G), .cB = pos(fmin(tb, tbw) - G),
                            .cE = fmin(pos(tb - G) + tw, pos(tbw - G)),
                            .wF = tf - g / 2, .wB = fmin(tb, tbw) - gb / 2,
                            .wBW = fmin(tb + tw, tbw) - gb / 2};
        if (sc_prog_forward_only(pg)) /* no backward on any path or device (fwdonly.h) */
            c[s] = (stage_cost){.cF = tf, .wF = tf};
    }
}

/* fs, C and after of path pa (arrays indexed by stage; entries outside
 * a..b untouched); returns the path's length (the PATH term). */
static double walk(const sc_prog *pg, const stage_cost *c, const path *pa, double *fs,
                   double *C, double *after)
{
    int a = pa->a, b = pa->b, mb = pa->mb;
    double t = 0;
    for (int s = a; s <= b; s++) {
        fs[s] = t;
        t += c[s].cF + (s < b ? comm(pg, s, s + 1, mb) : 0);
    }
    double ftotal = t, back = 0; /* back: from the start of B(b) to the end of B(s) */
    for (int s = b; s >= a; s--) {
        back += c[s].cB + (s < b ? comm(pg, s, s + 1, mb) : 0);
        C[s] = ftotal - fs[s] + back;
    }
    after[a] = c[a].cE - c[a].cB;
    for (int s = a + 1; s <= b; s++)
        after[s] = after[s - 1] + c[s - 1].cB + comm(pg, s - 1, s, mb);
    return fs[a] + C[a] + after[a];
}

/* The cap of device d: the program's, cap_all's, and with the budget
 * offload policy its target (the peak it must meet); INFINITY: none. */
static double dev_cap(const sc_prog *pg, int d, double cap_all)
{
    const sc_offload_cfg *off = sc_prog_offload(pg);
    double cap = fmin(cap_all, sc_prog_mem_cap(pg, d));
    if (off && off->policy == SC_OFFLOAD_BUDGET && off->mem > 0)
        cap = fmin(cap, off->mem);
    return cap;
}

/* The smallest record of stage s (with lengths, over the microbatches). */
static double rec_units(const sc_prog *pg, int s)
{
    double u = sc_prog_lengths(pg) ? INFINITY : sc_prog_mem(pg, s);
    if (sc_prog_lengths(pg)) /* the most records fit when all are the smallest */
        for (int mb = 0; mb < sc_prog_microbatches(pg); mb++)
            u = fmin(u, sc_prog_rec_units(pg, s, mb));
    return u;
}

/* Records' capacity of stage s under its device's cap (the cap check's
 * tolerance, and a little more, in the schedules' favour), each record
 * of s counting u_s plus `outer`: the records of earlier stages on the
 * same device that are live whenever one of s is (docs/bound.md, "every
 * stage on a device"); -1: no cap. */
static long capacity(const sc_prog *pg, int s, double cap_all, double outer)
{
    double u = rec_units(pg, s) + outer;
    double cap = sc_prog_mem_cap(pg, sc_prog_stage_device(pg, s));
    cap = fmin(cap_all, cap);
    if (!(u > 0) || !isfinite(cap))
        return -1;
    double k = floor((cap + 1e-7 * (1 + cap)) / u);
    return k > 1e15 ? -1 : (long)k;
}

/* MEMORY before the first backward (docs/bound.md): device d runs only
 * F passes before T0, the earliest a B (or BW) of one of its stages can
 * start, and all their records are on it (or copied to the host) when the
 * last of them ends, since no B has ended by then. So they count at most
 * cap units, plus what the host link can carry by T0 + fmax (rate units
 * a time unit; 0 without offload), and the rest of d's work comes after
 * T0: makespan >= T0 + work(d) - the F time such records give at most
 * (a fractional knapsack of d's stages: wF for u units, cnt of each). */
static double before_first_b(const sc_prog *pg, int d, double cap, double T0, double fmax,
                             double rate, const stage_cost *c, const double *cnt)
{
    enum { MAXC = 64 };
    int nc = sc_prog_chunks(pg, d), st[MAXC], n = 0;
    double fill = 0; /* records of no units: all their F */
    if (nc > MAXC || !isfinite(T0))
        return INFINITY; /* too many chunks to sort: no limit */
    for (int i = 0; i < nc; i++) {
        int s = sc_prog_stage_of(pg, d, i);
        if (s >= 0 && cnt[s] > 0 && rec_units(pg, s) > 0)
            st[n++] = s;
        else if (s >= 0)
            fill += cnt[s] * pos(c[s].wF);
    }
    for (int i = 1; i < n; i++) /* by F time per unit, the most first */
        for (int j = i; j > 0; j--) {
            int a = st[j - 1], b = st[j];
            if (pos(c[a].wF) / rec_units(pg, a) >= pos(c[b].wF) / rec_units(pg, b))
                break;
            st[j - 1] = b;
            st[j] = a;
        }
    /* Whole records within the cap check's tolerance, then a fraction of
     * the next: at least the knapsack's fractional optimum. */
    double room = cap + rate * (T0 + fmax), tol = isfinite(room) ? 1e-7 * (1 + room) : 0;
    for (int i = 0; i < n && room > tol; i++) {
        double u = rec_units(pg, st[i]), k = floor((room + tol) / u);
        double take = k >= cnt[st[i]] ? cnt[st[i]] : room / u - k <= tol / u ? k : room / u;
        fill += take * pos(c[st[i]].wF);
        room -= take * u;
    }
    return fill;
}

/* The units of earlier stages on stage s's device whose records are live
 * whenever one of s is: stage t < s on the same device, on the path of
 * every microbatch through s (t >= amax, the latest first stage of those
 * paths). Its record of microbatch x lives from F(t, x), before F(s, x),
 * to B(t, x), after B(s, x). */
static double outer(const sc_prog *pg, int s, double amax)
{
    int d = sc_prog_stage_device(pg, s);
    double u = 0;
    for (int i = 0; i < sc_prog_chunks(pg, d); i++) {
        int t = sc_prog_stage_of(pg, d, i);
        if (t >= amax && t < s)
            u += rec_units(pg, t);
    }
    return u;
}

static void set_term(sc_bound *o, int term, double v, int d, int s)
{
    if (v > o->term[term])
        o->term[term] = v;
    if (v > o->bound) {
        o->bound = v;
        o->binding = term;
        o->device = d;
        o->stage = s;
    }
}

/* What the terms before the first backward say when one binds. */
typedef struct first_b {
    int set, link;
    double T0, F;
} first_b;

/* The terms before the first backward (docs/bound.md), per device: FILL
 * when d can run all its F passes before its first B can start (no cap,
 * recomputation, or a cap that holds them all), else MEMORY: the cap, and
 * with offload what the host link carries away (at its full speed; a
 * shared link's solo copies at SC_OFFLOAD_SOLO of their time). */
static void first_b_terms(const sc_prog *pg, double cap, const double *t0, const double *work,
                          const stage_cost *c, const double *cnt, sc_bound *out, first_b *why)
{
    const sc_offload_cfg *off = sc_prog_offload(pg);
    const sc_recompute_cfg *rc = sc_prog_recompute(pg);
    int moves = off && off->policy != SC_OFFLOAD_NONE;
    for (int d = 0; d < sc_prog_devices(pg); d++) {
        double rate = 0, fmx = 0, all = 0, dcap = dev_cap(pg, d, cap);
        for (int i = 0; i < sc_prog_chunks(pg, d); i++) {
            int s = sc_prog_stage_of(pg, d, i);
            if (s < 0)
                continue;
            double t1 = sc_offload_time(pg, s, 1) * (off && off->shared ? SC_OFFLOAD_SOLO : 1);
            if (moves)
                rate = fmax(rate, t1 > 0 ? sc_prog_mem(pg, s) / t1 : INFINITY);
            fmx = fmax(fmx, sc_prog_tf(pg, s) + sc_prog_ta(pg, s));
            all += cnt[s] * pos(c[s].wF);
        }
        if (!isfinite(rate) || (rc && rc->policy != SC_RECOMPUTE_NONE))
            dcap = INFINITY; /* records leave as fast as they come, or are dropped */
        double F = before_first_b(pg, d, dcap, t0[d], fmx, rate, c, cnt);
        if (!isfinite(F))
            continue;
        int term = F >= all - 1e-9 * (1 + all) ? SC_BOUND_FILL : SC_BOUND_MEMORY;
        double v = t0[d] + pos(work[d]) - F;
        if (v > out->bound)
            *why = (first_b){1, rate > 0, t0[d], F};
        set_term(out, term, v, d, -1);
    }
}

sc_status sc_bound_prog(const sc_prog *pg, sc_bound *out)
{
    return sc_bound_prog_cap(pg, INFINITY, out);
}

sc_status sc_bound_prog_cap(const sc_prog *pg, double cap, sc_bound *out)
{
    if (!pg || !out || !(cap > 0))
        return SC_ERR_ARG;
    memset(out, 0, sizeof *out);
    out->device = out->stage = -1;
    out->binding = SC_BOUND_WORK;
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
    long steps = sc_prog_steps(pg);
    int fo = sc_prog_forward_only(pg);
    int len = sc_prog_lengths(pg) || sc_prog_slices(pg) > 1; /* records of their own costs */
    double G = 0, kmax = 1;
    for (int mb = 0; len && mb < m; mb++) /* the largest scale of a pass's gain */
        for (int s = 0; s < S; s++)
            kmax = fmax(kmax, fmax(sc_prog_len_scale(pg, SC_LK_F, s, mb),
                                   sc_prog_len_scale(pg, SC_LK_B, s, mb)));
    for (int s = 0; s < S; s++)
        G = fmax(G, gain(pg, s) * (len ? kmax : 1));
    /* One block: per stage the walk's arrays and their least values over
     * the paths [8S], per-device sums [5P]; costs [S], paths [m] at most. */
    size_t nd = (size_t)S * 8 + (size_t)P * 5;
    double *buf = sc_calloc(nd, sizeof *buf);
    stage_cost *c = sc_calloc((size_t)S, sizeof *c);
    path *paths = sc_calloc((size_t)m, sizeof *paths);
    if (!buf || !c || !paths) {
        sc_free(buf);
        sc_free(c);
        sc_free(paths);
        return SC_ERR_NOMEM;
    }
    double *fs = buf, *C = fs + S, *after = C + S, *cnt = after + S;
    double *fsmin = cnt + S, *Cmin = fsmin + S, *aftmin = Cmin + S;
    double *amax = aftmin + S;
    double *work = amax + S, *fb = work + P, *head = fb + P, *tail = head + P, *t0 = tail + P;
    /* The paths: microbatches of one copy are consecutive (copies.h); with
     * lengths, each microbatch is a path of its own costs. */
    int np = 0;
    for (int mb = 0; mb < m; mb++) {
        int a = sc_prog_first_stage(pg, mb), b = sc_prog_last_stage(pg, mb);
        if (len || np == 0 || paths[np - 1].a != a || paths[np - 1].b != b)
            paths[np++] = (path){a, b, 0, len ? mb : -1};
        paths[np - 1].n += steps;
    }
    for (int d = 0; d < P; d++)
        head[d] = tail[d] = t0[d] = INFINITY;
    for (int s = 0; s < S; s++)
        fsmin[s] = Cmin[s] = aftmin[s] = INFINITY;
    /* PATH, each device's work, head and tail (FILL), and for MEMORY each
     * stage's earliest F, shortest round trip and shortest drain. */
    double vwork = 0; /* the vocabulary passes' share: m·steps, or Σ of r */
    for (int i = 0; i < np; i++) {
        const path *pa = &paths[i];
        stage_costs(pg, G, pa->a, pa->b, pa->mb, c);
        if (pa->mb >= 0) /* the vocabulary passes scale as r */
            vwork += (double)pa->n * sc_prog_len_scale(pg, SC_LK_F, -1, pa->mb);
        set_term(out, SC_BOUND_PATH, walk(pg, c, pa, fs, C, after), -1, -1);
        for (int s = pa->a; s <= pa->b; s++) {
            int d = sc_prog_stage_device(pg, s);
            cnt[s] += (double)pa->n;
            work[d] += (double)pa->n * (c[s].wF + c[s].wBW);
            fb[d] += (double)pa->n * (c[s].wF + c[s].wB);
            head[d] = fmin(head[d], fs[s]);
            /* With pairs a BW's excess over B may hide in a pair: the
             * drain after the first stage's own B is then 0. */
            tail[d] = fmin(tail[d], (s == pa->a && G > 0) || fo ? 0 : after[s]);
            fsmin[s] = fmin(fsmin[s], fs[s]);
            Cmin[s] = fmin(Cmin[s], C[s]);
            aftmin[s] = fmin(aftmin[s], after[s]);
            t0[d] = fmin(t0[d], fs[s] + C[s] - c[s].cB); /* a B(s) starts */
            amax[s] = fmax(amax[s], pa->a);
        }
    }
    if (!len)
        vwork = (double)m * (double)steps;
    for (int d = 0; d < P; d++) {
        double v = 0;
        if (sc_vocab_split(sc_prog_vocab(pg)))
            for (int i = 0; i < SC_VOCAB_PASSES; i++)
                v += sc_prog_vocab_cost(pg, sc_vocab_op(i), d);
        double total = pos(work[d]) + vwork * v;
        set_term(out, SC_BOUND_WORK, total, d, -1);
        if (isfinite(head[d])) {
            set_term(out, SC_BOUND_FILL, head[d] + pos(work[d]), d, -1);
            set_term(out, SC_BOUND_FILL, head[d] + pos(fb[d]) + tail[d], d, -1);
        }
    }
    /* MEMORY: records leave the device only without offload and recompute.
     * With at most k records of stage s live, F number 1 + rounds·k waits
     * rounds round trips (each at least the shortest of any microbatch;
     * k counts the smallest records). */
    const sc_offload_cfg *off = sc_prog_offload(pg);
    const sc_recompute_cfg *rc = sc_prog_recompute(pg);
    int memory = !fo && (!off || off->policy == SC_OFFLOAD_NONE) &&
                 (!rc || rc->policy == SC_RECOMPUTE_NONE);
    double trip = 0;
    for (int s = 0; memory && s < S; s++) {
        if (!(cnt[s] > 0))
            continue;
        long k = capacity(pg, s, cap, outer(pg, s, amax[s]));
        if (k < 0)
            continue;
        int d = sc_prog_stage_device(pg, s);
        if (k == 0) {
            if (isfinite(out->bound))
                out->k = 0;
            set_term(out, SC_BOUND_MEMORY, INFINITY, d, s);
            continue;
        }
        long rounds = ((long)cnt[s] - 1) / k; /* F number 1 + rounds·k waits rounds trips */
        double v = fsmin[s] + (double)(rounds + 1) * Cmin[s] + aftmin[s];
        if (v > out->bound) {
            out->k = (int)(k < 1000000000 ? k : 1000000000);
            trip = Cmin[s];
        }
        set_term(out, SC_BOUND_MEMORY, v, d, s);
    }
    first_b why = {0};
    if (!fo && !len)
        first_b_terms(pg, cap, t0, work, c, cnt, out, &why);
    switch ((sc_bound_term)out->binding) {
    case SC_BOUND_WORK:
        snprintf(out->why, sizeof out->why, "work: d%d computes for %.6g", out->device,
                 out->bound);
        break;
    case SC_BOUND_PATH:
        snprintf(out->why, sizeof out->why, "critical path: one microbatch takes %.6g",
                 out->bound);
        break;
    case SC_BOUND_FILL:
        if (why.set)
            snprintf(out->why, sizeof out->why,
                     "fill and drain: d%d has %.6g of F to run before its first B at %.6g",
                     out->device, why.F, why.T0);
        else
            snprintf(out->why, sizeof out->why,
                 "fill and drain: d%d waits %.6g for the first F, then computes",
                 out->device, head[out->device]);
        break;
    case SC_BOUND_MEMORY:
        if (why.set)
            snprintf(out->why, sizeof out->why,
                     "memory cap: d%d's cap holds %.6g of F before its first B at %.6g%s",
                     out->device, why.F, why.T0, why.link ? " (with the host link's)" : "");
        else if (out->k == 0)
            snprintf(out->why, sizeof out->why,
                     "memory cap: d%d's cap holds no record of stage %d", out->device,
                     out->stage);
        else
            snprintf(out->why, sizeof out->why,
                     "memory cap: d%d holds %d records of stage %d, each a round trip of %.6g",
                     out->device, out->k, out->stage, trip);
        break;
    case SC_BOUND_TERM_COUNT:
        break;
    }
    sc_free(buf);
    sc_free(c);
    sc_free(paths);
    return SC_OK;
}
