#!/usr/bin/env python3
"""torchvision ResNet training with the seed article's tips as switches, measured by orch_workload.

Standalone it trains for --warmup + --measure steps and prints one summary line; started by
`orch sweep` / `orch exec` (a `kind: script` workload) it takes the batch size, the steps, the
device and the seed from the run and writes orch's report, so orch ranks it beside its own runs.
Every switch is `--<name> <value>`, booleans `true`/`false`: the form orch passes an experiment's
`args` in (docs/script-workloads.md).

    python examples/pytorch/train.py --model resnet18 --image_size 64 --batch_size 32 \\
        --device cpu --warmup 2 --measure 5
    orch sweep experiments/pytorch-article.yaml

The tips (the article's numbering, see experiments/article.yaml for orch's own ladder):
  3  --cudnn_benchmark      cuDNN times every convolution algorithm once per shape
  4  --amp fp16|bf16        autocast (fp16 with a GradScaler, tip 6), --channels_last (NHWC)
  5  --workers, --pin_memory, --prefetch, --persistent_workers   the DataLoader's settings
  6  zero_grad(set_to_none=True), always
  11 --cuda_graph           the whole step captured once and replayed (torch.cuda.graphs)
     --compile MODE         torch.compile (default, reduce-overhead, max-autotune)
"""

import argparse
import os
import sys

import torch
import torchvision

try:
    import orch_workload
except ImportError:  # run from a checkout without orch's PYTHONPATH: the module lies beside us
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import orch_workload

MODELS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def boolean(text):
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true or false)")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=MODELS, default="resnet50")
    p.add_argument("--data", default="synthetic",
                   help="synthetic (random images through a DataLoader), synthetic-device "
                        "(random batches made once on the device, no DataLoader: orch's "
                        "`synthetic` plugin), or an image folder (`orch dataset make`'s: "
                        "DIR/train/<class>/ or DIR/<class>/)")
    p.add_argument("--image_size", type=int, default=224)
    p.add_argument("--classes", type=int, default=1000, help="classes of synthetic data")
    p.add_argument("--amp", choices=("off", "fp16", "bf16"), default="off")
    p.add_argument("--channels_last", type=boolean, default=False)
    p.add_argument("--cudnn_benchmark", type=boolean, default=False)
    p.add_argument("--workers", type=int, default=4, help="DataLoader worker processes")
    p.add_argument("--pin_memory", type=boolean, default=True)
    p.add_argument("--prefetch", type=int, default=2,
                   help="batches each worker prepares ahead (prefetch_factor)")
    p.add_argument("--persistent_workers", type=boolean, default=True)
    p.add_argument("--compile", choices=("off", "default", "reduce-overhead", "max-autotune"),
                   default="off")
    p.add_argument("--cuda_graph", type=boolean, default=False,
                   help="capture the whole training step once, after the warm-up, and replay it")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight_decay", type=float, default=1e-4)
    # Standalone only: under orch the run's batch size, steps, device and seed are used.
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--measure", type=int, default=50)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.image_size < 16:
        p.error(f"--image_size {a.image_size}: at least 16 (ResNet downsamples 32x)")
    if a.workers < 0 or a.prefetch < 1:
        p.error("--workers must be >= 0 and --prefetch >= 1")
    return p, a


def check_combinations(p, a, run):
    """The switches that cannot go together, refused before anything is built."""
    cuda = run.device.startswith("cuda")
    if a.cuda_graph:
        if not cuda:
            p.error("--cuda_graph true needs a CUDA device (the run's device is "
                    f"{run.device})")
        if a.compile != "off":
            p.error(f"--cuda_graph true with --compile {a.compile}: torch.compile makes its own "
                    "graphs (mode reduce-overhead); use one or the other")
        if a.amp == "fp16":
            p.error("--cuda_graph true with --amp fp16: GradScaler's step reads the gradients' "
                    "inf check on the host, which a captured graph cannot; use --amp bf16")
        if run.warmup_steps < 2:
            p.error(f"--cuda_graph true needs at least 2 warm-up steps (eager steps on a side "
                    f"stream before the capture); the run has {run.warmup_steps}")
    if a.amp == "bf16" and cuda and not torch.cuda.is_bf16_supported():
        p.error("--amp bf16: this GPU has no bfloat16 support; use --amp fp16")


