#!/usr/bin/env python3
"""Merge a LoRA adapter into its base model and fingerprint the result.

Loads --base in float32 on the CPU (also for an adapter trained with QLoRA: the
merge goes into the unquantized base), applies --adapter with peft,
merge_and_unload(), saves the merged model (safetensors + tokenizer) to --out,
writes --out/fingerprint.json and prints one `DEMO-RESULT {json}` line.
Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import demo_common as dc  # sets the offline environment first

STEP = "merge"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="saved base model directory (finetune --out/base)")
    parser.add_argument("--adapter", type=Path, required=True, help="LoRA adapter directory (finetune --out/adapter)")
    parser.add_argument("--out", type=Path, required=True, help="directory for the merged model and fingerprint.json")
    return parser.parse_args(argv)


def merge(base_dir: Path, adapter_dir: Path) -> Any:
    """Return the merged (plain transformers) model on the CPU in float32."""
    import torch
    from peft import PeftModel

    if not (adapter_dir / "adapter_config.json").is_file():
        raise dc.DemoError(f"not a LoRA adapter directory (no adapter_config.json): {adapter_dir}")
    base = dc.load_model(base_dir, dtype=torch.float32)
    peft_model = PeftModel.from_pretrained(base, str(adapter_dir), is_trainable=False)
    return peft_model.merge_and_unload()


def run(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    merged = merge(args.base, args.adapter)
    args.out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(args.out), safe_serialization=True)
    dc.copy_tokenizer_files(args.base, args.out)
    fp = dc.fingerprint(merged.state_dict())
    dc.write_json(args.out / "fingerprint.json", fp)
    dc.make_readable(args.out)
    # The DEMO-RESULT line carries the full fingerprint so the orchestrator can
    # archive/compare it without reading files from a pod.
    return {
        "step": STEP,
        "ok": True,
        "base_dir": str(args.base),
        "adapter_dir": str(args.adapter),
        "out_dir": str(args.out),
        "fingerprint_file": str(args.out / "fingerprint.json"),
        "param_count": fp["param_count"],
        "tensor_count": fp["tensor_count"],
        "fingerprint": fp,
        "seconds": round(time.perf_counter() - start, 3),
        "versions": dc.versions(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = run(args)
    except dc.DemoError as exc:
        return dc.fail(STEP, str(exc))
    dc.emit_result(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
