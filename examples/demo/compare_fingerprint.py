#!/usr/bin/env python3
"""Compare two weight fingerprints (merge_lora.py output) within a tolerance.

A and B may each be a fingerprint.json, a JSON object with a "fingerprint" key
(a saved DEMO-RESULT payload), or a text/log file holding a `DEMO-RESULT {json}`
line of the merge step.

Rule, for every tensor and every stat s in (l2, mean, proj):
    |a.s - b.s| <= rel_tol * max(|a.s|, |b.s|, rms_a, rms_b)
where rms = l2 / sqrt(numel) is the tensor's own scale (so means and
projections near zero are judged against the size of the weights, not against
zero). Tensor names, shapes and param_count must match exactly.

Exit status: 0 = match, 1 = differences (listed on stdout), 2 = unreadable input.
Uses only the Python standard library.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

STATS = ("l2", "mean", "proj")
FORMAT = "demo-fingerprint/1"
PREFIX = "DEMO-RESULT "


class InputError(Exception):
    pass


def extract(obj: Any) -> dict[str, Any] | None:
    if isinstance(obj, dict):
        if obj.get("format") == FORMAT:
            return obj
        if isinstance(obj.get("fingerprint"), dict):
            return extract(obj["fingerprint"])
    return None


def load_fingerprint(path: Path) -> dict[str, Any]:
    """Read a fingerprint from any of the accepted file shapes."""
    if not path.is_file():
        raise InputError(f"fingerprint file missing: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        found = extract(json.loads(text))
        if found is not None:
            return found
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):
        if PREFIX in line:
            try:
                found = extract(json.loads(line.split(PREFIX, 1)[1]))
            except json.JSONDecodeError:
                continue
            if found is not None:
                return found
    raise InputError(f"no {FORMAT} fingerprint in {path}")


def rms(entry: dict[str, Any]) -> float:
    n = int(entry.get("numel", 0))
    return float(entry["l2"]) / math.sqrt(n) if n else 0.0


def compare(a: dict[str, Any], b: dict[str, Any], rel_tol: float) -> tuple[list[str], float, str]:
    """Return (differences, largest relative deviation, where it was)."""
    diffs: list[str] = []
    worst, worst_at = 0.0, ""
    if a.get("param_count") != b.get("param_count"):
        diffs.append(f"param_count: {a.get('param_count')} vs {b.get('param_count')}")
    ta, tb = a.get("tensors", {}), b.get("tensors", {})
    for name in sorted(set(ta) - set(tb)):
        diffs.append(f"{name}: only in A")
    for name in sorted(set(tb) - set(ta)):
        diffs.append(f"{name}: only in B")
    for name in sorted(set(ta) & set(tb)):
        ea, eb = ta[name], tb[name]
        if ea.get("shape") != eb.get("shape"):
            diffs.append(f"{name}: shape {ea.get('shape')} vs {eb.get('shape')}")
            continue
        scale_floor = max(rms(ea), rms(eb))
        for stat in STATS:
            va, vb = float(ea[stat]), float(eb[stat])
            scale = max(abs(va), abs(vb), scale_floor)
            dev = abs(va - vb) / scale if scale > 0 else 0.0
            if dev > worst:
                worst, worst_at = dev, f"{name}.{stat}"
            if dev > rel_tol:
                diffs.append(f"{name}.{stat}: {va!r} vs {vb!r} (relative deviation {dev:.3e})")
    return diffs, worst, worst_at


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", type=Path, help="first fingerprint (e.g. the archived one)")
    parser.add_argument("b", type=Path, help="second fingerprint (e.g. this run's)")
    parser.add_argument("--rel-tol", type=float, default=1e-3,
                        help="allowed relative deviation per stat (default 1e-3; see the rule above)")
    parser.add_argument("--quiet", action="store_true", help="do not print the DEMO-RESULT line")
    args = parser.parse_args(argv)
    if not args.rel_tol >= 0:
        parser.error("--rel-tol must be >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        fa, fb = load_fingerprint(args.a), load_fingerprint(args.b)
    except (InputError, OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if not args.quiet:
            print(PREFIX + json.dumps({"step": "compare", "ok": False, "error": str(exc)}, sort_keys=True,
                                      separators=(",", ":")))
        return 2
    diffs, worst, worst_at = compare(fa, fb, args.rel_tol)
    for line in diffs:
        print(f"DIFF {line}")
    verdict = "match" if not diffs else f"{len(diffs)} difference(s)"
    print(f"fingerprints {verdict}: {len(fa.get('tensors', {}))} tensors, rel-tol {args.rel_tol:g}, "
          f"largest relative deviation {worst:.3e}{' at ' + worst_at if worst_at else ''}")
    if not args.quiet:
        result = {"step": "compare", "ok": not diffs, "rel_tol": args.rel_tol, "differences": len(diffs),
                  "max_rel_dev": worst, "max_rel_dev_at": worst_at}
        print(PREFIX + json.dumps(result, sort_keys=True, separators=(",", ":")))
    return 0 if not diffs else 1


if __name__ == "__main__":
    sys.exit(main())
