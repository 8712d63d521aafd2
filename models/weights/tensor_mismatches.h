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

// `File` is a SafetensorsFile or a SafetensorsCheckpoint (contains, info, names). Names of
// the file that `extra_allowed` accepts are not reported as unexpected.
template <typename File>
std::vector<std::string> tensor_mismatches(const std::vector<NamedParameter>& expected, const File& file,
                                           const std::function<bool(const std::string&)>& extra_allowed = {}) {
  std::vector<std::string> problems;
  std::set<std::string> wanted;
  for (const NamedParameter& p : expected) {
    wanted.insert(p.name);
    const Shape& shape = p.variable.data().shape();
    if (!file.contains(p.name))
      problems.push_back("missing: " + p.name + " " + shape_str(shape));
    else if (file.info(p.name).shape != shape)
      problems.push_back("wrong shape: " + p.name + " is " + shape_str(file.info(p.name).shape) + ", expected " +
                         shape_str(shape));
    else if (!is_floating(file.info(p.name).dtype))
      problems.push_back("wrong dtype: " + p.name + " is " + dtype_name(file.info(p.name).dtype) +
                         ", expected floating point");
  }
  for (const std::string& name : file.names())
    if (!wanted.count(name) && !(extra_allowed && extra_allowed(name)))
      problems.push_back("unexpected: " + name + " " + shape_str(file.info(name).shape));
  return problems;
}

}  // namespace zt::models
