#!/usr/bin/env python3
"""Checks that the prose keeps up with the tree; run by ctest as `scripts.check_docs`.

    scripts/check_docs.py [ROOT]      (ROOT: the repository, default this script's parent's parent)

What it checks, each problem printed as `file:line: what is wrong; what to do`:

- Every folder of code (a folder holding *.h, *.cpp, *.cu, *.cuh or *.py files, itself or below
  it; not tests/, whose folders mirror the source tree as tests/README.md says, nor examples/)
  has a README.md, or else an entry header named after the folder (`foo/foo.h`) whose opening
  comment describes it.
- That README opens with a `# ` heading (clang-format run over a README mangles it), and it
  (or the entry header) names every source file of its folder, written out
  (`trainer.cpp`) or in the short forms the READMEs use (`trainer.h/.cpp`, `trainer.{h,cpp}`),
  and every subfolder that holds code (`zero/`).
- README.md's Layout section names every top-level folder of code (`serve/`) and every
  docs/*.md.
- docs/ARCHITECTURE.md's folder map names every folder of code (tests/ at its top only).
- Counts of things in the tree written in the prose are right: `N test programs` (the
  *_test.cpp/.cu files under tests/), `N libFuzzer targets` and, in fuzz's prose, `N targets`
  (the zt_add_fuzz_target calls of fuzz/CMakeLists.txt), `in N folders` in a folder's README
  (its subfolders).
- Every link of README.md, docs/*.md and the folders' READMEs resolves: markdown links to
  relative paths, paths that start at a top-level folder (`train/zero/zero_engine.h`,
  `docs/ZERO.md`, `bench/*_bench.cu`, from the root or else from the README's folder) where
  they end in a file name or `/`, `../` paths, and bare document names (`DEVICE.md`), found
  beside the file, in docs/ or at the root; C++ and CUDA file names written without a folder
  (`sample_encoding.h`) are those of files somewhere in the tree.
- Every flag the prose gives zerotune (`--learning_rate`, in prose or in a command of
  zerotune's) is spelt by the code outside tests/ (`--name`, or a name train/args/ reads);
  other programs' flags (`torchrun --no-python`, `ctest -L cpu`) are left alone.

Exits 0 when there is no problem, 1 when there is one, 2 on bad usage.
"""
import glob
import os
import re
import sys

SOURCE_EXTENSIONS = (".h", ".cpp", ".cu", ".cuh", ".py")
CPP_EXTENSIONS = (".h", ".cpp", ".cu", ".cuh")  # names of other projects' files are Python's
NOT_CODE = {"tests", "examples", "docs", "cmake"}  # top-level folders outside the per-file rule
NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
NUMBER = r"(\d+|" + "|".join(NUMBER_WORDS) + r")"


class Problems:
    """Problems found, in the order found, each with its place and what to do."""

    def __init__(self, root):
        self.root = root
        self.items = []

    def add(self, path, line, what, todo):
        place = os.path.relpath(path, self.root) + ("/" if path.endswith(os.sep) else "")
        place += ":" + str(line) if line else ""
        self.items.append(place + ": " + what + "; " + todo)


# ---------------------------------------------------------------------------------------------
# The tree


def skipped_dir(root, parent, name):
    """Hidden folders, caches and build folders at the top are not part of the tree's code."""
    if name.startswith(".") or name == "__pycache__":
        return True
    return parent == root and name.startswith("build")


def walk(root, top):
    """(folder, its subfolder names, its file names) for `top` and every folder below it."""
    for folder, dirs, files in os.walk(os.path.join(root, top)):
        dirs[:] = sorted(d for d in dirs if not skipped_dir(root, folder, d))
        yield folder, dirs, sorted(files)


def is_source(name):
    return name.endswith(SOURCE_EXTENSIONS)


def top_level_entries(root):
    return sorted(e for e in os.listdir(root) if not skipped_dir(root, root, e))


def code_folders(root):
    """Top-level folders that hold source files (at any depth), in name order."""
    tops = [os.path.join(root, e) for e in top_level_entries(root)]
    return [os.path.basename(t) for t in tops if os.path.isdir(t) and has_code(root, t)]


def has_code(root, folder):
    """Whether a folder (a path under root) holds source files, itself or below."""
    return any(any(is_source(f) for f in files) for _, _, files in walk(root, os.path.relpath(folder, root)))


