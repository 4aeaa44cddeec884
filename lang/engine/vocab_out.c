/*
 * vocab_out.c — what `sim` adds for collectives and a model (docs/vocab.md,
 * docs/model.md#bytes): the vocabulary placement, the
 * collectives' time, and with a model what every device holds: its
 * parameters, their bytes, gradients, optimizer states, peak activations,
 * workspace and the total.
 */
#include "sim_out.h"

#include <stdio.h>

#include "model/flops.h"
#include "model/mdesc.h"

#define GIB 1073741824.0

/* "key": [v * scale...], "key_max": the largest. */
static void array(sc_jw *w, const char *key, const double *v, int n, double scale)
{
    double mx = 0;
    char kmax[64];
    sc_jw_array(w, key);
    for (int i = 0; i < n; i++) {
        sc_jw_num(w, NULL, v[i] * scale);
        mx = v[i] * scale > mx ? v[i] * scale : mx;
    }
    sc_jw_end(w);
    snprintf(kmax, sizeof kmax, "%s_max", key);
    sc_jw_num(w, kmax, mx);
}

/* "key": [whole bytes...] */
static void wholes(sc_jw *w, const char *key, const double *v, int n)
{
    sc_jw_array(w, key);
    for (int i = 0; i < n; i++)
        sc_jw_whole(w, NULL, v[i]);
    sc_jw_end(w);
}

