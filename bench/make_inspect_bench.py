"""
Big checkpoints for bench/inspect.ts, written SPARSE (real headers, data as holes: no disk cost):

    /tmp/venv/bin/python bench/make_inspect_bench.py OUT

- OUT/sharded/: a ~5 GB Llama-shaped (hidden 2560, 32 layers, vocab 32000) bf16 checkpoint in 5 safetensors shards
  and model.safetensors.index.json, as save_pretrained lays it out. Each shard's header is written in the
  safetensors format (8-byte LE length, JSON padded with spaces to 8 bytes, `__metadata__: {"format": "pt"}`), then
  the file is extended to its full size with truncate: the data is a hole. The safetensors library reads it back
  (the bench's baseline does, over ssh).
- OUT/train.pt: a ~3 GB torch archive (1.5 B bf16 parameters, 28 layers) written by torch.save itself under
  torch.serialization.skip_data() from torch.empty tensors: torch's own writer lays out the zip and seeks over
  every storage's bytes, so the file is sparse.
Prints a JSON line: what was written (files, sizes, tensors, params).
"""
import json
import os
import struct
import sys

import torch

out = sys.argv[1]
os.makedirs(os.path.join(out, "sharded"), exist_ok=True)


def llama(hidden, layers, inter, vocab):
    shapes = [("model.embed_tokens.weight", [vocab, hidden])]
    for i in range(layers):
        p = f"model.layers.{i}"
        for n in ["q_proj", "k_proj", "v_proj", "o_proj"]:
            shapes.append((f"{p}.self_attn.{n}.weight", [hidden, hidden]))
        for n, s in [("gate_proj", [inter, hidden]), ("up_proj", [inter, hidden]), ("down_proj", [hidden, inter])]:
            shapes.append((f"{p}.mlp.{n}.weight", s))
        shapes.append((f"{p}.input_layernorm.weight", [hidden]))
        shapes.append((f"{p}.post_attention_layernorm.weight", [hidden]))
    shapes.append(("model.norm.weight", [hidden]))
    shapes.append(("lm_head.weight", [vocab, hidden]))
    return shapes


def numel(s):
    n = 1
    for d in s:
        n *= d
    return n


# 1. Sharded safetensors, ~5.4 GB: shards of at most a fifth of the total (a greedy split by size, as save_pretrained makes).
shapes = llama(2560, 32, 6912, 32000)
total = sum(numel(s) * 2 for _, s in shapes)
limit = total // 5 + 1
shards, cur, size = [], [], 0
for name, s in shapes:
    b = numel(s) * 2
    if cur and size + b > limit:
        shards.append(cur)
        cur, size = [], 0
    cur.append((name, s))
    size += b
shards.append(cur)
names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
weight_map = {}
files = {}
for fname, part in zip(names, shards):
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, s in sorted(part):
        b = numel(s) * 2
        header[name] = {"dtype": "BF16", "shape": s, "data_offsets": [off, off + b]}
        off += b
        weight_map[name] = fname
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path = os.path.join(out, "sharded", fname)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + off)
    files[fname] = os.path.getsize(path)
with open(os.path.join(out, "sharded", "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)

# 2. A torch archive of ~3 GB: torch.save's own layout, storages skipped (holes).
tshapes = llama(2048, 28, 5632, 32000)
sd = {name: torch.empty(*s, dtype=torch.bfloat16) for name, s in tshapes}
with torch.serialization.skip_data():
    torch.save({"model": sd, "global_step": 20000, "epoch": 2}, os.path.join(out, "train.pt"))
tp = os.path.join(out, "train.pt")
print(json.dumps({
    "sharded": {"files": files, "bytes": sum(files.values()), "tensors": len(shapes), "params": total // 2},
    "torch": {"bytes": os.path.getsize(tp), "disk": os.stat(tp).st_blocks * 512, "tensors": len(tshapes), "params": sum(numel(s) for _, s in tshapes)},
    "torch_version": torch.__version__,
}))
