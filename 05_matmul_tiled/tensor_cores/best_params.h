/* Chapter 05, part two: the fitted parameters of the tensor-core model (model.h), one set
 * per input type: each candidate's {efficiency, fixed cost a tile} in TC_CAND_* order, the
 * cost of a launch and the padding copy's share of the DRAM peak.
 * Written by records/tc_calibrate.py (run it again on a new sweep rather than editing the
 * numbers by hand) from the tensor-core rows of
 *     NVIDIA H100 80GB HBM3 in records/runs/tc_sweep_all_H100.csv
 *     and records/runs/tc_sweep_pipeline_H100.csv
 * (matmul_tiled --bench --sweep-tc-all --csv FILE). */
#ifndef CH05_TENSOR_CORES_BEST_PARAMS_H
#define CH05_TENSOR_CORES_BEST_PARAMS_H

#include "05_matmul_tiled/tensor_cores/model.h"

static const TcParams TC_PARAMS_BF16 = {
    {
        {0.5461, 8.216},  /* wgmma: 51 shapes */
        {0.7580, 11.292}, /* wgmma_ws: 51 shapes */
        {0.6218, 8.822},  /* wgmma_ws_128x128: 51 shapes */
        {0.7532, 11.236}, /* wgmma_persistent: 51 shapes */
        {0.7590, 12.328}, /* wgmma_cluster: 51 shapes */
        {0.3302, 4.401},  /* wgmma_splitk: 51 shapes */
        {0.2582, 10.278}, /* mma_pipeline: 93 shapes */
        {0.2582, 10.278}, /* mma_skinny: never used here: mma_pipeline's */
    },
    1.00,  /* launch_us */
    0.862, /* copy_share */
};

static const TcParams TC_PARAMS_TF32 = {
    {
        {0.5564, 8.291},  /* wgmma: 51 shapes */
        {0.7845, 11.037}, /* wgmma_ws: 51 shapes */
        {0.6363, 8.674},  /* wgmma_ws_128x128: 51 shapes */
        {0.7775, 10.974}, /* wgmma_persistent: 51 shapes */
        {0.7886, 12.023}, /* wgmma_cluster: 51 shapes */
        {0.3262, 4.140},  /* wgmma_splitk: 51 shapes */
        {0.3031, 9.962},  /* mma_pipeline: 89 shapes */
        {0.3031, 9.962},  /* mma_skinny: not measured: mma_pipeline's */
    },
    1.00,  /* launch_us */
    0.922, /* copy_share */
};

#endif