/* n with a comma every three digits: "8,030,261,248". */
static const char *grouped(char *out, size_t len, long long n)
{
    char digits[32];
    int k = snprintf(digits, sizeof digits, "%lld", n < 0 ? -n : n), o = 0;
    if (n < 0 && len > 1)
        out[o++] = '-';
    for (int i = 0; i < k && (size_t)o + 2 < len; i++) {
        if (i && (k - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = 0;
    return out;
}

static const char *const precisions[] = {"mixed", "pure"};
static const char *const optimizers[] = {"adamw", "sgd", "none"};

/* "model": the description and its layer kinds (docs/model.md#bytes). */
static void json_model(const sc_prog *pg, sc_jw *w)
{
    const sc_mdesc *m = sc_prog_mdesc(pg);
    const sc_model_desc *md = sc_prog_model(pg);
    const sc_mdesc_cfg *c = sc_mdesc_config(m);
    sc_jw_object(w, "model");
    sc_jw_str(w, "family", sc_mfamily_name(c->family));
    sc_jw_int(w, "params", (long long)sc_mdesc_params(m, -1));
    sc_jw_int(w, "layers", (long long)c->layers);
    sc_jw_int(w, "seq", md->seq);
    sc_jw_int(w, "batch", md->batch);
    sc_jw_int(w, "dtype_bytes", md->dtype_bytes);
    sc_jw_str(w, "precision", precisions[md->precision]);
    sc_jw_str(w, "optimizer", optimizers[md->optimizer]);
    sc_jw_int(w, "zero", md->zero);
    sc_jw_int(w, "dp", md->dp);
    sc_jw_array(w, "stage_layers");
    for (int s = 0; s < sc_prog_stages(pg); s++)
        sc_jw_int(w, NULL, sc_prog_stage_layers(pg, s));
    sc_jw_end(w);
    sc_jw_object(w, "kinds");
    int n = sc_mdesc_nlayers(m);
    for (int k = 0; k < SC_ML_COUNT; k++) {
        int first = -1, count = 0;
        for (int i = 0; i < n; i++)
            if (sc_mdesc_kind(m, i) == (sc_mlayer)k && count++ == 0)
                first = i;
        if (!count)
            continue;
        sc_jw_object(w, sc_mlayer_name((sc_mlayer)k));
        sc_jw_int(w, "layers", count);
        sc_jw_int(w, "params", (long long)sc_mdesc_params(m, first));
        sc_jw_int(w, "act_bytes_per_token",
                  (long long)sc_mdesc_act_bytes(m, first, md->seq, SC_ATTN_FLASH));
        sc_jw_int(w, "flops_per_token", (long long)sc_mdesc_flops(m, first, md->seq));
        sc_jw_end(w);
    }
    sc_jw_end(w);
    sc_jw_end(w);
}

void sc_eng_print_vocab(FILE *out, const sc_prog *pg, const sc_sim *sim, sc_jw *w)
{
    int P = sc_prog_devices(pg), model = sc_prog_has_model(pg);
    double pb[SC_MAX_DEVICES], b[6][SC_MAX_DEVICES];
    double unit = sc_prog_unit_bytes(pg);
    for (int d = 0; d < P && model; d++) {
        sc_dev_bytes db = sc_prog_dev_bytes(pg, d);
        pb[d] = sc_prog_param_bytes(pg, d);
        b[0][d] = (double)db.params;
        b[1][d] = db.param_bytes;
        b[2][d] = db.grads;
        b[3][d] = db.optimizer;
        b[4][d] = sim->peak_mem[d] * unit;
        b[5][d] = sc_prog_total_bytes(pg, d, sim->peak_mem[d]);
    }
    static const char *const keys[] = {"params", "grads", "optimizer", "activations",
                                       "workspace", "total"};
    if (w) {
        if (sc_prog_vocab(pg) != SC_VOCAB_NONE)
            sc_jw_str(w, "vocab_par", sc_vocab_name(sc_prog_vocab(pg)));
        if (sim->coll_busy) {
            sc_jw_int(w, "collectives", (long long)sim->colls);
            array(w, "coll_busy", sim->coll_busy, P, 1);
        }
        if (model) {
            array(w, "param_bytes", pb, P, 1);
            array(w, "peak_activation_bytes", sim->peak_mem, P, unit);
            sc_jw_num(w, "unit_bytes", unit);
            wholes(w, "params", b[0], P);
            sc_jw_object(w, "bytes");
            double ws[SC_MAX_DEVICES];
            for (int d = 0; d < P; d++)
                ws[d] = sc_prog_dev_bytes(pg, d).workspace;
            for (int k = 0; k < 6; k++)
                wholes(w, keys[k], k == 4 ? ws : b[k < 4 ? k + 1 : 5], P);
            sc_jw_end(w);
            double mx = 0;
            for (int d = 0; d < P; d++)
                mx = b[5][d] > mx ? b[5][d] : mx;
            sc_jw_whole(w, "total_bytes_max", mx);
            json_model(pg, w);
        }
        return;
    }
    if (sc_prog_vocab(pg) != SC_VOCAB_NONE)
        fprintf(out, "vocabulary    %s\n", sc_vocab_name(sc_prog_vocab(pg)));
    if (sim->coll_busy)
        fprintf(out, "collectives   %zu instructions\n", sim->colls);
    if (model) {
        const sc_model_desc *md = sc_prog_model(pg);
        const sc_mdesc *m = sc_prog_mdesc(pg);
        char n[32];
        fprintf(out, "model         %s, %s parameters; seq %ld, batch %ld; %s, %s precision, %s",
               sc_mfamily_name(sc_mdesc_config(m)->family), grouped(n, sizeof n, sc_mdesc_params(m, -1)),
               md->seq, md->batch, md->dtype_bytes == 4 ? "fp32 parameters" : "16-bit parameters",
               precisions[md->precision], optimizers[md->optimizer]);
        if (md->zero)
            fprintf(out, ", ZeRO-%d over %ld", md->zero, md->dp);
        /* the split; as Megatron's layout where Megatron places stages so
         * (a loop: stage s on device s mod P) */
        int S = sc_prog_stages(pg), loop = 1, baseline = sc_prog_vocab(pg) == SC_VOCAB_BASELINE ||
                                                         sc_prog_vocab(pg) == SC_VOCAB_REDIS;
        char lay[1024] = "";
        size_t o = 0;
        fprintf(out, "\nsplit         [");
        for (int s = 0; s < S; s++) {
            int k = sc_prog_stage_layers(pg, s);
            fprintf(out, "%s%d", s ? "," : "", k);
            loop &= sc_prog_stage_device(pg, s) == s % P;
            char t[24] = "";
            if (k)
                snprintf(t, sizeof t, "t*%d", k);
            if (o + 40 < sizeof lay)
                o += (size_t)snprintf(lay + o, sizeof lay - o, "%s%s%s%s", s ? "|" : "",
                                      s == 0 && baseline ? "E" : "", t,
                                      s == S - 1 && baseline ? "L" : "");
        }
        fprintf(out, "] decoder layers per stage");
        if (loop && baseline)
            fprintf(out, "; Megatron --pipeline-model-parallel-layout \"%s\"", lay);
        fprintf(out, "\nmemory        a unit is %.4g GiB of activations; the total adds parameters, "
               "gradients, optimizer states and %.4g GiB of workspace\n", unit / GIB,
               md->workspace / GIB);
    }
    if (!model && !sim->coll_busy)
        return;
    int c = sim->coll_busy != NULL;
    fprintf(out, "device   ");
    if (model)
        fprintf(out, "params          weights GiB  grads GiB  optimizer GiB  activations GiB  total GiB%s",
               c ? "  " : "");
    fprintf(out, "%s\n", c ? "collectives busy" : "");
    for (int d = 0; d < P; d++) {
        fprintf(out, "%-8d ", d);
        if (model)
            fprintf(out, c ? "%-15.0f %-12.4g %-10.4g %-14.4g %-16.4g %-9.4g  "
                     : "%-15.0f %-12.4g %-10.4g %-14.4g %-16.4g %.4g",
                   b[0][d], b[1][d] / GIB, b[2][d] / GIB, b[3][d] / GIB, b[4][d] / GIB,
                   b[5][d] / GIB);
        if (c)
            fprintf(out, "%.6g", sim->coll_busy[d]);
        fprintf(out, "\n");
    }
}
