// JPEG decoding: the DCT-scaled, cropped path against a full reference decode, corrupt and
// truncated files, and the sample randomness (shuffles and crop geometry).
#include <orch/imagedata/augment.h>
#include <orch/imagedata/dataset_error.h>
#include <orch/imagedata/image_generator.h>
#include <orch/imagedata/jpeg_codec.h>
#include <orch/imagedata/resample.h>
#include <orch/imagedata/sample_random.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "unit/dataset_test_support.h"

using namespace orch::imagedata;

namespace {

const std::vector<std::uint8_t>& sample_jpeg() {
  static const std::vector<std::uint8_t> jpeg = encode_jpeg(render_image(11, 2, 5), 90);
  return jpeg;
}

}  // namespace

TEST_CASE("decode: a full decode matches the encoded pixels within JPEG's error", "[dataset]") {
  const RgbImage src = render_image(11, 2, 5);
  const RgbImage out = decode_jpeg(sample_jpeg().data(), sample_jpeg().size());
  REQUIRE(out.width == src.width);
  REQUIRE(out.height == src.height);
  const double diff = test::mean_abs_diff(out.pixels.data(), src.pixels.data(), src.pixels.size());
  INFO("mean abs diff " << diff);
  CHECK(diff < 20);  // the grain is noise JPEG drops; structure survives
  CHECK(diff > 0);
}

TEST_CASE("decode: plain chroma upsampling changes colour, not luma", "[dataset]") {
  // The reference the nvJPEG test compares against: the option must reach libjpeg-turbo (RGB
  // changes) and touch only the chroma planes (luma stays within rounding).
  const RgbImage fancy = decode_jpeg(sample_jpeg().data(), sample_jpeg().size());
  const RgbImage plain = decode_jpeg(sample_jpeg().data(), sample_jpeg().size(), false);
  REQUIRE(plain.pixels.size() == fancy.pixels.size());
  const double rgb =
      test::mean_abs_diff(plain.pixels.data(), fancy.pixels.data(), fancy.pixels.size());
  double luma = 0;
  for (std::size_t i = 0; i < fancy.pixels.size(); i += 3) {
    auto y = [&](const RgbImage& im) {
      return 0.299 * im.pixels[i] + 0.587 * im.pixels[i + 1] + 0.114 * im.pixels[i + 2];
    };
    luma += std::abs(y(plain) - y(fancy));
  }
  luma /= static_cast<double>(fancy.pixels.size() / 3);
  INFO("mean |diff| rgb " << rgb << ", luma " << luma);
  CHECK(rgb > 0.5);
  CHECK(luma < 0.5 * rgb);
  CHECK(luma < 1.0);
}

TEST_CASE("decode: DCT-scaled cropped decode matches full decode + resize", "[dataset]") {
  const auto& jpeg = sample_jpeg();
  const RgbImage full = decode_jpeg(jpeg.data(), jpeg.size());
  // A large crop to a small output (DCT scaling used), an offset crop (crop_scanline and
  // skip_scanlines used) and a small crop at full scale.
  const std::vector<std::pair<CropBox, int>> cases = {
      {{0, 0, full.width, full.height}, 64},
      {{full.width / 3, full.height / 4, full.width / 2, full.height / 2}, 48},
      {{37, 53, 120, 90}, 112},
  };
  int scaled = 0;
  for (const auto& [box, out_size] : cases) {
    const DecodedRegion r = decode_jpeg_region(jpeg.data(), jpeg.size(), box, out_size, out_size);
    CHECK(r.image.width <= full.width);
    if (r.scale_num < 8) ++scaled;
    // Only the scales libjpeg-turbo has SIMD transforms for (jpeg_codec.cpp says why).
    CHECK((r.scale_num == 1 || r.scale_num == 2 || r.scale_num == 4 || r.scale_num == 8));
    // The decoded region holds the crop, at least out_size pixels wide and high (or all of it).
    CHECK(r.crop.w >= std::min<double>(out_size, box.w) - 1e-9);
    CHECK(r.crop.h >= std::min<double>(out_size, box.h) - 1e-9);
    CHECK(r.crop.x >= 0);
    CHECK(r.crop.x + r.crop.w <= r.image.width + 1e-9);
    CHECK(r.crop.y + r.crop.h <= r.image.height + 1e-9);
    std::vector<std::uint8_t> fast(static_cast<std::size_t>(out_size) * out_size * 3);
    resample_bilinear(r.image, r.crop, out_size, out_size, false, fast.data());
    // Reference: full decode, then an area average down to the same size (what an
    // antialiased resize of the full-resolution crop gives).
    const std::vector<std::uint8_t> ref = test::area_resize(full, box, out_size);
    const double diff = test::mean_abs_diff(fast.data(), ref.data(), fast.size());
    INFO("crop " << box.x << "," << box.y << " " << box.w << "x" << box.h << " -> " << out_size
                 << ", scale " << r.scale_num << "/8, mean abs diff " << diff);
    CHECK(diff < 12);
    // And not by accident: a different region is far off.
    std::vector<std::uint8_t> other(fast.size());
    resample_bilinear(full, BoxF{0, 0, 40, 40}, out_size, out_size, false, other.data());
    CHECK(test::mean_abs_diff(other.data(), ref.data(), ref.size()) > diff + 5);
  }
  CHECK(scaled >= 2);
}

