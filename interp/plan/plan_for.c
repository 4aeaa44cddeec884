/*
 * plan_for.c — which frameworks run a candidate (plan_for.h).
 */
#include "plan/plan_for.h"

#include <stdio.h>
#include <string.h>

#include "model/flops.h"
#include "ir/pair.h"

static const char *const names[] = {"",
#define X(id, name, title) name,
                                    SC_PLAN_FWS(X)
#undef X
};
static const char *const titles[] = {"",
#define X(id, name, title) title,
                                     SC_PLAN_FWS(X)
#undef X
};

int sc_plan_fw_parse(const char *name)
{
    for (int fw = 1; fw < SC_FW_COUNT; fw++)
        if (strcmp(name, names[fw]) == 0)
            return fw;
    return -1;
}

const char *sc_plan_fw_name(int fw) { return fw > 0 && fw < SC_FW_COUNT ? names[fw] : ""; }
const char *sc_plan_fw_title(int fw) { return fw > 0 && fw < SC_FW_COUNT ? titles[fw] : ""; }

const char *sc_plan_place_name(sc_plan_place p)
{
    static const char *const s[] = {"", "loop", "V", "table"};
    return p >= SC_PLAN_PLACE_NONE && p <= SC_PLAN_PLACE_TABLE ? s[p] : "";
}

/* Megatron's virtual microbatch k of P ranks, v chunks, groups of P
 * microbatches (microbatch_group_size_per_vp_stage's default):
 * get_model_chunk_id and get_microbatch_id_in_model_chunk. */
static void megatron_virtual(int k, int P, int v, int forward, int *chunk, int *mb)
{
    int in_group = k % (P * v);
    *chunk = in_group / P;
    if (!forward)
        *chunk = v - 1 - *chunk;
    *mb = k / (P * v) * P + k % P;
}

/* Whether order[i] is the forward (fwd) or backward of virtual microbatch
 * k on rank d. */
static int is_pass(const sc_instr *in, int fwd, long k, int P, int v, int d)
{
    int chunk = 0, mb = (int)k;
    if (v > 1)
        megatron_virtual((int)k, P, v, fwd, &chunk, &mb);
    return in->op == (fwd ? SC_OP_F : SC_OP_BW) && in->stage == chunk * P + d && in->mb == mb;
}

int sc_plan_megatron_order(const sc_instr *order, size_t n, int P, int m, int v, int d)
{
    if (P < 1 || m < 1 || v < 1 || d < 0 || d >= P || (v > 1 && m % P != 0))
        return 0;
    long total = (long)m * v;
    if ((size_t)(2 * total) != n)
        return 0;
    /* Warm-up forwards: p-d-1 (1F1B); 2(p-d-1) + (v-1)p (interleaved);
     * then one forward and one backward each, then the backwards left. */
    long warm = v == 1 ? P - d - 1 : 2L * (P - d - 1) + (long)(v - 1) * P;
    if (warm > total)
        warm = total;
    size_t i = 0;
    for (long k = 0; k < warm; k++)
        if (!is_pass(&order[i++], 1, k, P, v, d))
            return 0;
    for (long k = 0; k < total - warm; k++)
        if (!is_pass(&order[i++], 1, warm + k, P, v, d) || !is_pass(&order[i++], 0, k, P, v, d))
            return 0;
    for (long k = total - warm; k < total; k++)
        if (!is_pass(&order[i++], 0, k, P, v, d))
            return 0;
    return 1;
}

static sc_plan_place placement(const sc_prog *pg)
{
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), loop = S % P == 0, v = S == 2 * P;
    for (int s = 0; s < S; s++) {
        int d = sc_prog_stage_device(pg, s);
        loop &= d == s % P;
        v &= d == (s < P ? s : 2 * P - 1 - s);
    }
    return loop ? SC_PLAN_PLACE_LOOP : v ? SC_PLAN_PLACE_V : SC_PLAN_PLACE_TABLE;
}

