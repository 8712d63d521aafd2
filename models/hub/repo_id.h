// Telling a hub id from a folder, and the names the hub's URLs and cache give a repo.
#pragma once

#include <string>

namespace zt::models::hub {

// True when --model_name_or_path names a repo on the hub rather than a local folder, as
// transformers decides: anything that exists on disk, or starts like a path (/ . ~), is a path;
// other text of the hub's id form, `name` or `org/name` (letters, digits, - _ . ; no -- or
// ..; at most 96 characters), is an id, unless `org` is a local folder (then the path exists
// in part and its last part is mistyped: the error should say so, not try the network).
bool is_hub_model_id(const std::string& name_or_path);

// "models--Org--Name": the repo's folder in the cache.
std::string repo_folder_name(const std::string& repo_id);

// A full commit hash: 40 lower-case hexadecimal digits.
bool is_commit_hash(const std::string& text);

// `text` percent-encoded for a URL path, keeping '/' when `keep_slash` (file names in
// folders) and encoding it otherwise (a revision such as refs/pr/1 is one path segment).
std::string url_escaped(const std::string& text, bool keep_slash);

}  // namespace zt::models::hub
