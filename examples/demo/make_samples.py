#!/usr/bin/env python3
"""Write a deterministic instruction/response sample set plus manifest.json.

The records are short Q/A pairs about DPUs, RoCE and NVMe-oF built from
templates. The same --records/--files/--seed always give byte-identical files,
so their sha256 values can be checked on the far side of the storage path.
Uses only the Python standard library.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

FORMAT = "demo-samples/1"

# (question template, answer template); {x} is filled from the matching list.
FACTS: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("What does {x} stand for?", "{x} stands for {y}.", [
        ("DPU", "data processing unit"),
        ("RoCE", "RDMA over Converged Ethernet"),
        ("RDMA", "remote direct memory access"),
        ("NVMe-oF", "NVMe over Fabrics"),
        ("PFC", "priority flow control"),
        ("ECN", "explicit congestion notification"),
        ("OVS", "Open vSwitch"),
        ("SR-IOV", "single root I/O virtualization"),
        ("NCCL", "the NVIDIA Collective Communications Library"),
        ("QLoRA", "quantized low-rank adaptation"),
    ]),
    ("Which port does {x} use?", "{x} uses port {y}.", [
        ("RoCEv2", "UDP 4791"),
        ("NVMe/TCP", "TCP 4420"),
        ("NVMe/RDMA", "4420 by default"),
        ("NFS over RDMA", "20049"),
        ("iSCSI", "TCP 3260"),
    ]),
    ("What runs on the {x}?", "The {x} runs {y}.", [
        ("BlueField Arm cores", "the DPU agent and OVS"),
        ("host", "the dpuctl CLI and the training job"),
        ("storage target", "the NVMe-oF subsystem"),
        ("GPU node", "the PyTorch workers"),
    ]),
    ("How do I check {x}?", "Run {y}.", [
        ("link state", "dpuctl check link"),
        ("RoCE counters", "dpuctl counters roce"),
        ("the NVMe-oF path", "dpuctl check nvmeof"),
        ("NCCL transport", "an all-reduce test with NCCL_DEBUG=INFO"),
        ("OVS offload", "dpuctl check ovs"),
        ("PFC pauses", "dpuctl counters pfc"),
    ]),
    ("Why does {x} matter?", "{x} matters because {y}.", [
        ("lossless Ethernet", "RoCE drops throughput on packet loss"),
        ("DCQCN", "it reacts to ECN marks before queues overflow"),
        ("MTU 4200", "larger frames cut per-packet overhead"),
        ("GPUDirect RDMA", "data skips a copy through host memory"),
        ("a checksum of the data", "it proves the bytes arrived intact"),
    ]),
]

PHRASINGS = ["{q}", "Quick question: {q}", "{q} Answer briefly.", "Please explain: {q}"]


def all_pairs() -> list[tuple[str, str]]:
    """Every (instruction, response) combination, in a fixed order."""
    pairs: list[tuple[str, str]] = []
    for q_tmpl, a_tmpl, fills in FACTS:
        for x, y in fills:
            question = q_tmpl.format(x=x)
            answer = a_tmpl.format(x=x, y=y)
            if answer.split(" ", 1)[0].islower():  # "the host ..." -> "The host ...", keep "iSCSI"
                answer = answer[0].upper() + answer[1:]
            for phrasing in PHRASINGS:
                pairs.append((phrasing.format(q=question), answer))
    return pairs


def make_records(count: int, seed: int) -> list[dict[str, str]]:
    """`count` records drawn deterministically (cycling when count > pairs)."""
    pairs = all_pairs()
    rng = random.Random(seed)
    records: list[dict[str, str]] = []
    while len(records) < count:
        order = list(range(len(pairs)))
        rng.shuffle(order)
        for index in order[: count - len(records)]:
            instruction, response = pairs[index]
            records.append({"id": f"s{len(records):05d}", "instruction": instruction, "response": response})
    return records


def write_files(out: Path, records: list[dict[str, str]], files: int) -> list[dict[str, object]]:
    """Split records round-robin over `files` jsonl files; return manifest entries."""
    entries: list[dict[str, object]] = []
    for index in range(files):
        chunk = records[index::files]
        name = f"samples-{index:03d}.jsonl"
        data = "".join(json.dumps(r, sort_keys=True, ensure_ascii=True) + "\n" for r in chunk).encode("utf-8")
        (out / name).write_bytes(data)
        entries.append({"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                        "records": len(chunk)})
    return entries


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="directory to write samples-NNN.jsonl and manifest.json")
    parser.add_argument("--records", type=int, default=200, help="number of Q/A records (default 200)")
    parser.add_argument("--files", type=int, default=4, help="number of jsonl files to spread them over (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    parser.add_argument("--force", action="store_true",
                        help="delete existing *.jsonl files in --out first (default: refuse to mix with them)")
    args = parser.parse_args(argv)
    if args.records < 1 or args.files < 1 or args.files > args.records:
        parser.error("need --records >= --files >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    stale = sorted(args.out.glob("*.jsonl"))
    if stale and not args.force:
        names = ", ".join(p.name for p in stale[:3])
        message = f"{args.out} already holds jsonl files ({names}...); use an empty directory or --force"
        print(f"error: {message}", file=sys.stderr)
        print("DEMO-RESULT " + json.dumps({"step": "make-samples", "ok": False, "error": message}, sort_keys=True,
                                          separators=(",", ":")))
        return 2
    for path in stale:
        path.unlink()
    records = make_records(args.records, args.seed)
    entries = write_files(args.out, records, args.files)
    manifest = {
        "format": FORMAT,
        "seed": args.seed,
        "records": len(records),
        "total_bytes": sum(int(e["bytes"]) for e in entries),
        "files": entries,
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    result = {"step": "make-samples", "ok": True, "out": str(args.out), "records": len(records),
              "files": len(entries), "total_bytes": manifest["total_bytes"]}
    print("DEMO-RESULT " + json.dumps(result, sort_keys=True, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
