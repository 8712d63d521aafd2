#!/usr/bin/env python3
"""zerotune and huggingface_hub / transformers read each other's hub cache.

    python3 scripts/check_hub_cache.py build/bin/zerotune /models/Qwen2.5-0.5B-Instruct
    python3 scripts/check_hub_cache.py build/bin/zerotune /models/chatglm3-6b --repo-id THUDM/chatglm3-6b

Needs huggingface_hub, and transformers for its own two checks (skipped, and said so, without
it); no internet: a hub of this script's own serves MODEL_DIR
on 127.0.0.1 (python's http.server) in the hub's URL layout, as org/name (--repo-id): HEAD and
GET on {endpoint}/{repo}/resolve/{revision}/{file} with X-Repo-Commit, ETag (the git blob sha1),
X-Linked-Etag and X-Linked-Size (LFS files: *.safetensors, *.bin, tokenizer.model and anything
over 10 MiB, answered with a redirect to /cdn/<sha256>), Content-Length and Range; 404 with
X-Error-Code for what the folder lacks; and /api/models/{repo}[/revision/{rev}] and
/api/models/{repo}/tree/{rev} for snapshot_download.

1. huggingface_hub downloads the model into cache A (snapshot_download; hf_hub_download file by
   file where this huggingface_hub's snapshot_download wants more of the API than served). Then
   `zerotune tokenize --model_name_or_path ID` with HF_HUB_CACHE=A and HF_HUB_OFFLINE=1 must
   write the ids `zerotune tokenize --model_name_or_path MODEL_DIR` writes, with no request to
   the hub; and once more online, where zerotune may ask about files A lacks but must download
   none of those A has.
2. zerotune downloads the config and tokenizer into cache B (`zerotune tokenize`, online): B must
   be what huggingface_hub's scan_cache_dir accepts, every snapshot file a link to the blob the
   hub's ETag names, and hf_hub_download(local_files_only=True) (what transformers' cached_file
   calls) resolving each file to its blob; then transformers' AutoConfig and AutoTokenizer.from_pretrained(ID,
   local_files_only=True) with HF_HUB_CACHE=B must read it, the tokenizer giving the ids
   zerotune gives.

Exits 0 when all holds, 1 naming each mismatch, 2 when an input or a Python package is missing.
"""
import argparse
import hashlib
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_SUFFIXES = (".safetensors", ".bin", ".model", ".pt", ".pth")
LFS_MIN_BYTES = 10 * 1024 * 1024
SAMPLE_LINES = ["Hello world", "The quick brown fox jumps over the lazy dog.", "你好，世界", "  spaces\tand tabs  "]


def git_blob_sha1(path):
    digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class ServedModel:
    """The files of a model folder with the names the hub gives them."""

    def __init__(self, folder, repo_id):
        self.folder = folder
        self.repo_id = repo_id
        self.files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
                            and not any(part.startswith(".") for part in p.relative_to(folder).parts))
        self.etags = {}
        for name in self.files:
            path = folder / name
            lfs = name.endswith(LFS_SUFFIXES) or path.stat().st_size > LFS_MIN_BYTES
            self.etags[name] = (sha256_of(path) if lfs else git_blob_sha1(path), lfs)
        self.by_sha256 = {etag: name for name, (etag, lfs) in self.etags.items() if lfs}


class HubHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model = None  # ServedModel
    log = None  # list of (method, path, range)

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.answer(body=False)

    def do_GET(self):
        self.answer(body=True)

    def answer(self, body):
        path = urlsplit(self.path).path
        HubHandler.log.append((self.command, path, self.headers.get("Range", "")))
        repo = self.model.repo_id
        if path in (f"/api/models/{repo}", f"/api/models/{repo}/revision/main", f"/api/models/{repo}/revision/{COMMIT}"):
            return self.send_json(self.model_info())
        if path in (f"/api/models/{repo}/tree/main", f"/api/models/{repo}/tree/{COMMIT}"):
            return self.send_json(self.tree())
        prefix = f"/{repo}/resolve/"
        if path.startswith("/cdn/"):
            name = self.model.by_sha256.get(path[len("/cdn/"):])
            return self.send_file(name, {}, body) if name else self.send_error_code(404, "EntryNotFound")
        if not path.startswith(prefix):
            return self.send_error_code(404, "RepoNotFound")
        revision, _, name = path[len(prefix):].partition("/")
        revision, name = unquote(revision), unquote(name)
        if revision not in ("main", COMMIT):
            return self.send_error_code(404, "RevisionNotFound")
        if name not in self.model.etags:
            return self.send_error_code(404, "EntryNotFound", {"X-Repo-Commit": COMMIT})
        etag, lfs = self.model.etags[name]
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"'}
        if not lfs:
            return self.send_file(name, headers, body)
        host, port = self.server.server_address[:2]
        headers.update({"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str((self.model.folder / name).stat().st_size),
                        "Location": f"http://{host}:{port}/cdn/{etag}", "Content-Length": "0"})
        self.send_response(302)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def model_info(self):
        return {"id": self.model.repo_id, "modelId": self.model.repo_id, "sha": COMMIT, "private": False,
                "gated": False, "disabled": False, "downloads": 0, "likes": 0, "tags": [],
                "lastModified": "2024-01-01T00:00:00.000Z", "createdAt": "2024-01-01T00:00:00.000Z",
                "siblings": [{"rfilename": name} for name in self.model.files]}

    def tree(self):
        """The recursive listing snapshot_download reads (list_repo_tree): files only, in one page."""
        entries = []
        for name in self.model.files:
            size = (self.model.folder / name).stat().st_size
            etag, lfs = self.model.etags[name]
            entry = {"type": "file", "path": name, "size": size,
                     "oid": git_blob_sha1(self.model.folder / name) if lfs else etag}
            if lfs:
                entry["lfs"] = {"oid": etag, "size": size, "pointerSize": 134}
            entries.append(entry)
        return entries

    def send_json(self, value):
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_error_code(self, status, code, headers=None):
        data = code.encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_file(self, name, headers, body):
        path = self.model.folder / name
        size = path.stat().st_size
        start = 0
        requested = self.headers.get("Range", "")
        if requested.startswith("bytes=") and requested[6:].split("-")[0].isdigit():
            start = int(requested[6:].split("-")[0])
        if start >= size > 0:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(size - start))
        self.end_headers()
        if body:
            with open(path, "rb") as f:
                f.seek(start)
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    self.wfile.write(chunk)


HF_DOWNLOAD = r"""
import sys
from huggingface_hub import hf_hub_download, snapshot_download
repo_id, files = sys.argv[1], sys.argv[2:]
try:
    print(snapshot_download(repo_id))
except Exception as e:  # an API this script's hub does not serve: the same files one by one
    print(f"snapshot_download failed ({type(e).__name__}: {e}); hf_hub_download file by file", file=sys.stderr)
    for name in files:
        print(hf_hub_download(repo_id, name))
"""

HF_READ = r"""
import json, os, sys
from huggingface_hub import hf_hub_download, scan_cache_dir, try_to_load_from_cache
repo_id, cache, lines, names = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
info = scan_cache_dir(cache)
report = {"warnings": [str(w) for w in info.warnings],
          "revisions": sorted(r.commit_hash for repo in info.repos if repo.repo_id == repo_id for r in repo.revisions),
          "config_path": try_to_load_from_cache(repo_id, "config.json", cache_dir=cache),
          # what transformers' cached_file asks for each file it loads
          "resolved": {name: os.path.realpath(hf_hub_download(repo_id, name, local_files_only=True)) for name in names}}
try:
    from transformers import AutoConfig, AutoTokenizer
except ImportError:
    print(json.dumps(report))
    sys.exit(0)
config = AutoConfig.from_pretrained(repo_id, local_files_only=True, trust_remote_code=True)
tokenizer = AutoTokenizer.from_pretrained(repo_id, local_files_only=True, trust_remote_code=True)
report["model_type"] = config.model_type
report["ids"] = [tokenizer(line)["input_ids"] for line in lines]
print(json.dumps(report))
"""


