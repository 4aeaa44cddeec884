/*
 * run_impl.h — what the files of a run share (runtime/run/ only): run.c sets up
 * the step (memory model, prediction, checks, results) and hands the
 * devices to run_devices.c, which runs them as threads or as this MPI
 * rank's device and fills the measured part of the result.
 * Tested by: tests/unit/test_gpu_choice.c, tests/runtime.sh, tests/moe.sh.
 */
#ifndef SC_RUN_IMPL_H
#define SC_RUN_IMPL_H

#include "device/device.h"
#include "run.h"

/* One device run by a thread of this process (run_devices.c's threads,
 * run_ep.c's p x E): sc_run_device_thread(&x) runs x.d's stream of x.pg
 * (sc_exec_device) into x.out and x.st. */
typedef struct sc_devrun {
    const sc_prog *pg;
    int d;
    sc_backend *be;
    sc_transport *tp;
    sc_workload wl;
    double origin;
    sc_exec_out out;
    sc_status st;
} sc_devrun;
void *sc_run_device_thread(void *p);

/* Runs the P devices of kind k as threads of this process; frees md. ref
 * (or NULL) is the reference the gradients are compared with. */
sc_status sc_run_threads(sc_prog *pg, const sc_run_opts *o, const sc_device_kind *k,
                         sc_model *md, sc_run_result *r, const sc_model *ref, char *err,
                         size_t errlen);

/* run_ep.c: an expert-parallel program (ep = E > 1) on the cpu: its P x E
 * devices as threads, EP rank e of device d running d's stream with model
 * rank e (md is rank 0; docs/semantics.md#expert-parallelism). Frees md. */
sc_status sc_run_ep_threads(sc_prog *pg, const sc_run_opts *o, const sc_device_kind *k,
                            sc_model *md, sc_run_result *r, const sc_model *ref, char *err,
                            size_t errlen);
/* What it does not run yet (--graph, a backend other than cpu,
 * microbatches of different lengths, slices): SC_ERR_ARG and one line. */
sc_status sc_run_ep_check(const sc_run_opts *o, const sc_device_kind *k, const sc_prog *pg,
                          char *err, size_t errlen);

/* run_ep_mpi.c: the same p x E devices as MPI ranks (mpirun -np P x E),
 * world rank d E + e running EP rank e of device d; rank 0's result
 * gathers every rank's figures (the threads run's). Frees md. */
sc_status sc_run_ep_mpi(sc_prog *pg, const sc_run_opts *o, const sc_device_kind *k,
                        sc_model *md, sc_run_result *r, int rank, const sc_model *ref,
                        char *err, size_t errlen);
/* Runs this MPI rank's device, of kind k; rank 0's result gathers every
 * rank's figures. Frees md. */
sc_status sc_run_mpi(sc_prog *pg, const sc_run_opts *o, const sc_device_kind *k, sc_model *md,
                     sc_run_result *r, int rank, const sc_model *ref, char *err, size_t errlen);

/* run_steps.c: the per-step figures, the losses and the comparison with
 * the reference (or NULL) from the devices attached to md in this process;
 * under MPI sc_run_combine then merges every rank's, on every rank. This
 * rank runs device dev, its share of the batch of shares (expert
 * parallelism's EP rank of ep; else 0 of 1: the step's loss is the sum of
 * the shares' in share order); holds_first: it holds stage 0 (share 0),
 * whose device's verdicts are reported. */
void sc_run_collect(const sc_model *md, const sc_model *ref, sc_run_result *r);
sc_status sc_run_combine(sc_run_result *r, int dev, int share, int shares, int holds_first,
                         int check, double timeout_s, char *err, size_t errlen);
/* run_memory.c (docs/lengths.md#running-them): with lengths, the
 * program's records per microbatch from the model's sizes (units of
 * unit_bytes, the share W keeps; sc_prog_set_len_records); refused with a
 * split vocabulary. And the largest record of stage s (boundary 1: the
 * largest boundary tensor) over the m microbatches and seq's. */
sc_status sc_run_set_len_records(sc_prog *pg, const sc_model *md, double unit_bytes, char *err,
                                 size_t errlen);
/* Sequence slices (docs/slices.md#run): each record's tokens, the IR's cuts
 * of seq rounded to whole tokens (*out: m floats, the caller frees); an
 * empty slice is an error. */
sc_status sc_run_slice_lengths(const sc_prog *pg, long seq, double **out, char *err,
                               size_t errlen);
size_t sc_run_record_max(const sc_model *md, int s, int m, int boundary);
/* run_params.c: r's predicted parameter, gradient and optimizer bytes per
 * device (predicted_param_bytes, predicted_optim_bytes): the decoder's from
 * interp/model's description of the same config (mdesc.h, float32), the
 * MLP's from the model's own sizes. */
sc_status sc_run_predict_params(const sc_prog *pg, const sc_model *md, sc_run_result *r,
                                char *err, size_t errlen);
/* MPI on a kind that counts its devices (GPUs): the one a rank takes
 * among the ngpu it sees (local rank modulo ngpu; the only one when it sees
 * one, as when a scheduler sets CUDA_VISIBLE_DEVICES per rank). */
int sc_run_rank_gpu(int local_rank, int ngpu);
/* 1 when two of the P 16-byte UUIDs (rank order) are equal and not all
 * zero (unknown), with the two ranks in *a < *b. */
int sc_run_same_gpu(const unsigned char *uuids, int P, int *a, int *b);

#endif
