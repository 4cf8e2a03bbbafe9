#!/usr/bin/env python3
"""Check that sft's Hub downloads and huggingface_hub's share one cache, both ways.

  check_hub_cache.py [--build build]

Starts the tests' Hub (build/tests/sft_hub_test_server, serving the tiny model of
tests/fixtures/generate_text as org/tiny and tests/fixtures/hub/dataset as org/text on
127.0.0.1), then, each printed as OK or FAIL (exit status 1 on any FAIL):

  1. `sft prepare --model_name_or_path org/tiny --dataset_name org/text` downloads both into
     an empty cache A.
  2. huggingface_hub.scan_cache_dir(A) lists both repos at the server's commit, with refs
     main, the files sft fetched, and no warnings (no corrupt or unexpected entries).
  3. With HF_HUB_OFFLINE=1: transformers loads the model and the tokenizer from A
     (from_pretrained(local_files_only=True)); snapshot_download(local_files_only=True) finds
     the dataset's snapshot and datasets.load_dataset reads its train split (16 rows) from it
     (offline, load_dataset("org/text") itself reads only its own Arrow cache).
  4. huggingface_hub.snapshot_download of the same repos into cache B (from the same server)
     lays out the same blob names, the same relative link targets and the same refs as sft.
  5. sft, offline, reads cache B (what huggingface_hub wrote) for the same command.

Run with the reference venv: ~/.venv-sft/bin/python tools/check_hub_cache.py
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
failures = 0


def report(ok, what):
    global failures
    print(("OK   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures += 1


def layout(cache):
    """{repo folder: {"refs": {...}, "links": {path: target}, "blobs": set}} of a cache."""
    out = {}
    for repo in sorted(Path(cache).glob("*--*--*")):
        refs = {str(p.relative_to(repo / "refs")): p.read_text()
                for p in (repo / "refs").rglob("*") if p.is_file()}
        links = {}
        for p in (repo / "snapshots").rglob("*"):
            if p.is_symlink():
                links[str(p.relative_to(repo / "snapshots"))] = os.readlink(p)
        blobs = {p.name for p in (repo / "blobs").iterdir()}
        out[repo.name] = {"refs": refs, "links": links, "blobs": blobs}
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.phase:
        {"scan": phase_scan, "read": phase_read, "download": phase_download}[args.phase](*rest)
        return 1 if failures else 0
    build = Path(args.build)
    sft = build / "sft"
    server_bin = build / "tests" / "sft_hub_test_server"
    work = Path(tempfile.mkdtemp(prefix="check_hub_cache_"))
    port_file = work / "port"
    server = subprocess.Popen([
        str(server_bin), "--model", f"org/tiny={ROOT}/tests/fixtures/generate_text",
        "--dataset", f"org/text={ROOT}/tests/fixtures/hub/dataset", "--port-file", str(port_file)])
    try:
        for _ in range(100):
            if port_file.exists():
                break
            time.sleep(0.05)
        endpoint = f"http://127.0.0.1:{port_file.read_text().strip()}"
        run_checks(sft, endpoint, work)
    finally:
        server.terminate()
        server.wait()
    print(f"{'all checks passed' if failures == 0 else f'{failures} check(s) failed'} ({work})")
    return 1 if failures else 0


def sft_prepare(sft, cache, env_extra, tokens):
    env = dict(os.environ, HF_HUB_CACHE=str(cache), SFT_CACHE_DIR=str(tokens), **env_extra)
    env.pop("HF_TOKEN", None)
    return subprocess.run([str(sft), "prepare", "--model_name_or_path", "org/tiny",
                           "--dataset_name", "org/text", "--max_length", "32"],
                          env=env, capture_output=True, text=True)


def python_phase(phase, env_extra, *phase_args):
    """Runs one phase in a fresh interpreter: huggingface_hub reads HF_HUB_OFFLINE at import."""
    env = dict(os.environ, **env_extra)
    env.pop("HF_TOKEN", None)
    r = subprocess.run([sys.executable, __file__, "--phase", phase, *phase_args], env=env,
                       capture_output=True, text=True)
    global failures
    for line in r.stdout.splitlines():
        print(line, flush=True)
        failures += line.startswith("FAIL ")
    if r.returncode != 0 and "FAIL " not in r.stdout:
        report(False, f"phase {phase} crashed:\n{r.stderr[-3000:]}")


def phase_scan(cache):
    from huggingface_hub import scan_cache_dir
    info = scan_cache_dir(cache)
    repos = {(x.repo_type, x.repo_id): x for x in info.repos}
    report(not info.warnings, f"scan_cache_dir: no warnings ({info.warnings})")
    for key, want in ((("model", "org/tiny"), {"config.json", "model.safetensors",
                                               "tokenizer.json"}),
                      (("dataset", "org/text"), {"data/train-00000-of-00001.jsonl"})):
        repo = repos.get(key)
        ok = repo is not None and len(repo.revisions) == 1
        if ok:
            rev = next(iter(repo.revisions))
            names = {str(f.file_path.relative_to(rev.snapshot_path)) for f in rev.files}
            ok = "main" in rev.refs and want <= names and repo.size_on_disk > 0
        report(ok, f"scan_cache_dir lists {key[0]} {key[1]} at refs main with {sorted(want)}")


def phase_read(datasets_cache):
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        model = AutoModelForCausalLM.from_pretrained("org/tiny", local_files_only=True)
        tok = AutoTokenizer.from_pretrained("org/tiny", local_files_only=True)
        report(model is not None and len(tok("hello")["input_ids"]) > 0,
               "transformers from_pretrained(local_files_only=True) loads sft's download")
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        report(False, f"transformers from_pretrained on sft's cache: {e!r}")
    try:
        # Offline, load_dataset("org/text") reads only its own Arrow cache, never the Hub
        # cache; the snapshot folder sft wrote is what it would read from the Hub.
        import datasets
        from huggingface_hub import snapshot_download
        folder = snapshot_download("org/text", repo_type="dataset", local_files_only=True)
        ds = datasets.load_dataset(folder, split="train", cache_dir=datasets_cache)
        report(len(ds) == 16, f"datasets.load_dataset reads sft's snapshot of org/text, found by "
               f"snapshot_download(local_files_only=True) ({len(ds)} rows)")
    except Exception as e:  # noqa: BLE001
        report(False, f"datasets.load_dataset on sft's cache: {e!r}")


def phase_download(cache, endpoint):
    from huggingface_hub import snapshot_download
    snapshot_download("org/tiny", cache_dir=cache, endpoint=endpoint,
                      allow_patterns=["config.json", "generation_config.json", "*.safetensors",
                                      "tokenizer.json", "tokenizer_config.json"])
    snapshot_download("org/text", repo_type="dataset", cache_dir=cache, endpoint=endpoint)
    report(True, "huggingface_hub snapshot_download from the test Hub")


def run_checks(sft, endpoint, work):
    cache_a, cache_b = work / "a", work / "b"
    # 1. sft downloads.
    r = sft_prepare(sft, cache_a, {"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "0"}, work / "t1")
    report(r.returncode == 0, "sft prepare downloads org/tiny and org/text into an empty cache"
           + ("" if r.returncode == 0 else "\n" + r.stdout + r.stderr))
    if r.returncode != 0:
        return
    # 2. huggingface_hub's view of sft's cache; 3. the Python stack reads it offline.
    python_phase("scan", {}, str(cache_a))
    python_phase("read", {"HF_HUB_CACHE": str(cache_a), "HF_HUB_OFFLINE": "1",
                          "HF_ENDPOINT": endpoint}, str(work / "datasets_cache"))
    # 4. huggingface_hub's own download of the same repos, compared with sft's.
    python_phase("download", {"HF_HUB_OFFLINE": "0"}, str(cache_b), endpoint)
    a, b = layout(cache_a), layout(cache_b)
    for name in sorted(a):
        same_links = all(b.get(name, {}).get("links", {}).get(p) == t
                         for p, t in a[name]["links"].items())
        report(name in b and a[name]["refs"] == b[name]["refs"] and same_links
               and a[name]["blobs"] <= b[name]["blobs"],
               f"{name}: huggingface_hub writes the same refs, blob names and links as sft")
    # 5. sft reads what huggingface_hub wrote, offline.
    r = sft_prepare(sft, cache_b, {"HF_HUB_OFFLINE": "1"}, work / "t2")
    report(r.returncode == 0 and "downloading" not in r.stderr,
           "sft prepare, offline, reads huggingface_hub's cache"
           + ("" if r.returncode == 0 else "\n" + r.stdout + r.stderr))


if __name__ == "__main__":
    sys.exit(main())
