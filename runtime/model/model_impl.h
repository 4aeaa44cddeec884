/*
 * model_impl.h — the body of the built-in model, for model.c (the
 * workload), model_optim.c (its optimizer steps), reference.c (the
 * single-device reference and the comparison) and model_vocab.c's caller
 * only (model_vocab.c itself knows nothing of it).
 * Tested by: tests/unit/test_decoder_model.c, tests/unit/test_moe_model.c, tests/unit/test_model.c.
 */
#ifndef SC_MODEL_IMPL_H
#define SC_MODEL_IMPL_H

#include "model.h"
#include "optim.h"
#include "model_vocab.h"
#include "model/mdesc.h"

/* Parameter tensors per layer, at most (the MoE decoder's 13:
 * model_moe.c). */
#define SC_MODEL_MAXP 13
#define SC_MDEC_NP 9

/* The kept parts of one decoder layer, in record order (model_decoder.c);
 * an MoE layer's P_A, P_DGATE, P_DUP hold its experts' rows (gathered) and
 * model_moe.c's parts follow P_DTOP (sc_moe_parts). */
enum { P_X, P_RSTD1, P_XN1, P_O, P_Y, P_RSTD2, P_XN2, P_A, P_DQ, P_DK, P_DV, P_DY, P_DGATE,
       P_DUP, P_DXN1, P_DXN2, P_DTOP, P_LAYER };

/* Host staging of generated tensors: they reach device memory through the
 * backend's upload, CHUNK floats at a time. */
#define SC_MODEL_CHUNK ((size_t)1 << 16)

/* One device's context: the workload's ctx. */
typedef struct sc_mdev {
    sc_model *md;
    int d;
    sc_backend *be;
    int32_t *targets;    /* [R] scratch (host) */
    float *stage;        /* [CHUNK] scratch (host) */
    sc_adamw *opt;       /* the optimizer of the device's tensors */
    sc_mvocab *mv;       /* its vocabulary layers (model_vocab.h), or NULL */
    size_t pbytes;       /* bytes of parameters and gradients its layers allocated */
    size_t gbytes;       /* of them, the gradients' */
    double state[2];     /* the state of the step being ended (optim.h) */
    /* The collectives' buffers (exec/exec.h, coll_buffer): sync's all-reduces;
     * post-validation's partial state received from the device before and
     * sent on, the global state, and what passes through. */
    double sync[2], part_in[2], part_out[2], global[2], scratch[2];
    /* Their twins in the backend's memory (NCCL reduces device memory
     * only): a buffer is uploaded when its collective starts and read back
     * when it completes (coll_buffer, coll_done). [10]: the five above. */
    double *cdev;
    float *gsum;         /* the copies' gradient sum (model_optim.c), or NULL */
    int eager;           /* post-validation: the step in flight was taken eagerly */
    int final;           /* ... or with the global state (the last device) */
    sc_step_info *info;  /* [steps] what each step did on this device */
    int *xmb;            /* run --graph: [m] the microbatch (within its step) of each */
    int *moe_count;      /* MoE: [M][C L][E] the rows each expert got (model_moe.c), or NULL;
                          * with ep > 1 a second [M][C L][E] after it: the rows this rank's
                          * experts got from each source rank (model_moe_ep.c) */
    struct sc_transport *ep_tp; /* ep > 1: the EP group's transport (model_moe_ep.c) */
    struct sc_transport *ep_lane_tp; /* its second, for a pair's lane (w_lane), or NULL */
    int ep_dev;          /* this device's number on it */
    int ep_failed;       /* an exchange failed (dv->err says why): the pass fails */
    int nx, capturing;   /* loss captured, in order (model_graph.c) */
    float *ssc;          /* sequence slices' scratch (model_slices.c), or NULL */
    char err[384];
} sc_mdev;

/* model_graph.c: run --graph (exec.h's graph_capture, graph_replayed), and
 * the note of a loss computed while captured (its microbatch mb). */
void sc_model_graph_capture(void *ctx);
void sc_model_graph_note(sc_mdev *dv, int mb);
sc_status sc_model_graph_replayed(void *ctx, int step);

