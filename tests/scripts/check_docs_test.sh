#!/usr/bin/env bash
# scripts/check_docs.py on small trees written here: one with a problem of every kind gives
# exactly the expected lines and exit status 1; the same tree with its prose fixed gives 0.
#
#   tests/scripts/check_docs_test.sh CHECK_DOCS_SCRIPT
set -euo pipefail
check=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A tree whose prose agrees with it: a library folder documented by its README (every short
# form of a file name), a subfolder documented by its entry header, a server folder, tests,
# fuzz targets, docs with a folder map, and links of every kind that resolve.
write_tree() {
  local t=$1
  mkdir -p "$t"/lib/sub "$t"/srv "$t"/tests/lib "$t"/fuzz "$t"/docs "$t"/build/lib "$t"/.hidden
  touch "$t"/lib/{a.h,b.h,b.cpp,c.cuh,c.cu,d.py} "$t"/lib/sub/{sub.h,e.cpp} "$t"/srv/server.cpp
  echo 'const char* kUsage = "usage: zerotune run [--good_flag N]";' >"$t"/lib/a.cpp
  echo 'const char* kUsage = "--tested_only";' >"$t"/tests/lib/a_test.cpp  # tests/ spells no flag for the docs
  touch "$t"/tests/lib/a_test.cpp "$t"/tests/lib/c_gpu_test.cu "$t"/fuzz/b_fuzz.cpp
  touch "$t"/build/lib/generated.cpp "$t"/.hidden/x.cpp  # build and hidden folders are not code
  printf '// lib/sub/: helpers of lib/, described here rather than in a README.\n// e.cpp: the one helper.\n#pragma once\n' >"$t"/lib/sub/sub.h
  printf 'zt_add_fuzz_target(b_fuzz lib)\nzt_add_fuzz_target(c_fuzz lib)\n' >"$t"/fuzz/CMakeLists.txt
  cat >"$t"/README.md <<'EOF'
# tree

The suite builds 2 test programs and runs 2 libFuzzer targets (`fuzz: 2 targets`).

## Layout

`lib/`, `srv/`, `fuzz/` and `tests/`; `lib/a.h` starts it, see [the map](docs/ARCHITECTURE.md#map)
and docs/ARCHITECTURE.md; TensorBoard tags such as `train/loss` and `https://x.org/a/b.h` are no paths.
Flags: --good_flag, `zerotune run --good_flag 2`, `torchrun --no-python zerotune run --good_flag`,
`ctest --output-on-failure`, `--NAME`, and a span over two lines: `zerotune
run --good_flag`, which takes `--good_flag` with `--good_flag`.

```bash
zerotune run --good_flag 1   # and srun --cpu-bind is srun's
```
EOF
  cat >"$t"/docs/ARCHITECTURE.md <<'EOF'
# Map

## Folder map

```
lib/           the library
  sub/         helpers
srv/ fuzz/     the server, fuzz targets
tests/         tests
```
EOF
  cat >"$t"/lib/README.md <<'EOF'
# lib/

- `a.h/.cpp`, `b.{h,cpp}` and `c.cuh/.cu` — the library; d.py writes its tables.
- `sub/` — helpers (`../srv/server.cpp` uses them); the numbers are in `lib/*.cu`, see ARCHITECTURE.md.
EOF
  printf '# srv/\n\n`server.cpp` serves, in 0 folders.\n' >"$t"/srv/README.md
  printf '# fuzz/\n\nTwo targets: `b_fuzz.cpp` and one more.\n' >"$t"/fuzz/README.md
}

# Runs the check on $1; fails unless it prints the lines of $2 and exits with $3.
expect() {
  local out status=0
  out=$(python3 "$check" "$1" 2>&1) || status=$?
  if [ "$out" != "$2" ] || [ "$status" -ne "$3" ]; then
    printf 'expected (exit %s):\n%s\ngot (exit %s):\n%s\n' "$3" "$2" "$status" "$out" >&2
    return 1
  fi
}

write_tree "$work/good"
expect "$work/good" "check_docs: 4 folders of code and 5 documents agree with the tree" 0

# The same tree fallen behind: new files, a new folder and a new top-level folder nobody
# described, wrong counts, links to what is not there.
write_tree "$work/bad"
t=$work/bad
mkdir -p "$t"/tools "$t"/lib/new
touch "$t"/lib/f.cpp "$t"/lib/sub/g.cpp "$t"/lib/new/h.cpp "$t"/tests/lib/f_test.cpp "$t"/tools/tool.py
printf '# New\n\n`zerotune run --gone_flag` and --tested_only.\n' >"$t"/docs/NEW.md
printf '#srv /\n\n`server.cpp` serves, in 1 folders: see `srv/gone.h`, `../lib/nothing.h` and DEVICE.md.\n`ghost.h/.cpp` help; `*_x.cpp`, `_gpu_test.cpp`, `<name>.cpp` and `loader.py` are no files of the tree.\n' >"$t"/srv/README.md
printf '# fuzz/\n\nThree targets: `b_fuzz.cpp`, [the seeds](corpus/) and one more.\n' >"$t"/fuzz/README.md
expect "$t" "lib/new/: not named in lib/README.md; add a line for \`new/\` there saying what it holds
lib/f.cpp:1: not named in lib/README.md; add a line for \`f.cpp\` there saying what it holds and how it fits
lib/new/: a folder of code without a README.md; write lib/new/README.md saying what the folder is for and how each of its files fits
lib/sub/g.cpp:1: not named in lib/sub/sub.h; add a line for \`g.cpp\` there saying what it holds and how it fits
srv/README.md:1: does not open with a \`# srv/\` heading (clang-format run over it mangles a README so); restore its text (git log -p -- srv/README.md) and format only C++/CUDA files
tools/: a folder of code without a README.md; write tools/README.md saying what the folder is for and how each of its files fits
README.md:5: the Layout section does not name \`tools/\`; add it with what it holds
README.md:5: the Layout section does not name docs/NEW.md; add it to its list of docs
docs/ARCHITECTURE.md:3: the folder map does not name \`lib/new/\`; add it under its parent with what it holds
docs/ARCHITECTURE.md:3: the folder map does not name \`tools/\`; add it under its parent with what it holds
README.md:3: says 2 test programs but the tree has 3 test programs (tests/**/*_test.cpp, *_test.cu); write 3, or drop the number
docs/NEW.md:3: names the flag --gone_flag, which no code outside tests/ reads; name the flag as the code spells it; another program's flag goes after that program's name in one code span (\`srun --cpu-bind\`)
docs/NEW.md:3: names the flag --tested_only, which no code outside tests/ reads; name the flag as the code spells it; another program's flag goes after that program's name in one code span (\`srun --cpu-bind\`)
fuzz/README.md:3: says Three targets but the tree has 2 fuzz targets (fuzz/CMakeLists.txt); write 2, or drop the number
fuzz/README.md:3: link to corpus/ which does not exist; point it at the file meant
srv/README.md:3: says in 1 folders but the tree has 0 subfolders of srv/; write 0, or drop the number
srv/README.md:3: names srv/gone.h which the repository does not hold; name a path that exists (written from the repository root), or the thing without a path
srv/README.md:3: names ../lib/nothing.h which the repository does not hold; name a path that exists (written from the repository root), or the thing without a path
srv/README.md:3: names DEVICE.md which the repository does not hold; name a path that exists (written from the repository root), or the thing without a path
srv/README.md:4: names ghost.cpp, which no folder of the repository holds; name the file that exists
srv/README.md:4: names ghost.h, which no folder of the repository holds; name the file that exists
check_docs: 21 problem(s) in 6 folders of code and 6 documents" 1

expect "$work/missing" "check_docs: $work/missing is no folder; give the repository's root" 2
echo "check_docs.py: every kind of problem found, a tree that agrees passes"
