// Whether the current device runs this build's kernels from code built for sm_90 or newer: what
// decides whether a launch may use Hopper's thread-block clusters (the few-row GEMM's split K)
// and programmatic launches (programmatic_launch.cuh). The GPU alone does not say: a build of
// compute_80 PTX runs on an H100 from code without the cluster reduction or the waits.
#pragma once

namespace zt::cuda {

// Read from a kernel's loaded PTX version, launching nothing (a decode graph's capture may be
// the first to ask), once per device. Every kernel is built for the same architectures, so
// one kernel's answer serves them all.
bool runs_sm90_code();

}  // namespace zt::cuda