def code_subfolders(root, folder):
    """Names of the folder's subfolders that hold code."""
    return [
        d
        for d in sorted(os.listdir(folder))
        if os.path.isdir(os.path.join(folder, d))
        and not skipped_dir(root, folder, d)
        and has_code(root, os.path.join(folder, d))
    ]


def documented_folders(root):
    """Every folder that must describe its files: code folders and all below them (not tests/,
    examples/, docs/, cmake/), each with the source files it holds itself."""
    folders = []
    for top in code_folders(root):
        if top in NOT_CODE:
            continue
        for folder, _, files in walk(root, top):
            if has_code(root, folder):
                folders.append((folder, [f for f in files if is_source(f)]))
    return folders


# ---------------------------------------------------------------------------------------------
# Names written in prose


def named_files(text):
    """File names a text names: `a.h`, `dir/a.h`, `a.h/.cpp`, `a.h/.cpp/.cu`, `a.{h,cpp}`."""
    names = set()
    for stem, exts in re.findall(r"([\w.-]+)\.\{([\w,]+)\}", text):
        names.update(stem + "." + e for e in exts.split(","))
    for token in re.findall(r"[\w./-]+", text):
        parts = token.split("/")
        for i, part in enumerate(parts):
            if re.fullmatch(r"[\w-][\w.-]*\.\w+", part):
                names.add(part)
                stem = part.rsplit(".", 1)[0]
                for alternative in parts[i + 1 :]:
                    if not re.fullmatch(r"\.\w+", alternative):
                        break
                    names.add(stem + alternative)
    return names


def entry_header_comment(path):
    """The opening comment block of a header (// or /* */ lines before the first code line)."""
    lines = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith(("//", "/*", "*")) or (lines and stripped == ""):
                lines.append(line)
            elif stripped.startswith("#pragma once") and not lines:
                continue
            else:
                break
    return "".join(lines)


def folder_doc(folder):
    """(path, text) of the folder's README.md, or of its entry header, or None."""
    readme = os.path.join(folder, "README.md")
    if os.path.isfile(readme):
        with open(readme, encoding="utf-8") as f:
            return readme, f.read()
    for ext in (".h", ".cuh"):
        header = os.path.join(folder, os.path.basename(folder) + ext)
        if os.path.isfile(header):
            comment = entry_header_comment(header)
            if comment.strip():
                return header, comment
    return None


def check_folder_docs(root, problems):
    for folder, sources in documented_folders(root):
        doc = folder_doc(folder)
        rel = os.path.relpath(folder, root) + "/"
        if doc is None:
            problems.add(
                folder + os.sep,
                None,
                "a folder of code without a README.md",
                "write " + rel + "README.md saying what the folder is for and how each of its files fits",
            )
            continue
        path, text = doc
        if path.endswith("README.md") and not text.startswith("# "):
            problems.add(
                path,
                1,
                "does not open with a `# " + rel + "` heading (clang-format run over it mangles a README so)",
                "restore its text (git log -p -- " + os.path.relpath(path, root) + ") and format only C++/CUDA files",
            )
        for sub in code_subfolders(root, folder):
            if not re.search(r"(?<![\w-])" + re.escape(sub) + "/", text):
                problems.add(
                    os.path.join(folder, sub) + os.sep,
                    None,
                    "not named in " + os.path.relpath(path, root),
                    "add a line for `" + sub + "/` there saying what it holds",
                )
        names = named_files(text)
        for source in sources:
            if source not in names and os.path.join(folder, source) != path:
                problems.add(
                    os.path.join(folder, source),
                    1,
                    "not named in " + os.path.relpath(path, root),
                    "add a line for `" + source + "` there saying what it holds and how it fits",
                )


# ---------------------------------------------------------------------------------------------
# README.md's layout and ARCHITECTURE.md's folder map


def section(lines, title):
    """(the heading's line number, the lines below it) of the `## title` section."""
    start = None
    for i, line in enumerate(lines):
        if start is None and re.match(r"##\s+" + re.escape(title) + r"\s*$", line):
            start = i + 1
        elif start is not None and line.startswith("## "):
            return start, lines[start:i]
    return (start, lines[start:]) if start is not None else (None, [])


