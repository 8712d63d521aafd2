// How a file's tensors and the parameters meant to receive them disagree, one line each
// ("missing: ...", "wrong shape: ...", "wrong dtype: ...", "unexpected: ..."), so a loader
// reports every problem of a checkpoint, an adapter or a prefix in one error.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "models/model.h"

namespace zt::models {

// `File` is a SafetensorsFile or a SafetensorsCheckpoint (contains, info, names).

// The file's tensor `name`, meant for a parameter of `shape`, appended to `problems` when it is
// missing, of another shape, or not floating point.
template <typename File>
void add_tensor_mismatch(std::vector<std::string>& problems, const File& file, const std::string& name,
                         const Shape& shape) {
  if (!file.contains(name))
    problems.push_back("missing: " + name + " " + shape_str(shape));
  else if (file.info(name).shape != shape)
    problems.push_back("wrong shape: " + name + " is " + shape_str(file.info(name).shape) + ", expected " +
                       shape_str(shape));
  else if (!is_floating(file.info(name).dtype))
    problems.push_back("wrong dtype: " + name + " is " + dtype_name(file.info(name).dtype) +
                       ", expected floating point");
}

// Every parameter of `expected` checked against the file, then the file's other tensors as
// unexpected, except the names `extra_allowed` accepts.
template <typename File>
std::vector<std::string> tensor_mismatches(const std::vector<NamedParameter>& expected, const File& file,
                                           const std::function<bool(const std::string&)>& extra_allowed = {}) {
  std::vector<std::string> problems;
  std::set<std::string> wanted;
  for (const NamedParameter& p : expected) {
    wanted.insert(p.name);
    add_tensor_mismatch(problems, file, p.name, p.variable.data().shape());
  }
  for (const std::string& name : file.names())
    if (!wanted.count(name) && !(extra_allowed && extra_allowed(name)))
      problems.push_back("unexpected: " + name + " " + shape_str(file.info(name).shape));
  return problems;
}

}  // namespace zt::models
