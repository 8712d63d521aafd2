#include "tensor/tensor.h"

#include <algorithm>
#include <numeric>

#include "runtime/error.h"
#include "runtime/memory/pinned_allocator.h"
#include "runtime/streams/current_stream.h"

namespace zt {

std::string shape_str(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::int64_t shape_numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t running = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    running *= std::max<std::int64_t>(shape[i], 1);
  }
  return strides;
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, std::int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype) {}

Tensor Tensor::make_view(Shape shape, Shape strides, std::int64_t offset) const {
  return Tensor(storage_, std::move(shape), std::move(strides), offset, dtype_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  return empty(shape, dtype, device, current_stream());
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, cudaStream_t stream) {
  for (std::int64_t extent : shape)
    ZT_REQUIRE(extent >= 0, "tensor shape " + shape_str(shape) + " has a negative dimension");
  std::size_t nbytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  return Tensor(Storage::allocate(nbytes, device, stream), shape, contiguous_strides(shape), 0, dtype);
}

Tensor Tensor::empty_pinned(const Shape& shape, DType dtype) {
  std::size_t nbytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  return Tensor(Storage::allocate_pinned(nbytes), shape, contiguous_strides(shape), 0, dtype);
}

Tensor Tensor::from_blob(void* data, const Shape& shape, DType dtype, Device device, std::shared_ptr<void> keep_alive) {
  std::size_t nbytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  return Tensor(Storage::wrap(data, nbytes, device, std::move(keep_alive)), shape, contiguous_strides(shape), 0, dtype);
}

std::int64_t Tensor::wrap_dim(std::int64_t d, std::int64_t ndim_plus) const {
  std::int64_t n = dim() + ndim_plus;
  std::int64_t wrapped = d < 0 ? d + n : d;
  ZT_REQUIRE(wrapped >= 0 && wrapped < std::max<std::int64_t>(n, 1),
             "dimension " + std::to_string(d) + " is out of range for a tensor of shape " + shape_str(shape_));
  return wrapped;
}

std::int64_t Tensor::size(std::int64_t d) const { return shape_[wrap_dim(d)]; }
std::int64_t Tensor::stride(std::int64_t d) const { return strides_[wrap_dim(d)]; }
Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

bool Tensor::is_pinned() const { return device().is_cpu() && storage_ && is_pinned_host_pointer(storage_->data()); }

void* Tensor::data_ptr() const {
  ZT_REQUIRE(defined(), "data_ptr() on an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
}

Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
  std::int64_t extent = shape_[wrap_dim(d)];
  if (start < 0) start += extent;
  ZT_REQUIRE(start >= 0 && length >= 0 && start + length <= extent,
             "narrow(" + std::to_string(d) + ", " + std::to_string(start) + ", " + std::to_string(length) +
                 ") is out of range for shape " + shape_str(shape_));
  return slice(d, start, start + length);
}

std::optional<Tensor> Tensor::adjacent_rows(const std::vector<Tensor>& parts) {
  if (parts.empty()) return std::nullopt;
  const Tensor& first = parts.front();
  std::int64_t rows = 0, next_offset = first.offset_;
  for (const Tensor& part : parts) {
    const bool follows =
        part.defined() && part.dim() >= 1 && part.numel() > 0 && part.is_contiguous() &&
        part.storage_ == first.storage_ && part.dtype_ == first.dtype_ && part.offset_ == next_offset &&
        Shape(part.shape_.begin() + 1, part.shape_.end()) == Shape(first.shape_.begin() + 1, first.shape_.end());
    if (!follows) return std::nullopt;
    rows += part.shape_[0];
    next_offset += part.numel();
  }
  Shape shape = first.shape_;
  shape[0] = rows;
  return first.make_view(shape, contiguous_strides(shape), first.offset_);
}

Tensor Tensor::slice(std::int64_t d, std::int64_t start, std::int64_t end, std::int64_t step) const {
  d = wrap_dim(d);
  ZT_REQUIRE(step > 0, "slice step must be positive, got " + std::to_string(step));
  std::int64_t extent = shape_[d];
  if (start < 0) start += extent;
  if (end < 0) end += extent;
  end = std::min(end, extent);
  ZT_REQUIRE(start >= 0 && start <= end, "slice [" + std::to_string(start) + ", " + std::to_string(end) +
                                             ") of dimension " + std::to_string(d) + " is out of range for shape " +
                                             shape_str(shape_));
  Shape shape = shape_, strides = strides_;
  shape[d] = (end - start + step - 1) / step;
  strides[d] = strides_[d] * step;
  return make_view(shape, strides, offset_ + start * strides_[d]);
}

Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
  d = wrap_dim(d);
  if (index < 0) index += shape_[d];
  ZT_REQUIRE(index >= 0 && index < shape_[d], "index " + std::to_string(index) + " is out of range for dimension " +
                                                  std::to_string(d) + " of shape " + shape_str(shape_));
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(shape, strides, offset_ + index * strides_[d]);
}