void sc_plan_shape_of(const sc_prog *pg, sc_plan_shape *sh)
{
    memset(sh, 0, sizeof *sh);
    int P = sc_prog_devices(pg), S = sc_prog_stages(pg), m = sc_prog_microbatches(pg);
    sh->placement = placement(pg);
    sh->chunks = P > 0 ? S / P : 0;
    sh->pairs = sc_prog_has_pairs(pg);
    sh->vocab = sc_vocab_split(sc_prog_vocab(pg));
    if (sc_prog_has_model(pg)) { /* the split, as Megatron writes it */
        sc_vocab vp = sc_prog_vocab(pg);
        int ends = vp == SC_VOCAB_BASELINE || vp == SC_VOCAB_REDIS;
        size_t o = 0;
        for (int s = 0; s < S; s++) {
            int k = sc_prog_stage_layers(pg, s);
            char t[24] = "";
            sh->decoders += k;
            if (k)
                snprintf(t, sizeof t, "t*%d", k);
            if (ends && o + 40 < sizeof sh->layout)
                o += (size_t)snprintf(sh->layout + o, sizeof sh->layout - o, "%s%s%s%s",
                                      s ? "|" : "", s == 0 ? "E" : "", t, s == S - 1 ? "L" : "");
        }
    }
    int fused_only = !sh->pairs && !sh->vocab;
    for (int d = 0; d < P; d++) {
        size_t n;
        const sc_instr *st = sc_prog_stream(pg, d, &n);
        for (size_t k = 0; k < n; k++) {
            sh->offload |= st[k].op == SC_OP_OFFLOAD || st[k].op == SC_OP_RELOAD;
            sh->recompute |= st[k].op == SC_OP_R;
        }
        const sc_instr *o = sc_prog_order(pg, d, &n);
        for (size_t k = 0; k < n; k++) {
            sh->split_w |= o[k].op == SC_OP_B || o[k].op == SC_OP_W;
            fused_only &= o[k].op == SC_OP_F || o[k].op == SC_OP_BW;
        }
    }
    if (sh->placement == SC_PLAN_PLACE_LOOP && fused_only && !sh->offload && !sh->recompute) {
        int same = 1;
        for (int d = 0; d < P && same; d++) {
            size_t n;
            const sc_instr *o = sc_prog_order(pg, d, &n);
            same = sc_plan_megatron_order(o, n, P, m, sh->chunks, d);
        }
        sh->megatron = same ? (sh->chunks == 1 ? 1 : 2) : 0;
    }
    for (int fw = 1; fw < SC_FW_COUNT; fw++)
        if (!sc_plan_fw_why_not(sh, fw))
            sh->runs_on |= SC_FW_BIT(fw);
}

const char *sc_plan_fw_why_not(const sc_plan_shape *sh, int fw)
{
    if (sh->placement == SC_PLAN_PLACE_NONE)
        return "not compiled";
    if (sh->vocab)
        return "vocabulary passes";
    if (sh->offload)
        return "offload";
    if (sh->recompute)
        return "recomputation";
    switch (fw) {
    case SC_FW_MEGATRON:
        if (sh->placement == SC_PLAN_PLACE_V)
            return "the V placement";
        if (sh->placement != SC_PLAN_PLACE_LOOP)
            return "a placement that is not a loop";
        if (sh->pairs)
            return "overlapped F-B pairs";
        if (sh->split_w)
            return "B and W apart (zero bubble)";
        return sh->megatron ? NULL : "an order that is not Megatron-LM's 1F1B or interleaved 1F1B";
    case SC_FW_TORCHTITAN:
        if (sh->placement == SC_PLAN_PLACE_TABLE ||
            (sh->placement == SC_PLAN_PLACE_V && sh->chunks != 2))
            return "a placement that no schedule class makes";
        return NULL;
    case SC_FW_PYTORCH:
        return NULL;
    default:
        return "unknown framework";
    }
}

const char *sc_plan_torch_class(const sc_plan_shape *sh)
{
    if (sh->placement == SC_PLAN_PLACE_V)
        return sh->pairs ? "DualPipeV" : "ZBVZeroBubble";
    if (sh->placement == SC_PLAN_PLACE_LOOP)
        return sh->chunks == 1 ? "1F1B" : "Interleaved1F1B";
    return NULL;
}

/* Whether knob list s ("mem=6 v=3") holds a knob named k. */
static int has_knob(const char *s, const char *k)
{
    size_t n = strlen(k);
    for (const char *p = s; (p = strstr(p, k)) != NULL; p += n)
        if ((p == s || p[-1] == ' ') && p[n] == '=')
            return 1;
    return 0;
}

int sc_plan_fw_knobs(int fw, const char *recipe, const char *knobs, char *out, size_t len)
{
    static const char *const none[] = {"offload", "recompute", "vocab_par"};
    for (size_t k = 0; k < sizeof none / sizeof *none; k++)
        if (has_knob(knobs, none[k]))
            return 0;
    if (fw != SC_FW_MEGATRON) {
        snprintf(out, len, "%s", knobs);
        return 1;
    }
    if (strcmp(recipe, "1f1b") != 0 && strcmp(recipe, "interleaved") != 0)
        return 0;
    /* Every knob but mem, in order. */
    size_t at = 0;
    out[0] = 0;
    for (const char *p = knobs; *p;) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (w && !(w >= 4 && strncmp(p, "mem=", 4) == 0) && at < len)
            at += (size_t)snprintf(out + at, len - at, "%s%.*s", at ? " " : "", (int)w, p);
        p += w;
    }
    return 1;
}