def required_section(root, name, title, problems, what):
    """The `## title` section of the file `name` below root, as (its path, first line, lines); None,
    with the problem recorded, when the file or the section is missing. `what`: what it names."""
    path = os.path.join(root, name)
    if not os.path.isfile(path):
        problems.add(path, None, "no " + name, "write it, with a `## " + title + "` section naming " + what)
        return None
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    first, body = section(lines, title)
    if first is None:
        problems.add(path, None, "no `## " + title + "` section", "add one naming " + what)
        return None
    return path, first, body


def check_layout(root, problems):
    found = required_section(root, "README.md", "Layout", problems, "every top-level folder of code")
    if found is None:
        return
    readme, first, body = found
    text = "\n".join(body)
    named = set(re.findall(r"`([\w.-]+)/`", text))
    for top in code_folders(root):
        if top not in named:
            problems.add(readme, first, "the Layout section does not name `" + top + "/`", "add it with what it holds")
    for doc in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        if "docs/" + os.path.basename(doc) not in text:
            problems.add(
                readme, first, "the Layout section does not name docs/" + os.path.basename(doc), "add it to its list of docs"
            )


def folder_map_names(body):
    """Folder paths a folder map names: unindented lines give top-level folders (`bench/ fuzz/`),
    indented ones folders below the last top-level folder (`  attention/flash/`, `  norm/ rope/`)."""
    names, parent = set(), None
    for line in body:
        match = re.match(r"( *)((?:[\w.-]+(?:/[\w.-]+)*/ ?)+)", line)
        if not match:
            continue
        indent, folders = len(match.group(1)), match.group(2).split()
        if indent == 0:
            names.update(f.rstrip("/") for f in folders)
            parent = folders[-1].rstrip("/") if len(folders) == 1 else None
        elif parent:
            names.update(parent + "/" + f.rstrip("/") for f in folders)
    return names


def check_architecture_map(root, problems):
    found = required_section(root, "docs/ARCHITECTURE.md", "Folder map", problems, "every folder of code")
    if found is None:
        return
    doc, first, body = found
    named = folder_map_names(body)
    wanted = [os.path.relpath(folder, root) for folder, _ in documented_folders(root)]
    wanted += [top for top in code_folders(root) if top in NOT_CODE]
    for folder in wanted:
        if folder.replace(os.sep, "/") not in named:
            problems.add(
                doc, first, "the folder map does not name `" + folder + "/`", "add it under its parent with what it holds"
            )


# ---------------------------------------------------------------------------------------------
# Counts


def test_programs(root):
    return sum(
        1 for _, _, files in walk(root, "tests") for f in files if f.endswith(("_test.cpp", "_test.cu"))
    )


def fuzz_targets(root):
    path = os.path.join(root, "fuzz", "CMakeLists.txt")
    if not os.path.isfile(path):
        return 0
    with open(path, encoding="utf-8") as f:
        return len(re.findall(r"^\s*zt_add_fuzz_target\(", f.read(), re.M))


def subfolders(folder):
    return sum(1 for e in os.listdir(folder) if os.path.isdir(os.path.join(folder, e)) and not e.startswith("."))


def count_rules(root, path):
    """(pattern with one NUMBER group, what it counts, the true count) for a document."""
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    rules = [
        (NUMBER + r" test programs\b", "test programs (tests/**/*_test.cpp, *_test.cu)", lambda: test_programs(root)),
        (NUMBER + r" (?:libFuzzer|fuzz) targets\b", "fuzz targets (fuzz/CMakeLists.txt)", lambda: fuzz_targets(root)),
    ]
    if rel == "fuzz/README.md":
        rules.append((NUMBER + r" targets\b", "fuzz targets (fuzz/CMakeLists.txt)", lambda: fuzz_targets(root)))
    else:
        rules.append((r"fuzz: " + NUMBER + r" targets\b", "fuzz targets (fuzz/CMakeLists.txt)", lambda: fuzz_targets(root)))
    if rel.endswith("/README.md"):
        folder = os.path.dirname(path)
        rules.append((r"\bin " + NUMBER + r" folders\b", "subfolders of " + rel[: -len("README.md")], lambda: subfolders(folder)))
    return rules


def as_number(word):
    return int(word) if word.isdigit() else NUMBER_WORDS[word.lower()]


