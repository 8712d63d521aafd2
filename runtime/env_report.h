// What `zerotune env` reports: build, library versions read at run time, GPUs and peer
// access, and the launcher/NCCL environment — the facts a bug report needs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace zt {

nlohmann::json collect_environment_report();
std::string format_environment_report(const nlohmann::json& report);

}  // namespace zt
