// The conversions of one JSON value of a ds_config.json, as DeepSpeed makes them. Keys that
// DeepSpeed reads with dict.get or passes to a constructor take the value as written (a whole
// number may be written 5e8). Keys of its config models (DeepSpeedConfigModel: fp16, bf16,
// zero_optimization and its offload blocks) go through pydantic's lax mode, which also takes
// "true"/"off"/1 for a boolean and "500000000" or "5_000.0" for an integer, but never a
// fraction for an integer, "5e8" as an integer, nor (as DeepSpeed insists for its fp16
// counts) a boolean for a number. Each returns nullopt when the value cannot be converted.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace zt::train {

// A JSON number holding a whole value that fits in 64 bits (5e8 included).
std::optional<std::int64_t> whole_number(const nlohmann::json& value);

// pydantic's lax int: a whole number, or a string of an integer.
std::optional<std::int64_t> lax_int(const nlohmann::json& value);
// pydantic's lax float: a number, or a string of one ("5e8", "inf").
std::optional<double> lax_float(const nlohmann::json& value);
// pydantic's lax bool: true/false, 0/1, or a string such as "yes", "off", "t", "0".
std::optional<bool> lax_bool(const nlohmann::json& value);

}  // namespace zt::train
