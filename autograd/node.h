// A node of the backward graph: one recorded op. It maps the gradients of the op's outputs
// to the gradients of its inputs, holding what it saved from the forward until it has run.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace zt::autograd {

// Where an input's gradient goes: into the node that produced it, or into a leaf.
struct Edge {
  std::shared_ptr<Node> node;
  std::size_t output_index = 0;
  std::shared_ptr<VariableImpl> leaf;
  bool connected() const { return node != nullptr || leaf != nullptr; }
};

struct OutputMeta {
  Shape shape;
  DType dtype;
  Device device;
};

// grad_outputs has one defined tensor per output (zeros where an output got no gradient);
// needs_input_grad[k] says whether input k wants one. Returns one tensor per input
// (undefined where not needed).
using TensorList = std::vector<Tensor>;
using NeedsList = std::vector<bool>;
using BackwardFn = std::function<TensorList(const TensorList& grad_outputs, const NeedsList& needs_input_grad)>;

class Node {
 public:
  Node(std::string name, std::vector<Edge> inputs, std::vector<OutputMeta> outputs, BackwardFn backward);

  const std::string& name() const { return name_; }
  const std::vector<Edge>& inputs() const { return inputs_; }
  const std::vector<OutputMeta>& outputs() const { return outputs_; }
  // Runs the backward once and releases everything it saved.
  std::vector<Tensor> apply(std::vector<Tensor> grad_outputs);

 private:
  std::string name_;
  std::vector<Edge> inputs_;
  std::vector<OutputMeta> outputs_;
  BackwardFn backward_;
};

// Wraps forward results as Variables. When recording is on and an input requires grad, the
// outputs get a Node that runs `backward`; otherwise they are plain Variables.
std::vector<Variable> record(const std::string& name, std::vector<Tensor> outputs, const std::vector<Variable>& inputs,
                             BackwardFn backward);
Variable record_one(const std::string& name, Tensor output, const std::vector<Variable>& inputs, BackwardFn backward);

}  // namespace zt::autograd