def check_counts(root, path, lines, problems):
    for pattern, what, count in count_rules(root, path):
        for number, line in enumerate(lines, 1):
            for match in re.finditer(pattern, line, re.I):
                written, actual = as_number(match.group(1)), count()
                if written != actual:
                    problems.add(
                        path,
                        number,
                        "says " + match.group(0) + " but the tree has " + str(actual) + " " + what,
                        "write " + str(actual) + ", or drop the number",
                    )


# ---------------------------------------------------------------------------------------------
# Links and paths


def code_spans(line):
    return re.findall(r"`([^`]+)`", line)


def markdown_links(line):
    return re.findall(r"\]\(([^)\s]+)\)", line)


def clean_piece(piece):
    """A path as written in prose, without the punctuation and line number around it."""
    piece = piece.strip("(\"'[]")
    piece = re.sub(r"[.,;:)]+$", "", piece) if not piece.endswith("/") else piece
    return re.sub(r":\d+(-\d+)?$", "", piece).split("#")[0]


def exists(base, path):
    full = os.path.normpath(os.path.join(base, path))
    if any(c in path for c in "*?["):
        return bool(glob.glob(full))
    return os.path.exists(full)


def path_candidates(line, tops):
    """Repository paths a prose line names: pieces that start at a top-level entry or with ../
    and end in a file name or `/`, plus bare document names (NAME.md). Placeholders are left."""
    pieces = []
    for span in code_spans(line):
        pieces += span.split()
    pieces += re.findall(r"(?<![\w/`.-])((?:\.\./)*[\w.-]+/[\w./*-]+)(?![\w./*<{$-])", re.sub(r"`[^`]*`", "", line))
    candidates = []
    for piece in map(clean_piece, pieces):
        if not piece or any(c in piece for c in "<>{}$~=\\") or "..." in piece or "://" in piece:
            continue
        first = piece.split("/", 1)[0]
        relative = piece.startswith("../")
        if not relative and (first not in tops or "/" not in piece or first.startswith("build")):
            continue
        last = piece.rstrip("/").rsplit("/", 1)[-1]
        if piece.endswith("/") or "." in last or "*" in last:
            candidates.append(piece)
    candidates += re.findall(r"(?<![\w/.-])([A-Z][A-Z0-9_]*\.md)\b", line)
    return candidates


def resolves(root, doc_dir, path):
    if path.startswith("../") or path.startswith("./"):
        return exists(doc_dir, path)
    if re.fullmatch(r"[A-Z][A-Z0-9_]*\.md", path):
        return any(exists(base, path) for base in (doc_dir, os.path.join(root, "docs"), root))
    return exists(root, path) or exists(doc_dir, path)


def tree_file_names(root):
    """The name of every file in the tree, in any folder."""
    names = set()
    for top in top_level_entries(root):
        if os.path.isdir(os.path.join(root, top)):
            for _, _, files in walk(root, top):
                names.update(files)
        else:
            names.add(top)
    return names


def source_names(line):
    """C++ and CUDA file names a line's code spans give without a folder (`trainer.h/.cpp`), patterns
    (`*_test.cpp`, `<name>_fuzz.cpp`) and abbreviations (`_gpu_test.cpp`) aside."""
    names = set()
    for span in code_spans(line):
        for piece in span.split():
            if "/" in re.sub(r"/\.\w+", "", piece) or any(c in piece for c in "*<>{}$"):
                continue
            names.update(n for n in named_files(piece) if n.endswith(CPP_EXTENSIONS) and not n.startswith(("_", ".")))
    return names


def check_links(root, path, lines, problems, file_names):
    doc_dir, tops = os.path.dirname(path), set(top_level_entries(root))
    for number, line in enumerate(lines, 1):
        for name in sorted(source_names(line) - file_names):
            problems.add(
                path, number, "names " + name + ", which no folder of the repository holds", "name the file that exists"
            )
        for target in markdown_links(line):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not exists(doc_dir, target.split("#")[0]):
                problems.add(path, number, "link to " + target + " which does not exist", "point it at the file meant")
        for candidate in path_candidates(line, tops):
            if not resolves(root, doc_dir, candidate):
                problems.add(
                    path,
                    number,
                    "names " + candidate + " which the repository does not hold",
                    "name a path that exists (written from the repository root), or the thing without a path",
                )


