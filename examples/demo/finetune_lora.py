#!/usr/bin/env python3
"""LoRA (or QLoRA) fine-tune of the tiny demo model on the sample set.

Steps:
  1. read every *.jsonl file of --data-dir, hashing each file while reading it,
     and check the files against --data-dir/manifest.json when present;
  2. get the base model: --base DIR, else --out/base, else create it from
     --model-dir/config.json with --base-seed (and save it to --out/base);
  3. train a LoRA adapter with peft (QLoRA 4-bit when bitsandbytes and CUDA are
     present and --qlora is auto/on) on CUDA when available, else the CPU;
  4. save the adapter to --out/adapter and print one `DEMO-RESULT {json}` line.

Runs as one process or under torch.distributed (torchrun, a Kubeflow PyTorchJob:
WORLD_SIZE > 1) with DDP, gloo on CPU and nccl on CUDA; only rank 0 writes.
Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import demo_common as dc  # sets the offline environment first

STEP = "finetune"
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


# --------------------------------------------------------------------------
# Arguments and distributed setup
# --------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, required=True,
                        help="directory with config.json and tokenizer.json of the tiny model (examples/demo/tiny_model)")
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="directory with samples-*.jsonl (every *.jsonl is read) and optionally manifest.json")
    parser.add_argument("--out", type=Path, required=True,
                        help="output directory: adapter/, base/ (unless --base), result.json, train_log.jsonl")
    parser.add_argument("--base", type=Path, default=None,
                        help="read base weights from this saved model directory instead of --out/base")
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps (default 30)")
    parser.add_argument("--seed", type=int, default=0, help="training seed: LoRA init and data order (default 0)")
    parser.add_argument("--base-seed", type=int, default=1234,
                        help="seed for creating the base weights from the config (default 1234)")
    parser.add_argument("--qlora", choices=["auto", "on", "off"], default="auto",
                        help="4-bit QLoRA: auto = when bitsandbytes and CUDA are present; on = required (default auto)")
    parser.add_argument("--max-seconds", type=float, default=0.0,
                        help="stop after the step that passes this many training seconds (0 = no limit)")
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per rank per step (default 8)")
    parser.add_argument("--lr", type=float, default=1e-2, help="AdamW learning rate (default 1e-2)")
    parser.add_argument("--lora-r", type=int, default=8, help="LoRA rank (default 8)")
    parser.add_argument("--train-head", action=argparse.BooleanOptionalAction, default=True,
                        help="also train a full copy of lm_head inside the adapter (peft modules_to_save); the "
                             "random base's small output layer otherwise caps how far the loss can fall (default on)")
    parser.add_argument("--max-len", type=int, default=192, help="max tokens per sample, longer ones are cut (default 192)")
    parser.add_argument("--log-every", type=int, default=10, help="progress line on stderr every N steps (default 10)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.batch_size < 1 or args.lora_r < 1 or args.max_len < 8:
        parser.error("--steps, --batch-size and --lora-r must be >= 1 and --max-len >= 8")
    return args


@dataclass
class Dist:
    world_size: int
    rank: int
    local_rank: int
    backend: str | None
    device: Any  # torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError as exc:
        raise dc.DemoError(f"environment variable {name}={value!r} is not an integer") from exc


def setup_distributed() -> Dist:
    """Join the process group when WORLD_SIZE > 1 (torchrun / PyTorchJob env)."""
    import torch
    import torch.distributed as dist

    world_size = env_int("WORLD_SIZE", 1)
    rank = env_int("RANK", 0)
    local_rank = env_int("LOCAL_RANK", 0)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    backend = None
    if world_size > 1:
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if not os.environ.get(name):
                raise dc.DemoError(f"WORLD_SIZE={world_size} but {name} is not set (run under torchrun or a PyTorchJob)")
        backend = "nccl" if cuda else "gloo"
        dist.init_process_group(backend=backend, init_method="env://")
    return Dist(world_size, rank, local_rank, backend, device)


def barrier(d: Dist) -> None:
    if d.world_size > 1:
        import torch.distributed as dist
        dist.barrier()


# --------------------------------------------------------------------------
# Storage path: read and verify the sample files
# --------------------------------------------------------------------------

def read_sample_file(path: Path) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Read one jsonl file, hashing it as it streams in; return records and report."""
    digest = hashlib.sha256()
    chunks: list[bytes] = []
    with path.open("rb") as handle:
        while chunk := handle.read(dc.READ_CHUNK):
            digest.update(chunk)
            chunks.append(chunk)
    data = b"".join(chunks)
    records: list[dict[str, str]] = []
    try:
        lines = list(dc.iter_lines_bytes(data))
    except UnicodeDecodeError as exc:
        raise dc.DemoError(f"sample file is not UTF-8: {path}: {exc}") from exc
    for number, line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise dc.DemoError(f"bad JSON in {path}:{number}: {exc}") from exc
        if not (isinstance(record, dict) and isinstance(record.get("instruction"), str)
                and isinstance(record.get("response"), str)):
            raise dc.DemoError(f"{path}:{number}: record needs string fields 'instruction' and 'response'")
        records.append(record)
    report = {"path": path.name, "bytes": len(data), "sha256": digest.hexdigest(), "records": len(records)}
    return records, report


