#!/usr/bin/env python3
"""The Python side of orch's side-by-side benchmarks: torchvision ResNet50 trained on synthetic
data with PyTorch's own API, configured like the matching orch run (same batch, optimizer,
warm-up and measured steps), timed the same way: synchronise, run the measured steps, synchronise.
bench/run's suites `orch-vs-pytorch` and `fused-vs-compile` call it.

    python3 bench/baselines/pytorch_resnet50.py --precision amp-bf16 --channels-last --batch 256
    python3 bench/baselines/pytorch_resnet50.py --precision amp-bf16 --channels-last --stream copy-overlap

`--stream` mirrors orch's stream strategies in plain PyTorch, over two synthetic batches like
orch's bench (`data.batches: 2`):
  device        batches already on the GPU (orch: default, data.location=device)
  pinned        batches in pinned host memory, copied on the compute stream each step
                (orch: default, data.location=pinned)
  copy-overlap  the next batch copied from pinned memory on a side stream while this step
                computes; compute waits on an event (orch: copy-overlap)
  cuda-graph    the whole step captured with torch.cuda.graph after 3 eager steps on a side
                stream, replayed on static inputs (orch: cuda-graph)
  multi-stream  the batch split in two halves whose forward passes run on two streams, one
                backward and one optimizer step (orch: multi-stream, streams: 2)

`--compile default|max-autotune|...` wraps the model in torch.compile (with `--stream device`
only); compilation happens in the warm-up steps and shows in "first_step_s" (the time of
the first step). max-autotune compiles ResNet50 training for many minutes per shape, so
nothing uses it by default.

`--device cpu` with `--model resnet18` and a small `--batch`/`--image-size` runs the same code on
a CPU (`bench/run --device cpu --smoke`): a check of the plumbing, not a measurement.

Prints one JSON line: {"precision": ..., "stream": ..., "images_per_s": ..., ...}.
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
    ap.add_argument("--stream", choices=["device", "pinned", "copy-overlap", "cuda-graph", "multi-stream"],
                    default="device")
    ap.add_argument("--compile", default="none",
                    help="torch.compile mode (default, reduce-overhead, max-autotune, ...); none = eager")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--model", default="resnet50", help="a torchvision.models constructor")
    args = ap.parse_args()
    if args.compile != "none" and args.stream != "device":
        raise SystemExit("--compile is only combined with --stream device")

    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    # fp32 means fp32: TF32 off for matmul and convolutions (orch's fp32 plugin does the same).
    tf32 = args.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32 or args.precision.startswith("amp")
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format

    model = getattr(torchvision.models, args.model)().to(dev).to(memory_format=fmt)
    if args.compile != "none":
        model = torch.compile(model, mode=args.compile)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4, foreach=True)
    shape = (args.batch, 3, args.image_size, args.image_size)
    host = args.stream in ("pinned", "copy-overlap")
    batches = []
    for _ in range(2):
        x, y = torch.randn(shape), torch.randint(1000, (args.batch,))
        if host:
            batches.append((x.pin_memory(), y.pin_memory()))
        else:
            batches.append((x.to(dev).to(memory_format=fmt), y.to(dev)))
    amp_dtype = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(args.precision)
    scaler = torch.amp.GradScaler(dev.type, enabled=args.precision == "amp-fp16")
    loss_fn = torch.nn.CrossEntropyLoss()
    counter = [0]

    def next_batch():
        b = batches[counter[0] % len(batches)]
        counter[0] += 1
        return b

    def to_device(b, non_blocking=False):
        x, y = b
        return x.to(dev, non_blocking=non_blocking).to(memory_format=fmt), y.to(dev, non_blocking=non_blocking)

    def forward_loss(x, y):
        with torch.autocast(dev.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            return loss_fn(model(x), y)

    def train_step(x, y) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = forward_loss(x, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach()

    if args.stream in ("device", "pinned"):
        def step() -> torch.Tensor:
            return train_step(*to_device(next_batch()))
    elif args.stream == "copy-overlap":
        copy_stream = torch.cuda.Stream()
        pending = []

        def prefetch():
            with torch.cuda.stream(copy_stream):
                x, y = to_device(next_batch(), non_blocking=True)
                ev = torch.cuda.Event()
                ev.record(copy_stream)
            pending.append((x, y, ev))

        def step() -> torch.Tensor:
            if not pending:
                prefetch()
            x, y, ev = pending.pop(0)
            cur = torch.cuda.current_stream()
            cur.wait_event(ev)
            x.record_stream(cur)
            y.record_stream(cur)
            prefetch()
            return train_step(x, y)
    elif args.stream == "cuda-graph":
        if args.precision == "amp-fp16":
            raise SystemExit("cuda-graph here is for bf16/fp32/tf32 (GradScaler syncs the host)")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        static_x, static_y = (t.clone() for t in next_batch())
        with torch.cuda.stream(side):
            for _ in range(3):
                train_step(static_x, static_y)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = train_step(static_x, static_y)

        def step() -> torch.Tensor:
            x, y = next_batch()
            static_x.copy_(x, non_blocking=True)
            static_y.copy_(y, non_blocking=True)
            graph.replay()
            return static_loss.clone()
    else:  # multi-stream
        streams = [torch.cuda.Stream() for _ in range(2)]

        def step() -> torch.Tensor:
            x, y = next_batch()
            opt.zero_grad(set_to_none=True)
            main = torch.cuda.current_stream()
            losses = []
            for s, xi, yi in zip(streams, x.chunk(2), y.chunk(2)):
                s.wait_stream(main)
                with torch.cuda.stream(s):
                    losses.append(forward_loss(xi, yi))
            for s in streams:
                main.wait_stream(s)
            loss = torch.stack(losses).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss.detach()

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    t_first = time.perf_counter()
    compile_s = None
    for i in range(args.warmup):
        step()
        if i == 0:
            sync()
            compile_s = time.perf_counter() - t_first
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(args.measure):
        step()
    sync()
    dt = time.perf_counter() - t0
    print(json.dumps({
        "side": "pytorch", "precision": args.precision, "stream": args.stream,
        "channels_last": args.channels_last, "compile": args.compile,
        "first_step_s": compile_s,
        "batch": args.batch, "images_per_s": args.batch * args.measure / dt,
        "step_ms": 1000 * dt / args.measure,
        "peak_allocated_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
        "torch": torch.__version__, "gpu": torch.cuda.get_device_name() if cuda else None,
    }))


if __name__ == "__main__":
    main()
