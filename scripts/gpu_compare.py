#!/usr/bin/env python3
"""The GPU targets as table rows, from the JSON lines of scripts/gpu_check.sh's logs: ropelab's
benches (`ropelab bench ... --json`) beside the PyTorch peers' (scripts/gpu_peers.py), matched
on the same case (dtype, bias, window, sinks, T; the training model by its parameter count).

  scripts/gpu_compare.py LOG...     one markdown row per comparison: | target | verdict | figures |

Targets (each verdict "met", "missed", or "no data" where a side has no row or an error):
  rotary     fused at most 1.0x the additive baseline, and faster than TorchScript, per shape and dtype
  sdpa       ropelab `auto` without a bias within 1.1x of F.scaled_dot_product_attention
  biased     ropelab's chunked kernel within 2x of compiled FlexAttention, per bias, window and T
  long       131072 tokens of forward under 2 GiB of device memory
  train      bf16 at least 1.5x fp32 at the GPU-sized model, ropelab's tokens/s at least the peer's
"""
import json
import sys


def rows_of(paths):
    rows = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("{"):
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    return rows


def number(x):
    """A finite positive timing, or None (-1 marks a case not run; errors carry no timing)."""
    return x if isinstance(x, (int, float)) and x > 0 else None


def row(target, verdict, figures):
    return f"| {target} | {verdict} | {figures} |"


def verdict(ok):
    return "no data" if ok is None else "met" if ok else "missed"


def rotary_rows(rows):
    out = []
    for r in rows:
        if r.get("bench") != "rotary" or r.get("method") != "additive" or r.get("device", "").startswith("cpu"):
            continue
        case = [x for x in rows if x.get("bench") == "rotary" and x.get("shape") == r["shape"] and
                x.get("dtype") == r["dtype"] and x.get("device") == r["device"]]
        by = {x["method"]: number(x.get("median_ms")) for x in case}
        fused, script, additive = by.get("fused"), by.get("script"), by.get("additive")
        ok = None if None in (fused, script, additive) else fused <= additive and fused < script
        figures = ", ".join(f"{m} {t:.3f} ms" for m, t in by.items() if t)
        if fused and additive:
            figures += f"; fused / additive {fused / additive:.2f}x"
        out.append(row(f"rotary {r['shape']} {r['dtype']}", verdict(ok), figures))
    return out


def same_case(ours, peer):
    return all(ours.get(k, 0) == peer.get(k, 0) for k in ("window", "sinks")) and ours.get("T") == peer.get("T")


def attention_rows(rows):
    out = []
    ours = [r for r in rows if r.get("bench") == "attention" and r.get("dtype") in ("bfloat16", "float16")]
    peers = [r for r in rows if r.get("bench") == "peer_attention" and "skipped" not in r]
    for peer in peers:
        dtype = peer.get("dtype")
        if peer.get("peer") == "sdpa":
            mine = [r for r in ours if r.get("bias") == "none" and r.get("dtype") == dtype and same_case(r, peer)]
            column, target, limit = "softmax_ms", "sdpa", 1.1
        else:
            mine = [r for r in ours if r.get("bias") == peer.get("bias") and r.get("dtype") == dtype and
                    r.get("pass") == "forward+backward" and same_case(r, peer)]
            column, target, limit = "chunked_ms", "biased", 2.0
        theirs = number(peer.get("median_ms"))
        mine_ms = number(mine[0].get(column)) if mine else None
        ok = None if mine_ms is None or theirs is None else mine_ms <= limit * theirs
        case = f"{peer.get('bias')} T={peer.get('T')}" + (
            f" window {peer['window']} sinks {peer.get('sinks', 0)}" if peer.get("window") else "")
        figures = (f"ropelab {mine_ms:.2f} ms, {peer.get('peer')} {theirs:.2f} ms: {mine_ms / theirs:.2f}x (target "
                   f"<= {limit}x)") if ok is not None else f"ropelab {mine_ms}, peer {theirs or peer.get('error')}"
        out.append(row(f"{target} {dtype} {case}", verdict(ok), figures))
    for r in rows:
        if r.get("bench") == "attention" and r.get("pass") == "forward" and r.get("T", 0) >= 131072:
            peak = number(r.get("chunked_peak_mib"))
            out.append(row(f"long T={r['T']} {r.get('dtype')} {r.get('bias')}", verdict(None if peak is None else
                                                                                        peak < 2048),
                           f"forward {r.get('chunked_ms', -1):.0f} ms, peak {peak} MiB (target < 2048)"))
    return out


def train_rows(rows):
    out = []
    peers = {r.get("precision"): r for r in rows if r.get("bench") == "peer_train" and "skipped" not in r}
    if not peers:
        return out
    size = next(iter(peers.values())).get("parameters")
    ours = {r.get("precision"): r for r in rows if r.get("bench") == "train" and r.get("parameters") == size}
    for precision in ("fp32", "bf16"):
        mine, theirs = ours.get(precision, {}), peers.get(precision, {})
        a, b = number(mine.get("target_tokens_per_s")), number(theirs.get("target_tokens_per_s"))
        ok = None if a is None or b is None else a >= b
        figures = f"ropelab {a:.0f} tok/s, PyTorch {b:.0f} tok/s: {a / b:.2f}x" if ok is not None else \
            f"ropelab {a}, peer {b or theirs.get('error')}"
        out.append(row(f"train {size} parameters {precision}", verdict(ok), figures))
    fp32, bf16 = (number(ours.get(p, {}).get("target_tokens_per_s")) for p in ("fp32", "bf16"))
    ok = None if fp32 is None or bf16 is None else bf16 >= 1.5 * fp32
    out.append(row(f"train {size} parameters bf16 / fp32", verdict(ok),
                   f"{bf16 / fp32:.2f}x (target >= 1.5x)" if ok is not None else "no data"))
    return out


def main(paths):
    if not paths:
        sys.exit("usage: scripts/gpu_compare.py LOG...")
    rows = rows_of(paths)
    for line in rotary_rows(rows) + attention_rows(rows) + train_rows(rows):
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
