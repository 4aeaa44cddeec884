/*
 * test_gpu_choice.c — which GPU an MPI rank takes with --backend cuda
 * (runtime/run/run_impl.h), without a GPU: a rank that sees several GPUs
 * takes its local rank modulo them; a rank that sees one GPU (a scheduler's
 * CUDA_VISIBLE_DEVICES per rank) takes it, whatever its local rank; two
 * ranks are refused only when their GPUs' UUIDs are the same physical GPU
 * (issue 22, M4: before, every node with more ranks than visible GPUs was
 * refused). tests/cudastub/run.sh checks the same under mpirun.
 */
#include "harness.h"

#include <string.h>

#include "run/run_impl.h"

static void uuid(unsigned char *all, int rank, int gpu)
{
    memset(all + 16 * rank, 0, 16);
    if (gpu >= 0)
        snprintf((char *)all + 16 * rank, 16, "GPU-%d", gpu);
}

TEST(rank_gpu)
{
    CHECK(sc_run_rank_gpu(0, 8) == 0);
    CHECK(sc_run_rank_gpu(5, 8) == 5);
    CHECK(sc_run_rank_gpu(9, 8) == 1);
    CHECK(sc_run_rank_gpu(3, 1) == 0); /* each rank sees only its own GPU */
    CHECK(sc_run_rank_gpu(7, 1) == 0);
    CHECK(sc_run_rank_gpu(2, 0) == 0);
}

TEST(same_gpu)
{
    unsigned char all[16 * 4];
    int a = -1, b = -1;
    for (int r = 0; r < 4; r++) /* four ranks, each on its own GPU (all "GPU 0" locally) */
        uuid(all, r, r);
    CHECK(!sc_run_same_gpu(all, 4, &a, &b));
    uuid(all, 3, 1); /* rank 3 on rank 1's GPU */
    CHECK(sc_run_same_gpu(all, 4, &a, &b) && a == 1 && b == 3);
    uuid(all, 3, -1); /* unknown UUIDs (all zero) are never a clash */
    uuid(all, 2, -1);
    CHECK(!sc_run_same_gpu(all, 4, &a, &b));
}

int main(void)
{
    RUN(rank_gpu);
    RUN(same_gpu);
    return harness_done("gpu-choice");
}
