"""bench/lib/photo_folder.py: the loaders benchmark's folder cut from photographs. Its images
must be what the benchmark claims (JPEGs at ImageNet's sizes in orch's folder layout), and the
same seed must give the same bytes, so two machines benchmark the same folder."""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE.parent.parent / "bench" / "lib" / "photo_folder.py"

try:
    import numpy
    from PIL import Image
except ImportError:
    Image = None


@unittest.skipIf(Image is None, "needs PIL and numpy (the torch venv has them)")
class PhotoFolderTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        self.sources = self.root / "sources"
        self.sources.mkdir()
        rng = numpy.random.default_rng(1)
        # Two "photographs" with detail everywhere (noise over a gradient), one of them grey.
        colour = numpy.clip(rng.normal(128, 40, (480, 640, 3)), 0, 255).astype(numpy.uint8)
        Image.fromarray(colour).save(self.sources / "colour.png")
        grey = numpy.clip(rng.normal(100, 30, (600, 400)), 0, 255).astype(numpy.uint8)
        Image.fromarray(grey).save(self.sources / "grey.jpg", quality=95)

    def tearDown(self):
        self.tmp.cleanup()

    def make(self, dest, *extra):
        return subprocess.run([sys.executable, str(SCRIPT), str(dest), "--classes", "3",
                               "--per-class", "4", "--sources", str(self.sources), *extra],
                              capture_output=True, text=True)

    def files(self, dest):
        return sorted(p for p in (dest / "train").rglob("*") if p.is_file())

    def test_jpegs_at_imagenet_sizes_in_orchs_layout(self):
        out = self.make(self.root / "a")
        self.assertEqual(out.returncode, 0, out.stderr)
        files = self.files(self.root / "a")
        self.assertEqual(len(files), 12)
        self.assertEqual(sorted({p.parent.name for p in files}), ["c0000", "c0001", "c0002"])
        modes = set()
        for p in files:
            self.assertEqual(p.suffix, ".JPEG")
            self.assertEqual(p.read_bytes()[:2], b"\xff\xd8", p)
            with Image.open(p) as im:
                self.assertEqual(im.format, "JPEG")
                self.assertFalse(im.info.get("progressive", False), p)
                self.assertTrue(333 <= max(im.size) <= 500, (p, im.size))
                # Aspect 3:4 to 4:3 (a crop of a crop-limited photograph may be squarer).
                self.assertGreaterEqual(min(im.size) / max(im.size), 0.74, (p, im.size))
                modes.add(im.mode)
        # Both sources were used: colour and grey images, as ImageNet has both.
        self.assertEqual(modes, {"RGB", "L"})
        self.assertIn("12 JPEGs from 2 photographs", out.stdout)

    def test_the_same_seed_gives_the_same_bytes(self):
        for dest, seed in (("a", "0"), ("b", "0"), ("c", "1")):
            out = self.make(self.root / dest, "--seed", seed)
            self.assertEqual(out.returncode, 0, out.stderr)
        a, b, c = (self.files(self.root / d) for d in "abc")
        self.assertEqual([p.read_bytes() for p in a], [p.read_bytes() for p in b])
        self.assertNotEqual([p.read_bytes() for p in a], [p.read_bytes() for p in c])

    def test_refuses_a_folder_that_is_not_empty_and_a_folder_without_photographs(self):
        full = self.root / "full"
        full.mkdir()
        (full / "keep.txt").write_text("mine")
        out = self.make(full)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("is not empty", out.stderr)
        self.assertEqual((full / "keep.txt").read_text(), "mine")
        empty = self.root / "nothing"
        empty.mkdir()
        out = subprocess.run([sys.executable, str(SCRIPT), str(self.root / "d"), "--sources",
                              str(empty)], capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no .jpg/.jpeg/.png file", out.stderr)


if __name__ == "__main__":
    unittest.main()
