#!/usr/bin/env python3
"""Write the tiny model's config.json and byte-level tokenizer files.

The output of this script is committed as examples/demo/tiny_model/; it only
needs re-running when the architecture changes. No weights are written: the
training script creates them from the config with a fixed seed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import demo_common as dc

# ~0.9 M parameters: a 4-layer Llama with a 260-symbol byte vocabulary.
TINY_CONFIG: dict[str, object] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": 260,
    "hidden_size": 128,
    "intermediate_size": 344,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "initializer_range": 0.02,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "use_cache": True,
    "pad_token_id": dc.PAD_ID,
    "bos_token_id": dc.BOS_ID,
    "eos_token_id": dc.EOS_ID,
    "torch_dtype": "float32",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "tiny_model",
                        help="directory to write config.json and tokenizer files into (default: ./tiny_model)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    dc.write_json(args.out / "config.json", TINY_CONFIG)
    tok = dc.build_tokenizer()
    if tok.get_vocab_size() != TINY_CONFIG["vocab_size"]:
        return dc.fail("build-tiny-model", f"tokenizer has {tok.get_vocab_size()} ids, config says {TINY_CONFIG['vocab_size']}")
    dc.save_tokenizer(tok, args.out)
    dc.log(f"wrote {args.out}/config.json and tokenizer files ({tok.get_vocab_size()} ids)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