def read_samples(data_dir: Path) -> tuple[list[dict[str, str]], list[dict[str, Any]], float]:
    """Read every *.jsonl in data_dir (sorted by name); return records, reports, seconds."""
    if not data_dir.is_dir():
        raise dc.DemoError(f"data directory missing: {data_dir}")
    paths = sorted(data_dir.glob("*.jsonl"))
    if not paths:
        raise dc.DemoError(f"no *.jsonl sample files in {data_dir} (run make_samples.py --out {data_dir})")
    start = time.perf_counter()
    records: list[dict[str, str]] = []
    reports: list[dict[str, Any]] = []
    for path in paths:
        file_records, report = read_sample_file(path)
        records.extend(file_records)
        reports.append(report)
    return records, reports, time.perf_counter() - start


def check_manifest(data_dir: Path, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Compare what was read with manifest.json; raise on any mismatch."""
    path = data_dir / "manifest.json"
    if not path.exists():
        dc.log(f"warning: no manifest.json in {data_dir}; sample files not checked")
        return {"checked": False, "ok": None, "unlisted": []}
    manifest = dc.read_json(path, "sample manifest")
    entries = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and {"path", "bytes", "sha256"} <= e.keys()
                                               for e in entries):
        raise dc.DemoError(f"bad manifest {path}: needs a 'files' list of {{path, bytes, sha256}} objects")
    read = {r["path"]: r for r in reports}
    problems: list[str] = []
    for entry in entries:
        got = read.get(entry["path"])
        if got is None:
            problems.append(f"{entry['path']}: listed in the manifest but missing")
        elif got["bytes"] != entry["bytes"]:
            problems.append(f"{entry['path']}: {got['bytes']} bytes read, manifest says {entry['bytes']}")
        elif got["sha256"] != entry["sha256"]:
            problems.append(f"{entry['path']}: sha256 {got['sha256']} read, manifest says {entry['sha256']}")
    if problems:
        raise dc.DemoError(f"sample files do not match {path}: " + "; ".join(problems))
    listed = {e["path"] for e in entries}
    unlisted = sorted(set(read) - listed)
    if unlisted:
        dc.log(f"warning: files not in the manifest were read too: {', '.join(unlisted)}")
    return {"checked": True, "ok": True, "unlisted": unlisted}


# --------------------------------------------------------------------------
# Base model and LoRA
# --------------------------------------------------------------------------

def resolve_qlora(mode: str, cuda: bool) -> bool:
    """Decide on 4-bit QLoRA; `on` without bitsandbytes + CUDA is an error."""
    if mode == "off":
        return False
    try:
        importlib.import_module("bitsandbytes")
        have_bnb = True
    except Exception:  # ImportError, or a broken CUDA setup inside bitsandbytes
        have_bnb = False
    if have_bnb and cuda:
        return True
    if mode == "on":
        missing = " and ".join(x for x, ok in (("bitsandbytes", have_bnb), ("a CUDA device", cuda)) if not ok)
        raise dc.DemoError(f"--qlora on needs bitsandbytes and a CUDA device; missing: {missing} "
                           "(use --qlora auto or off for plain LoRA)")
    return False


def base_marker(base_seed: int) -> dict[str, Any]:
    return {"created_by": "examples/demo/finetune_lora.py", "base_seed": base_seed}


def base_present(base_dir: Path) -> bool:
    return (base_dir / "config.json").is_file() and any(base_dir.glob("*.safetensors"))


def save_base(model: Any, model_dir: Path, base_dir: Path, base_seed: int) -> None:
    base_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(base_dir), safe_serialization=True)
    dc.copy_tokenizer_files(model_dir, base_dir)
    dc.write_json(base_dir / "demo_base.json", base_marker(base_seed))
    dc.make_readable(base_dir)


def check_base_seed(base_dir: Path, base_seed: int) -> None:
    marker = base_dir / "demo_base.json"
    if marker.is_file():
        seen = dc.read_json(marker, "base marker").get("base_seed")
        if seen != base_seed:
            raise dc.DemoError(f"{base_dir} was created with --base-seed {seen}, not {base_seed}; "
                               f"remove it or pass --base-seed {seen}")


def prepare_base(args: argparse.Namespace, d: Dist, qlora: bool) -> tuple[Any, Path, bool]:
    """Return (fp32 CPU model or None when QLoRA, base dir, created_now)."""
    if args.base is not None:
        if not base_present(args.base):
            raise dc.DemoError(f"--base {args.base} is not a saved model (needs config.json and *.safetensors)")
        return (None if qlora else dc.load_model(args.base)), args.base, False
    base_dir = args.out / "base"
    present = base_present(base_dir)
    barrier(d)  # every rank has looked before rank 0 may start writing
    if present:
        check_base_seed(base_dir, args.base_seed)
        return (None if qlora else dc.load_model(base_dir)), base_dir, False
    model = dc.init_base_model(args.model_dir, args.base_seed)
    if d.is_main:
        save_base(model, args.model_dir, base_dir, args.base_seed)
    elif qlora:  # the out dir may not be shared between pods: quantize from a local copy
        base_dir = Path(tempfile.mkdtemp(prefix=f"demo-base-rank{d.rank}-"))
        save_base(model, args.model_dir, base_dir, args.base_seed)
    barrier(d)
    return (None if qlora else model), base_dir, d.is_main


def load_quantized(base_dir: Path, d: Dist) -> Any:
    import torch
    from peft import prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig

    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.bfloat16)
    model = dc.load_model(base_dir, quantization_config=quant, device_map={"": d.device.index or 0},
                          dtype=torch.bfloat16)
    return prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)


def add_lora(model: Any, rank: int, seed: int, train_head: bool) -> Any:
    import torch
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=LORA_TARGETS,
                        bias="none", task_type="CAUSAL_LM",
                        modules_to_save=["lm_head"] if train_head else None)
    torch.manual_seed(seed)  # same LoRA init on every rank and every run
    return get_peft_model(model, config)


# --------------------------------------------------------------------------
# Data batches
# --------------------------------------------------------------------------

def format_example(record: dict[str, str]) -> str:
    """The prompt layout; generate.py uses the same `Q: ...\\nA:` prefix."""
    return f"Q: {record['instruction']}\nA: {record['response']}"


def tokenize(records: list[dict[str, str]], tok: Any, max_len: int) -> list[list[int]]:
    """bos + bytes + eos, cut to max_len tokens."""
    return [(tok.encode(format_example(r)).ids + [dc.EOS_ID])[:max_len] for r in records]


def order_for_epoch(n: int, seed: int, epoch: int) -> list[int]:
    order = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return order


def batch_indices(n: int, step: int, d: Dist, batch_size: int, seed: int) -> list[int]:
    """This rank's sample indices at `step` (global stream over shuffled epochs)."""
    start = (step * d.world_size + d.rank) * batch_size
    out: list[int] = []
    for pos in range(start, start + batch_size):
        epoch, within = divmod(pos, n)
        out.append(order_for_epoch(n, seed, epoch)[within])
    return out


def collate(seqs: list[list[int]], device: Any) -> dict[str, Any]:
    """Right-pad to the longest sequence; pad positions are masked out of the loss."""
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), dc.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device), "labels": labels.to(device)}


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------