TEST_CASE("decode: flip mirrors the output", "[dataset]") {
  const RgbImage full = decode_jpeg(sample_jpeg().data(), sample_jpeg().size());
  const int s = 32;
  std::vector<std::uint8_t> a(s * s * 3), b(a.size());
  resample_bilinear(full, BoxF{10, 10, 200, 200}, s, s, false, a.data());
  resample_bilinear(full, BoxF{10, 10, 200, 200}, s, s, true, b.data());
  for (int y = 0; y < s; ++y)
    for (int x = 0; x < s; ++x)
      for (int c = 0; c < 3; ++c)
        REQUIRE(a[(y * s + x) * 3 + c] == b[(y * s + (s - 1 - x)) * 3 + c]);
}

TEST_CASE("decode: truncated, garbled and non-JPEG data throw DatasetError", "[dataset]") {
  const auto& jpeg = sample_jpeg();
  std::vector<std::uint8_t> out(64 * 64 * 3);
  auto rng = SampleRng::for_sample(0, 0, 0);
  // Truncated at several points: in the header, early and late in the entropy-coded data.
  for (std::size_t keep : {std::size_t{20}, jpeg.size() / 3, jpeg.size() - 100}) {
    const std::vector<std::uint8_t> cut(jpeg.begin(),
                                        jpeg.begin() + static_cast<std::ptrdiff_t>(keep));
    INFO("kept " << keep << " of " << jpeg.size() << " bytes");
    CHECK_THROWS_AS(decode_jpeg(cut.data(), cut.size()), DatasetError);
    CHECK_THROWS_AS(augment_jpeg(cut.data(), cut.size(), rng, 64, out.data()), DatasetError);
  }
  // Garbage over the entropy-coded data.
  std::vector<std::uint8_t> garbled = jpeg;
  for (std::size_t i = garbled.size() / 2; i < garbled.size() / 2 + 2000; ++i)
    garbled[i] = static_cast<std::uint8_t>(i * 37);
  CHECK_THROWS_AS(decode_jpeg(garbled.data(), garbled.size()), DatasetError);
  const std::vector<std::uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  CHECK_THROWS_WITH(read_jpeg_size(text.data(), text.size()),
                    Catch::Contains("not a readable JPEG"));
  CHECK_THROWS_AS(decode_jpeg_region(text.data(), 0, {}, 8, 8), DatasetError);
  // The intact file still decodes after all that (no state leaks between calls).
  CHECK(decode_jpeg(jpeg.data(), jpeg.size()).width > 0);
}

TEST_CASE("epoch_order: a permutation, fixed by seed and epoch", "[dataset]") {
  const auto a = epoch_order(1000, 5, 0, true);
  CHECK(a == epoch_order(1000, 5, 0, true));
  CHECK(a != epoch_order(1000, 5, 1, true));
  CHECK(a != epoch_order(1000, 6, 0, true));
  CHECK(std::set<std::int64_t>(a.begin(), a.end()).size() == 1000);
  CHECK(*std::min_element(a.begin(), a.end()) == 0);
  CHECK(*std::max_element(a.begin(), a.end()) == 999);
  int fixed = 0;
  for (std::size_t i = 0; i < a.size(); ++i) fixed += a[i] == static_cast<std::int64_t>(i);
  CHECK(fixed < 20);  // a shuffle, not the identity
  const auto plain = epoch_order(5, 5, 3, false);
  CHECK(plain == std::vector<std::int64_t>{0, 1, 2, 3, 4});
}

