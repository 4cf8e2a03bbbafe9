#!/usr/bin/env python3
"""Golden TensorBoard event records written by the `tensorboard` package, and a reader check.

  make:   python tools/make_tensorboard_goldens.py
          writes tests/fixtures/tensorboard/golden.tfevents: the records tensorboard's own
          EventFileWriter writes for a file_version event and scalars with fixed wall times
          (see SCALARS), so the C++ writer can be compared byte for byte; and in golden.json
          the Event bytes of the text summaries (TEXTS) that transformers' TensorBoardCallback
          writes with torch's SummaryWriter.add_text ("args", "model_config").
  check:  python tools/make_tensorboard_goldens.py --check DIR
          reads every event file under DIR with tensorboard's EventAccumulator and prints
          its scalars and text summaries as JSON, e.g. to check a run's logs (or the C++
          test's output in build/tests/output/tensorboard/) load in TensorBoard.
"""

import glob
import json
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tensorboard"
WALL0 = 1764400000.25
SCALARS = [("train/loss", 2.5, 1), ("train/learning_rate", 2e-5, 1), ("train/loss", 1.75, 2),
           ("train/grad_norm", 0.3330000042915344, 2), ("train/loss", -0.0, 300), ("eval/loss", 1e-30, 123456789)]
# (tag, text, step): a step-0 args JSON as TrainingArguments.to_json_string() indents it, a
# non-ASCII one, and one at a later step.
TEXTS = [("args", '{\n  "output_dir": "out",\n  "learning_rate": 2e-05\n}', 0),
         ("model_config", '{\n  "model_type": "qwen3", "name": "caf\u00e9 \u2713"\n}', 0),
         ("note", "x" * 200, 7)]


def text_events() -> list:
    # The summary transformers' TensorBoardCallback writes: torch.utils.tensorboard's text().
    from tensorboard.compat.proto import event_pb2
    from torch.utils.tensorboard.summary import text

    out = []
    for i, (tag, body, step) in enumerate(TEXTS):
        event = event_pb2.Event(wall_time=WALL0 + 100 + i, step=step, summary=text(tag, body))
        out.append({"tag": tag, "text": body, "step": step, "wall_time": WALL0 + 100 + i,
                    "event_hex": event.SerializeToString().hex()})
    return out


def make() -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    with tempfile.TemporaryDirectory() as tmp:
        writer = EventFileWriter(tmp)
        for i, (tag, value, step) in enumerate(SCALARS):
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
            writer.add_event(event_pb2.Event(wall_time=WALL0 + i, step=step, summary=summary))
        writer.close()
        (path,) = glob.glob(tmp + "/events.out.tfevents.*")
        data = Path(path).read_bytes()
    # The first record (file_version) carries the real time of the run and the name of the Python
    # writer (source_metadata): pin the time to WALL0 and drop the writer name, which sft does not write.
    first_event = event_pb2.Event()
    length = int.from_bytes(data[:8], "little")
    first_event.ParseFromString(data[12:12 + length])
    first_event.wall_time = WALL0
    first_event.ClearField("source_metadata")
    from tensorboard.summary.writer.record_writer import RecordWriter
    import io
    buffer = io.BytesIO()
    RecordWriter(buffer).write(first_event.SerializeToString())
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "golden.tfevents").write_bytes(buffer.getvalue() + data[12 + length + 4:])
    golden = {"wall_time0": WALL0, "scalars": SCALARS, "texts": text_events()}
    (OUT / "golden.json").write_text(json.dumps(golden, indent=1) + "\n")
    print("wrote", OUT / "golden.tfevents")


def check(directory: str) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = sorted(glob.glob(directory + "/**/events.out.tfevents.*", recursive=True))
    if not files:
        sys.exit(f"no event files under {directory}")
    for path in files:
        acc = EventAccumulator(path)
        acc.Reload()
        scalars = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
        # Text summaries are tensors of the "text" plugin, as TensorBoard's Text tab reads them.
        texts = {tag: [(e.step, e.tensor_proto.string_val[0].decode()) for e in acc.Tensors(tag)]
                 for tag in acc.Tags()["tensors"]
                 if acc.SummaryMetadata(tag).plugin_data.plugin_name == "text"}
        print(json.dumps({"file": path, "scalars": scalars, "texts": texts}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        make()
