// ImageNet as it is: CMYK, YCCK, grayscale and progressive JPEGs and PNGs (whatever their
// extension) decode to the RGB PIL gives; every other file fails with its real reason.
#include <orch/imagedata/augment.h>
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_codec.h>
#include <orch/imagedata/image_folder.h>
#include <orch/imagedata/png_codec.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "unit/dataset_test_support.h"
#include "unit/image_fixture_support.h"

using namespace orch::imagedata;
namespace fs = std::filesystem;

namespace {

constexpr int kW = 48, kH = 32;

// PIL's CMYK -> RGB of Adobe-inverted samples (what the decoder must reproduce).
std::vector<std::uint8_t> pil_cmyk_to_rgb(const std::vector<std::uint8_t>& cmyk) {
  std::vector<std::uint8_t> rgb;
  for (std::size_t i = 0; i < cmyk.size(); i += 4) {
    const int k = cmyk[i + 3];
    for (int c = 0; c < 3; ++c) {
      const int t = (255 - cmyk[i + static_cast<std::size_t>(c)]) * k + 128;
      rgb.push_back(static_cast<std::uint8_t>(k - (((t >> 8) + t) >> 8)));
    }
  }
  return rgb;
}

double mean_diff(const RgbImage& im, const std::vector<std::uint8_t>& expected) {
  REQUIRE(im.pixels.size() == expected.size());
  return test::mean_abs_diff(im.pixels.data(), expected.data(), expected.size());
}

}  // namespace

TEST_CASE("image formats: CMYK and YCCK JPEGs decode as PIL converts them", "[dataset]") {
  const auto cmyk = test::pattern(kW, kH, 4);
  const auto expected = pil_cmyk_to_rgb(cmyk);
  // The convention PIL does not use (samples not inverted): must be far from what we decode.
  std::vector<std::uint8_t> uninverted;
  for (std::size_t i = 0; i < cmyk.size(); i += 4)
    for (int c = 0; c < 3; ++c)
      uninverted.push_back(static_cast<std::uint8_t>((255 - cmyk[i + static_cast<std::size_t>(c)]) *
                                                     (255 - cmyk[i + 3]) / 255));
  struct Case {
    const char* name;
    test::JpegFixture f;
  };
  for (const Case& k :
       {Case{"CMYK, Adobe marker", {JCS_CMYK, JCS_CMYK}}, Case{"YCCK", {JCS_CMYK, JCS_YCCK}},
        Case{"CMYK, no Adobe marker", {JCS_CMYK, JCS_CMYK, false, false}},
        Case{"progressive YCCK", {JCS_CMYK, JCS_YCCK, true}}}) {
    INFO(k.name);
    const auto jpeg = test::write_jpeg(kW, kH, cmyk, k.f);
    const RgbImage im = decode_image(jpeg.data(), jpeg.size());
    CHECK(im.width == kW);
    CHECK(im.height == kH);
    const double d = mean_diff(im, expected);
    INFO("mean |diff| " << d);
    CHECK(d < 3.0);  // JPEG's loss at quality 95 on a smooth pattern
    CHECK(test::mean_abs_diff(im.pixels.data(), uninverted.data(), uninverted.size()) > 20.0);
    // The cropped, DCT-scaled path converts the same way.
    std::vector<std::uint8_t> out(16 * 16 * 3);
    auto rng = SampleRng::for_sample(1, 0, 0);
    augment_image(jpeg.data(), jpeg.size(), rng, 16, out.data());
    CHECK(*std::max_element(out.begin(), out.end()) > *std::min_element(out.begin(), out.end()));
  }
}

TEST_CASE("image formats: grayscale and progressive JPEGs decode to RGB", "[dataset]") {
  const auto grey = test::pattern(kW, kH, 1);
  const auto jpeg = test::write_jpeg(kW, kH, grey, {JCS_GRAYSCALE, JCS_GRAYSCALE});
  const RgbImage im = decode_image(jpeg.data(), jpeg.size());
  std::vector<std::uint8_t> expected;
  for (auto g : grey) expected.insert(expected.end(), {g, g, g});
  CHECK(mean_diff(im, expected) < 2.0);
  for (std::size_t i = 0; i < im.pixels.size(); i += 3) {
    REQUIRE(im.pixels[i] == im.pixels[i + 1]);
    REQUIRE(im.pixels[i] == im.pixels[i + 2]);
  }
  const auto rgb = test::pattern(kW, kH, 3);
  const auto baseline = test::write_jpeg(kW, kH, rgb, {JCS_RGB, JCS_YCbCr});
  const auto progressive = test::write_jpeg(kW, kH, rgb, {JCS_RGB, JCS_YCbCr, true});
  REQUIRE(baseline != progressive);
  const RgbImage a = decode_image(baseline.data(), baseline.size());
  const RgbImage b = decode_image(progressive.data(), progressive.size());
  CHECK(mean_diff(b, rgb) < 3.0);
  CHECK(mean_diff(a, b.pixels) < 1.0);
}

