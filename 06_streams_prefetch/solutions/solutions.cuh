/* Chapter 06: the answers to the lesson's exercises, each a pipeline with the chapter's
 * signature (PipelineFn). pipelines.cuh adds their rows, role "exercise", to its table, so
 * --check validates them and --bench times them like every other pipeline.
 *
 *   ex1_depth_k3            warm-up: depth first over three streams
 *   ex2_depth_k8_pageable   warm-up: depth_k8 from pageable memory
 *   ex3_stage_streams       practice: one stream per stage, for a kernel of any length
 *   ex4_registered          practice: buffers pinned with cudaHostRegister
 *   ex5_graph_k8            stretch: depth_k8's schedule captured in a CUDA graph
 *   ex6_ordered_k4          stretch: four streams, copies in chunk order by events */
#ifndef CH06_SOLUTIONS_CUH
#define CH06_SOLUTIONS_CUH

#include "ex1_depth_k3.cuh"
#include "ex2_depth_k8_pageable.cuh"
#include "ex3_stage_streams.cuh"
#include "ex4_registered.cuh"
#include "ex5_graph_k8.cuh"
#include "ex6_ordered_k4.cuh"

#endif
