/* The answers to chapter 02's exercises (README, "Exercises"): each a version with the
 * launcher signature of its family, registered in main.cu's add or transpose table with
 * role "exercise", so --check validates it and --bench times it like the chapter's own. */
#ifndef CH02_SOLUTIONS_CUH
#define CH02_SOLUTIONS_CUH

#include "ex1_add_2d_256x1.cuh"
#include "ex2_transpose_32x16.cuh"
#include "ex3_transpose_tile64_nopad.cuh"
#include "ex4_add_flat.cuh"
#include "ex5_transpose_float4_read.cuh"
#include "ex6_transpose_pipelined.cuh"

#endif
