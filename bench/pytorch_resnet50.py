#!/usr/bin/env python3
"""The Python side of orch's side-by-side benchmarks: torchvision ResNet50 trained on synthetic
data with PyTorch's own API, configured like the matching orch run (same batch, optimizer,
warm-up and measured steps), timed the same way: synchronise, run the measured steps, synchronise.

    python3 bench/pytorch_resnet50.py --precision amp-bf16 --channels-last --batch 256

Prints one JSON line: {"precision": ..., "images_per_s": ..., "step_ms": ..., ...}.
"""
import argparse
import json
import time

import torch
import torchvision


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--precision", choices=["fp32", "tf32", "amp-bf16", "amp-fp16"], default="amp-bf16")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--measure", type=int, default=40)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()

    dev = torch.device("cuda")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    # fp32 means fp32: TF32 off for matmul and convolutions (orch's fp32 plugin does the same).
    tf32 = args.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32 or args.precision.startswith("amp")
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format

    model = torchvision.models.resnet50().to(dev).to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4, foreach=True)
    images = torch.randn(args.batch, 3, args.image_size, args.image_size, device=dev).to(memory_format=fmt)
    labels = torch.randint(1000, (args.batch,), device=dev)
    amp_dtype = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(args.precision)
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "amp-fp16")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = loss_fn(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(args.measure):
        step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(json.dumps({
        "side": "pytorch", "precision": args.precision, "channels_last": args.channels_last,
        "batch": args.batch, "images_per_s": args.batch * args.measure / dt,
        "step_ms": 1000 * dt / args.measure,
        "peak_allocated_gib": torch.cuda.max_memory_allocated() / 2**30,
        "torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
    }))


if __name__ == "__main__":
    main()
