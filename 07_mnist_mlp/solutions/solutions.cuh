/* Chapter 07: the answers to the lesson's exercises, each a family of steps (a StepFamily, as in
 * part1_fused/04_fused_steps.cuh) built from the fused step's functions with the one piece the
 * exercise is about replaced. driver/trainer_table.cuh gives each a row, role "exercise", so
 * --check validates it against the CPU steps and --bench times it like every trainer.
 *
 *   ex1_gather_apart          warm-up: the next batch's gather as a launch of its own
 *   ex2_tf32_truncated        warm-up: TF32 operands truncated by the tensor cores, not rounded
 *   ex3_last_block            practice: the hidden backward's last block steps b1, W2, b2
 *   ex4_graph_params          practice: a step graph whose arguments are set before each replay
 *   ex5_out_backward          stretch: output layer and hidden backward in one launch, no
 *                             hand-off */
#ifndef CH07_SOLUTIONS_CUH
#define CH07_SOLUTIONS_CUH

#include "07_mnist_mlp/solutions/ex1_gather_apart.cuh"
#include "07_mnist_mlp/solutions/ex2_tf32_truncated.cuh"
#include "07_mnist_mlp/solutions/ex3_last_block.cuh"
#include "07_mnist_mlp/solutions/ex4_graph_params.cuh"
#include "07_mnist_mlp/solutions/ex5_out_backward.cuh"

#endif
