/*
 * model_bytes.c — the sizes the executor and the prediction read of a
 * model (model.h): a record's kept and B-only bytes, a boundary tensor,
 * the parameters of a stage and what a device allocated.
 */
#include "model_impl.h"

size_t sc_model_record_kept_bytes(const sc_model *md, int s, int mb)
{
    if (md->kind == SC_MODEL_DECODER)
        return sc_mdec_kept_bytes(md, s, mb);
    size_t R = (size_t)sc_model_rows(md, mb), Rh = R * (size_t)md->h;
    size_t n = 4 * Rh * (size_t)md->count[s];
    if (SC_MLAST(md, s) && !md->split) /* the head's x and dlogits */
        n += Rh + R * (size_t)md->V;
    return n * sizeof(float);
}

size_t sc_model_record_bonly_bytes(const sc_model *md, int s, int mb)
{
    return md->kind == SC_MODEL_DECODER ? sc_mdec_bonly_bytes(md, s, mb) : 0;
}

size_t sc_model_record_bytes(const sc_model *md, int s, int mb)
{
    return sc_model_record_kept_bytes(md, s, mb) + sc_model_record_bonly_bytes(md, s, mb);
}

size_t sc_model_boundary_bytes(const sc_model *md, int mb)
{
    return (size_t)sc_model_rows(md, mb) * (size_t)md->h * sizeof(float);
}

size_t sc_model_row_bytes(const sc_model *md)
{
    return (size_t)md->R * sizeof(float);
}

size_t sc_model_param_bytes(const sc_model *md, int s)
{
    size_t layer = 0;
    for (int j = 0; j < md->np; j++)
        layer += md->psz[j];
    size_t n = 2 * layer * (size_t)md->count[s];
    if (SC_MLAST(md, s) && !md->split)
        n += 2 * (size_t)md->h * (size_t)md->V;
    if (SC_MLAST(md, s) && md->Wn) /* the final norm */
        n += 2 * (size_t)md->h;
    if (s == 0 && md->vocab != SC_VOCAB_NONE && !md->split) /* the embedding */
        n += 2 * (size_t)md->h * (size_t)md->V;
    return n * sizeof(float);
}

size_t sc_model_shard_param_bytes(const sc_model *md)
{
    return md->split ? 4 * (size_t)md->h * (size_t)(md->V / md->P) * sizeof(float) : 0;
}

size_t sc_model_allocated_param_bytes(const sc_model *md, int d)
{
    for (int s = 0; s < md->S; s++)
        if (md->devs[s] && md->devs[s]->d == d)
            return md->devs[s]->pbytes +
                   (md->devs[s]->mv ? sc_mvocab_param_bytes(md->devs[s]->mv) : 0);
    return 0;
}

size_t sc_model_vocab_record_bytes(const sc_model *md)
{
    size_t R = (size_t)md->R;
    return md->split ? (R * (size_t)(md->V / md->P) + R * (size_t)md->h + 3 * R) * sizeof(float)
                     : 0;
}
