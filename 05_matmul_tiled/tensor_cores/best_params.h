/* Chapter 05, part two: the fitted parameters of the tensor-core model (model.h), one set
 * per input type: each candidate's {efficiency, fixed cost a tile} in TC_CAND_* order, the
 * cost of a launch and the padding copy's share of the DRAM peak.
 * Written by records/tc_calibrate.py (run it again on a new sweep rather than editing the
 * numbers by hand) from the tensor-core rows of
 *     NVIDIA H100 80GB HBM3 in records/runs/tc_sweep_all_H100.csv
 *     and records/runs/tc_sweep_pipeline_H100.csv
 *     and records/runs/tc_sweep_all_rounds_H100.csv
 * (matmul_tiled --bench --sweep-tc-all --csv FILE). */
#ifndef CH05_TENSOR_CORES_BEST_PARAMS_H
#define CH05_TENSOR_CORES_BEST_PARAMS_H

#include "05_matmul_tiled/tensor_cores/model.h"

static const TcParams TC_PARAMS_BF16 = {
    {
        {0.5458, 7.950},  /* wgmma: 51 shapes */
        {0.7605, 10.754}, /* wgmma_ws: 51 shapes */
        {0.6157, 8.507},  /* wgmma_ws_128x128: 51 shapes */
        {0.7546, 10.780}, /* wgmma_persistent: 51 shapes */
        {0.7599, 11.751}, /* wgmma_cluster: 51 shapes */
        {0.3224, 4.082},  /* wgmma_splitk: 51 shapes */
        {0.2621, 9.943},  /* mma_pipeline: 93 shapes */
        {0.2621, 9.943},  /* mma_skinny: never used here: mma_pipeline's */
        {0.8080, 10.095}, /* wgmma_cload: 21 shapes */
    },
    1.00,  /* launch_us */
    0.861, /* copy_share */
};

static const TcParams TC_PARAMS_TF32 = {
    {
        {0.5613, 7.782},  /* wgmma: 51 shapes */
        {0.7923, 10.716}, /* wgmma_ws: 51 shapes */
        {0.6387, 8.364},  /* wgmma_ws_128x128: 51 shapes */
        {0.7860, 10.569}, /* wgmma_persistent: 51 shapes */
        {0.7966, 11.682}, /* wgmma_cluster: 51 shapes */
        {0.3248, 3.994},  /* wgmma_splitk: 51 shapes */
        {0.3036, 9.500},  /* mma_pipeline: 89 shapes */
        {0.3036, 9.500},  /* mma_skinny: not measured: mma_pipeline's */
        {0.8315, 10.102}, /* wgmma_cload: 21 shapes */
    },
    1.00,  /* launch_us */
    0.916, /* copy_share */
};

#endif
