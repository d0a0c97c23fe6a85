#include "orch/imagedata/augment.h"

#include "orch/imagedata/image_codec.h"
#include "orch/imagedata/resample.h"

namespace orch::imagedata {

AugmentChoice choose_augment(int width, int height, SampleRng& rng) {
  AugmentChoice a;
  a.crop = random_resized_crop(width, height, rng);
  a.flip = rng.uniform() < 0.5;
  return a;
}

void augment_image(const std::uint8_t* data, std::size_t size, SampleRng& rng, int out_size,
                   std::uint8_t* out) {
  const JpegSize s = read_image_size(data, size);
  const AugmentChoice a = choose_augment(s.width, s.height, rng);
  const DecodedRegion r = decode_image_region(data, size, a.crop, out_size, out_size);
  resample_bilinear(r.image, r.crop, out_size, out_size, a.flip, out);
}

void augment_rgb(const std::uint8_t* pixels, int width, int height, SampleRng& rng, int out_size,
                 std::uint8_t* out) {
  const AugmentChoice a = choose_augment(width, height, rng);
  const BoxF box{static_cast<double>(a.crop.x), static_cast<double>(a.crop.y),
                 static_cast<double>(a.crop.w), static_cast<double>(a.crop.h)};
  resample_bilinear(pixels, width, height, box, out_size, out_size, a.flip, out);
}

}  // namespace orch::imagedata
