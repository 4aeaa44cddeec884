/*
 * run.h — training steps of the built-in model through a program's
 * streams, checked against the single-device reference (docs/run.md, docs/steps.md).
 *
 *     sc_run_opts o = sc_run_defaults(sc_prog_stages(pg));
 *     o.check = 1;
 *     sc_run_result *r;
 *     char err[512];
 *     sc_status st = sc_run(pg, &o, &r, err, sizeof err);
 *     if (st == SC_OK && r->rank == 0) printf("loss %a\n", r->loss);
 *     sc_run_result_free(r);
 *     sc_run_finish(st ? sc_status_exit_code(st) : 0);   // MPI: finalize or abort
 *
 * Devices are threads of this process, or, when the process was started by
 * mpirun (sc_mpi_launched), the ranks of MPI_COMM_WORLD (the world size must
 * equal P). The transport follows from the backend (docs/run.md#devices-threads-mpi-ranks-gpus):
 *
 *   backend  threads                                  MPI ranks
 *   cpu      local                                    mpi
 *   cuda     nccl when every device has its own GPU    nccl (rank r on GPU
 *            (and the program posts each pair's        local rank mod GPUs;
 *            transfers in one order), else cuda-local  at most one rank per
 *            (devices d on GPU d mod GPUs, emulated)   GPU of a node)
 *
 * STAGECRAFT_TRANSPORT=cuda-local or =nccl forces the choice for threads on
 * GPUs (an impossible one is an error).
 *
 * GPU memory: before allocating anything, each GPU's free memory
 * (cudaMemGetInfo) must hold the parameters, gradients and predicted peak
 * activations of the devices on it; otherwise the run is refused naming the
 * device, its stages, and predicted against free bytes. A device that runs
 * out later says the same after the executor's line.
 *
 * Memory: before simulating, sc_run sets the program's memory model from the
 * model's real sizes: one unit = the bytes of one microbatch's activation
 * records of all stages divided by P (one device's share), stage s holds
 * record_bytes(s) / unit units per microbatch, and w_keep = the fraction W
 * keeps (1 for the MLP; the decoder's, per stage, its kept bytes over its
 * record's: B frees the rest, sc_prog_set_stage_w_keep). The predicted peak in bytes of device d
 * is then peak_mem[d] x unit, rounded to the byte, and the activation pool's
 * measured high-water mark must equal it. With offload, the plan's
 * fractions are rounded to the model's tensors (sc_prog_set_offload_parts),
 * so that host_peak[d] x unit is the host buffers' high-water mark too.
 *
 * Not thread-safe; one run at a time per process (OpenBLAS is set to one
 * thread per call).
 * Tested by: tests/unit/test_runtime.c, tests/run.sh, tests/runtime.sh.
 */
#ifndef SC_RUN_H
#define SC_RUN_H

#include <stddef.h>

#include "ir/ir.h"
#include "model/model.h"
#include "sim/sim.h"

typedef struct sc_run_opts {
    const char *backend;   /* the device kind (device/device.h): cpu (default) or cuda */
    sc_model_cfg model;
    int check;             /* also train the reference and compare */
    size_t mem_cap;        /* bytes per device the backend may allocate; 0 = no limit */
                           /* (cuda: also refused when past the GPU's free memory) */
    double timeout_s;      /* a transfer wait longer than this is an error; 0 = none */
    size_t table_cap;      /* bytes the run's own tables (executor, transport) may take,
                            * checked before they are made; 0 = no limit (the command
                            * line: what --max-mem leaves, docs/sandbox.md#limits-on-evaluation) */
    int graph;             /* run --graph (docs/graphs.md): step 2 captured as one graph, run
                            * again for every later step; refused, with the reason, for a
                            * program, backend or transport that cannot be captured */
    int pass_cpu;          /* also time each instruction on its device thread's CPU clock
                            * (r->pass_cpu_s): what a profile on the CPU backend reads */
} sc_run_opts;

/* Defaults: hidden 64, layers 2 per stage, vocab 128, seq 16, batch 2,
 * seed 1, the optimizer's defaults (model/optim.h), cpu, no check, no memory
 * cap, timeout 300 s (the environment's STAGECRAFT_TIMEOUT, in seconds,
 * overrides it when sc_run_parse_timeout accepts it). The number of steps
 * and their synchronization come from the program (model.steps and
 * model.sync are set from it). */
sc_run_opts sc_run_defaults(int stages);
/* STAGECRAFT_TIMEOUT's text: seconds, a finite number > 0 and at most 1e6
 * (the whole string); 0 and *out set when valid, else -1. Deadlines are
 * now + timeout: an infinite one made the waits of threads spin. */
int sc_run_parse_timeout(const char *s, double *out);

