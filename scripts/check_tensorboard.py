#!/usr/bin/env python3
"""A zerotune run's TensorBoard event files read by TensorBoard's own reader, against its log.

Needs python3 with the `tensorboard` package; without it the script prints a line starting
"SKIPPED (nothing was checked)" and exits 0 (it is meant for a machine that has TensorBoard
installed; tests/train/report/ checks the framing and CRCs without it).

    python3 scripts/check_tensorboard.py OUTPUT_DIR [--logdir FOLDER]

OUTPUT_DIR is the run's --output_dir, whose train_log.jsonl holds every log entry. FOLDER is
where the run wrote its events: --logging_dir, or a DeepSpeed tensorboard block's
output_path/job_name; by default the newest folder under OUTPUT_DIR/runs/ (HF's default
logging_dir, where `--report_to tensorboard` alone writes).

First every record of every event file in the folder is read with TensorBoard's own record
iterator (event_file_loader's, TensorFlow's reader when it is installed, else TensorBoard's
stub), which checks each record's length and data CRCs: EventAccumulator reads through the
same iterator but stops quietly at a record that fails, so a failure is reported here by file
and record; each file must start with the file_version event "brain.Event:2". Then the
folder is loaded with tensorboard.backend.event_processing.event_accumulator's
EventAccumulator, which applies SessionLog START (a resumed run's), and, as HF's TensorBoardCallback would have written the log: every number of every
train_log.jsonl entry (except "step") must be a scalar under rewrite_logs' tag (eval_loss ->
eval/loss, anything else -> train/<key>) at the entry's step, with the value as float32, in
the log's order, and nothing else may be there; the run's arguments must be the text
"args/text_summary". Exits 1 naming the first differences, else 0.
"""
import argparse
import json
import struct
import sys
from collections import defaultdict
from pathlib import Path

MAX_SHOWN = 10  # differences named before the count of the rest


def tensorboard_tag(key):
    """transformers' rewrite_logs for one key."""
    if key.startswith("eval_"):
        return "eval/" + key[len("eval_"):]
    if key.startswith("test_"):
        return "test/" + key[len("test_"):]
    return "train/" + key


def as_float32(value):
    return struct.unpack("<f", struct.pack("<f", float(value)))[0]


def expected_scalars(output_dir):
    """{tag: [(step, float32 value), ...]} in the order train_log.jsonl lists them."""
    scalars = defaultdict(list)
    with open(output_dir / "train_log.jsonl") as log:
        for line in log:
            entry = json.loads(line)
            for key, value in entry.items():
                if key != "step" and isinstance(value, (int, float)):
                    scalars[tensorboard_tag(key)].append((entry["step"], as_float32(value)))
    return scalars


def default_logdir(output_dir):
    runs = sorted((p for p in (output_dir / "runs").glob("*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    if not runs:
        sys.exit(f"no folder under {output_dir / 'runs'}: give the run's --logging_dir with --logdir")
    return runs[-1]


def record_problems(logdir):
    """Every record of the folder's event files through TensorBoard's record reader: the
    problems found, and the number of records read."""
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.compat import tf
    from tensorboard.compat.proto import event_pb2

    files = sorted(path for path in logdir.glob("*tfevents*") if path.is_file())
    problems = [] if files else [f"no event files (*tfevents*) in {logdir}"]
    records = 0
    for path in files:
        # What RawEventFileLoader reads with, without its loop that swallows DataLossError.
        records_of_file = event_file_loader._make_tf_record_iterator(str(path))
        index = 0
        while True:
            try:
                record = next(records_of_file)
            except StopIteration:
                break
            except tf.errors.DataLossError as error:
                problems.append(f"{path.name}: record {index} fails TensorBoard's check ({error}); "
                                "TensorBoard shows nothing from there on")
                break
            event = event_pb2.Event.FromString(record)
            if index == 0 and event.file_version != "brain.Event:2":
                problems.append(f"{path.name}: the first event is not file_version brain.Event:2: {event}")
            index += 1
        records += index
    return problems, records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--logdir", type=Path, help="the folder of the event files (default: newest under runs/)")
    args = parser.parse_args()
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError as error:
        print(f"SKIPPED (nothing was checked): TensorBoard's reader cannot be imported ({error}); install the "
              "tensorboard package (pip install tensorboard) and run this again to check the event files")
        return 0

    logdir = args.logdir or default_logdir(args.output_dir)
    problems, records = record_problems(logdir)
    accumulator = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    seen = {tag: [(event.step, event.value) for event in accumulator.Scalars(tag)] for tag in tags["scalars"]}
    expected = expected_scalars(args.output_dir)

    for tag in sorted(set(expected) | set(seen)):
        if expected.get(tag) != seen.get(tag):
            problems.append(f"{tag}: train_log.jsonl has {expected.get(tag)}, the event files {seen.get(tag)}")
    if "args/text_summary" not in tags.get("tensors", []):
        problems.append("no args/text_summary text (the run's arguments) in the event files")
    else:
        text = accumulator.Tensors("args/text_summary")[0].tensor_proto.string_val[0].decode()
        if "output_dir" not in json.loads(text):
            problems.append("args/text_summary is not the run's arguments: " + text[:200])

    count = sum(len(values) for values in expected.values())
    if problems:
        for problem in problems[:MAX_SHOWN]:
            print("MISMATCH " + problem)
        if len(problems) > MAX_SHOWN:
            print(f"... and {len(problems) - MAX_SHOWN} more")
        print(f"FAILED: {logdir} does not hold train_log.jsonl's {count} scalars as TensorBoard reads it")
        return 1
    print(f"OK: TensorBoard reads {records} records, every CRC right, and {count} scalars under {len(expected)} "
          f"tags from {logdir}, as train_log.jsonl lists them, and the run's arguments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