class RandomImages(torch.utils.data.Dataset):
    """Decoded-looking images without a disk: a pool of random uint8 HWC images made once from
    the seed; each item is converted to a normalised float CHW tensor, the work ToTensor and
    Normalize do for a decoded JPEG, so the DataLoader switches have something to overlap."""

    def __init__(self, size, classes, seed, length, pool=64):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.randint(0, 256, (pool, size, size, 3), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, classes, (length,), generator=g)
        self.mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
        self.std = torch.tensor(IMAGENET_STD).view(3, 1, 1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        image = self.images[i % len(self.images)].permute(2, 0, 1).float().div_(255)
        return (image - self.mean) / self.std, self.labels[i]


def image_folder(root, size):
    if not os.path.isdir(root):
        raise SystemExit(f"train.py: --data {root}: no such folder (allowed: synthetic, "
                         "synthetic-device, or a folder of class folders of images)")
    train = os.path.join(root, "train")
    t = torchvision.transforms
    # The augmentation of orch's imagefolder loader (docs/plugins.md), torchvision's own.
    transform = t.Compose([t.RandomResizedCrop(size), t.RandomHorizontalFlip(), t.ToTensor(),
                           t.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    return torchvision.datasets.ImageFolder(train if os.path.isdir(train) else root, transform)


def batches_forever(loader):
    while True:
        yield from loader


def make_batches(a, run):
    """An endless iterator of (images, labels) on the host (a DataLoader), or on the device for
    synthetic-device; and the number of classes."""
    device = torch.device(run.device)
    if a.data == "synthetic-device":
        g = torch.Generator().manual_seed(run.seed)
        made = [(torch.randn(run.batch_size, 3, a.image_size, a.image_size, generator=g),
                 torch.randint(0, a.classes, (run.batch_size,), generator=g)) for _ in range(4)]
        # Laid out as the model wants them once, as orch's synthetic loader does, so no step
        # converts them.
        layout = torch.channels_last if a.channels_last else torch.contiguous_format
        made = [(x.to(device).contiguous(memory_format=layout), y.to(device)) for x, y in made]
        return (made[i % len(made)] for i in range(2**62)), a.classes, None
    if a.data == "synthetic":
        dataset, classes = RandomImages(a.image_size, a.classes, run.seed,
                                        100 * run.batch_size), a.classes
    else:
        dataset = image_folder(a.data, a.image_size)
        classes = len(dataset.classes)
        if len(dataset) < run.batch_size:
            raise SystemExit(f"train.py: --data {a.data}: {len(dataset)} images, fewer than "
                             f"one batch of {run.batch_size}")
    workers = a.workers
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=run.batch_size, shuffle=True, drop_last=True, num_workers=workers,
        pin_memory=a.pin_memory and device.type == "cuda",
        prefetch_factor=a.prefetch if workers > 0 else None,
        persistent_workers=a.persistent_workers and workers > 0,
        generator=torch.Generator().manual_seed(run.seed))
    return batches_forever(loader), classes, loader


def main(argv):
    p, a = parse_args(argv)
    run = orch_workload.start(batch_size=a.batch_size, warmup=a.warmup, measure=a.measure,
                              device=a.device, seed=a.seed)
    check_combinations(p, a, run)
    torch.manual_seed(run.seed)
    device = torch.device(run.device)
    torch.backends.cudnn.benchmark = a.cudnn_benchmark
    batches, classes, loader = make_batches(a, run)

    memory_format = torch.channels_last if a.channels_last else torch.contiguous_format
    model = torchvision.models.get_model(a.model, num_classes=classes)
    model = model.to(device, memory_format=memory_format)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum,
                                weight_decay=a.weight_decay)
    criterion = torch.nn.CrossEntropyLoss()
    amp_dtype = {"off": None, "fp16": torch.float16, "bf16": torch.bfloat16}[a.amp]
    scaler = torch.amp.GradScaler(device.type, enabled=a.amp == "fp16")
    forward = model if a.compile == "off" else torch.compile(
        model, mode=None if a.compile == "default" else a.compile)
    non_blocking = a.pin_memory and device.type == "cuda"

    def to_device(images, labels):
        images = images.to(device, non_blocking=non_blocking)
        return (images.contiguous(memory_format=memory_format),
                labels.to(device, non_blocking=non_blocking))

    def train_step(images, labels):
        optimizer.zero_grad(set_to_none=True)
        # Inside a CUDA graph capture the autocast cache must be off (torch.cuda.graphs' notes).
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None,
                            cache_enabled=not a.cuda_graph):
            logits = forward(images)
            loss = criterion(logits, labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach(), logits

    graph = static = None
    side = torch.cuda.Stream() if a.cuda_graph else None
    for step in run.steps():
        with run.data_wait():
            images, labels = next(batches)
        pinned = step == 0 and images.device.type == "cpu" and images.is_pinned()
        images, labels = to_device(images, labels)
        if graph is not None:
            static[0].copy_(images, non_blocking=True)
            static[1].copy_(labels, non_blocking=True)
            graph.replay()
            loss = static[2].clone()  # the graph overwrites its output at the next replay
        elif a.cuda_graph:
            # Eager warm-up steps on a side stream, as a capture needs; after the last one, the
            # capture (it records the step, it does not run it, so no step is lost or doubled).
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                loss, logits = train_step(images, labels)
            torch.cuda.current_stream().wait_stream(side)
            if step == run.warmup_steps - 1:
                static = [images.clone(), labels.clone(), None]
                graph = torch.cuda.CUDAGraph()
                optimizer.zero_grad(set_to_none=True)
                # thread_local: the DataLoader's pin-memory thread allocates pinned memory
                # (cudaHostAlloc) while we capture, which invalidates a "global" capture.
                with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                    static[2], _ = train_step(static[0], static[1])
        else:
            loss, logits = train_step(images, labels)
        counters = None
        if step == 0:
            # What the switches did, read from the tensors themselves (recorded once: a counter
            # keeps its last value).
            first_conv = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d))
            counters = {
                "channels_last": images.is_contiguous(memory_format=torch.channels_last)
                and first_conv.weight.is_contiguous(memory_format=torch.channels_last),
                "autocast_fp16": logits.dtype == torch.float16,
                "autocast_bf16": logits.dtype == torch.bfloat16,
                "grad_scaler": scaler.is_enabled(),
                "workers": loader.num_workers if loader is not None else 0,
                "pinned_batches": pinned,
                "compiled": a.compile != "off",
                "cuda_graph": a.cuda_graph,
            }
        run.record(loss=loss, counters=counters)
    run.finish()


if __name__ == "__main__":
    main(sys.argv[1:])