struct sc_model {
    sc_model_cfg c;
    int S, m, L, R, h, V;
    int C, Sc;           /* copies of the model (docs/guide.md#copies) and stages per copy:
                          * stage s is copy s / Sc; its layers are that copy's */
    int steps, M;        /* training steps; microbatch numbers m·steps */
    int *first, *count;  /* [S] layers of each stage */
    int kind;            /* SC_MODEL_MLP or SC_MODEL_DECODER (cfg.kind) */
    int np;              /* parameter tensors per layer: MLP W1 W2; decoder g1 Wq Wk Wv Wo
                          * g2 Wg Wu Wd (model_decoder.c) */
    size_t psz[SC_MODEL_MAXP]; /* floats of each */
    int H, KV, D, I, qd, kd; /* decoder: heads, KV heads, head dim, inter, H D, KV D */
    float theta, eps;    /* decoder: rope_theta, rms_norm_eps */
    int E, K, Ie, Is;    /* MoE (E > 0): experts, experts per token, an expert's width, the
                          * shared experts' width (0: none); model_moe.c */
    double *ep_time;     /* ep > 1: [L][3] each layer's seconds in its dispatch and combine
                          * exchanges, and its passes with them (model_moe_ep.c), or NULL */
    int ep, ep_rank;     /* expert parallelism (ep > 1; model_moe_ep.c): the EP group's size
                          * and this model's rank in it: it holds the E / ep routed experts
                          * from ep_rank E / ep; 0 or 1: none */
    int lp;              /* decoder: kept parts per layer (P_LAYER, more with MoE) */
    float **Wl, **Gl;    /* [C L np]: copy k's layer l's tensor j at (k L + l) np + j */
    float **Wout, **Gout; /* [C] the output layer of each copy */
    float **Wn, **Gn;    /* [C] the final norm of each copy (decoder), else NULL */
    int *gstep;          /* [S] the step whose gradients G1, G2 (Gout) hold; -1: none */
    sc_backend **owner;  /* [S] backend holding the stage's parameters */
    sc_mdev **devs;      /* [S] device context of each attached stage */
    double *loss;        /* [M] summed loss of each microbatch */
    int have_loss;
    sc_backend *own_be;  /* the reference's backend */
    int vocab, split, P; /* cfg.vocab_par; split: 1 vocab-1, 2 vocab-2, 0 not split */
    int *lens;           /* [m] tokens per sequence of each microbatch (cfg.lengths), or NULL */
    int Rmax;            /* rows of the largest microbatch (scratch is sized for it) */
    double Rsum;         /* rows of a step's m microbatches (the loss is their mean) */
    int slices;          /* sequence slices per microbatch (cfg.slices; 1: none) */
    float **skv;         /* [C L m][4] slices: each record's keys, values and their
                          * gradients, per layer (model_slices.c), or NULL */
};

/* Tokens per sequence and rows of microbatch mb (a stream's number; mb < 0:
 * seq): the size every tensor, record and transfer of mb takes. */
static inline int sc_model_seq(const sc_model *md, int mb)
{
    return md->lens && mb >= 0 ? md->lens[mb % md->m] : (int)md->c.seq;
}
static inline int sc_model_rows(const sc_model *md, int mb)
{
    return sc_model_seq(md, mb) * (int)md->c.batch;
}
/* model_lengths.c: checks cfg.lengths (whole numbers >= 1, the model's
 * bound on a dimension) and the longest, *seq_max (>= seq); then the
 * model's lens, Rmax and Rsum. */
sc_status sc_model_lengths_check(const sc_model_cfg *cfg, int m, long dim_max, long *seq_max,
                                 char *err, size_t errlen);
sc_status sc_model_lengths_init(sc_model *md);
/* md's lengths as cfg.lengths gives them (malloc'd, m of them; NULL: out
 * of memory): another EP rank's model is made with the same. */
double *sc_model_lengths_of(const sc_model *md);

/* model_slices.c: sequence slices (cfg.slices, docs/slices.md#run). The
 * config's check; the record table; record mb's first token in its
 * sequence (0 unsliced) and its attention's span, cut + tokens (seq
 * unsliced); the unsliced microbatch (of a step) and row that row r of mb
 * is; the first stage's input; the attention of layer l from T[P_XN1] to
 * T[P_O] (q, k, v, p: the layer's b_only; q padded to the span), and back
 * from dout to T[P_DQ], T[P_DK], T[P_DV] (adding into the earlier slices'
 * records); the device's scratch freed. */
sc_status sc_mslice_check(const sc_model_cfg *cfg, int m, char *err, size_t errlen);
sc_status sc_mslice_init(sc_model *md);
int sc_mslice_cut(const sc_model *md, int mb);
int sc_mslice_span(const sc_model *md, int mb);
void sc_mslice_row(const sc_model *md, int mb, int r, int *xmb, int *xr);
sc_status sc_mslice_input(sc_mdev *dv, int mb, float *x);
sc_status sc_mslice_attn_fwd(sc_mdev *dv, int l, int mb, float **T, float *q, float *k,
                             float *v, float *p);
void sc_mslice_attn_bwd(sc_mdev *dv, int l, int mb, float **T, const float *q, float *p,
                        const float *dout);
sc_status sc_mslice_ready(sc_mdev *dv); /* the scratch (SC_ERR_NOMEM: dv->err says) */
void sc_mslice_free(sc_mdev *dv);

