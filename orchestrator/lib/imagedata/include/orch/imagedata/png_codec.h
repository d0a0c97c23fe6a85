// PNG decoding with libpng (the reference PNG library, libpng16 in every Debian release). Pixels
// come out as 8-bit RGB the way PIL's `Image.convert("RGB")` gives them: 16-bit samples keep
// their high byte, palettes and grey levels are expanded, an alpha channel (or a palette's
// transparency) is dropped rather than composited, and gAMA/iCCP chunks are ignored.
#pragma once

#include <cstddef>
#include <cstdint>

#include "orch/imagedata/jpeg_codec.h"

namespace orch::imagedata {

/// The dimensions from the IHDR chunk; throws DatasetError when it is not a readable PNG.
JpegSize read_png_size(const std::uint8_t* data, std::size_t size);

/// The whole image as RGB; throws DatasetError (reason truncated or corrupt) on bad data.
RgbImage decode_png(const std::uint8_t* data, std::size_t size);

}  // namespace orch::imagedata
