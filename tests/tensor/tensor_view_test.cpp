#include <gtest/gtest.h>

#include "runtime/error.h"
#include "tensor/tensor.h"

namespace zt {
namespace {

using Values = std::vector<double>;

Tensor iota(const Shape& shape, DType dtype = DType::kF32) {
  return Tensor::arange(0, static_cast<double>(shape_numel(shape)), 1, dtype).view(shape);
}

TEST(TensorView, ContiguousStridesAndMetadata) {
  Tensor t = Tensor::empty({2, 3, 5}, DType::kBF16);
  EXPECT_EQ(t.strides(), (Shape{15, 5, 1}));
  EXPECT_EQ(t.numel(), 30);
  EXPECT_EQ(t.nbytes(), 60u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.size(-1), 5);
  EXPECT_THROW(t.size(3), Error);
  EXPECT_THROW(Tensor::empty({2, -1}, DType::kF32), Error);
}

TEST(TensorView, NarrowSliceSelectShareStorage) {
  Tensor t = iota({4, 6});
  Tensor rows = t.narrow(0, 1, 2);
  EXPECT_EQ(rows.to_vector(), (Values{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}));
  EXPECT_EQ(rows.storage(), t.storage());
  Tensor every_other = t.slice(1, 1, 6, 2);
  EXPECT_EQ(every_other.shape(), (Shape{4, 3}));
  EXPECT_FALSE(every_other.is_contiguous());
  EXPECT_EQ(every_other.select(0, 3).to_vector(), (Values{19, 21, 23}));
  EXPECT_EQ(t.select(1, -1).to_vector(), (Values{5, 11, 17, 23}));
  EXPECT_EQ(t.slice(0, -2, 100).shape(), (Shape{2, 6}));
  rows.fill_(-1);
  EXPECT_EQ(t.select(0, 1).to_vector(), (Values(6, -1)));
  EXPECT_THROW(t.narrow(0, 3, 2).numel(), Error);
  EXPECT_THROW(t.select(0, 4), Error);
}

TEST(TensorView, AdjacentRowsJoinOnlyTensorsStoredOneAfterAnother) {
  Tensor t = iota({6, 4});
  const Tensor q = t.narrow(0, 0, 3), k = t.narrow(0, 3, 2), v = t.narrow(0, 5, 1);
  std::optional<Tensor> joined = Tensor::adjacent_rows({q, k, v});
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(joined->shape(), (Shape{6, 4}));
  EXPECT_EQ(joined->storage(), t.storage());
  EXPECT_EQ(joined->to_vector(), t.to_vector());
  const Tensor flat = iota({10});  // a 2-row and a 3-row bias stored as one
  EXPECT_EQ(Tensor::adjacent_rows({flat.narrow(0, 2, 2), flat.narrow(0, 4, 3)})->to_vector(), (Values{2, 3, 4, 5, 6}));
  EXPECT_FALSE(Tensor::adjacent_rows({q, v}).has_value()) << "a gap";
  EXPECT_FALSE(Tensor::adjacent_rows({k, q}).has_value()) << "out of order";
  EXPECT_FALSE(Tensor::adjacent_rows({q, k.clone()}).has_value()) << "another storage";
  EXPECT_FALSE(Tensor::adjacent_rows({q, t.view({12, 2}).narrow(0, 6, 4)}).has_value()) << "other row shape";
  EXPECT_FALSE(Tensor::adjacent_rows({t.slice(1, 0, 2), t.slice(1, 2, 4)}).has_value()) << "not contiguous";
  EXPECT_FALSE(Tensor::adjacent_rows({}).has_value());
  EXPECT_FALSE(Tensor::adjacent_rows({q, Tensor()}).has_value());
}

TEST(TensorView, TransposePermuteAndContiguousCopy) {
  Tensor t = iota({2, 3});
  Tensor tt = t.transpose(0, 1);
  EXPECT_EQ(tt.shape(), (Shape{3, 2}));
  EXPECT_EQ(tt.strides(), (Shape{1, 3}));
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.to_vector(), (Values{0, 3, 1, 4, 2, 5}));
  Tensor packed = tt.contiguous();
  EXPECT_TRUE(packed.is_contiguous());
  EXPECT_NE(packed.storage(), t.storage());
  EXPECT_EQ(packed.to_vector(), tt.to_vector());
  Tensor p = iota({2, 3, 4}).permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.select(0, 1).select(0, 1).to_vector(), (Values{13, 17, 21}));
  EXPECT_THROW(iota({2, 3}).permute({0, 0}), Error);
}

TEST(TensorView, ViewNeedsCompatibleStridesReshapeCopiesWhenNot) {
  Tensor t = iota({2, 3, 4});
  EXPECT_EQ(t.view({6, 4}).strides(), (Shape{4, 1}));
  EXPECT_EQ(t.view({-1}).shape(), (Shape{24}));
  EXPECT_EQ(t.view({2, 1, 12}).storage(), t.storage());
  Tensor tt = t.transpose(1, 2);  // [2, 4, 3]
  EXPECT_THROW(tt.view({24}), Error);
  Tensor flat = tt.reshape({24});
  EXPECT_NE(flat.storage(), t.storage());
  EXPECT_EQ(flat.to_vector()[1], 4);
  // Splitting a dimension of a transposed view stays a view.
  Tensor split = tt.view({2, 2, 2, 3});
  EXPECT_EQ(split.storage(), t.storage());
  EXPECT_EQ(split.to_vector(), tt.contiguous().to_vector());
  // A narrowed row block can be merged with the rows below it only if contiguous.
  Tensor cols = t.narrow(2, 0, 2);  // [2, 3, 2], strides [12, 4, 1]
  EXPECT_THROW(cols.view({12}), Error);
  EXPECT_EQ(cols.view({6, 2}).strides(), (Shape{4, 1}));
  EXPECT_THROW(t.view({5, 5}), Error);
  EXPECT_THROW(t.view({-1, -1}), Error);
}

TEST(TensorView, ExpandSqueezeUnsqueeze) {
  Tensor v = iota({3, 1});
  Tensor e = v.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_EQ(e.select(0, 1).select(0, 2).to_vector(), (Values{2, 2, 2, 2}));
  EXPECT_THROW(v.expand({3, 2, 4}).numel(), Error);
  EXPECT_EQ(v.expand({-1, 5}).shape(), (Shape{3, 5}));
  EXPECT_EQ(v.squeeze(1).shape(), (Shape{3}));
  EXPECT_EQ(v.squeeze(0).shape(), (Shape{3, 1}));
  EXPECT_EQ(v.squeeze(1).unsqueeze(0).shape(), (Shape{1, 3}));
  EXPECT_EQ(v.unsqueeze(-1).shape(), (Shape{3, 1, 1}));
  Tensor scalar = Tensor::from_values({7}, {}, DType::kF32);
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.unsqueeze(0).shape(), (Shape{1}));
  EXPECT_EQ(scalar.item(), 7);
}

TEST(TensorView, ZeroSizedTensors) {
  Tensor empty = Tensor::zeros({3, 0, 2}, DType::kF32);
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.is_contiguous());
  EXPECT_EQ(empty.view({0, 5}).shape(), (Shape{0, 5}));
  EXPECT_EQ(empty.transpose(0, 2).contiguous().numel(), 0);
  EXPECT_NE(empty.str().find("size=[3, 0, 2]"), std::string::npos);
}

}  // namespace
}  // namespace zt