typedef struct sc_run_result {
    int P, S, m;
    int mpi;               /* 1: MPI ranks; 0: threads */
    int rank;              /* this process's rank (0 when threads) */
    const char *transport; /* "local", "mpi", "nccl" or "cuda-local" */
    char transport_note[320]; /* cuda threads: why not nccl ("" when nccl, or
                            * when one device has nothing to send) */
    int gpus;              /* GPUs this process used (cuda), else 0 */
    char gpu_name[64];     /* name of GPU 0 (cuda) */
    double tolerance;      /* --check's relative tolerance of loss and gradients:
                            * 1e-5 on cpu, 1e-4 on cuda (docs/run.md#check) */
    double loss;           /* the last step's */
    double reference_loss, max_grad_rel_err; /* NaN without check */
    int bitwise;           /* every loss, gradient and parameter identical to the reference */
    int graph_replays;     /* --graph: the steps run as the graph (steps - 1) */
    double *ep_a2a;        /* ep > 1: [2 S] each stage's measured all-to-alls of one pass,
                            * its dispatch exchanges then its combine's (seconds, inside
                            * the passes; EP rank 0's), or NULL (run_ep.c) */
    int forward_only;      /* a forward-only program: the loss alone is compared (gradients NaN) */
    /* Steps (docs/steps.md); arrays of `steps`: */
    int steps;
    double *step_loss, *reference_step_loss; /* (the latter NaN without check) */
    sc_step_info *step_info;   /* what the optimizer did (the lowest device's view) */
    sc_step_info *reference_step_info; /* the reference's (without check: zeros) */
    int *rollbacks;        /* post-validation: devices that undid an eager step */
    double max_param_rel_err; /* the parameters after the last step (NaN without check) */
    double unit_bytes;     /* bytes of one memory unit */
    size_t *peak_bytes;    /* [P] measured high-water mark of each activation pool */
    size_t *predicted_bytes; /* [P] */
    size_t *host_peak_bytes; /* [P] measured high-water mark of the host buffers (offload) */
    size_t *predicted_host_bytes; /* [P] from the simulation (0 without offload) */
    size_t *param_bytes;   /* [P] parameters and gradients each device allocated */
    size_t *predicted_param_bytes; /* [P] the model's: its stages' layers, with the
                            * whole vocabulary layers or its vocabulary shard
                            * (the decoder's: interp/model's count, run_params.c) */
    size_t *optim_bytes, *predicted_optim_bytes; /* [P] AdamW's moments: allocated,
                            * predicted (in the blocks of the two above) */
    size_t *grad_bytes;    /* [P] of param_bytes, the gradients' (the same block) */
    double step_time_s;    /* from the common start to the last device's end */
    sc_sim *predicted;     /* the simulation with the model's memory */
    sc_sim *measured;      /* same shape: offset, t0/t1 measured in seconds (all
                            * devices, also under MPI), busy/start/end per device,
                            * peak_mem in units, makespan = step time */
    double *pass_cpu_s;    /* with o->pass_cpu: [offset[P]] the CPU time the device's
                            * thread spent in each instruction (-inf: not timed so);
                            * wall time minus it is time the thread had no core (another
                            * process on it) or waited. NULL without */
} sc_run_result;

/* Runs the step. pg must be verified (sc_check); sc_run changes its memory
 * model (mem per stage, w_keep). Errors: SC_ERR_ARG (model sizes, backend),
 * SC_ERR_LIMIT, SC_ERR_NOMEM (the machine or the device's cap), and
 * SC_ERR_RUNTIME (a device failed, a peer vanished, the timeout); one line
 * in err. */
sc_status sc_run(sc_prog *pg, const sc_run_opts *o, sc_run_result **out, char *err,
                 size_t errlen);
void sc_run_result_free(sc_run_result *r);

/* The program's memory model from the model's sizes, as sc_run sets it
 * before it simulates (above: unit = the records of all stages / P, stage s
 * holds record_bytes(s) / unit, w_keep = 1, offload fractions rounded to
 * the model's tensors); *unit_bytes gets the unit. Call before the program
 * is lowered (stagecraft compare shows peaks in bytes this way). */
sc_status sc_run_set_memory(sc_prog *pg, const sc_model *md, double *unit_bytes, char *err,
                            size_t errlen);
/* That unit alone: the bytes of the records of md's S stages over P
 * devices (for a cap in bytes in `run`, lang/lua/mem_lua.c, while the
 * recipe still builds its program). */
double sc_run_unit_bytes(const sc_model *md, int P, int S);

/* SC_OK when, between every two devices, the SENDs of one come in the same
 * order as the RECVs of the other (what NCCL's matching needs); else
 * SC_ERR_PROGRAM with the first pair that differs in err. */
sc_status sc_run_check_pair_order(const sc_prog *pg, char *err, size_t errlen);

/* Ends the run's process group: under MPI, MPI_Finalize when code is 0,
 * else MPI_Abort(code) (which ends every rank); nothing without MPI. */
void sc_run_finish(int code);

#endif