TEST_CASE("image formats: PNGs of every colour type decode exactly, whatever the name",
          "[dataset]") {
  const auto rgb = test::pattern(kW, kH, 3);
  const auto rgba = test::pattern(kW, kH, 4);
  const auto grey = test::pattern(kW, kH, 1);
  std::vector<std::uint8_t> rgb16;  // big-endian 16-bit samples: high byte, low byte
  for (auto v : rgb) rgb16.insert(rgb16.end(), {v, static_cast<std::uint8_t>(255 - v)});
  std::vector<std::uint8_t> grey_expected, palette_expected, rgba_expected;
  for (auto g : grey) grey_expected.insert(grey_expected.end(), {g, g, g});
  for (auto i : grey)  // the fixture's palette: (i, 255 - i, 7i mod 256)
    palette_expected.insert(palette_expected.end(), {i, static_cast<std::uint8_t>(255 - i),
                                                     static_cast<std::uint8_t>((i * 7) % 256)});
  for (std::size_t i = 0; i < rgba.size(); i += 4)
    rgba_expected.insert(rgba_expected.end(), {rgba[i], rgba[i + 1], rgba[i + 2]});
  struct Case {
    const char* name;
    std::vector<std::uint8_t> png, expected;
  };
  const std::vector<Case> cases = {
      {"RGB", test::write_png(kW, kH, PNG_COLOR_TYPE_RGB, 8, rgb), rgb},
      {"RGB interlaced", test::write_png(kW, kH, PNG_COLOR_TYPE_RGB, 8, rgb, true), rgb},
      {"grey", test::write_png(kW, kH, PNG_COLOR_TYPE_GRAY, 8, grey), grey_expected},
      {"palette", test::write_png(kW, kH, PNG_COLOR_TYPE_PALETTE, 8, grey), palette_expected},
      {"RGBA (alpha dropped, as PIL's convert)",
       test::write_png(kW, kH, PNG_COLOR_TYPE_RGB_ALPHA, 8, rgba), rgba_expected},
      {"16-bit RGB (the high byte)", test::write_png(kW, kH, PNG_COLOR_TYPE_RGB, 16, rgb16), rgb},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    CHECK(sniff_format(c.png.data(), c.png.size()) == ImageFormat::kPng);
    const JpegSize s = read_image_size(c.png.data(), c.png.size());
    CHECK(s.width == kW);
    CHECK(s.height == kH);
    const RgbImage im = decode_image(c.png.data(), c.png.size());
    CHECK(im.pixels == c.expected);
  }
  // ImageNet's PNG named .JPEG, and a .png, in a class folder: scanned and loaded by content.
  test::ScratchDir d;
  fs::create_directories(d.path() / "n01");
  test::spit(d.path() / "n01" / "n01_1.JPEG", cases[0].png);
  test::spit(d.path() / "n01" / "n01_2.png", cases[2].png);
  const FolderIndex idx = scan_image_folder(d.path());
  REQUIRE(idx.samples.size() == 2);
  std::vector<std::uint8_t> out(24 * 24 * 3);
  for (const auto& s : idx.samples) {
    const auto bytes = read_file(s.path);
    auto rng = SampleRng::for_sample(0, 0, 0);
    CHECK_NOTHROW(augment_image(bytes.data(), bytes.size(), rng, 24, out.data()));
  }
}

TEST_CASE("image formats: a file that cannot be decoded says why, with a reason to count",
          "[dataset]") {
  const auto rgb = test::pattern(kW, kH, 3);
  const auto jpeg = test::write_jpeg(kW, kH, rgb, {});
  const auto png = test::write_png(kW, kH, PNG_COLOR_TYPE_RGB, 8, rgb);
  auto reason_of =
      [](const std::vector<std::uint8_t>& data) -> std::pair<std::string, std::string> {
    try {
      decode_image(data.data(), data.size());
    } catch (const DatasetError& e) {
      return {e.reason(), e.what()};
    }
    return {"decoded", ""};
  };
  auto bytes = [](const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); };
  const auto gif = reason_of(bytes("GIF89a\x10\x00\x10\x00rest of a gif"));
  CHECK(gif.first == kReasonUnsupported);
  CHECK_THAT(gif.second, Catch::Contains("GIF data"));
  const auto html = reason_of(bytes("<!DOCTYPE html><html>404 Not Found</html>"));
  CHECK(html.first == kReasonNotAnImage);
  CHECK_THAT(html.second, Catch::Contains("HTML"));
  CHECK(reason_of({}).first == kReasonEmpty);
  CHECK(reason_of(bytes("\x01\x02\x03\x04\x05")).first == kReasonNotAnImage);
  const std::vector<std::uint8_t> cut_jpeg(jpeg.begin(), jpeg.begin() + jpeg.size() * 2 / 3);
  const auto tj = reason_of(cut_jpeg);
  CHECK(tj.first == kReasonTruncated);
  CHECK_THAT(tj.second, Catch::Contains("truncated JPEG"));
  const std::vector<std::uint8_t> cut_png(png.begin(), png.begin() + png.size() / 2);
  const auto tp = reason_of(cut_png);
  CHECK(tp.first == kReasonTruncated);
  CHECK_THAT(tp.second, Catch::Contains("truncated PNG"));
  auto bad_crc = png;
  bad_crc[50] ^= 0x5a;  // inside the first IDAT chunk's data: its CRC no longer matches
  const auto cp = reason_of(bad_crc);
  CHECK(cp.first == kReasonCorrupt);
  CHECK_THAT(cp.second, Catch::Contains("corrupt PNG"));
  auto garbled = jpeg;
  for (std::size_t i = garbled.size() / 2; i < garbled.size() - 2; ++i)
    garbled[i] = static_cast<std::uint8_t>(i * 37);
  CHECK(reason_of(garbled).first == kReasonCorrupt);
  // with_path keeps the reason and names the file once.
  const DatasetError e = with_path("/d/x.JPEG", DatasetError(kReasonTruncated, "truncated JPEG"));
  CHECK(e.reason() == kReasonTruncated);
  CHECK(std::string(e.what()) == "/d/x.JPEG: truncated JPEG");
  CHECK(std::string(with_path("/d/x.JPEG", e).what()) == "/d/x.JPEG: truncated JPEG");
}
