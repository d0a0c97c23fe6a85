#!/usr/bin/env python3
"""A JPEG folder cut from photographs, for `bench/run loaders --photos`.

`orch dataset make`'s images are generated: smooth gradients and shapes that compress far better
than photographs and decode faster, so a loader measured on them can look better than it is on
ImageNet. This folder is made of crops of real photographs at ImageNet's sizes instead: each
image a random crop (20-100% of the photograph's area, aspect 3:4 to 4:3, sometimes mirrored)
scaled so its longer side is 333 to 500 pixels, as most ImageNet training images are, and
saved as a baseline JPEG at quality 75-95 with 4:2:0 chroma, as cameras and the web save them.

The photographs are scikit-image's own (`skimage.data`: the astronaut, the cat, the coffee cup,
the rocket, ... shipped inside the package, so nothing is downloaded), or the JPEG/PNG files of
a folder given with --sources. The layout is `orch dataset make`'s: DEST/train/<class>/*.JPEG.
The same seed and sources give the same bytes.

    python3 bench/lib/photo_folder.py DEST --classes 100 --per-class 100 --seed 0
"""
import argparse
import io
import random
import sys
from pathlib import Path

from PIL import Image

# skimage.data's photographs (colour, and one grey: ImageNet holds a few grey images too).
SKIMAGE_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field",
                  "immunohistochemistry", "retina", "camera")


def skimage_photos() -> list[Image.Image]:
    try:
        from skimage import data
    except ImportError as e:
        raise SystemExit("photo_folder.py: scikit-image is not installed: give --sources DIR "
                         "(a folder of photographs) instead") from e
    photos = []
    for name in SKIMAGE_PHOTOS:
        loader = getattr(data, name, None)
        if loader is None:
            continue
        try:
            photos.append(Image.fromarray(loader()))
        except Exception:  # a picture this version would have to download: left out
            continue
    if not photos:
        raise SystemExit("photo_folder.py: no photograph of skimage.data loads without a "
                         "download: give --sources DIR")
    return photos


def folder_photos(sources: Path) -> list[Image.Image]:
    files = sorted(p for p in sources.rglob("*")
                   if p.suffix.lower() in (".jpg", ".jpeg", ".png") and p.is_file())
    if not files:
        raise SystemExit(f"photo_folder.py: no .jpg/.jpeg/.png file under {sources}")
    photos = []
    for p in files:
        with Image.open(p) as im:
            im.load()
            photos.append(im.copy())
    return photos


def crop(photo: Image.Image, rng: random.Random) -> Image.Image:
    """A random crop of 20-100% of the photograph's area, aspect 3:4 to 4:3, its longer side
    scaled to 333-500 pixels."""
    w, h = photo.size
    for _ in range(20):
        area = w * h * rng.uniform(0.2, 1.0)
        aspect = rng.uniform(3 / 4, 4 / 3)
        cw, ch = round((area * aspect) ** 0.5), round((area / aspect) ** 0.5)
        if 16 <= cw <= w and 16 <= ch <= h:
            break
    else:  # the largest crop within the aspect limits
        cw, ch = min(w, round(h * 4 / 3)), min(h, round(w * 4 / 3))
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    out = photo.crop((x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        out = out.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    longer = rng.randint(333, 500)
    scale = longer / max(cw, ch)
    size = (max(1, round(cw * scale)), max(1, round(ch * scale)))
    return out.resize(size, Image.Resampling.BICUBIC)


def make(dest: Path, photos: list[Image.Image], classes: int, per_class: int, seed: int) -> int:
    """Writes classes x per_class JPEGs under dest/train/; returns the bytes written."""
    if dest.exists() and any(dest.iterdir()):
        raise SystemExit(f"photo_folder.py: {dest} is not empty")
    photos = [p.convert("L") if p.mode in ("L", "I;16", "I", "F") else p.convert("RGB")
              for p in photos]
    rng = random.Random(seed)
    total = 0
    for c in range(classes):
        folder = dest / "train" / f"c{c:04d}"
        folder.mkdir(parents=True)
        for i in range(per_class):
            image = crop(photos[rng.randrange(len(photos))], rng)
            buf = io.BytesIO()
            image.save(buf, "JPEG", quality=rng.randint(75, 95), subsampling="4:2:0")
            (folder / f"img{i:05d}.JPEG").write_bytes(buf.getvalue())
            total += buf.tell()
    return total


def main(argv) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", type=Path, help="the folder to make (absent or empty)")
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--per-class", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sources", type=Path, default=None,
                    help="a folder of photographs (default: scikit-image's)")
    a = ap.parse_args(argv)
    if a.classes < 1 or a.per_class < 1:
        raise SystemExit("photo_folder.py: --classes and --per-class must be at least 1")
    photos = folder_photos(a.sources) if a.sources else skimage_photos()
    total = make(a.dest, photos, a.classes, a.per_class, a.seed)
    n = a.classes * a.per_class
    print(f"photo_folder.py: {n} JPEGs from {len(photos)} photographs in {a.dest}, "
          f"{total / n / 1024:.1f} KB on average")


if __name__ == "__main__":
    main(sys.argv[1:])
