// Tiny configs of every architecture (a few thousand parameters, awkward sizes), as
// config.json files would hold them: for tests, demos and benchmarks that need a model of
// each family without downloading one. init_model builds any of them in milliseconds.
#pragma once

#include <nlohmann/json.hpp>

#include "models/config/config.h"

namespace zt::models {

// The config.json of a tiny model of `arch`: vocab 37, hidden 24, 4 heads over 2 K/V heads,
// 2 layers, with every optional piece of the family switched on (biases, q/k norms, ...).
nlohmann::ordered_json tiny_config_json(Architecture arch);

}  // namespace zt::models
