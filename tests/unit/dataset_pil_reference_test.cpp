// Every kind of image file ImageNet holds, decoded by orch and by PIL (the decoder torchvision's
// ImageFolder uses), compared pixel by pixel. Hidden from the default run ([.]): ctest runs it
// as its own entry, which is reported as skipped (exit 77) when no Python with PIL is found.
// The Python is $ORCH_REFERENCE_PYTHON (tests/CMakeLists.txt sets it to the torch venv's, where
// scripts/setup.sh installs pillow with torchvision), else python3 on PATH.
#include <orch/imagedata/image_codec.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "unit/dataset_test_support.h"
#include "unit/image_fixture_support.h"

using namespace orch::imagedata;
namespace fs = std::filesystem;

namespace {

std::string python() {
  const char* p = std::getenv("ORCH_REFERENCE_PYTHON");
  return p && *p ? p : "python3";
}

int run(const std::string& command) { return std::system(command.c_str()); }

}  // namespace

TEST_CASE("image formats: orch's pixels equal PIL's for every kind of file", "[.][pil]") {
  if (run("'" + python() + "' -c 'import PIL.Image' >/dev/null 2>&1") != 0) {
    std::cerr << "SKIPPED: no Python with PIL at '" << python()
              << "' (set ORCH_REFERENCE_PYTHON; scripts/setup.sh installs pillow in the torch "
                 "venv)\n";
    std::exit(77);
  }
  test::ScratchDir d;
  constexpr int kW = 61, kH = 37;  // odd sizes: chroma subsampling's edges
  const auto rgb = test::pattern(kW, kH, 3, 1);
  const auto cmyk = test::pattern(kW, kH, 4, 2);
  const auto grey = test::pattern(kW, kH, 1, 3);
  const auto rgba = test::pattern(kW, kH, 4, 4);
  // Max |difference| allowed per sample. PNG is lossless: 0. JPEG: PIL's wheel carries its own
  // libjpeg-turbo, whose SIMD code may round an upsampled or converted sample differently by 1.
  struct Case {
    std::string name;
    std::vector<std::uint8_t> data;
    int tolerance;
  };
  const std::vector<Case> cases = {
      {"baseline.JPEG", test::write_jpeg(kW, kH, rgb, {JCS_RGB, JCS_YCbCr}), 1},
      {"progressive.JPEG", test::write_jpeg(kW, kH, rgb, {JCS_RGB, JCS_YCbCr, true}), 1},
      {"grey.JPEG", test::write_jpeg(kW, kH, grey, {JCS_GRAYSCALE, JCS_GRAYSCALE}), 1},
      {"cmyk_adobe.JPEG", test::write_jpeg(kW, kH, cmyk, {JCS_CMYK, JCS_CMYK}), 1},
      {"cmyk_plain.JPEG", test::write_jpeg(kW, kH, cmyk, {JCS_CMYK, JCS_CMYK, false, false}), 1},
      {"ycck.JPEG", test::write_jpeg(kW, kH, cmyk, {JCS_CMYK, JCS_YCCK}), 1},
      {"png_named.JPEG", test::write_png(kW, kH, PNG_COLOR_TYPE_RGB, 8, rgb), 0},
      {"grey.png", test::write_png(kW, kH, PNG_COLOR_TYPE_GRAY, 8, grey), 0},
      {"palette.png", test::write_png(kW, kH, PNG_COLOR_TYPE_PALETTE, 8, grey), 0},
      {"rgba.png", test::write_png(kW, kH, PNG_COLOR_TYPE_RGB_ALPHA, 8, rgba), 0},
      {"interlaced.png", test::write_png(kW, kH, PNG_COLOR_TYPE_RGB, 8, rgb, true), 0},
  };
  for (const auto& c : cases) test::spit(d.path() / c.name, c.data);
  const std::string script =
      "import sys, pathlib\n"
      "from PIL import Image\n"
      "for p in sys.argv[1:]:\n"
      "    im = Image.open(p).convert('RGB')\n"
      "    pathlib.Path(p + '.rgb').write_bytes(im.tobytes())\n";
  test::spit(d.path() / "decode.py", std::vector<std::uint8_t>(script.begin(), script.end()));
  std::string command = "'" + python() + "' '" + (d.path() / "decode.py").string() + "'";
  for (const auto& c : cases) command += " '" + (d.path() / c.name).string() + "'";
  REQUIRE(run(command) == 0);
  for (const auto& c : cases) {
    INFO(c.name);
    const RgbImage mine = decode_image(c.data.data(), c.data.size());
    const auto theirs = test::slurp(d.path() / (c.name + ".rgb"));
    REQUIRE(mine.pixels.size() == theirs.size());
    int worst = 0;
    for (std::size_t i = 0; i < theirs.size(); ++i)
      worst = std::max(worst, std::abs(int(mine.pixels[i]) - int(theirs[i])));
    INFO("max |orch - PIL| = " << worst << ", tolerance " << c.tolerance);
    CHECK(worst <= c.tolerance);
  }
}