/* Layer l's parameter j and its gradient. */
#define SC_MW(md, l, j) ((md)->Wl[(size_t)(l) * (size_t)(md)->np + (size_t)(j)])
#define SC_MG(md, l, j) ((md)->Gl[(size_t)(l) * (size_t)(md)->np + (size_t)(j)])

/* A stage's place in its copy: the first (it reads the input), the last
 * (it holds the head and the loss), and its copy. */
#define SC_MFIRST(md, s) ((s) % (md)->Sc == 0)
#define SC_MLAST(md, s) ((s) % (md)->Sc == (md)->Sc - 1)
#define SC_MCOPY(md, s) ((s) / (md)->Sc)

/* Streams of the model's hash (model_vocab.c uses 3 and 5 for the same
 * tensors, and 6, 7 for the embedding and the tokens). */
enum { T_W1 = 1, T_W2, T_WOUT, T_INPUT, T_TARGET, T_DEC = 8 /* .. 16: the decoder's 9 */ };

/* Tensor t of the model's numbering (model.h: sc_model_tensors) other
 * than the embedding: parameters (params 1) or gradients, its floats and
 * the stage holding it (copy 0's); NULL when t is the embedding's, the
 * split output layer, or not allocated here. */
float *sc_model_tensor_at(const sc_model *md, int t, int params, size_t *n, int *stage);
/* Tensors before the embedding's: np L, the output layer, the final norm. */
int sc_model_layer_tensors(const sc_model *md);

/* Device tensor x[0..n) = scale * sc_urand(kind, idx, i) (0 when scale is
 * 0), or = v (fill_const), on dv's backend. */
void sc_model_fill(sc_mdev *dv, float *x, size_t n, int kind, long idx, float scale);
void sc_model_fill_const(sc_mdev *dv, float *x, size_t n, float v);

/* model_decoder.c: the decoder's sizes (H .. eps, np, psz from md->c),
 * its initial layer l (ll: its index in the copy), its record, and its
 * passes (T: the kept parts; the input in T[0]; the last stage's logits
 * into its part for model.c's cross-entropy). */
void sc_mdec_sizes(sc_model *md);
void sc_mdec_init(sc_mdev *dv, int l, int ll);
int sc_mdec_usable(const sc_backend *be);
int sc_mdec_record_parts(const sc_model *md, int s, int mb, size_t *bytes, int max);
size_t sc_mdec_bonly_bytes(const sc_model *md, int s, int mb);
size_t sc_mdec_kept_bytes(const sc_model *md, int s, int mb);
/* The last stage's logits (then their gradient) in its record T. */
float *sc_mdec_logits(const sc_model *md, int s, float **T);
/* Floats of the copies' gradient sum (model_optim.c). */
size_t sc_model_gsum_floats(const sc_model *md);
sc_status sc_mdec_forward(sc_mdev *dv, int s, int mb, void *out, float **T, void *b_only);
sc_status sc_mdec_backward_input(sc_mdev *dv, int s, int mb, const void *gin, void *gout,
                                 float **T, void *b_only);
sc_status sc_mdec_backward_weight(sc_mdev *dv, int s, int mb, float **T);

/* model_moe.c: the MoE layer (md->E > 0) in place of the decoder's MLP.
 * The config's checks (SC_ERR_ARG, SC_ERR_LIMIT beyond the bounds of
 * model.c: one line naming the size); its sizes (psz[6 ..]), initial parameters, the backend's slots; its kept
 * parts after P_DTOP (their floats per row), its b_only floats; and its
 * passes on layer l's parts L of microbatch mb: forward from L[P_XN2]
 * adding into next (which holds y), the input gradient at L[P_XN2] from
 * L[P_DTOP] (b: the layer's b_only past the attention's), the weight
 * gradients. */
sc_status sc_moe_check(const sc_model_cfg *cfg, long dim_max, long elems_max, char *err,
                       size_t errlen);
void sc_moe_sizes(sc_model *md);
void sc_moe_init(sc_mdev *dv, int l, int ll);
int sc_moe_usable(const sc_backend *be);
int sc_moe_parts(const sc_model *md, size_t *width);
size_t sc_moe_bonly_floats(const sc_model *md, int mb);
/* The tensors the MoE layer's forward keeps for its backward after
 * attention, per row (of its R), one by one in the names and order of
 * interp/model's sc_mdesc_moe_act, 4 bytes each (float, int32): y, xn2 and
 * prob, sel, wt, pos, xg, gate, up, a, yg, the shared gs, us, as, read off
 * the record's layout (the kept parts and b_only, less what B leaves for
 * W: the gradients, and its scratch). With ep > 1 the gathered ones (xg,
 * gate, up, a) have room for ep times the rank's own copies. Returns the
 * count. */
