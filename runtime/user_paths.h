// Checks of the paths a user gives a command, made before any work so that a mistyped or
// unusable path stops it at once, naming what the path is for, the path and what is wrong
// ("--output_dir runs/a: runs is a file, so the folder cannot be created"). They never let
// a std::filesystem exception's text ("filesystem error: ...") through.
#pragma once

#include <string>

namespace zt {

// `path` is a file this process can read. `what` names it: "data file", "--deepspeed".
void require_readable_file(const std::string& path, const std::string& what);

// `path` is an existing folder.
void require_existing_folder(const std::string& path, const std::string& what);

// `path` is a folder this process can write into, or can be created as one: not a file, and
// the nearest existing folder on its way is writable.
void require_writable_folder(const std::string& path, const std::string& what);

// `path` can be written as a file: not a folder, and its folder exists (or can be created)
// and is writable.
void require_writable_file(const std::string& path, const std::string& what);

}  // namespace zt