@dataclass
class TrainStats:
    steps: int
    first_loss: float
    final_loss: float
    tokens: int
    seconds: float
    stopped_early: bool
    log: list[dict[str, Any]]


def reduce_step(loss: float, tokens: int, stop: bool, d: Dist) -> tuple[float, int, bool]:
    """One collective per step: mean loss, total tokens, any-rank stop flag."""
    if d.world_size == 1:
        return loss, tokens, stop
    import torch
    import torch.distributed as dist

    t = torch.tensor([loss, float(tokens), 1.0 if stop else 0.0], dtype=torch.float64, device=d.device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return float(t[0].item()) / d.world_size, int(t[1].item()), bool(t[2].item() > 0)


def train(model: Any, seqs: list[list[int]], args: argparse.Namespace, d: Dist) -> TrainStats:
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    model.train()
    log: list[dict[str, Any]] = []
    tokens_total = 0
    stopped_early = False
    start = time.perf_counter()
    for step in range(args.steps):
        batch = collate([seqs[i] for i in batch_indices(len(seqs), step, d, args.batch_size, args.seed)], d.device)
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        elapsed = time.perf_counter() - start
        want_stop = args.max_seconds > 0 and elapsed >= args.max_seconds and step + 1 < args.steps
        mean_loss, tokens, stop = reduce_step(float(loss.item()), int(batch["attention_mask"].sum().item()),
                                              want_stop, d)
        tokens_total += tokens
        log.append({"step": step + 1, "loss": mean_loss, "tokens": tokens, "seconds": round(elapsed, 4)})
        if d.is_main and (step == 0 or (step + 1) % args.log_every == 0 or step + 1 == args.steps):
            dc.log(f"step {step + 1}/{args.steps} loss {mean_loss:.4f} elapsed {elapsed:.1f}s")
        if stop:
            stopped_early = True
            if d.is_main:
                dc.log(f"stopping after step {step + 1}: --max-seconds {args.max_seconds} reached")
            break
    seconds = time.perf_counter() - start
    return TrainStats(len(log), log[0]["loss"], log[-1]["loss"], tokens_total, seconds, stopped_early, log)


def ranks_read_same(reports: list[dict[str, Any]], d: Dist) -> bool | None:
    """True when every rank read byte-identical sample files (None: single process)."""
    if d.world_size == 1:
        return None
    import torch.distributed as dist

    mine = hashlib.sha256(json.dumps(reports, sort_keys=True).encode()).hexdigest()
    gathered: list[Any] = [None] * d.world_size
    dist.all_gather_object(gathered, mine)
    return all(g == mine for g in gathered)


def device_name(d: Dist) -> str:
    import torch

    if d.device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(d.device)})"
    return "cpu"


