#!/usr/bin/env python3
"""torchvision's DataLoader over the same JPEG folder, with the same augmentation as orch's
`imagefolder` loader (RandomResizedCrop(224, scale=(0.08, 1), ratio=(3/4, 4/3)), horizontal flip,
ToTensor, ImageNet Normalize), timed loader-only like `orch dataset bench`: warm-up batches, then
`--batches` batches, img/s. The anchor row: 14 workers, pinned memory, prefetch_factor 3.

    python3 bench/baselines/torchvision_loader.py DATA/jpeg --workers 14 --batch 256

bench/run's suite `loaders` runs it in turns with `orch dataset bench` at each worker count.

Prints one JSON line: {"loader": "torchvision", "workers": ..., "images_per_s": ..., ...}.
"""
import argparse
import json
import os
import time

import torch
import torchvision
from torchvision import transforms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root", help="the folder (ROOT/train/<class>/*.JPEG or ROOT/<class>/*.JPEG)")
    ap.add_argument("--workers", type=int, default=min(16, (os.cpu_count() or 4) - 2))
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--prefetch", type=int, default=3)
    ap.add_argument("--no-pin", action="store_true")
    args = ap.parse_args()
    root = os.path.join(args.root, "train") if os.path.isdir(os.path.join(args.root, "train")) else args.root
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    ds = torchvision.datasets.ImageFolder(root, transform=tf)
    pin = not args.no_pin and torch.cuda.is_available()
    loader = torch.utils.data.DataLoader(
        ds, batch_size=args.batch, shuffle=True, drop_last=True, num_workers=args.workers,
        pin_memory=pin, persistent_workers=args.workers > 0,
        prefetch_factor=args.prefetch if args.workers > 0 else None)

    def batches():
        while True:  # cycle epochs, like orch's loaders
            yield from loader

    it = batches()
    for _ in range(args.warmup):
        next(it)
    t0 = time.perf_counter()
    images = 0
    for _ in range(args.batches):
        x, _ = next(it)
        images += x.shape[0]
    secs = time.perf_counter() - t0
    print(json.dumps({"loader": "torchvision", "workers": args.workers, "batch": args.batch,
                      "batches": args.batches, "pinned": pin, "images": len(ds),
                      "images_per_s": round(images / secs, 1),
                      "ms_per_batch": round(secs * 1000 / args.batches, 2)}), flush=True)


if __name__ == "__main__":
    main()
