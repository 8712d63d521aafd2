// Whether the Hopper kernels (wgmma, TMA: built for sm_90a) can run on the current GPU.
#pragma once

namespace zt::cuda::hopper {

// True when the current GPU is compute capability 9.0 and this binary holds sm_90a code for
// it; a build for compute_90 PTX alone or for other GPUs answers false, and callers fall back
// to the Ampere kernels. Decided once per device by running a probe kernel.
bool hopper_kernels_available();

}  // namespace zt::cuda::hopper