TEST_CASE("random_resized_crop: inside the image, scale and ratio within range", "[dataset]") {
  const CropParams p;
  double min_scale = 1, max_scale = 0;
  int flips = 0;
  for (int i = 0; i < 5000; ++i) {
    const int w = 200 + (i * 37) % 400, h = 150 + (i * 53) % 350;
    auto rng = SampleRng::for_sample(1, 0, static_cast<std::uint64_t>(i));
    const AugmentChoice a = choose_augment(w, h, rng);
    const CropBox& c = a.crop;
    flips += a.flip;
    REQUIRE(c.x >= 0);
    REQUIRE(c.y >= 0);
    REQUIRE(c.w >= 1);
    REQUIRE(c.h >= 1);
    REQUIRE(c.x + c.w <= w);
    REQUIRE(c.y + c.h <= h);
    const double scale = static_cast<double>(c.w) * c.h / (static_cast<double>(w) * h);
    const double ratio = static_cast<double>(c.w) / c.h;
    // Rounding to whole pixels moves both a little past the nominal bounds.
    REQUIRE(scale >= p.scale_min * 0.9);
    REQUIRE(scale <= 1.0);
    REQUIRE(ratio >= p.ratio_min * 0.95);
    REQUIRE(ratio <= p.ratio_max * 1.05);
    min_scale = std::min(min_scale, scale);
    max_scale = std::max(max_scale, scale);
    // Same inputs, same crop.
    auto again = SampleRng::for_sample(1, 0, static_cast<std::uint64_t>(i));
    const AugmentChoice b = choose_augment(w, h, again);
    REQUIRE((b.crop.x == c.x && b.crop.y == c.y && b.crop.w == c.w && b.crop.h == c.h &&
             b.flip == a.flip));
  }
  CHECK(min_scale < 0.1);  // the whole range is used
  CHECK(max_scale > 0.9);
  CHECK(flips > 2300);
  CHECK(flips < 2700);
  // A panorama no crop of the ratio range fits into: the clamped centre crop.
  auto rng = SampleRng::for_sample(1, 0, 0);
  const CropBox wide = random_resized_crop(1000, 10, rng);
  CHECK(wide.h == 10);
  CHECK(wide.w == 13);
  CHECK(wide.x == (1000 - 13) / 2);
}

TEST_CASE("normalize_imagenet: planar and channels-last layouts of the same values", "[dataset]") {
  const std::vector<std::uint8_t> hwc = {0, 128, 255, 255, 0, 128};  // 2 pixels
  std::vector<float> planar(6), last(6);
  normalize_imagenet(hwc.data(), 2, 1, false, planar.data());
  normalize_imagenet(hwc.data(), 2, 1, true, last.data());
  CHECK(planar[0] == Approx((0 - 0.485) / 0.229));
  CHECK(planar[1] == Approx((1 - 0.485) / 0.229));
  CHECK(planar[2] == Approx((128 / 255.0 - 0.456) / 0.224));
  CHECK(last[0] == Approx(planar[0]));
  CHECK(last[1] == Approx(planar[2]));
  CHECK(last[3] == Approx(planar[1]));
}

TEST_CASE("resample_bilinear: the separable filter equals the direct 2x2 filter", "[dataset]") {
  const RgbImage src = decode_jpeg(sample_jpeg().data(), sample_jpeg().size());
  for (const BoxF box :
       {BoxF{13.5, 7.25, 300, 211}, BoxF{0, 0, 40, 40}, BoxF{100, 90, 223.7, 301.2}}) {
    for (const bool flip : {false, true}) {
      const int ow = 57, oh = 43;
      std::vector<std::uint8_t> fast(ow * oh * 3);
      resample_bilinear(src, box, ow, oh, flip, fast.data());
      int mismatches = 0;
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) {
          const double fx = std::clamp(box.x + (ox + 0.5) * box.w / ow - 0.5, 0.0, src.width - 1.0);
          const double fy =
              std::clamp(box.y + (oy + 0.5) * box.h / oh - 0.5, 0.0, src.height - 1.0);
          const int x0 = std::min(static_cast<int>(fx), src.width - 2),
                    y0 = std::min(static_cast<int>(fy), src.height - 2);
          const int wx = static_cast<int>(std::lround((fx - x0) * 256)),
                    wy = static_cast<int>(std::lround((fy - y0) * 256));
          auto px = [&](int x, int y, int c) {
            return int{src.pixels[(static_cast<std::size_t>(y) * src.width + x) * 3 + c]};
          };
          const int dx = flip ? ow - 1 - ox : ox;
          for (int c = 0; c < 3; ++c) {
            const int top = px(x0, y0, c) * (256 - wx) + px(x0 + 1, y0, c) * wx;
            const int bottom = px(x0, y0 + 1, c) * (256 - wx) + px(x0 + 1, y0 + 1, c) * wx;
            const int want = (top * (256 - wy) + bottom * wy + 32768) >> 16;
            mismatches += fast[(static_cast<std::size_t>(oy) * ow + dx) * 3 + c] != want;
          }
        }
      CHECK(mismatches == 0);
    }
  }
}