class Check:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.skipped = []

    def expect(self, condition, message):
        print(("ok    " if condition else "FAIL  ") + message)
        if not condition:
            self.failures.append(message)
        return condition


def run(command, env, stdin_text=None):
    return subprocess.run(command, env=env, input=stdin_text, capture_output=True, text=True)


def zerotune_ids(args, model, env):
    result = run([args.zerotune, "tokenize", "--model_name_or_path", model], env, "\n".join(SAMPLE_LINES) + "\n")
    if result.returncode != 0:
        return None, result.stderr.strip()
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr.strip()


def check_zerotune_reads_huggingface_hub_cache(check, args, model, environment, cache_a, expected_ids):
    env = dict(environment, HF_HUB_CACHE=str(cache_a))
    result = run([sys.executable, "-c", HF_DOWNLOAD, args.repo_id] + model.files, env)
    if not check.expect(result.returncode == 0, "huggingface_hub downloads the model into cache A"):
        print(result.stderr)
        return
    HubHandler.log.clear()
    ids, errors = zerotune_ids(args, args.repo_id, dict(env, HF_HUB_OFFLINE="1"))
    check.expect(ids == expected_ids, f"zerotune reads huggingface_hub's cache offline (same ids as the folder){': ' + errors if ids is None else ''}")
    check.expect(not HubHandler.log, f"offline, zerotune sends no request (sent {HubHandler.log[:3]})")
    HubHandler.log.clear()
    ids, errors = zerotune_ids(args, args.repo_id, env)
    check.expect(ids == expected_ids, f"zerotune reads huggingface_hub's cache online{': ' + errors if ids is None else ''}")
    cached = {name for name in model.files if (cache_a / f"models--{args.repo_id.replace('/', '--')}" / "snapshots"
                                                / COMMIT / name).exists()}
    fetched_again = [path for method, path, _ in HubHandler.log if method == "GET" and path.split("/")[-1] in cached]
    check.expect(not fetched_again, f"online, zerotune downloads none of the files cache A has (downloaded {fetched_again})")


def check_layout(check, repo_folder, model):
    ref = repo_folder / "refs" / "main"
    check.expect(ref.is_file() and ref.read_text().strip() == COMMIT, "zerotune's cache B has refs/main = the commit")
    snapshot = repo_folder / "snapshots" / COMMIT
    linked = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_symlink() or p.is_file())
    check.expect(bool(linked), f"zerotune's snapshot holds {linked}")
    for name in linked:
        target = os.readlink(snapshot / name) if (snapshot / name).is_symlink() else None
        etag = model.etags.get(name, ("?", False))[0]
        check.expect(target is not None and Path(os.path.normpath(snapshot / Path(name).parent / target)) == repo_folder / "blobs" / etag,
                     f"{name} links to blobs/{etag} (got {target})")
    leftovers = [p.name for p in (repo_folder / "blobs").iterdir() if p.name.endswith(".incomplete")]
    check.expect(not leftovers, f"no .incomplete blob is left ({leftovers})")