def run(args: argparse.Namespace, d: Dist) -> dict[str, Any]:
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    tok = dc.load_tokenizer(args.model_dir)
    records, reports, read_seconds = read_samples(args.data_dir)
    manifest = check_manifest(args.data_dir, reports)
    same = ranks_read_same(reports, d)
    bytes_read = sum(r["bytes"] for r in reports)
    if d.is_main:
        dc.log(f"read {len(reports)} files, {bytes_read} bytes, {len(records)} records in {read_seconds:.3f}s")

    qlora = resolve_qlora(args.qlora, d.device.type == "cuda")
    if d.is_main:
        args.out.mkdir(parents=True, exist_ok=True)
    model, base_dir, base_created = prepare_base(args, d, qlora)
    model = load_quantized(base_dir, d) if qlora else model.to(d.device)
    model = add_lora(model, args.lora_r, args.seed, args.train_head)
    trainable, total = dc.count_params(model)
    wrapped = model
    if d.world_size > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP
        wrapped = DDP(model, device_ids=[d.device.index] if d.device.type == "cuda" else None)

    stats = train(wrapped, tokenize(records, tok, args.max_len), args, d)

    adapter_dir = args.out / "adapter"
    if d.is_main:
        model.save_pretrained(str(adapter_dir))
        dc.make_readable(adapter_dir)
        with (args.out / "train_log.jsonl").open("w", encoding="utf-8") as handle:
            for entry in stats.log:
                handle.write(json.dumps(entry, sort_keys=True) + "\n")
    barrier(d)
    return {
        "step": STEP,
        "ok": True,
        "files_read": reports,
        "files_count": len(reports),
        "bytes_read": bytes_read,
        "records": len(records),
        "read_seconds": round(read_seconds, 6),
        "manifest_checked": manifest["checked"],
        "manifest_ok": manifest["ok"],
        "unlisted_files": manifest["unlisted"],
        "ranks_read_same": same,
        "steps": stats.steps,
        "steps_requested": args.steps,
        "stopped_early": stats.stopped_early,
        "first_loss": round(stats.first_loss, 6),
        "final_loss": round(stats.final_loss, 6),
        "tokens": stats.tokens,
        "tokens_per_s": round(stats.tokens / stats.seconds, 1) if stats.seconds > 0 else None,
        "seconds": round(stats.seconds, 3),
        "device": device_name(d),
        "world_size": d.world_size,
        "backend": d.backend,
        "qlora": qlora,
        "train_head": args.train_head,
        "seed": args.seed,
        "base_seed": args.base_seed,
        "base_dir": str(base_dir),
        "base_created": base_created,
        "adapter_dir": str(adapter_dir),
        "trainable_params": trainable,
        "base_params": total - trainable,
        "torch_threads": torch.get_num_threads(),
        "versions": dc.versions(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    is_main = os.environ.get("RANK", "0") in ("", "0")
    try:
        d = setup_distributed()
        try:
            result = run(args, d)
        finally:
            if d.world_size > 1:
                import torch.distributed as dist
                dist.destroy_process_group()
    except dc.DemoError as exc:
        if is_main:
            return dc.fail(STEP, str(exc))
        print(f"error (rank {os.environ.get('RANK')}): {exc}", file=sys.stderr)
        return 2
    if d.is_main:
        dc.write_json(args.out / "result.json", result)
        dc.emit_result(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