def known_flags(root):
    """Every `--flag` the code outside tests/ spells, and the names train/args/ reads flags by."""
    flags = set()
    for top in code_folders(root):
        if top in NOT_CODE:
            continue
        for folder, _, files in walk(root, top):
            for name in files:
                if name.endswith(SOURCE_EXTENSIONS + (".sh",)):
                    with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                        text = f.read()
                    flags.update(re.findall(r"--([A-Za-z][\w-]*)", text))
                    if os.path.relpath(folder, root).replace(os.sep, "/") == "train/args":
                        flags.update(re.findall(r'"([a-z][a-z0-9_]*)"', text))
    return flags


def zerotune_flags(line, in_code_block):
    """Flags a line gives to zerotune: in its prose, and in commands (code spans, or the whole
    line in a code block, its shell comment aside) led by zerotune or from where zerotune
    appears in them (`torchrun --no-python zerotune train --bf16` gives only --bf16);
    placeholders in capitals left out."""
    flags = []
    spans = [re.sub(r"(^|\s)#.*", "", line)] if in_code_block else code_spans(line)
    for command in (c for span in spans for c in re.split(r"&&|\|\||[|;]", span)):
        owner = None
        for i, word in enumerate(command.split()):
            program = os.path.basename(word)
            if i == 0 and not word.startswith("-"):
                owner = program
            if program == "zerotune":
                owner = program
            if owner in (None, "zerotune"):
                flags += re.findall(r"^--([A-Za-z][\w-]*)", word)
    if not in_code_block:
        flags += re.findall(r"(?<![\w-])--([A-Za-z][\w-]*)", re.sub(r"`[^`]*`", "", line))
    return [f for f in flags if not f.isupper()]


def check_flags(path, lines, problems, flags):
    in_fence = False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        for flag in zerotune_flags(line, in_fence or line.startswith("    ")):
            if flag not in flags:
                problems.add(
                    path,
                    number,
                    "names the flag --" + flag + ", which no code outside tests/ reads",
                    "name the flag as the code spells it; another program's flag goes after that program's name"
                    " in one code span (`srun --cpu-bind`)",
                )


def prose_files(root):
    """README.md, docs/*.md and the README.md of every folder (build folders and tests' data aside)."""
    files = [os.path.join(root, "README.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for top in top_level_entries(root):
        if not os.path.isdir(os.path.join(root, top)):
            continue
        for folder, _, names in walk(root, top):
            if "README.md" in names and not os.path.relpath(folder, root).startswith(os.path.join("tests", "data")):
                files.append(os.path.join(folder, "README.md"))
    return [f for f in files if os.path.isfile(f)]


def closed_spans(lines):
    """The lines with every code span closed on its own line: a span that goes on to the next
    line (`zerotune` at a line's end, `export --merge_lora` at the next one's start) is cut in
    two, so that each line's spans and prose read as written. Code blocks stay as they are."""
    closed, open_span, in_fence = [], False, False
    for line in lines:
        if line.lstrip().startswith("```"):
            in_fence, open_span = not in_fence, False
        if in_fence or line.lstrip().startswith("```"):
            closed.append(line)
            continue
        text = ("`" if open_span else "") + line
        if text.count("`") % 2:
            text, open_span = text + "`", True
        else:
            open_span = False
        closed.append(text)
    return closed


def check_prose(root, problems):
    checked, file_names, flags = 0, tree_file_names(root), known_flags(root)
    for path in prose_files(root):
        with open(path, encoding="utf-8") as f:
            lines = closed_spans(f.read().splitlines())
        check_counts(root, path, lines, problems)
        check_links(root, path, lines, problems, file_names)
        check_flags(path, lines, problems, flags)
        checked += 1
    return checked


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(__file__), ".."))
    if not os.path.isdir(root):
        print("check_docs: " + root + " is no folder; give the repository's root", file=sys.stderr)
        return 2
    problems = Problems(root)
    check_folder_docs(root, problems)
    check_layout(root, problems)
    check_architecture_map(root, problems)
    documents = check_prose(root, problems)
    for item in problems.items:
        print(item)
    folders = len(documented_folders(root))
    if problems.items:
        print("check_docs: %d problem(s) in %d folders of code and %d documents" % (len(problems.items), folders, documents))
        return 1
    print("check_docs: %d folders of code and %d documents agree with the tree" % (folders, documents))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
