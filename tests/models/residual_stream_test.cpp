// models/residual_stream.h on the CPU: a PendingNorm's normed() and sum() are normed_stream's,
// bit for bit, computed once and recorded at their point; no prologue is offered where no
// kernel could run one (the CPU, a stream without an add, a recorded layer), so the product
// passed to through_prologue is never called there.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "models/residual_stream.h"
#include "tests/common/test_util.h"

namespace zt::models {
namespace {

Variable random(const Shape& shape, std::uint64_t seed, double std = 1.0) {
  return Variable(Tensor::normal(shape, seed, 0, 0.0, std, DType::kF32).to(DType::kBF16));
}

std::vector<double> values(const Variable& v) { return v.data().to(DType::kF32).to_vector(); }

struct Case {
  ModelConfig config;
  Variable residual = random({3, 16}, 1, 4.0), delta = random({3, 16}, 2), weight = random({16}, 3);
};

TEST(ResidualStream, APendingNormIsNormedStreamsKernel) {
  autograd::NoGradGuard inference;
  Case c;
  for (ops::RmsNormStyle style : {ops::RmsNormStyle::kQwen, ops::RmsNormStyle::kGlm})
    for (bool with_delta : {true, false}) {
      c.config.norm_style = style;
      const ResidualStream stream{c.residual, with_delta ? c.delta : Variable()};
      const NormedSum expected = normed_stream(c.config, stream, c.weight);
      const LayerRecording unrecorded;
      PendingNorm pending(c.config, stream, c.weight, unrecorded, "input_layernorm");
      int calls = 0;
      const std::optional<Tensor> taken = pending.through_prologue([&](const Tensor&, const ops::NormPrologue*) {
        ++calls;
        return std::optional<Tensor>();
      });
      EXPECT_FALSE(taken.has_value());
      EXPECT_EQ(calls, 0) << "no prologue is offered on the CPU";
      EXPECT_EQ(values(pending.sum()), values(expected.sum));
      EXPECT_EQ(values(pending.normed()), values(expected.normed));
      EXPECT_EQ(pending.normed().data().data_ptr(), pending.normed().data().data_ptr()) << "computed once";
    }
}

TEST(ResidualStream, APendingNormIsRecordedAtItsPoint) {
  autograd::NoGradGuard inference;
  Case c;
  ActivationRecorder recorder;
  const LayerRecording record{&recorder, 4};
  PendingNorm pending(c.config, {c.residual, c.delta}, c.weight, record, "post_attention_layernorm");
  EXPECT_FALSE(pending.through_prologue([](const Tensor&, const ops::NormPrologue*) {
    ADD_FAILURE() << "a prologue offered to a recorded layer";
    return std::optional<Tensor>();
  }));
  const std::vector<double> normed = values(pending.normed());
  EXPECT_EQ(recorder.get("model.layers.4.post_attention_layernorm").to_vector(), normed);
}

TEST(ResidualStream, SummedAddsTheDelta) {
  Case c;
  const ResidualStream with_delta{c.residual, c.delta}, alone{c.residual, Variable()};
  EXPECT_EQ(values(with_delta.summed()), values(autograd::residual_add(c.delta, c.residual)));
  EXPECT_EQ(alone.summed().data().data_ptr(), c.residual.data().data_ptr());
}

}  // namespace
}  // namespace zt::models