namespace {

// Resolves a single -1 and checks the element count.
Shape infer_shape(const Shape& requested, std::int64_t numel, const Shape& original) {
  Shape shape = requested;
  auto unknown = std::find(shape.begin(), shape.end(), -1);
  std::int64_t known = 1;
  for (auto it = shape.begin(); it != shape.end(); ++it)
    if (it != unknown) known *= *it;
  if (unknown != shape.end() && known > 0 && numel % known == 0) *unknown = numel / known;
  ZT_REQUIRE(shape_numel(shape) == numel && std::count(shape.begin(), shape.end(), -1) <= 1,
             "cannot view a tensor of shape " + shape_str(original) + " (" + std::to_string(numel) +
                 " elements) as shape " + shape_str(requested));
  return shape;
}

// Strides for viewing (old_shape, old_strides) as new_shape without a copy, if possible.
// Old dims group into chunks that are contiguous with each other; every chunk must be
// covered exactly by a run of new dims, which then step through it at the chunk's stride.
bool view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape, Shape& out) {
  out.assign(new_shape.size(), 1);
  if (old_shape.empty() || shape_numel(old_shape) == 0) {
    out = contiguous_strides(new_shape);
    return true;
  }
  std::int64_t view_d = static_cast<std::int64_t>(new_shape.size()) - 1;
  std::int64_t chunk_stride = old_strides.back();
  std::int64_t chunk_numel = 1, view_numel = 1;
  for (std::int64_t d = static_cast<std::int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    chunk_numel *= old_shape[d];
    bool chunk_ends = d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != chunk_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < chunk_numel || new_shape[view_d] == 1)) {
      out[view_d] = view_numel * chunk_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != chunk_numel) return false;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      chunk_numel = 1;
      view_numel = 1;
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  Shape shape = infer_shape(requested, numel(), shape_);
  Shape strides;
  ZT_REQUIRE(view_strides(shape_, strides_, shape, strides),
             "cannot view a tensor of shape " + shape_str(shape_) + " with strides " + shape_str(strides_) + " as " +
                 shape_str(shape) + " without a copy; use reshape() or contiguous() first");
  return make_view(shape, strides, offset_);
}

Tensor Tensor::reshape(const Shape& requested) const {
  Shape shape = infer_shape(requested, numel(), shape_);
  Shape strides;
  if (view_strides(shape_, strides_, shape, strides)) return make_view(shape, strides, offset_);
  return contiguous().view(shape);
}

Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  d0 = wrap_dim(d0);
  d1 = wrap_dim(d1);
  Shape shape = shape_, strides = strides_;
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  return make_view(shape, strides, offset_);
}

Tensor Tensor::permute(const std::vector<std::int64_t>& order) const {
  ZT_REQUIRE(
      static_cast<std::int64_t>(order.size()) == dim(),
      "permute order has " + std::to_string(order.size()) + " entries for a " + std::to_string(dim()) + "-d tensor");
  Shape shape(order.size()), strides(order.size());
  std::vector<bool> seen(order.size(), false);
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::int64_t d = wrap_dim(order[i]);
    ZT_REQUIRE(!seen[d], "permute order " + shape_str(order) + " repeats dimension " + std::to_string(d));
    seen[d] = true;
    shape[i] = shape_[d];
    strides[i] = strides_[d];
  }
  return make_view(shape, strides, offset_);
}

Tensor Tensor::expand(const Shape& target) const {
  ZT_REQUIRE(target.size() >= shape_.size(),
             "cannot expand shape " + shape_str(shape_) + " to fewer dimensions " + shape_str(target));
  std::size_t lead = target.size() - shape_.size();
  Shape shape(target.size()), strides(target.size(), 0);
  for (std::size_t i = 0; i < target.size(); ++i) {
    bool existing = i >= lead;
    std::int64_t current = existing ? shape_[i - lead] : 1;
    std::int64_t wanted = target[i] == -1 ? current : target[i];
    ZT_REQUIRE(current == wanted || current == 1, "cannot expand shape " + shape_str(shape_) + " to " +
                                                      shape_str(target) + ": dimension " + std::to_string(i) +
                                                      " has size " + std::to_string(current) + ", not 1");
    shape[i] = wanted;
    strides[i] = existing && current == wanted ? strides_[i - lead] : 0;
  }
  return make_view(shape, strides, offset_);
}

Tensor Tensor::squeeze(std::int64_t d) const {
  d = wrap_dim(d);
  if (shape_[d] != 1) return *this;
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(shape, strides, offset_);
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
  d = wrap_dim(d, 1);
  Shape shape = shape_, strides = strides_;
  std::int64_t stride = d < dim() ? strides_[d] * shape_[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return make_view(shape, strides, offset_);
}

}  // namespace zt
