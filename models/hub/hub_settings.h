// Where the hub is, how to reach it and where its files are kept, read from the environment
// variables huggingface_hub and transformers read, so that zerotune shares their cache and
// their configuration: HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE, HF_HUB_CACHE, HF_HOME.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace zt::models::hub {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'; a mirror changes only this
  std::string token;                                // empty: requests carry no Authorization
  bool offline = false;                             // the cache only, no request at all
  std::filesystem::path cache;                      // holds models--Org--Name/ folders
  std::chrono::seconds metadata_timeout{10};        // a HEAD request's whole exchange
  std::chrono::seconds stall_timeout{10};           // a download that receives nothing this long fails
  bool progress_bars = true;                        // a bar on stderr when it is a terminal
};

// HF_ENDPOINT; HF_TOKEN (else HUGGING_FACE_HUB_TOKEN, else the token file `huggingface-cli
// login` writes: HF_TOKEN_PATH or HF_HOME/token); HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE;
// HF_HUB_CACHE (else HUGGINGFACE_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub,
// ~/.cache/huggingface/hub); HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT in seconds;
// HF_HUB_DISABLE_PROGRESS_BARS.
HubSettings hub_settings_from_environment();

// huggingface_hub's reading of a boolean variable: 1, ON, YES or TRUE in any case.
bool environment_flag(const char* name);

}  // namespace zt::models::hub