def check_transformers_reads_zerotune_cache(check, args, model, environment, cache_b, expected_ids):
    env = dict(environment, HF_HUB_CACHE=str(cache_b))
    ids, errors = zerotune_ids(args, args.repo_id, env)
    if not check.expect(ids == expected_ids, f"zerotune downloads into cache B and tokenizes as from the folder{': ' + errors if ids is None else ''}"):
        return
    repo_folder = cache_b / f"models--{args.repo_id.replace('/', '--')}"
    check_layout(check, repo_folder, model)
    snapshot = repo_folder / "snapshots" / COMMIT
    names = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_symlink() or p.is_file())
    result = run([sys.executable, "-c", HF_READ, args.repo_id, str(cache_b), json.dumps(SAMPLE_LINES), json.dumps(names)],
                 dict(env, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"))
    if not check.expect(result.returncode == 0, "huggingface_hub reads zerotune's cache B with local_files_only=True"):
        print(result.stderr[-4000:])
        return
    report = json.loads(result.stdout.strip().splitlines()[-1])
    check.expect(not report["warnings"], f"scan_cache_dir finds nothing wrong in cache B ({report['warnings']})")
    check.expect(report["revisions"] == [COMMIT], f"scan_cache_dir sees revision {COMMIT} ({report['revisions']})")
    check.expect(isinstance(report["config_path"], str), "try_to_load_from_cache finds config.json in cache B")
    for name, path in report["resolved"].items():
        check.expect(Path(path) == repo_folder / "blobs" / model.etags.get(name, ("?", False))[0],
                     f"hf_hub_download(local_files_only=True) resolves {name} to its blob")
    if "ids" not in report:
        check.skipped.append("transformers' AutoConfig and AutoTokenizer on cache B (transformers is not installed)")
        return
    model_type = json.loads((args.model_dir / "config.json").read_text()).get("model_type")
    check.expect(report["model_type"] == model_type, f"AutoConfig reads model_type {model_type} ({report['model_type']})")
    check.expect(report["ids"] == expected_ids, "AutoTokenizer from cache B gives zerotune's ids")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("zerotune", help="the zerotune binary")
    parser.add_argument("model_dir", type=Path, help="a local model folder (config.json, tokenizer files, weights)")
    parser.add_argument("--repo-id", default="zerotune-check/model", help="the id the folder is served as")
    parser.add_argument("--keep", action="store_true", help="keep the two caches (their folder is printed)")
    args = parser.parse_args()
    args.zerotune = str(Path(args.zerotune).resolve())
    if not Path(args.zerotune).is_file() or not (args.model_dir / "config.json").is_file():
        sys.exit(f"error: need the zerotune binary ({args.zerotune}) and a model folder with config.json ({args.model_dir})")
    if run([sys.executable, "-c", "import huggingface_hub"], os.environ).returncode != 0:
        print("error: python package huggingface_hub is not installed", file=sys.stderr)
        sys.exit(2)

    HubHandler.model = ServedModel(args.model_dir.resolve(), args.repo_id)
    HubHandler.log = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HubHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    print(f"serving {args.model_dir} as {args.repo_id} at {endpoint}")

    work = Path(tempfile.mkdtemp(prefix="zt_hub_check_"))
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "TRANSFORMERS_"))}
    environment.update(HF_ENDPOINT=endpoint, HF_HOME=str(work / "hf_home"), HF_HUB_DISABLE_TELEMETRY="1",
                       HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_PROGRESS_BARS="1", NO_PROXY="127.0.0.1,localhost",
                       no_proxy="127.0.0.1,localhost")
    check = Check(args)
    expected_ids, errors = zerotune_ids(args, str(args.model_dir), environment)
    if not check.expect(expected_ids is not None, f"zerotune tokenizes the folder itself{': ' + errors if expected_ids is None else ''}"):
        sys.exit(1)
    check_zerotune_reads_huggingface_hub_cache(check, args, HubHandler.model, environment, work / "cache_a", expected_ids)
    check_transformers_reads_zerotune_cache(check, args, HubHandler.model, environment, work / "cache_b", expected_ids)
    server.shutdown()
    if args.keep:
        print(f"caches kept in {work}")
    else:
        subprocess.run(["rm", "-rf", str(work)])
    if check.failures:
        print(f"\n{len(check.failures)} check(s) failed:\n  " + "\n  ".join(check.failures))
        sys.exit(1)
    if check.skipped:
        print("\nnot run: " + "; ".join(check.skipped))
    print("\nall checks run passed: zerotune and huggingface_hub" + ("" if check.skipped else "/transformers") +
          " read each other's hub cache")


if __name__ == "__main__":
    main()
