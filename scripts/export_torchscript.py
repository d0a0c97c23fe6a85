#!/usr/bin/env python3
"""Exports a torchvision classification model to TorchScript, for orch's `torchscript` model.

    python scripts/export_torchscript.py --model resnet50 --out resnet50.pt
    python scripts/export_torchscript.py --model vit_b_16 --out vit.pt --num-classes 10

The model is compiled with torch.jit.script, not torch.jit.trace: a trace records the ops of
one call, so `self.training` is frozen at the mode it was traced in (BatchNorm would keep using
or never update its running statistics, dropout would stay on or off), while a scripted module
keeps the branch and follows the host's train()/eval(). Weights are random (weights=None):
orch measures speed, and nothing is downloaded.

The archive is checked before it is written: loaded back, it must give N x num_classes logits
for a batch of 2 at --image-size, in training mode, and one SGD step must change them.
Needs torch and torchvision (scripts/setup.sh installs torchvision into orch's venv:
~/.cache/orch/venv-torch-2.11.0/bin/python).
"""

import argparse
import io
import sys

# Models known to script and train cleanly; any other torchvision classification model name is
# tried too (torchvision.models.list_models lists them).
EXAMPLES = ("resnet50", "mobilenet_v3_large", "vit_b_16")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50",
                   help="torchvision model name, e.g. " + ", ".join(EXAMPLES))
    p.add_argument("--out", required=True, help="where to write the .pt archive")
    p.add_argument("--num-classes", type=int, default=1000,
                   help="output classes; must equal the data loader's (data.classes)")
    p.add_argument("--image-size", type=int, default=224,
                   help="side of the square input images the model is checked with; must equal "
                        "data.image_size (vit_b_16 only takes the size it was built for)")
    args = p.parse_args(argv)
    if args.num_classes < 1:
        p.error("--num-classes must be at least 1")
    if args.image_size < 8:
        p.error("--image-size must be at least 8")
    return args


def build(name, num_classes, image_size):
    import torchvision

    known = torchvision.models.list_models(module=torchvision.models)
    if name not in known:
        raise SystemExit(f"export_torchscript: unknown torchvision classification model "
                         f"'{name}'; e.g. {', '.join(EXAMPLES)} (all: {', '.join(sorted(known))})")
    kwargs = {"weights": None, "num_classes": num_classes}
    if name.startswith("vit_"):
        # ViT's position embedding is sized for one image size.
        kwargs["image_size"] = image_size
    return torchvision.models.get_model(name, **kwargs)


def check(scripted, num_classes, image_size):
    """Loads the archive back and checks shape, train/eval and that a step changes outputs."""
    import torch

    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    buf.seek(0)
    m = torch.jit.load(buf)
    m.train()
    x = torch.randn(2, 3, image_size, image_size)
    out = m(x)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, num_classes):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise SystemExit(f"export_torchscript: the scripted model returns {shape} in training "
                         f"mode; orch needs a tensor of shape (2, {num_classes})")
    params = [p for p in m.parameters() if p.requires_grad]
    if not params:
        raise SystemExit("export_torchscript: the scripted model has no trainable parameters")
    opt = torch.optim.SGD(params, lr=0.1)
    before = out.detach().clone()
    torch.nn.functional.cross_entropy(out, torch.tensor([0, 1 % num_classes])).backward()
    opt.step()
    m.eval()
    if torch.equal(m(x).detach(), before):
        raise SystemExit("export_torchscript: an SGD step did not change the model's output")
    return sum(p.numel() for p in params)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import torch

    model = build(args.model, args.num_classes, args.image_size)
    model.train()
    try:
        scripted = torch.jit.script(model)
    except Exception as e:  # TorchScript's errors are plain Exceptions of several types
        raise SystemExit(f"export_torchscript: torch.jit.script failed for {args.model}: {e}")
    n = check(scripted, args.num_classes, args.image_size)
    scripted.save(args.out)
    print(f"wrote {args.out}: {args.model}, {n:,} parameters, {args.num_classes} classes, "
          f"input 3x{args.image_size}x{args.image_size} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
