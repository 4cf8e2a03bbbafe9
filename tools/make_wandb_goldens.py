#!/usr/bin/env python3
"""Goldens written by the real W&B SDK and TRL, for `--report_to wandb` and the model card to match.

Writes tests/fixtures/wandb/:
  sdk_blocks.wandb   an offline run written by the wandb SDK (wandb-core) itself: a config holding one
                     40,000-character string, so the run record crosses the first 32 KiB block (a FIRST
                     and a LAST chunk), then three history rows; the C++ test reads its framing (the
                     ":W&B" header, 7-byte chunk headers, CRC-32 (IEEE, unmasked) of type byte + data,
                     block padding) with the same code that checks sft's own files.
  trl_sft.wandb      what `trl sft ... --report_to wandb` writes with WANDB_MODE=offline: TRL 1.16's
                     SFTTrainer with transformers' WandbCallback on the tiny Qwen3 of
                     tests/fixtures/trl_parity (4 steps, logging_steps 1, an eval at step 4); the C++ test
                     compares sft's record kinds, config keys and history keys with it.
  trl_sft.json       the same run's records decoded with wandb's protobufs (type, and for config/history/
                     summary/metric the keys), for people and for the test (no protobuf parser in C++).
and tests/fixtures/model_card/:
  trl_local.md       output_dir/README.md as TRL's SFTTrainer writes it at a checkpoint (base model a local
                     folder, so no base_model; no dataset, as in TRL's own checkpoint cards).
  trl_hub.md         the card TRL's generate_model_card makes for a Hub base model and dataset
                     (Qwen/Qwen3-0.6B, trl-lib/Capybara, hub_model_id user/Qwen3-0.6B-SFT), what
                     push_to_hub publishes.

Run: ~/.venv-sft/bin/python tools/make_wandb_goldens.py    (CPU, about half a minute; no network: offline)
Needs wandb (pinned in tools/requirements.txt) besides the trl stack.
"""

import glob
import json
import os
import shutil
import struct
import sys
import tempfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "wandb"
CARDS = REPO / "tests" / "fixtures" / "model_card"
PARITY = REPO / "tests" / "fixtures" / "trl_parity"


def read_records(path: Path) -> list[bytes]:
    """The records of a .wandb file (the LevelDB log format with W&B's header and CRC-32)."""
    data = path.read_bytes()
    assert data[:7] == b":W&B\xe1\xbe\x00", data[:7]
    records, pending, off = [], b"", 7
    while off < len(data):
        block_left = 32768 - off % 32768
        if block_left < 7:  # the writer zero-fills a tail too short for a header
            assert data[off:off + block_left] == bytes(block_left)
            off += block_left
            continue
        crc, length, kind = struct.unpack("<IHB", data[off:off + 7])
        chunk = data[off + 7:off + 7 + length]
        assert zlib.crc32(bytes([kind]) + chunk) == crc, f"bad CRC at {off}"
        pending += chunk
        if kind in (1, 4):  # FULL, LAST
            records.append(pending)
            pending = b""
        off += 7 + length
    return records


def describe(path: Path) -> list[dict]:
    from wandb.proto import wandb_internal_pb2 as pb

    out = []
    for raw in read_records(path):
        rec = pb.Record()
        rec.ParseFromString(raw)
        kind = rec.WhichOneof("record_type")
        entry = {"num": rec.num, "type": kind}
        if kind == "run":
            entry["config_keys"] = [i.key for i in rec.run.config.update]
        elif kind == "config":
            entry["keys"] = [i.key or "/".join(i.nested_key) for i in rec.config.update]
        elif kind in ("history", "summary"):
            items = rec.history.item if kind == "history" else rec.summary.update
            entry["keys"] = sorted(i.key or "/".join(i.nested_key) for i in items)
        elif kind == "metric":
            entry["name"] = rec.metric.name
            entry["glob_name"] = rec.metric.glob_name
            entry["step_metric"] = rec.metric.step_metric
        out.append(entry)
    return out


def offline_run_dir(wandb_dir: Path) -> Path:
    runs = glob.glob(str(wandb_dir / "wandb" / "offline-run-*"))
    assert len(runs) == 1, runs
    return Path(runs[0])


def make_sdk_blocks(tmp: Path) -> None:
    import wandb

    run = wandb.init(project="sft-golden", name="blocks", id="blocks01", dir=str(tmp), mode="offline",
                     config={"long": "x" * 40000, "learning_rate": 2e-5}, settings=wandb.Settings(
                         x_disable_stats=True, save_code=False, disable_git=True, console="off"))
    for step in range(1, 4):
        run.log({"train/loss": 1.0 / step, "train/global_step": step})
    run.finish()
    wandb.teardown()  # wandb-core writes the tail of the log asynchronously; this waits for it
    src = offline_run_dir(tmp) / "run-blocks01.wandb"
    shutil.copy(src, OUT / "sdk_blocks.wandb")
    records = read_records(src)
    assert any(len(r) > 32768 for r in records), "no record crosses a block"


def make_trl_run(tmp: Path) -> None:
    import torch
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(1)
    os.environ["WANDB_DIR"] = str(tmp)
    os.environ["WANDB_PROJECT"] = "sft-golden"
    os.environ["WANDB_RUN_ID"] = "trlsft01"
    out = tmp / "tiny-sft"
    dataset = load_dataset("json", data_files=str(PARITY / "data.jsonl"), split="train")
    args = SFTConfig(output_dir=str(out), max_steps=4, logging_steps=1, per_device_train_batch_size=2,
                     max_length=128, learning_rate=1e-3, seed=42, bf16=False, use_cpu=True, report_to=["wandb"],
                     eval_strategy="steps", eval_steps=4, save_strategy="steps", save_steps=4,
                     run_name="tiny-sft", disable_tqdm=True)
    trainer = SFTTrainer(model=str(PARITY / "model"), args=args, train_dataset=dataset,
                         eval_dataset=dataset.select(range(6)))
    trainer.train()
    trainer.save_model(str(out))
    trainer.end()  # finishes the wandb run, as `trl sft` does
    __import__("wandb").teardown()
    src = offline_run_dir(tmp) / "run-trlsft01.wandb"
    shutil.copy(src, OUT / "trl_sft.wandb")
    (OUT / "trl_sft.json").write_text(json.dumps(describe(src), indent=1) + "\n")
    CARDS.mkdir(parents=True, exist_ok=True)
    shutil.copy(out / "README.md", CARDS / "trl_local.md")


def make_hub_card() -> None:
    from trl.trainer.utils import generate_model_card

    card = generate_model_card(base_model="Qwen/Qwen3-0.6B", model_name="Qwen3-0.6B-SFT",
                               hub_model_id="user/Qwen3-0.6B-SFT", dataset_name="trl-lib/Capybara",
                               tags=["trl", "sft"], wandb_url=None, trackio_url=None, trainer_name="SFT")
    card.save(str(CARDS / "trl_hub.md"))


def main() -> None:
    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        make_sdk_blocks(Path(tmp) / "blocks")
    with tempfile.TemporaryDirectory() as tmp:
        make_trl_run(Path(tmp))
    make_hub_card()
    for name in ("sdk_blocks.wandb", "trl_sft.wandb"):
        print(f"{name}: {(OUT / name).stat().st_size} bytes, {len(read_records(OUT / name))} records",
              file=sys.stderr)


if __name__ == "__main__":
    main()
