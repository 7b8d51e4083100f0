/* Chapter 05, part two: the fitted parameters of the tensor-core model (model.h), one set
 * per input type: each candidate's {efficiency, fixed cost a tile} in TC_CAND_* order, the
 * cost of a launch and the padding copy's share of the DRAM peak.
 * Written by records/tc_calibrate.py (run it again on a new sweep rather than editing the
 * numbers by hand) from the tensor-core rows of
 *     NVIDIA H100 80GB HBM3 in NVIDIA_H100_80GB_HBM3.csv
 * (matmul_tiled --bench --sweep-tc-all --csv FILE). */
#ifndef CH05_TENSOR_CORES_BEST_PARAMS_H
#define CH05_TENSOR_CORES_BEST_PARAMS_H

#include "05_matmul_tiled/tensor_cores/model.h"

static const TcParams TC_PARAMS_BF16 = {
    {
        {0.5184, 9.115},  /* wgmma: 7 shapes */
        {0.6838, 13.019}, /* wgmma_ws: 7 shapes */
        {0.5184, 9.115},  /* wgmma_ws_128x128: not measured: wgmma's */
        {0.7056, 13.101}, /* wgmma_persistent: 7 shapes */
        {0.7299, 14.476}, /* wgmma_cluster: 7 shapes */
        {0.4307, 4.806},  /* wgmma_splitk: 7 shapes */
        {0.3494, 13.169}, /* mma_pipeline: 7 shapes */
    },
    1.50,  /* launch_us */
    0.600, /* copy_share */
};

static const TcParams TC_PARAMS_TF32 = {
    {
        {0.6026, 9.070},  /* wgmma: 7 shapes */
        {0.7255, 11.695}, /* wgmma_ws: 7 shapes */
        {0.6026, 9.070},  /* wgmma_ws_128x128: not measured: wgmma's */
        {0.7713, 13.089}, /* wgmma_persistent: 7 shapes */
        {0.7971, 13.438}, /* wgmma_cluster: 7 shapes */
        {0.4266, 3.887},  /* wgmma_splitk: 7 shapes */
        {0.3691, 12.551}, /* mma_pipeline: 7 shapes */
    },
    2.00,  /* launch_us */
    0.600, /* copy_share */
};

#endif
