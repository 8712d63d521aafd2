// --model_name_or_path as transformers reads it: a local folder is used as it is; a hub id
// (`Org/Name`) is found in the local hub cache at --revision (a branch, tag or commit hash;
// default main), and downloaded there first when the cache lacks files the command reads.
// What comes back is always a local folder, the one every loader takes.
#pragma once

#include <string>

#include "models/hub/hub_settings.h"
#include "models/hub/model_files.h"

namespace zt::models::hub {

// The local folder of `name_or_path`: the name itself when it is a path (models/hub/repo_id.h
// tells), else the snapshot folder of the hub cache, with the files `parts` needs. Errors (not
// found, no access, offline with files missing, no network, no downloader in this build) throw
// zt::Error saying what to do. Settings come from the environment (HF_ENDPOINT, HF_TOKEN,
// HF_HUB_OFFLINE, HF_HUB_CACHE, ...).
std::string resolve_model_path(const std::string& name_or_path, const std::string& revision = "main",
                               ModelParts parts = kWholeModel);
std::string resolve_model_path(const std::string& name_or_path, const std::string& revision, ModelParts parts,
                               const HubSettings& settings);

}  // namespace zt::models::hub
