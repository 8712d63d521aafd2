// ZeRO-3 parameter offload on the GPU, ranks as threads sharing it: the shards in page-locked
// host memory, prefetched modules copied on the partitioner's copy stream and gathered from
// there, give the weights and losses of stage 3 without offload bit for bit; with optimizer
// offload as well (the fp32 gradient partition then added on the host and the update run by
// the CPU Adam), the weights within zero3_test.cpp's bound.
#include "distributed/communicators/inprocess_communicator.h"
#include "tests/common/test_util.h"
#include "tests/train/zero/zero3_run_fixture.h"

namespace zt::train {
namespace {

TEST_F(Zero3, ParameterOffloadOnTheGpuEndsOnTheWeightsWithoutIt) {
  ZT_SKIP_WITHOUT_GPU();
  for (const std::string method : {"full", "lora"}) {
    for (int world : {1, 2}) {
      Spec run = accumulated_clipped(method, world);
      run.device = Device::cuda();
      run.steps = 3;
      run.persistence_threshold = 0;               // every module gathered, so that every one is prefetched
      run.extra = {"--full_determinism", "true"};  // bitwise equal runs: attention's dQ summed in a fixed order
      const std::string name = method + "_" + std::to_string(world);
      const Weights plain = expect_parameter_offload_changes_nothing(run, name);
      run.offload_ratio = 0.5;  // half the partition updated on the GPU beside the CPU Adam
      expect_same_weights(train(run, name + "_param_partial"), plain, run.label());
      run.offload_param = false;
      expect_same_weights(train(run, name + "_partial"), plain, run.label());
    }
  }
}

}  // namespace
}  // namespace zt::train
