"""Shared helpers for the training-storage demo scripts.

Everything here works offline: the hub environment variables are set before
any Hugging Face library is imported, and models/tokenizers are only ever read
from local directories.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Any, Iterable

# No network, ever: these must be set before transformers/peft are imported.
for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
    os.environ[_name] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# Library deprecation chatter is noise in the orchestrator's captured logs.
warnings.filterwarnings("ignore", category=FutureWarning)
# Needed by torch.use_deterministic_algorithms on CUDA (cuBLAS reductions).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

RESULT_PREFIX = "DEMO-RESULT "
FINGERPRINT_FORMAT = "demo-fingerprint/1"
SAMPLES_FORMAT = "demo-samples/1"
SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
READ_CHUNK = 1 << 20


class DemoError(Exception):
    """A problem the user can fix (missing file, bad manifest, bad option)."""


def emit_result(payload: dict[str, Any]) -> None:
    """Print the single machine-readable line the orchestrator parses."""
    line = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    sys.stdout.write(RESULT_PREFIX + line + "\n")
    sys.stdout.flush()


def fail(step: str, message: str, code: int = 2) -> int:
    """Report an error on stderr and as a DEMO-RESULT line; return the exit code."""
    print(f"error: {message}", file=sys.stderr)
    emit_result({"step": step, "ok": False, "error": message})
    return code


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sha256_file(path: Path) -> tuple[str, int]:
    """Return (hex sha256, size in bytes) of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(READ_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def versions() -> dict[str, str | None]:
    """Versions of the interpreter and the ML libraries (None when absent)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("torch", "transformers", "peft", "bitsandbytes"):
        try:
            module = __import__(name)
            out[name] = str(getattr(module, "__version__", "unknown"))
        except Exception:  # bitsandbytes may raise more than ImportError
            out[name] = None
    return out


# --------------------------------------------------------------------------
# Tokenizer: byte-level, no merges, fixed alphabet -> fully deterministic.
# --------------------------------------------------------------------------

def build_tokenizer() -> Any:
    """Build the byte-level tokenizer (4 specials + 256 byte symbols = 260 ids)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    vocab: dict[str, int] = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for symbol in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[symbol] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", BOS_ID)]
    )
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    return tok


def save_tokenizer(tok: Any, out_dir: Path) -> None:
    """Save tokenizer.json plus the transformers wrapper files into out_dir."""
    from transformers import PreTrainedTokenizerFast

    wrapper = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=256,
    )
    wrapper.save_pretrained(str(out_dir))
    # transformers 5 writes its own class name; the generic one also loads with
    # transformers 4.x and with serving stacks that read tokenizer_config.json.
    config_path = out_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config.pop("backend", None)
    write_json(config_path, config)


def load_tokenizer(model_dir: Path) -> Any:
    """Load tokenizer.json from model_dir (the raw `tokenizers` object)."""
    from tokenizers import Tokenizer

    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise DemoError(f"tokenizer file missing: {path} (run build_tiny_model.py or copy tiny_model/)")
    return Tokenizer.from_file(str(path))


def copy_tokenizer_files(src_dir: Path, dst_dir: Path) -> None:
    """Copy the tokenizer files that exist in src_dir into dst_dir."""
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        src = src_dir / name
        if src.is_file():
            (dst_dir / name).write_bytes(src.read_bytes())


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

def init_base_model(model_dir: Path, base_seed: int) -> Any:
    """Create the base model from model_dir/config.json with fixed-seed weights.

    Initialisation always runs on the CPU so the weights are the same on every
    machine and every rank, whatever device training uses afterwards.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config_path = model_dir / "config.json"
    if not config_path.is_file():
        raise DemoError(f"model config missing: {config_path}")
    config = AutoConfig.from_pretrained(str(model_dir), local_files_only=True)
    torch.manual_seed(base_seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model.to("cpu")


def load_model(model_dir: Path, **kwargs: Any) -> Any:
    """Load a saved causal LM from a local directory (never the hub)."""
    from transformers import AutoModelForCausalLM

    if not (model_dir / "config.json").is_file():
        raise DemoError(f"not a saved model directory (no config.json): {model_dir}")
    return AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True, **kwargs)


def count_params(model: Any) -> tuple[int, int]:
    """Return (trainable, total) parameter counts."""
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable, total


# --------------------------------------------------------------------------
# Fingerprint of a set of weights
# --------------------------------------------------------------------------

def tensor_stats(tensor: Any) -> dict[str, Any]:
    """l2, mean and proj of one tensor, computed in float64.

    proj = sum_i x_i * cos(i) / sqrt(n) over the row-major flattening; unlike the
    norm it moves to first order with any change of the weights.
    """
    import torch

    flat = tensor.detach().to("cpu", torch.float64).reshape(-1)
    n = flat.numel()
    weights = torch.cos(torch.arange(n, dtype=torch.float64))
    return {
        "shape": list(tensor.shape),
        "numel": n,
        "l2": float(flat.norm().item()),
        "mean": float(flat.mean().item()) if n else 0.0,
        "proj": float((flat * weights).sum().item() / math.sqrt(n)) if n else 0.0,
    }


def fingerprint(state_dict: dict[str, Any]) -> dict[str, Any]:
    """Compact, device-independent summary of a state dict."""
    tensors = {name: tensor_stats(t) for name, t in sorted(state_dict.items())}
    return {
        "format": FINGERPRINT_FORMAT,
        "param_count": sum(s["numel"] for s in tensors.values()),
        "tensor_count": len(tensors),
        "tensors": tensors,
    }


def make_readable(directory: Path) -> None:
    """safetensors writes files 0600; make saved models readable by other users
    (e.g. a merge or serving pod that runs under another uid)."""
    for path in directory.iterdir():
        if path.is_file():
            path.chmod(path.stat().st_mode | 0o044)


def write_json(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise DemoError(f"{what} missing: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DemoError(f"{what} is not valid JSON: {path}: {exc}") from exc


def iter_lines_bytes(data: bytes) -> Iterable[tuple[int, str]]:
    """(1-based line number, text) for each non-empty line of UTF-8 data."""
    for number, raw in enumerate(data.decode("utf-8").splitlines(), start=1):
        if raw.strip():
            yield number, raw
