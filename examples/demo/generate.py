#!/usr/bin/env python3
"""Greedy generation from the merged demo model (stand-in for vLLM serving).

The prompt is wrapped as `Q: <prompt>\\nA:` (the layout used in training)
unless --raw is given. Greedy decoding, so the same model and prompt give the
same text on the same device. Prints one `DEMO-RESULT {json}` line.
Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import demo_common as dc  # sets the offline environment first

STEP = "generate"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="merged model directory (merge_lora.py --out)")
    parser.add_argument("--prompt", required=True, help="question text")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="tokens (bytes) to generate at most (default 64)")
    parser.add_argument("--raw", action="store_true", help="use the prompt as is, without the `Q: ...\\nA:` wrapper")
    parser.add_argument("--cpu", action="store_true", help="stay on the CPU even when CUDA is available")
    args = parser.parse_args(argv)
    if args.max_new_tokens < 1:
        parser.error("--max-new-tokens must be >= 1")
    return args


def generate(model: Any, prompt_ids: list[int], max_new_tokens: int, device: Any) -> list[int]:
    """Greedy decoding; returns only the new token ids (stopping at eos)."""
    import torch

    input_ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)
    with torch.no_grad():
        out = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                             max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                             pad_token_id=dc.PAD_ID, eos_token_id=dc.EOS_ID)
    new = out[0, len(prompt_ids):].tolist()
    return new[: new.index(dc.EOS_ID)] if dc.EOS_ID in new else new


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    tok = dc.load_tokenizer(args.model)
    model = dc.load_model(args.model, dtype=torch.float32).to(device).eval()
    text_in = args.prompt if args.raw else f"Q: {args.prompt}\nA:"
    prompt_ids = tok.encode(text_in).ids
    max_pos = int(getattr(model.config, "max_position_embeddings", 256))
    if len(prompt_ids) + args.max_new_tokens > max_pos:
        raise dc.DemoError(f"prompt ({len(prompt_ids)} tokens) + --max-new-tokens {args.max_new_tokens} "
                           f"exceeds the model's {max_pos} positions")
    start = time.perf_counter()
    new_ids = generate(model, prompt_ids, args.max_new_tokens, device)
    seconds = time.perf_counter() - start
    return {
        "step": STEP,
        "ok": True,
        "model_dir": str(args.model),
        "prompt": text_in,
        "text": tok.decode(new_ids, skip_special_tokens=True),
        "new_tokens": len(new_ids),
        "seconds": round(seconds, 3),
        "tokens_per_s": round(len(new_ids) / seconds, 1) if seconds > 0 else None,
        "device": device.type,
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