int sc_moe_act_tensors(const sc_model *md, sc_mact *t);
sc_status sc_moe_forward(sc_mdev *dv, int l, int mb, float **L, float *b, float *next);
sc_status sc_moe_backward(sc_mdev *dv, int l, int mb, float **L, float *b);
void sc_moe_weight(sc_mdev *dv, int l, int mb, float **L);
/* model_moe_experts.c: the routed experts' products over a row set (ep = 1: all E experts on
 * the layer's gathered rows; ep > 1, model_moe_ep.c: this rank's E / ep on
 * what came): n[e] rows of expert e of the ne, expert-major from row 0 of
 * L[P_LAYER] (xg), L[P_LAYER + 1] (dyg), L[P_A], L[P_DGATE], L[P_DUP] and
 * of gate, up (h wide: y). op SC_OP_F: gate, up, a and the outputs y;
 * SC_OP_B: dup, dgate and the input gradients y; SC_OP_W: adds the
 * experts' gradients (gate, up, y unused). */
typedef struct sc_moe_set {
    int ne;
    const int *n;
    float *gate, *up, *y;
} sc_moe_set;
void sc_moe_experts(sc_mdev *dv, int l, int op, float **L, const sc_moe_set *x);

/* model_moe_ep.c: the routed experts over an EP group (md->ep > 1,
 * docs/semantics.md#expert-parallelism). SC_MEP: the group's size (1:
 * none). The kept expert rows of a rank are what it received: up to ep
 * times its own copies (SC_MEP x R k rows). The forward's and the
 * backward's part between the router and the combine: the all-to-alls of
 * the layer (counts, then rows) over dv->ep_tp, this rank's experts on
 * what came; xl: the rank's own gathered copies (R k rows of h: sent,
 * then the experts' outputs back), ye, sb: G rows of h of scratch; in the
 * backward xl holds the copies' output gradients on entry and their input
 * gradients on return. On a failed exchange dv->err says why. */
#define SC_MEP(md) ((md)->ep > 1 ? (md)->ep : 1)
#define SC_MEP_MAX 64      /* ep at most */
#define SC_MOE_MAXE 4096   /* experts at most (sc_moe_check) */
/* ep (1..SC_MEP_MAX) dividing the experts, and a backend whose memory is
 * the host's: SC_ERR_ARG and one line. */
sc_status sc_moe_ep_check(const sc_model *md, const sc_backend *be, char *err, size_t errlen);
/* The config's ep (cfg.ep, cfg.ep_rank): ep > 1 needs experts that it
 * divides, a batch it divides, no split vocabulary and one copy; SC_ERR_ARG
 * and one line. Then, on a new model, md->ep, md->ep_rank and the rank's
 * batch (md->c.batch / ep sequences). */
sc_status sc_moe_ep_cfg_check(const sc_model_cfg *cfg, char *err, size_t errlen);
void sc_moe_ep_share(sc_model *md);
/* Expert j of this rank's shard of tensor x (7, 8, 9 of layer l, ll its
 * index in the copy): the values of expert ep_rank E / ep + j at ep = 1. */
void sc_moe_ep_init(sc_mdev *dv, float *x, size_t n, int kind, int ll, float scale);
typedef struct sc_moe_rows {
    float *xl, *ye, *sb, *gate, *up;
    const int *cnt;      /* [E] this rank's copies per expert (the router's) */
    int *cin;            /* [ep][E / ep] what each source sent this rank's experts */
} sc_moe_rows;
sc_status sc_moe_ep_forward(sc_mdev *dv, int l, int mb, float **L, const sc_moe_rows *r);
sc_status sc_moe_ep_backward(sc_mdev *dv, int l, int mb, float **L, const sc_moe_rows *r);
void sc_moe_ep_weight(sc_mdev *dv, int l, float **L, const int *cin);

/* The workload's table (model.c). */
extern const struct sc_workload_ops sc_model_ops;

/* Zeroes the gradients of stage s when they hold an earlier step than
 * `step` (the first W of a stage in a step). */
void sc_model_grads_for(sc_mdev *dv, int s, int step);

/* model_optim.c: adds the tensors of dv's stages to a new optimizer; and
 * the workload's optimizer slots (exec/exec.h). */
sc_status sc_model_optim_attach(sc_mdev *dv);
sc_status sc_model_grad_state(void *ctx, int step, double state[2]);
sc_status sc_model_optim_step(void *ctx, int step, const double state[2]);
sc_status sc_model_validate(void *ctx, int step, int *redo);
sc_status sc_model_coll_buffer(void *ctx, const sc_coll *c, sc_cxfer *x);
sc_status sc_model_coll_done(void *ctx, const sc_coll *c);

#endif
